"""A lean reader for the common shape of a WARC record, with warcio as the reference.

warcio parses every header line through three layers of buffered readers; on the text
stage's replay and archive indexing that costs more CPU in the main process than the
decompression itself, CPU the extractor processes need on a small machine. Nearly every
record we read has one shape: its own gzip member (what our `WarcWriter` and the common
crawlers write), `WARC/1.0` or `WARC/1.1` headers, a Content-Length that fits the member,
and for a response an `HTTP/1.x NNN` status line and headers ending inside the block.
This module reads exactly that shape from the inflated member with a line-by-line port of
warcio's `StatusAndHeadersParser` (same UTF-8-else-Latin-1 decoding per line, same
`rstrip`, folding, duplicate and invalid-line handling), and says "not sure" (None or
`plain=False`) for anything else, so callers can hand the bytes to warcio and get its
results exactly: uncompressed or truncated or damaged members, a missing or odd
Content-Length, odd status lines, records warcio rewrites (a `<...>` or spaced target URI)
or fails on (an HTTP record without target URI). Whether the body needs warcio's decoding
(chunked, Content-Encoding) is left to the caller (`body_is_raw`).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import IO, NamedTuple

from warcio.bufferedreaders import BufferedReader

# Members inflating to more than this are left to warcio, which streams them.
MAX_INFLATE = 64 * 1024 * 1024
HEAD_LIMIT = 1024 * 1024
"""How far into a member larger than its limit the record's header lines must end: warcio
reads them line by line (`readline`), and a line with no end (a compression bomb of NUL
bytes) is held whole in memory, gigabytes for a member of a megabyte."""
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # what warcio's gzip decompressor uses
_STEP = 16 * 1024  # compressed bytes fed at a time (bounds the unused_data copy per member)
_WARC_VERSIONS = (b"WARC/1.0", b"WARC/1.1")
_HTTP_VERSIONS = ("HTTP/1.0 ", "HTTP/1.1 ")
_HTTP_RECORDS = ("response", "request", "revisit")  # record types warcio reads HTTP headers of

Headers = list[tuple[str, str]]


class LeanRecord(NamedTuple):
    """One WARC record read from an inflated gzip member.

    `plain` is False when warcio would do more than this reader mirrors (rewrite the target
    URI, raise, or read a response's HTTP block differently); the offsets are still right
    then. For a plain response, `status`/`http_headers` are what warcio's record has and the
    payload is `data[body_start:block_end]`. `tidy_end` is True when only whitespace follows
    the block in the member, i.e. warcio's iterator ends the record exactly at the member end.
    """

    rec_type: str | None
    warc_fields: dict[str, str]
    status: int | None
    http_headers: Headers
    data: bytes
    body_start: int
    block_end: int
    plain: bool
    tidy_end: bool


def body_is_raw(http_headers: Headers) -> bool:
    """True when warcio's `content_stream()` returns the block as it is: not chunked
    (its exact, case-sensitive test) and no Content-Encoding it knows how to decode."""
    transfer = encoding = None
    for key, value in reversed(http_headers):  # the first value wins
        key = key.lower()
        if key == "transfer-encoding":
            transfer = value
        elif key == "content-encoding":
            encoding = value
    if transfer == "chunked":
        return False
    return not (encoding and encoding.lower() in BufferedReader.get_supported_decompressors())


def _line(data: bytes, start: int, stop: int) -> str:
    """One header line decoded as warcio decodes it (UTF-8, else Latin-1) and rstripped."""
    raw = data[start:stop]
    try:
        return raw.decode("utf-8").rstrip()
    except UnicodeDecodeError:
        return raw.decode("latin-1").rstrip()


def _header_lines(data: bytes, pos: int, end: int) -> tuple[Headers, int] | None:
    """Port of the header loop of warcio's `StatusAndHeadersParser.parse` over
    `data[pos:end]` (`pos` just after the first line): `(headers, position after the blank
    line)`, or None when no complete blank line ends the headers before `end` (warcio
    would read a cut line there).

    The usual block (CRLF lines, each with a colon, no folding, valid UTF-8) is split in
    one go: no line of it can be blank after `rstrip` (it has a colon), so the first empty
    line ends it for warcio too, and decoding the block at once equals decoding each line
    (lines split at an ASCII byte). Anything else goes line by line."""
    if data[pos - 2 : pos] == b"\r\n":
        stop = data.find(b"\r\n\r\n", pos - 2, end)
        if stop == pos - 2:
            return [], pos + 2
        if stop >= 0:
            block = data[pos:stop]
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError:
                text = ""
            if text and "\r\n " not in text and "\r\n\t" not in text:
                lines = text.split("\r\n")
                if block.count(b"\n") == len(lines) - 1:
                    pairs = [line.partition(":") for line in lines]
                    if all(colon for _, colon, _ in pairs):
                        # value: the line was rstripped, then the rest lstripped = rest.strip()
                        return [(name.rstrip(" \t"), rest.strip()) for name, _, rest in pairs], stop + 4
    return _header_lines_by_line(data, pos, end)


def _header_lines_by_line(data: bytes, pos: int, end: int) -> tuple[Headers, int] | None:
    """`_header_lines` one line at a time, exactly as warcio reads them."""
    headers: Headers = []
    name = ""
    value: str | None = None
    started = False
    while True:
        newline = data.find(b"\n", pos, end)
        if newline < 0:
            return None
        line = _line(data, pos, newline + 1)
        pos = newline + 1
        if not line:
            break
        if started and line[0] in " \t":  # a continuation line: joined without its indent removed
            if value is not None:
                value += line
            continue
        if value is not None:
            headers.append((name, value))
        name, colon, rest = line.partition(":")
        if colon:
            name, value = name.rstrip(" \t"), rest.lstrip()
        else:
            value = None  # a line without a colon is dropped, with its continuations
        started = True
    if value is not None:
        headers.append((name, value))
    return headers, pos


def _status(line: str) -> int | None:
    """The status of an `HTTP/1.x NNN[ reason]` line (what warcio's `get_statuscode` gives
    for it); None for any other status line."""
    code = line[9:12]
    if line[:9] in _HTTP_VERSIONS and len(code) == 3 and code.isascii() and code.isdigit():
        if len(line) == 12 or line[12] == " ":
            return int(code)
    return None


def parse_member(data: bytes) -> LeanRecord | None:
    """The record at the start of `data` (an inflated gzip member), or None when its WARC
    headers or Content-Length are not the plain shape or the block overruns the member."""
    newline = data.find(b"\n")
    if newline < 0 or data[: newline + 1].rstrip() not in _WARC_VERSIONS:
        return None
    parsed = _header_lines(data, newline + 1, len(data))
    if parsed is None:
        return None
    warc_headers, block_start = parsed
    fields = {key.lower(): value for key, value in reversed(warc_headers)}  # the first value wins
    length = fields.get("content-length")
    if length is None or not (length.isascii() and length.isdigit()):
        return None
    block_end = block_start + int(length)
    if block_end > len(data):
        return None
    rec_type = fields.get("warc-type")
    uri = fields.get("warc-target-uri")
    # warcio rewrites such URIs (and logs), and raises on an HTTP record without one
    plain = not (uri is not None and (uri.startswith("<") or " " in uri))
    if uri is None and rec_type in _HTTP_RECORDS and block_end > block_start:
        plain = False
    status: int | None = None
    http_headers: Headers = []
    body_start = block_start
    if rec_type == "response" and plain:
        http = None
        if uri is not None and uri.startswith(("http:", "https:")) and block_end > block_start:
            newline = data.find(b"\n", block_start, block_end)
            status = _status(_line(data, block_start, newline + 1)) if newline >= 0 else None
            if status is not None:
                http = _header_lines(data, newline + 1, block_end)
        if http is None:
            status, plain = None, False
        else:
            http_headers, body_start = http
    tidy_end = not data[block_end:].strip()
    return LeanRecord(rec_type, fields, status, http_headers, data, body_start, block_end, plain, tidy_end)


def header_lines_unbounded(head: bytes) -> bool:
    """Whether the record whose first inflated bytes are `head` (up to `HEAD_LIMIT`) has a
    WARC header block, or for an HTTP record (a response, request or revisit, or
    `application/http`) an HTTP header block, that does not end there. A real record's
    headers are kilobytes: one whose HTTP headers run past a megabyte is refused too."""
    warc_end = _block_end(head, 0)
    if warc_end is None:
        return True
    # warcio reads HTTP headers in these records whatever their Content-Type says
    http = _HTTP_RECORD_TYPE.search(head, 0, warc_end) or b"application/http" in head[:warc_end].lower()
    return bool(http) and _block_end(head, warc_end) is None


_HTTP_RECORD_TYPE = re.compile(rb"(?im)^warc-type:[ \t]*(?:response|request|revisit)[ \t]*\r?$")


def _block_end(data: bytes, start: int) -> int | None:
    """The end of the header block starting at `start` (a blank line, CRLF or LF), or None."""
    ends = [i for i in (data.find(b"\r\n\r\n", start), data.find(b"\n\n", start)) if i >= 0]
    return min(ends) + 2 if ends else None


class UnboundedRecord(ValueError):
    """A member larger than its limit whose header lines do not end within `HEAD_LIMIT`."""


_GZIP_MAGIC = b"\x1f\x8b\x08"
_SCAN_CHUNK = 1024 * 1024
_PROBE_BYTES = 4096  # compressed bytes inflated to see whether a candidate member starts a WARC record


def next_record_start(fh: IO[bytes], after: int) -> int | None:
    """The offset of the first WARC record that starts past `after` in `fh`, or None: a gzip
    member whose first inflated bytes are a WARC version line, or (in a file that is not
    gzipped per record) a WARC version line followed by a line end. Used after damage (a
    bit flip, a block of zeros, a partial overwrite): the records behind it are intact in
    their own members and can be indexed and replayed by offset, as they would be had the
    damaged member been left out. One pass over the rest of the file, in bounded chunks."""
    at = after + 1
    overlap = len(_WARC_VERSIONS[0])
    while True:
        fh.seek(at)
        chunk = fh.read(_SCAN_CHUNK)
        if not chunk:
            return None
        for found in sorted(_candidates(chunk)):
            if _starts_record(fh, at + found):
                return at + found
        if len(chunk) < _SCAN_CHUNK:
            return None
        at += len(chunk) - overlap


def _candidates(chunk: bytes) -> Iterator[int]:
    """Positions in `chunk` where a record might start: gzip magic, or a version line (after a
    newline, or after zeros or another file's bytes that end without one)."""
    for needle in (_GZIP_MAGIC, *_WARC_VERSIONS):
        pos = chunk.find(needle)
        while pos >= 0:
            yield pos
            pos = chunk.find(needle, pos + 1)


def _starts_record(fh: IO[bytes], offset: int) -> bool:
    """Whether a WARC record (gzipped or not) starts at `offset`."""
    fh.seek(offset)
    probe = fh.read(_PROBE_BYTES)
    if probe.startswith(_GZIP_MAGIC):
        try:
            probe = zlib.decompressobj(_GZIP_WBITS).decompress(probe, 64)
        except zlib.error:
            return False
    return probe.startswith(_WARC_VERSIONS) and probe[len(_WARC_VERSIONS[0]) : len(_WARC_VERSIONS[0]) + 1] in (
        b"\r", b"\n")


def iter_members(
    fh: IO[bytes], offset: int, chunk: int = 1024 * 1024, limit: int = MAX_INFLATE
) -> Iterator[tuple[int, int, bytes | None]]:
    """`(offset, compressed length, inflated bytes)` of each gzip member read from `fh`
    (positioned at `offset`) until the end of the file. Where the data is not a complete
    gzip member inflating to at most `limit` bytes the last item is `(offset, 0, None)`:
    the caller lets warcio read from there (it streams, and stops where it is asked to),
    unless the member is larger than `limit` and its header lines do not end within its
    first `HEAD_LIMIT` bytes: that raises `UnboundedRecord` (warcio would hold the line)."""
    buf = b""
    view = memoryview(buf)
    pos = 0
    while True:
        if pos >= len(buf):
            buf, pos = fh.read(chunk), 0
            view = memoryview(buf)
            if not buf:
                return
        inflater = zlib.decompressobj(_GZIP_WBITS)
        parts: list[bytes] = []
        size = used = 0
        while not inflater.eof:
            if pos >= len(buf):
                buf, pos = fh.read(chunk), 0
                view = memoryview(buf)
                if not buf:  # truncated member
                    yield offset, 0, None
                    return
            piece = view[pos : pos + _STEP]
            try:
                out = inflater.decompress(piece)
            except zlib.error:
                yield offset, 0, None
                return
            parts.append(out)
            size += len(out)
            taken = len(piece) - len(inflater.unused_data)
            pos += taken
            used += taken
            if size > limit:
                head = bytearray()
                for part in parts:
                    head += part[: HEAD_LIMIT - len(head)]
                    if len(head) >= HEAD_LIMIT:
                        break
                if header_lines_unbounded(bytes(head)):
                    raise UnboundedRecord(f"the record at offset {offset} inflates to more than {limit} bytes and its "
                                          f"header lines do not end within {HEAD_LIMIT} bytes")
                yield offset, 0, None
                return
        yield offset, used, parts[0] if len(parts) == 1 else b"".join(parts)
        offset += used
