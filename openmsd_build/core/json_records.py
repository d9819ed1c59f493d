"""Reading snapshot files into JSON records, robustly: gzip or plain, JSON Lines or one
JSON document, truncated archives, invalid JSON, non-UTF-8 bytes, empty files.

A reader never raises for bad data. It yields `Item`s: either a parsed JSON object with its
origin (`file:line` or `file:#index`) or a failure with a reason code, so the stage can
count and reject it and carry on with the rest of the file.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

import orjson

from openmsd_build.core.paths import describe_failure

GZIP_MAGIC = b"\x1f\x8b"
CROSSREF_LIST_KEYS = (("items",), ("message", "items"))
"""Where a whole-document Crossref file keeps its works: a public-data-file chunk, a REST list
answer (the papers and contexts stages both read Crossref files)."""
READ_CHUNK = 1 << 20
# Caps on decompressed sizes: one JSON Lines record, and one whole-file JSON document
# (Crossref public-data-file chunks are tens of MB). Beyond them the input is rejected.
# The largest real records (works with thousands of authors or references) are a few MB.
MAX_RECORD_BYTES = 16 << 20
MAX_DOCUMENT_BYTES = 2 << 30
# Bytes alone do not bound memory: `{}` is 2 bytes of JSON and a 64-byte Python dict, so a
# few MB of `[{},{},...]` parse into GBs. Before `orjson.loads` the number of JSON values is
# bounded from above by counting `,` `{` `[` (two C passes over bytes already in memory;
# commas inside strings only make the bound looser). A real record has a few thousand values
# and a 5,000-work Crossref chunk about 1.1M; ~60 bytes of Python objects per value makes
# these caps ~60 MB for one record and ~180 MB for one whole document.
MAX_NODES_PER_RECORD = 1_000_000
MAX_NODES_PER_DOCUMENT = 3_000_000
# A gzip JSON Lines file inflating to more than this many times its compressed size in lines
# is a compression bomb: real snapshot files inflate 5-9x (the real samples: Unpaywall 7-8x,
# Crossref 5-9x, OpenAlex 6-7x), and a 1 MB gzip of newlines is 1 GB that the line reader
# spun through for six minutes, yielding nothing (10 MB: an hour). Past the ratio the rest of the file is one
# `compression_bomb` failure (the records before it are kept). Never before
# `INFLATION_FLOOR` bytes, so a small file of very repetitive records is read whole. (A whole
# JSON document is read whole under `MAX_DOCUMENT_BYTES` instead.)
MAX_INFLATION = 100
INFLATION_FLOOR = 32 << 20
INFLATION_CHECK_BYTES = 16 << 20


def count_nodes(data: bytes, objects: int | None = None) -> int:
    """An upper bound on the JSON values `orjson.loads(data)` would create (see above).
    `objects`: `data.count(b"{")` when the caller has it already (one pass fewer)."""
    if objects is None:
        objects = data.count(b"{")
    return data.count(b",") + objects + data.count(b"[") + 1


class RecordError(ValueError):
    """A record that cannot be used; `reason` is a short code counted in the stage stats."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class Item(NamedTuple):
    """One record read from a file: `obj` when it parsed, else `reason` (+ raw excerpt).

    A named tuple rather than a frozen dataclass: as immutable, and built in half the time
    (a frozen dataclass sets each field through `object.__setattr__`), which counts twice
    per line of a snapshot (the reader, then the parser)."""

    origin: str
    obj: Any = None
    reason: str | None = None
    detail: str | None = None
    raw: bytes | None = None


# Beam's test for a path with a scheme (`FileSystems.get_scheme`).
_SCHEME_RE = re.compile(r"^([a-zA-Z][-a-zA-Z0-9+.]*)://")


def open_binary(path: str) -> BinaryIO:
    """Open a local or remote file as raw bytes; gzip is detected by magic number (not by
    file name), so `.json.gz`, `.jsonl.gz`, `.gz` and uncompressed files all work.

    A path with a scheme (gs://, ...) is opened by Beam's `FileSystems`, imported only then;
    a local path is opened as Beam's local file system opens it (`io.open(path, "rb")`), so
    the papers stage's parsing processes never import Beam (~2 s of CPU per process)."""
    if _SCHEME_RE.match(path.strip()):
        from apache_beam.io.filesystem import CompressionTypes
        from apache_beam.io.filesystems import FileSystems

        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    else:
        raw = open(path, "rb")  # noqa: SIM115 - closed with the returned stream
    head = raw.read(2)
    source = Prepend(head, raw)
    rest = io.BufferedReader(source, buffer_size=READ_CHUNK)
    if head == GZIP_MAGIC:
        stream = gzip.GzipFile(fileobj=rest, mode="rb")
        stream.myfileobj = rest  # GzipFile closes `myfileobj` on close: no leaked handle
        stream.compressed_source = source  # type: ignore[attr-defined] # `inflation_limit` reads its count
        return stream  # type: ignore[return-value]
    return rest  # type: ignore[return-value]


def inflation_limit(stream: BinaryIO) -> int | None:
    """The decompressed bytes `stream` (from `open_binary`) may deliver so far before it is a
    compression bomb (`MAX_INFLATION` times the compressed bytes read, at least
    `INFLATION_FLOOR`); None for a stream that is not compressed."""
    source = getattr(stream, "compressed_source", None)
    if source is None:
        return None
    return max(INFLATION_FLOOR, MAX_INFLATION * source.consumed)


def _bomb(path: str, line_no: int, size: int, stream: BinaryIO, head: bytes | None = None) -> Item:
    source = getattr(stream, "compressed_source", None)
    return Item(f"{path}:{line_no}", reason="compression_bomb",
                detail=f"{size} bytes inflated from {source.consumed if source else '?'} compressed (more than "
                       f"{MAX_INFLATION}x): the rest of the file is not read", raw=head)


class Prepend(io.RawIOBase):
    """A raw stream that returns `head` before the rest of `stream` (magic sniffing)."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self._head = head
        self._stream = stream
        self.consumed = 0  # bytes handed on: the compressed size read so far (`inflation_limit`)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            self.consumed += n
            return n
        data = self._stream.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.consumed += n
        return n

    def close(self) -> None:
        self._stream.close()
        super().close()


def _decode_error(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "truncated_gzip"
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return "corrupt_gzip"
    return "read_error"


_BOM = b"\xef\xbb\xbf"
"""UTF-8's byte order mark: editors on Windows start a saved file with it, and JSON parsers
refuse it, so a file's first record (or a whole-file document) would be lost to it."""


def _parse_json(data: bytes, origin: str) -> Item:
    """One record, unless it would parse into more than `MAX_NODES_PER_RECORD` objects (a
    leading byte order mark is not part of it)."""
    data = data.removeprefix(_BOM)
    # `count_nodes` counts bytes, so a line shorter than the cap cannot exceed it: skip the
    # three passes over every line of a snapshot.
    nodes = count_nodes(data) if len(data) >= MAX_NODES_PER_RECORD else 0
    if nodes > MAX_NODES_PER_RECORD:
        return Item(origin, reason="record_too_complex",
                    detail=f"up to {nodes} JSON values > {MAX_NODES_PER_RECORD}", raw=data[:200])
    try:
        return Item(origin, obj=orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return Item(origin, reason="invalid_utf8", detail=str(exc)[:200], raw=data)
        return Item(origin, reason="invalid_json", detail=str(exc)[:200], raw=data)


def iter_json_lines(path: str) -> Iterator[Item]:
    """Yield one `Item` per non-blank line of a JSON Lines file (gzip or plain), parsed."""
    for item in iter_raw_lines(path):
        yield item if item.reason is not None else _parse_json(item.obj, item.origin)


def parse_raw_line(line: bytes, origin: str) -> Item:
    """One raw JSON line (from `iter_raw_lines`) -> a parsed `Item` or a failure."""
    return _parse_json(line, origin)


def iter_raw_lines(path: str) -> Iterator[Item]:
    """One `Item` per non-blank line of a JSON Lines file (gzip or plain) holding the raw
    bytes in `obj` (not parsed: decompression is serial, parsing can be spread over workers).
    A line longer than `MAX_RECORD_BYTES` is skipped (never held in memory whole) and yielded
    as a `record_too_large` failure, so a compression bomb of one endless line costs one reject."""
    line_no = 0
    try:
        with open_binary(path) as stream:
            # the bytes read as lines are checked every `INFLATION_CHECK_BYTES` against the
            # compressed bytes read (a compression bomb is refused, `MAX_INFLATION`; what costs
            # time is lines, so the rest of a line skipped in chunks below is not counted);
            # `check is None`: the file is not compressed
            inflated, check = 0, INFLATION_CHECK_BYTES if inflation_limit(stream) is not None else None
            while True:
                line = stream.readline(MAX_RECORD_BYTES + 1)
                if not line:
                    break
                line_no += 1
                inflated += len(line)
                if check is not None and inflated > check:
                    if inflated > inflation_limit(stream):
                        yield _bomb(path, line_no, inflated, stream, line[:200])
                        return
                    check = inflated + INFLATION_CHECK_BYTES
                if len(line) > MAX_RECORD_BYTES and not line.endswith(b"\n"):
                    head, size = line[:200], len(line)
                    while line and not line.endswith(b"\n"):
                        line = stream.readline(READ_CHUNK)
                        size += len(line)  # skipped in chunks: fast, so not counted as inflation
                    yield Item(f"{path}:{line_no}", reason="record_too_large",
                               detail=f"line of {size} bytes > {MAX_RECORD_BYTES}", raw=head)
                    continue
                if not line.strip():
                    continue
                yield Item(f"{path}:{line_no}", obj=line)
    except (EOFError, OSError, zlib.error) as exc:
        yield Item(f"{path}:{line_no + 1}", reason=_decode_error(exc), detail=describe_failure(exc))


def read_all(path: str) -> tuple[bytes | None, Item | None]:
    """(the whole decompressed file, None), or (None, a failure item): `file_too_large` beyond
    `MAX_DOCUMENT_BYTES`, so a compression bomb cannot exhaust the worker's memory; or, for a
    file damaged part way (a gzip cut short), (the bytes before the damage, the failure item),
    so its whole records before the cut are kept, as a JSON Lines file's are."""
    try:
        with open_binary(path) as stream:
            data = stream.read(MAX_DOCUMENT_BYTES + 1)
    except (EOFError, OSError, zlib.error) as exc:
        return _before_damage(path), Item(f"{path}:0", reason=_decode_error(exc), detail=describe_failure(exc))
    if len(data) > MAX_DOCUMENT_BYTES:
        return None, Item(f"{path}:0", reason="file_too_large",
                          detail=f"more than {MAX_DOCUMENT_BYTES} bytes decompressed", raw=data[:200])
    return data, None


def _before_damage(path: str) -> bytes | None:
    """The decompressed bytes of a damaged file up to its damage (read again in chunks: the
    one whole read above loses them when it raises); None when there are none, or more than
    `MAX_DOCUMENT_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    try:
        with open_binary(path) as stream:
            while chunk := stream.read(READ_CHUNK):
                size += len(chunk)
                if size > MAX_DOCUMENT_BYTES:
                    return None
                chunks.append(chunk)
    except (EOFError, OSError, zlib.error):
        pass
    return b"".join(chunks) or None


def iter_json_documents(path: str, list_keys: tuple[tuple[str, ...], ...]) -> Iterator[Item]:
    """Records of a file that is either one JSON document holding a list of records at one
    of `list_keys` (e.g. `("items",)` or `("message", "items")`), a single record (possibly
    wrapped, e.g. `{"message": {...}}`), or JSON Lines of records. A single document that
    is not a list wrapper is yielded as one item; the caller's parser decides if it is a
    record."""
    data, failure = read_all(path)
    if failure is not None:
        yield failure
    if data is not None:  # all of it, or what came before the damage
        yield from iter_documents_in(data, path, list_keys)


def iter_lines_in(data: bytes, path: str) -> Iterator[Item]:
    """JSON Lines records of bytes already in memory, one line at a time (no `split`, which
    would hold a second copy of a 2 GB file as a list of lines). Every line is held to the
    same caps as in `iter_json_lines`."""
    start = line_no = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        line_no += 1
        if end - start > MAX_RECORD_BYTES:
            yield Item(f"{path}:{line_no}", reason="record_too_large",
                       detail=f"line of {end - start} bytes > {MAX_RECORD_BYTES}", raw=data[start:start + 200])
        else:
            line = data[start:end]
            if line.strip():
                yield _parse_json(line, f"{path}:{line_no}")
        start = end + 1


def _items_or_lines(data: bytes, path: str, list_keys: tuple[tuple[str, ...], ...]) -> Iterator[Item]:
    """A document that is not valid JSON as a whole: JSON Lines when its first line is a JSON
    value of its own (each line a record, or a page of records such as an API response, whose
    records are all read: only the first page's were); else its list of records item by item
    (`tolerant.iter_list_items`, each item under the record caps, a bad item one failure), or,
    when it holds no such list, its lines as JSON Lines."""
    from openmsd_build.core.json_tolerant import find_list, iter_list_items

    if _first_line_is_json(data):
        for item in iter_lines_in(data, path):
            yield from (_records_of(item.obj, item.origin, item.origin, list_keys) if item.obj is not None else (item,))
        return
    start = find_list(data, list_keys)
    if start is None:
        yield from iter_lines_in(data, path)
    else:
        yield from iter_list_items(data, path, start)


def _first_line_is_json(data: bytes) -> bool:
    """Whether the first non-blank line of `data` is a whole JSON value, with more after it."""
    stripped = data.lstrip()
    end = stripped.find(b"\n")
    if end < 0 or not stripped[end:].strip() or end > MAX_RECORD_BYTES:
        return False
    try:
        orjson.loads(stripped[:end])
    except orjson.JSONDecodeError:
        return False
    return True


def _records_of(doc: object, prefix: str, single: str, list_keys: tuple[tuple[str, ...], ...]) -> Iterator[Item]:
    """The records of one parsed document: the list at one of `list_keys` or a top-level list
    (origins `prefix#index`), else the document itself, a single record possibly wrapped
    (origin `single`)."""
    for keys in list_keys:
        node = doc
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, list):
            for index, obj in enumerate(node):
                yield Item(f"{prefix}#{index}", obj=obj)
            return
    if isinstance(doc, list):
        for index, obj in enumerate(doc):
            yield Item(f"{prefix}#{index}", obj=obj)
        return
    yield Item(single, obj=doc)


def iter_documents_in(data: bytes, path: str, list_keys: tuple[tuple[str, ...], ...]) -> Iterator[Item]:
    """`iter_json_documents` on a file's bytes already read (`path` names the origins).

    A file that is not valid JSON as a whole has its list of records read item by item,
    each under the record caps (one malformed work is one reject, its neighbours are kept),
    or, with no such list, is read as JSON Lines. A file that could parse into more than
    `MAX_NODES_PER_DOCUMENT` values is never parsed whole: it is read as JSON Lines, where
    each line has its own caps (a one-line bomb becomes one `record_too_large` reject), so
    the item-by-item reading never sees more than that many values either."""
    data = data.removeprefix(_BOM)
    if not data.strip():
        return
    if count_nodes(data) > MAX_NODES_PER_DOCUMENT:
        yield from iter_lines_in(data, path)
        return
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        # One bad work, or JSON Lines: the list's items one by one, else line by line.
        yield from _items_or_lines(data, path, list_keys)
        return
    yield from _records_of(doc, f"{path}:", f"{path}:#0", list_keys)
