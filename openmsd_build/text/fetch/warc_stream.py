"""Archives that cannot be range-read as they are, and files that are not archives at all.

A `.warc.gz` is normally one gzip member per record, so a record can be read alone from its
offset. Some tools gzip a whole WARC as ONE stream instead (`gzip file.warc`); warcio reads
such a file from start to end but refuses to seek into it. The text stage reads it the
same way: `is_one_stream` tells such a file from the usual kind (by inflating its first
member only), `plain_copy` inflates it once per process into a local temporary file, and
the index and replay work on that copy's byte positions (the index row keeps the user's
file name, so `fetch/` names the file the user gave).

`archive_problem` says why a file given as an archive cannot be one (empty, not a WARC),
so the stage rejects it by name instead of stopping.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import tempfile
import threading
import zlib

from openmsd_build.core.paths import describe_failure
from openmsd_build.text.fetch.warc_fast import HEAD_LIMIT, MAX_INFLATE
from openmsd_build.text.fetch.warc_store import _local, is_remote, open_for_read

_GZIP_MAGIC = b"\x1f\x8b"
_PROBE_CHUNK = 64 * 1024
_CONTENT_LENGTH = re.compile(rb"(?im)^content-length:[ \t]*(\d+)[ \t]*\r?$")

NOT_AN_ARCHIVE_EMPTY = "archive_empty"
NOT_AN_ARCHIVE_NOT_WARC = "archive_not_warc"
ARCHIVE_UNREADABLE = "archive_unreadable"


def _first_bytes(path: str, want: int) -> tuple[bytes, bool, bool]:
    """(the first `want` inflated bytes of the file's first gzip member or of the file
    itself, gzipped, member ended within them)."""
    with open_for_read(path) as fh:
        head = fh.read(_PROBE_CHUNK)
        if not head.startswith(_GZIP_MAGIC):
            return head[:want], False, False
        inflater = zlib.decompressobj(31)
        out = bytearray()
        data = head
        while data and len(out) < want and not inflater.eof:
            try:
                out += inflater.decompress(data, want - len(out) + 1)
            except zlib.error:
                break
            data = inflater.unconsumed_tail or (b"" if inflater.eof else fh.read(_PROBE_CHUNK))
        return bytes(out[:want]), True, inflater.eof


def _member_longer_than(path: str, size: int) -> bool:
    """Whether the file's first gzip member inflates to more than `size` bytes, inflated
    piece by piece and nothing kept."""
    with open_for_read(path) as fh:
        inflater = zlib.decompressobj(31)
        total = 0
        while total <= size and not inflater.eof:
            data = inflater.unconsumed_tail or fh.read(_PROBE_CHUNK)
            if not data:
                return False
            try:
                total += len(inflater.decompress(data, _PROBE_CHUNK * 16))
            except zlib.error:
                return False
        return total > size


def _first_record_end(data: bytes) -> int | None:
    """End of the first WARC record in `data` (header, block, CRLF CRLF), when its header
    is whole there."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    match = _CONTENT_LENGTH.search(data[:end + 2])
    if match is None:
        return None
    return end + 4 + int(match.group(1)) + 4


def is_one_stream(path: str) -> bool:
    """Whether `path` is a gzipped WARC whose first gzip member holds more than its first
    record (the whole file as one stream). Inflates only as far as the first record's end,
    once per version of the file in a process (replay asks before every record)."""
    return _is_one_stream(path, _stamp(path))


def _stamp(path: str) -> tuple[int, int] | None:
    """A local file's (size, mtime) so a rewritten file is probed again; None when remote."""
    if is_remote(path):
        return None
    try:
        stat = os.stat(_local(path))
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


@functools.lru_cache(maxsize=4096)
def _is_one_stream(path: str, _stamp: tuple[int, int] | None) -> bool:
    try:
        head, gzipped, ended = _first_bytes(path, HEAD_LIMIT)  # a WARC record header longer than this is not one
        end = _first_record_end(head) if gzipped else None
        if end is None or len(head) > end or ended:
            return end is not None and len(head) > end
        # a first record larger than the probe: inflate just past its end, keeping nothing
        # (its Content-Length is data: a bomb's says gigabytes)
        return _member_longer_than(path, end)
    except OSError:
        return False


def archive_problem(path: str) -> tuple[str, str] | None:
    """(reason, detail) when `path` cannot be a WARC: empty, or its first bytes (inflated
    when gzipped) are not a WARC record's version line; None when it looks like one."""
    try:
        head, gzipped, _ = _first_bytes(path, 64)
    except OSError as exc:
        return ARCHIVE_UNREADABLE, f"{path}: {describe_failure(exc)}"
    if not head:
        what = "an empty gzip stream" if gzipped else "an empty file"
        return NOT_AN_ARCHIVE_EMPTY, f"{path}: {what}, not a WARC archive"
    if not head.startswith(b"WARC/"):
        return NOT_AN_ARCHIVE_NOT_WARC, f"{path}: not a WARC archive (its first bytes are not a WARC version line)"
    return None


MAX_INFLATE_RATIO = 100
"""A one-stream archive inflating to more than this many times its size (and more than
`warc_fast.MAX_INFLATE`) is refused: WARCs of pages and PDFs inflate 2-10 times; a
megabyte of zeros inflates to a gigabyte of disk."""

_COPIES: dict[tuple, str] = {}
_COPIES_LOCK = threading.Lock()
_COPY_DIR: str | None = None


def plain_copy(path: str) -> str:
    """A local, inflated copy of the one-stream archive `path`, made once per process (a
    sequential read of the whole file) and removed when the process exits; records are then
    read from it by offset as from an uncompressed WARC."""
    global _COPY_DIR
    with _COPIES_LOCK:
        key = (path, _stamp(path))
        copy = _COPIES.get(key)
        if copy is not None and os.path.exists(copy):
            return copy
        if _COPY_DIR is None:
            _COPY_DIR = tempfile.mkdtemp(prefix="openmsd-warc-")
            atexit.register(shutil.rmtree, _COPY_DIR, True)
        import gzip

        fd, copy = tempfile.mkstemp(suffix=".warc", dir=_COPY_DIR)
        try:
            with os.fdopen(fd, "wb") as out, open_for_read(path) as raw, gzip.GzipFile(fileobj=raw) as inflated:
                cap = max(MAX_INFLATE, MAX_INFLATE_RATIO * _size(path))
                written = 0
                while chunk := inflated.read(1024 * 1024):
                    written += len(chunk)
                    if written > cap:
                        raise ValueError(f"{path} inflates to more than {cap} bytes ({MAX_INFLATE_RATIO} times its "
                                         "size): not a WARC of pages and PDFs")
                    out.write(chunk)
        except BaseException:
            os.remove(copy)  # a failed or interrupted copy is not left on disk
            raise
        _COPIES[key] = copy
        return copy


def _size(path: str) -> int:
    """The file's size in bytes (local or remote); 0 when it cannot be told."""
    if not is_remote(path):
        return os.path.getsize(_local(path))
    from apache_beam.io.filesystems import FileSystems

    try:
        return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    except Exception:  # noqa: BLE001 - then the floor, MAX_INFLATE, is the cap
        return 0
