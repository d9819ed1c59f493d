"""Archive raw responses as WARC so extraction can be re-run without touching the network.

Each record is its own gzip member, so a row of the `fetch/` table can point at one
response by (file, offset, length) and `read_record` can seek straight to it — the same
layout Common Crawl uses. The archived HTTP payload is the *decoded* body: the
Content-Encoding / Transfer-Encoding headers are replaced by a plain Content-Length (the
original encoding is kept as `X-Archive-Orig-Content-Encoding`), which keeps the payload
digest equal to the `sha1` column and lets any WARC tool read the body directly.

Targets: a local path (appended to), a `scheme://` path opened through Beam's FileSystems
(new file; needs apache_beam), or any binary file object (e.g. what the lead's DoFn gets
from `FileSystems.create`). Offsets are counted from the bytes written, so file objects
without a usable `tell()` (cloud upload streams) work too.
"""

from __future__ import annotations

import io
import os
import threading
from typing import IO, NamedTuple

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from openmsd_build.core.paths import quiet_exception
from openmsd_build.text.fetch.http import reason_phrase
from openmsd_build.text.fetch.result import FetchResult, http_error, sha1_hex, sniff_content_type
from openmsd_build.text.fetch.warc_fast import MAX_INFLATE, Headers, body_is_raw, iter_members, parse_member

_DROP_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}
_PAYLOAD_TYPE = "WARC-Identified-Payload-Type"
# Records up to this size are range-read into memory whole; larger ones are streamed (only
# `max_bytes` of the body is ever decoded).
_RANGE_READ_MAX = 64 * 1024 * 1024
# Headers and slack the lean reading may inflate beyond `max_bytes` before leaving a large
# record to warcio (which inflates only what a short read needs).
_LEAN_SLACK = 1024 * 1024


class WarcRef(NamedTuple):
    """Where an archived response lives, plus the payload's hex SHA-1."""

    warc_file: str
    offset: int
    length: int
    sha1: str | None


def is_remote(path: str) -> bool:
    """`gs://`, `s3://` ... but not local paths or `file://`."""
    return "://" in path and not path.startswith("file://")


def _local(path: str) -> str:
    """Strip a `file://` prefix."""
    return path[len("file://") :] if path.startswith("file://") else path


def open_for_read(path: str) -> IO[bytes]:
    """Open a WARC for reading: local directly, remote through Beam's FileSystems with
    compression explicitly off (AUTO would gunzip `.warc.gz` and break offsets)."""
    if is_remote(path):
        from apache_beam.io.filesystem import CompressionTypes
        from apache_beam.io.filesystems import FileSystems

        return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    return open(_local(path), "rb")


class _CountingWriter(io.RawIOBase):
    """Pass-through that counts bytes, so offsets never depend on `tell()`."""

    def __init__(self, out: IO[bytes], start: int) -> None:
        super().__init__()
        self._out = out
        self.position = start

    def writable(self) -> bool:
        """Always writable."""
        return True

    def write(self, data) -> int:  # type: ignore[override]
        """Forward and count."""
        self._out.write(data)
        self.position += len(data)
        return len(data)

    def flush(self) -> None:
        """Forward flush."""
        self._out.flush()


class WarcWriter:
    """Append fetch results to one WARC file; thread-safe; returns a `WarcRef` per result.

    `name` is what refs report as `warc_file` (defaults to the path; give it for file
    objects). `start_offset` is the file object's current size when appending to a
    non-empty stream whose `tell()` cannot be trusted.
    """

    def __init__(
        self,
        target: str | IO[bytes],
        *,
        name: str | None = None,
        start_offset: int | None = None,
        write_request: bool = False,
        write_redirects: bool = True,
        user_agent: str | None = None,
    ) -> None:
        self._owns = isinstance(target, str)
        if isinstance(target, str):
            if is_remote(target):
                from apache_beam.io.filesystem import CompressionTypes
                from apache_beam.io.filesystems import FileSystems

                out: IO[bytes] = FileSystems.create(
                    target, mime_type="application/warc", compression_type=CompressionTypes.UNCOMPRESSED
                )
                start = 0
            else:
                local = _local(target)
                parent = os.path.dirname(local)
                if parent:
                    os.makedirs(parent, exist_ok=True)
                out = open(local, "ab")
                start = out.tell()
            self.name = name or target
        else:
            out = target
            if start_offset is None:
                try:
                    start_offset = target.tell()
                except (OSError, AttributeError, io.UnsupportedOperation):
                    start_offset = 0
            start = start_offset
            self.name = name or str(getattr(target, "name", "<stream>"))
        self._out = out
        self._counter = _CountingWriter(out, start)
        self._writer = WARCWriter(self._counter, gzip=True, warc_version="1.1")
        self._lock = threading.Lock()
        self.write_request = write_request
        self.write_redirects = write_redirects
        self.user_agent = user_agent

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Flush; close the file only when this writer opened it."""
        with self._lock:
            self._out.flush()
            if self._owns:
                self._out.close()

    def _response_record(
        self, uri: str, status: int, headers: dict[str, str], body: bytes, date: str, payload_type: str
    ):
        """A warcio response record with the decoded body and consistent length headers."""
        header_list = [(k, v) for k, v in headers.items() if k.lower() not in _DROP_HEADERS]
        encoding = headers.get("content-encoding")
        if encoding:
            header_list.append(("X-Archive-Orig-Content-Encoding", encoding))
        header_list.append(("Content-Length", str(len(body))))
        http_headers = StatusAndHeaders(f"{status} {reason_phrase(status)}".strip(), header_list, protocol="HTTP/1.1")
        warc_headers = {"WARC-Date": date}
        if payload_type:
            warc_headers[_PAYLOAD_TYPE] = payload_type
        return self._writer.create_warc_record(
            uri,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=http_headers,
            warc_headers_dict=warc_headers,
        )

    def _request_record(self, uri: str, date: str):
        """A minimal GET request record (what we sent, for provenance)."""
        from urllib.parse import urlsplit

        parts = urlsplit(uri)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = [("Host", parts.netloc)]
        if self.user_agent:
            headers.append(("User-Agent", self.user_agent))
        http_headers = StatusAndHeaders(f"GET {target} HTTP/1.1", headers, is_http_request=True)
        return self._writer.create_warc_record(
            uri, "request", http_headers=http_headers, warc_headers_dict={"WARC-Date": date}
        )

    def write(self, result: FetchResult) -> WarcRef | None:
        """Archive `result` (its redirect hops first, as 3xx records) and return where the
        final response went. Returns None when there is no faithful final answer to
        archive: no status (the last hop was refused or failed), or a 2xx whose body was
        refused (too large, wrong type, timeout); the redirects received are still written."""
        # The redirect hops were received and are archived under their own URLs even when
        # the chain then failed; the final answer only when there is one to archive.
        is_2xx = result.status is not None and 200 <= result.status < 300
        final = result.status is not None and not (is_2xx and result.body is None)
        body = result.body if is_2xx and result.body is not None else b""
        with self._lock:
            if self.write_redirects:
                for hop in result.redirects:
                    status = int(hop.get("status") or 302)
                    location = str(hop.get("location") or "")
                    record = self._response_record(
                        str(hop["url"]), status, {"Location": location}, b"", result.fetched_at, ""
                    )
                    self._writer.write_record(record)
            if not final:
                self._counter.flush()
                return None
            record = self._response_record(
                result.final_url, result.status, result.headers, body, result.fetched_at, result.content_type
            )
            offset = self._counter.position
            self._writer.write_record(record)
            length = self._counter.position - offset
            if self.write_request:
                request = self._request_record(result.final_url, result.fetched_at)
                request.rec_headers.add_header("WARC-Concurrent-To", record.rec_headers.get_header("WARC-Record-ID"))
                self._writer.write_record(request)
            self._counter.flush()
        return WarcRef(self.name, offset, length, sha1_hex(body))


def headers_dict(pairs: Headers) -> dict[str, str]:
    """Lower-cased HTTP headers, repeats joined with ", " in order: the one dict both the
    warcio and the lean reading build, so replay and the archive index agree."""
    headers: dict[str, str] = {}
    for key, value in pairs:
        key = key.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def record_status_headers(record) -> tuple[int | None, dict[str, str]]:
    """The HTTP status and lower-cased headers (repeats joined with ", ") of a warcio
    record: the one reading shared by replay and the archive index, so an index row's
    status and Location are exactly what replaying the record would see."""
    status_text = record.http_headers.get_statuscode() if record.http_headers else None
    status = int(status_text) if status_text and status_text.isdigit() else None
    return status, headers_dict(record.http_headers.headers if record.http_headers else [])


def _make_result(
    uri: str, status: int | None, headers: dict[str, str], body: bytes, payload_type: str | None, date: str
) -> FetchResult:
    """The FetchResult of an archived response, however it was parsed."""
    result = FetchResult(
        url=uri,
        final_url=uri,
        status=status,
        headers=headers,
        content_type=payload_type or sniff_content_type(body, headers.get("content-type")),
        body=body,
        fetched_at=date,
    )
    if status is None or not 200 <= status < 300:
        result.error = http_error(status) if status is not None else "bad_record"
        result.body = None
    return result


def _result_from_record(record, max_bytes: int | None) -> FetchResult:
    """A FetchResult from a parsed warcio response record."""
    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
    status, headers = record_status_headers(record)
    stream = record.content_stream()
    body = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
    return _make_result(
        uri,
        status,
        headers,
        body,
        record.rec_headers.get_header(_PAYLOAD_TYPE),
        record.rec_headers.get_header("WARC-Date") or "",
    )


def _lean_result(fh: IO[bytes], offset: int, max_bytes: int | None, chunk: int) -> FetchResult | None:
    """The record at `offset` read by `warc_fast` when it is a plain response in its own
    gzip member with a body warcio would not decode; None (fall back to warcio) otherwise.
    The same values `_result_from_record` gives: the body is `max_bytes + 1` bytes at most.
    A member inflating to much more than that is left to warcio, which stops early."""
    limit = MAX_INFLATE if max_bytes is None else min(MAX_INFLATE, max(max_bytes, 0) + _LEAN_SLACK)
    member = next(iter_members(fh, offset, chunk, limit), None)
    record = parse_member(member[2]) if member is not None and member[2] is not None else None
    if record is None or record.rec_type != "response" or not record.plain or not body_is_raw(record.http_headers):
        return None
    stop = record.block_end
    if max_bytes is not None:
        stop = min(stop, record.body_start + max(max_bytes + 1, 0))
    warc = record.warc_fields
    return _make_result(
        warc.get("warc-target-uri") or "",
        record.status,
        headers_dict(record.http_headers),
        record.data[record.body_start : stop],
        warc.get(_PAYLOAD_TYPE.lower()),
        warc.get("warc-date") or "",
    )


def read_range(path: str, offset: int, length: int) -> bytes:
    """Bytes `[offset, offset + length)` of a local or remote file: one record of a large
    archive (a Common Crawl WARC is ~1 GB) without reading the rest. Remote files are
    opened through Beam's FileSystems and seeked; for gs:// the reader's buffer is sized to
    the record, since the default (16 MB) would download far more than one record."""
    if not is_remote(path):
        with open(_local(path), "rb") as fh:
            fh.seek(offset)
            return fh.read(length)
    fh = _open_remote_range(path, length)
    try:
        fh.seek(offset)
        return fh.read(length)
    finally:
        fh.close()


def _open_remote_range(path: str, length: int) -> IO[bytes]:
    """A remote file opened for one range read: on gs:// with a buffer of `length` bytes
    (Beam's GCS filesystem has no public way to set it, so this falls back to
    FileSystems.open when its internals differ), elsewhere FileSystems.open."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    if path.startswith("gs://"):
        try:
            gcs = FileSystems.get_filesystem(path)._gcsIO()  # noqa: SLF001 - see docstring
            return gcs.open(path, "r", read_buffer_size=max(length, 64 * 1024))
        except (AttributeError, TypeError):
            pass
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def read_record(
    source: str | IO[bytes], offset: int, max_bytes: int | None = None, length: int | None = None
) -> FetchResult:
    """Re-read the response record at `offset` (from a `WarcRef` / the fetch table) as a
    FetchResult with the archived status, headers and body; `attempts` is 0. With the
    record's `length` (an archive index row) only those bytes are read (`read_range`).
    The common record shape is read by `warc_fast`; anything else by warcio, seeking back.
    A WARC gzipped as one stream is read from its inflated copy (`warc_stream`), whose
    offsets its index rows carry."""
    if isinstance(source, str):
        from openmsd_build.text.fetch.warc_stream import is_one_stream, plain_copy

        if is_one_stream(source):
            source = plain_copy(source)
    if offset < 0:
        raise ValueError(f"record offset {offset} is negative")
    if isinstance(source, str) and length and 0 < length <= _RANGE_READ_MAX:
        data = read_range(source, offset, length)
        lean = _lean_result(io.BytesIO(data), 0, max_bytes, len(data) or 1)
        return lean if lean is not None else _warcio_result(io.BytesIO(data), 0, max_bytes)
    fh = open_for_read(source) if isinstance(source, str) else source
    try:
        fh.seek(offset)
        lean = _lean_result(fh, offset, max_bytes, 16 * 1024)
        return lean if lean is not None else _warcio_result(fh, offset, max_bytes)
    finally:
        if isinstance(source, str):
            fh.close()


def _warcio_result(fh: IO[bytes], offset: int, max_bytes: int | None) -> FetchResult:
    """The record at `offset` read by warcio (the reference reading)."""
    fh.seek(offset)
    try:
        record = next(iter(ArchiveIterator(fh)))
    except Exception as exc:  # noqa: BLE001 - warcio quotes the bytes it could not read
        raise quiet_exception(exc) from None  # the same error, without the file's content
    if record.rec_type != "response":
        raise ValueError(f"record at offset {offset} is a {record.rec_type!r} record, not a response")
    return _result_from_record(record, max_bytes)
