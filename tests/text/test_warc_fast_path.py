"""The lean WARC reading (`warc_fast`) answers exactly as warcio: `read_record` and
`index_warc_file` against verbatim copies of their warcio-only versions, record by record,
on the project's own WARCs, on hand-made hostile records and members, and on the benchmark
WARC when it is present. Where warcio finds no record (damage), the reference index goes on
with warcio at the next record that starts intact, found by a plain byte-by-byte scan. Also checks that the common shape really takes the lean path."""

from __future__ import annotations

import dataclasses
import glob
import gzip
import io
import os
import random
import zlib
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from openmsd_build.core.paths import describe_failure
from openmsd_build.text.fetch import warc_index, warc_store
from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import REDIRECT_STATUSES, FetchResult, http_error, media_type, sniff_content_type
from openmsd_build.text.fetch.warc_index import index_warc_file
from openmsd_build.text.fetch.warc_store import WarcWriter, read_record

PAYLOAD_TYPE = "WARC-Identified-Payload-Type"
DATE = "2024-01-02T03:04:05Z"
MAX_BYTES = (None, 0, 7, 32 * 1024 * 1024)
BENCH = sorted(glob.glob(str(Path(__file__).parents[2] / "bench/data/text-2000/sample/warc/*.warc.gz")))


# -- the reference: the warcio-only code as it was before warc_fast ----------------------


def _status_headers(record) -> tuple[int | None, dict[str, str]]:
    status_text = record.http_headers.get_statuscode() if record.http_headers else None
    status = int(status_text) if status_text and status_text.isdigit() else None
    headers: dict[str, str] = {}
    if record.http_headers:
        for key, value in record.http_headers.headers:
            key = key.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return status, headers


def reference_result(record, max_bytes):
    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
    status, headers = _status_headers(record)
    stream = record.content_stream()
    body = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
    payload_type = record.rec_headers.get_header(PAYLOAD_TYPE)
    result = FetchResult(url=uri, final_url=uri, status=status, headers=headers,
                         content_type=payload_type or sniff_content_type(body, headers.get("content-type")),
                         body=body, fetched_at=record.rec_headers.get_header("WARC-Date") or "")
    if status is None or not 200 <= status < 300:
        result.error = http_error(status) if status is not None else "bad_record"
        result.body = None
    return result


def reference_read(fh, offset, max_bytes):
    fh.seek(offset)
    record = next(iter(ArchiveIterator(fh)))
    if record.rec_type != "response":
        raise ValueError(f"record at offset {offset} is a {record.rec_type!r} record, not a response")
    return reference_result(record, max_bytes)


def _reference_rows(fh, base, path):
    """warcio's rows of `fh` (the file from `base` on), offsets in the whole file."""
    iterator = ArchiveIterator(fh)
    for record in iterator:
        if record.rec_type != "response":
            continue
        uri = record.rec_headers.get_header("WARC-Target-URI")
        if not uri:
            continue
        status, headers = _status_headers(record)
        content_type = record.rec_headers.get_header(PAYLOAD_TYPE) or media_type(headers.get("content-type"))
        length = iterator.get_record_length()
        if getattr(record.raw_stream, "limit", 0) > 0:  # the block ends before its Content-Length
            continue
        if length <= 0:  # a Content-Length that lies short or negative: replaying it read a negative range
            continue
        yield {
            "url": canonical_url(uri),
            "warc_file": path,
            "offset": base + iterator.get_record_offset(),
            "length": length,
            "status": status,
            "content_type": content_type or None,
            "location": headers.get("location") if status in REDIRECT_STATUSES else None,
        }


def _reference_next_record(data: bytes, after: int) -> int | None:
    """The first position past `after` where a WARC record starts: a gzip member inflating to a
    version line, or a version line; a plain scan, byte by byte."""
    for pos in range(after + 1, len(data)):
        head = data[pos : pos + 4096]
        if head.startswith(b"\x1f\x8b\x08"):
            try:
                head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
            except zlib.error:
                continue
        if head[:8] in (b"WARC/1.0", b"WARC/1.1") and head[8:9] in (b"\r", b"\n"):
            return pos
    return None


def reference_index(path):
    """warcio over the file; where it finds no record, warcio again from the next record
    that starts intact (the records of the damaged span are lost)."""
    data = Path(path).read_bytes()
    start = 0
    while True:
        end = start
        try:
            for row in _reference_rows(io.BytesIO(data[start:]), start, path):
                end = max(end, row["offset"] + row["length"])
                yield row
            return
        except ArchiveLoadFailed:
            start = _reference_next_record(data, end)
            if start is None:
                return


# -- comparing ---------------------------------------------------------------------------------


def outcome(read, *args):
    """Every field of the FetchResult `read(*args)` returns (and its derived values), or
    the exception it raises."""
    try:
        result = read(*args)
    except Exception as exc:  # noqa: BLE001 - the exception is the outcome compared
        # as an error message shows it: read_record never quotes the bytes it read
        return ("raised", describe_failure(exc))
    return ("ok", dataclasses.asdict(result), result.sha1, result.n_bytes, result.ok)


def rows_outcome(rows):
    """The rows yielded and the exception that ended them, if any."""
    got = []
    try:
        for row in rows:
            got.append(row)
    except Exception as exc:  # noqa: BLE001
        return got, (type(exc).__name__, str(exc))
    return got, None


def assert_same(path: str, members: list[tuple[int, int]] | None = None) -> None:
    """`index_warc_file` and `read_record` (by range, by offset, from a stream, each
    `max_bytes`) equal the reference at every member start of `path`."""
    assert rows_outcome(index_warc_file(path)) == rows_outcome(reference_index(path)), path
    data = Path(path).read_bytes()
    for offset, length in members if members is not None else _members(data):
        for max_bytes in MAX_BYTES:
            expected = outcome(reference_read, io.BytesIO(data[offset : offset + length]), 0, max_bytes)
            assert outcome(read_record, path, offset, max_bytes, length) == expected, (offset, max_bytes)
            by_offset = outcome(reference_read, io.BytesIO(data), offset, max_bytes)
            assert outcome(read_record, path, offset, max_bytes) == by_offset, (offset, max_bytes)
            assert outcome(read_record, io.BytesIO(data), offset, max_bytes) == by_offset
            rest = len(data) - offset  # a range running past the record
            expected = outcome(reference_read, io.BytesIO(data[offset:]), 0, max_bytes)
            assert outcome(read_record, path, offset, max_bytes, rest) == expected, (offset, max_bytes)


def _members(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of each gzip member (best effort: stops at the first bad one)."""
    out, offset, view = [], 0, memoryview(data)
    while offset < len(data):
        inflater, at = zlib.decompressobj(16 + zlib.MAX_WBITS), offset
        try:
            while not inflater.eof and at < len(data):
                piece = view[at : at + 65536]
                inflater.decompress(piece)
                at += len(piece) - len(inflater.unused_data)
        except zlib.error:
            break
        if not inflater.eof:
            break
        out.append((offset, at - offset))
        offset = at
    return out or [(0, len(data))]


# -- building records -------------------------------------------------------------------------


def http(status_line: bytes, *lines: bytes, end: bytes = b"\r\n") -> bytes:
    return status_line + end + b"".join(line + end for line in lines) + end


def warc(headers: list[bytes], block: bytes, version: bytes = b"WARC/1.0", tail: bytes = b"\r\n\r\n",
         end: bytes = b"\r\n", length: bytes | None = None) -> bytes:
    """A record; a Content-Length of the block is added unless `length` is given (b"": none)."""
    length = str(len(block)).encode() if length is None else length
    headers = [*headers, b"Content-Length: " + length] if length else headers
    return version + end + b"".join(h + end for h in headers) + end + block + tail


def response(block: bytes, uri: bytes | None = b"http://x.example/page", extra: tuple[bytes, ...] = (),
             date: bool = True, **kw) -> bytes:
    headers = [b"WARC-Type: response"]
    headers += [b"WARC-Target-URI: " + uri] if uri is not None else []
    headers += [b"WARC-Date: " + DATE.encode()] if date else []
    return warc([*headers, *extra], block, **kw)


def page_response(*lines: bytes, body: bytes = b"<html><body>hello</body></html>",
                  status: bytes = b"HTTP/1.1 200 OK", **kw) -> bytes:
    return response(http(status, *lines) + body, **kw)


HTML = b"<!doctype html><html><head><title>t</title></head><body>" + b"words " * 400 + b"</body></html>"
CHUNKED = b"4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"

# name -> one WARC record (uncompressed); each is gzipped as its own member between two of
# our own records, and compared record by record and as an index
RECORDS: dict[str, bytes] = {
    "plain": page_response(b"Content-Type: text/html; charset=utf-8", body=HTML),
    "warc_1_1": page_response(b"Content-Type: text/html", version=b"WARC/1.1"),
    "payload_type": page_response(b"Content-Type: text/html", body=b"%PDF-1.4 x", extra=(PAYLOAD_TYPE.encode() + b": application/pdf",)),
    "sniffed_pdf": page_response(b"Content-Type: application/octet-stream", body=b"junk %PDF-1.7 ..."),
    "sniffed_bom_html": page_response(b"Content-Type: text/plain", body=b"\xef\xbb\xbf  <HTML><body>x"),
    "no_content_type": page_response(body=b"plain text"),
    "empty_body": page_response(b"Content-Type: text/html", b"Content-Length: 0", body=b""),
    "no_reason": page_response(b"Content-Type: text/html", status=b"HTTP/1.1 200"),
    "http_1_0": page_response(b"Content-Type: text/html", status=b"HTTP/1.0 200 OK"),
    "trailing_space_status": page_response(status=b"HTTP/1.1 200 OK  \t"),
    "redirect": page_response(b"Location: https://y.example/there", status=b"HTTP/1.1 301 Moved Permanently", body=b""),
    "redirect_relative": page_response(b"location:   /elsewhere?q=1  ", status=b"HTTP/1.1 307 Temporary Redirect", body=b""),
    "redirect_two_locations": page_response(b"Location: /a", b"LOCATION: /b", status=b"HTTP/1.1 302 Found", body=b""),
    "redirect_no_location": page_response(status=b"HTTP/1.1 302 Found", body=b""),
    "not_found": page_response(b"Content-Type: text/html", status=b"HTTP/1.1 404 Not Found", body=b"gone"),
    "status_000": page_response(status=b"HTTP/1.1 000 Zero"),
    "status_599": page_response(status=b"HTTP/1.1 599 Odd"),
    "folded": page_response(b"X-Folded: a", b"  b", b"\tc", b"Content-Type: text/html"),
    "folded_content_type": page_response(b"Content-Type: text/", b" html", body=b"x"),
    "folded_tab": page_response(b"Content-Type: text/html;", b"\tcharset=utf-8; x: y", body=b"x"),
    "duplicates": page_response(b"Set-Cookie: a=1", b"Content-Type: text/html", b"set-cookie: b=2",
                                b"Content-Type: application/pdf", body=b"x"),
    "case": page_response(b"CONTENT-TYPE: TEXT/HTML; Charset=X", b"x-MiXeD: Value"),
    "whitespace": page_response(b"Content-Type  :   text/html   ", b"X-Tab:\t v \t", b"X-Empty:", b"X-Spaces:    "),
    "invalid_line": page_response(b"this line has no colon", b"  nor its continuation", b"Content-Type: text/html"),
    "first_header_indented": page_response(b"  X-Indented: v", b"Content-Type: text/html"),
    "first_header_indented_folded": page_response(b" \tX-Indented : v", b"  w", b"Content-Type: text/html"),
    "colon_in_value": page_response(b"X-Time: 12:30:00", b": empty name", b"Content-Type: text/html"),
    "cr_in_value": page_response(b"X-Cr: a\rb", b"Content-Type: text/html"),
    "bare_lf_in_block": page_response(b"X-A: 1\nX-B: 2", b"X-C: 3\n", b"Content-Type: text/html"),
    "lf_only_http": response(http(b"HTTP/1.1 200 OK", b"Content-Type: text/html", end=b"\n") + b"body"),
    "lf_only_warc": response(http(b"HTTP/1.1 200 OK", b"Content-Type: text/html") + b"body", end=b"\n"),
    "latin1_header": page_response(b"X-Name: caf\xe9", b"Content-Type: text/html"),
    "utf8_header": page_response("X-Name: café ✓".encode(), b"Content-Type: text/html"),
    "nbsp_line_ends_headers": page_response(b"Content-Type: text/html", b"\xa0", b"X-After: hidden"),
    "utf8_nbsp_line": page_response(b"Content-Type: text/html", "\u00a0".encode(), b"X-After: hidden"),
    "x1c_line": page_response(b"Content-Type: text/html", b"\x1c", b"X-After: hidden"),
    "whitespace_line": page_response(b"Content-Type: text/html", b"   ", b"X-After: hidden"),
    "huge_headers": page_response(*(b"X-H%d: %d" % (i, i) for i in range(5000)), b"Content-Type: text/html"),
    "huge_value": page_response(b"X-Big: " + b"a" * 300_000, b"Content-Type: text/html"),
    "large_body": page_response(b"Content-Type: text/html", body=HTML * 200),
    # bodies warcio decodes
    "chunked": page_response(b"Transfer-Encoding: chunked", b"Content-Type: text/html", body=CHUNKED),
    "chunked_not_really": page_response(b"Transfer-Encoding: chunked", body=b"<html>not chunked</html>"),
    "chunked_capital": page_response(b"Transfer-Encoding: Chunked", body=CHUNKED),
    "chunked_second": page_response(b"Transfer-Encoding: identity", b"Transfer-Encoding: chunked", body=CHUNKED),
    "gzip": page_response(b"Content-Encoding: gzip", b"Content-Type: text/html", body=gzip.compress(HTML)),
    "gzip_upper": page_response(b"content-encoding: GZIP", body=gzip.compress(HTML)),
    "gzip_not_gzip": page_response(b"Content-Encoding: gzip", body=HTML),
    "deflate": page_response(b"Content-Encoding: deflate", body=zlib.compress(HTML)),
    "deflate_raw": page_response(b"Content-Encoding: deflate", body=zlib.compress(HTML)[2:-4]),
    "br": page_response(b"Content-Encoding: br", body=b"\x8b\x02\x80hello\x03"),
    "identity": page_response(b"Content-Encoding: identity", b"Content-Type: text/html"),
    "empty_encoding": page_response(b"Content-Encoding:", b"Content-Type: text/html"),
    "unknown_encoding": page_response(b"Content-Encoding: x-snappy", body=b"\x00\x01"),
    "gzip_chunked": page_response(b"Content-Encoding: gzip", b"Transfer-Encoding: chunked",
                                  body=b"%x\r\n" % len(gzip.compress(HTML)) + gzip.compress(HTML) + b"\r\n0\r\n\r\n"),
    "orig_encoding_kept": page_response(b"X-Archive-Orig-Content-Encoding: gzip", b"Content-Type: text/html"),
    # odd status lines
    "status_words": page_response(status=b"HTTP/1.1 abc OK"),
    "status_two_spaces": page_response(status=b"HTTP/1.1  200 OK"),
    "status_icy": page_response(status=b"ICY 200 OK"),
    "status_tab": page_response(status=b"HTTP/1.1 200\tOK"),
    "status_empty": response(b"\r\nContent-Type: text/html\r\n\r\nbody"),
    "status_blank": response(b"   \r\nContent-Type: text/html\r\n\r\nbody"),
    "status_four_digits": page_response(status=b"HTTP/1.1 2000 X"),
    "status_http2": page_response(status=b"HTTP/2 200"),
    "status_superscript": page_response(status="HTTP/1.1 ²00 OK".encode()),
    "status_lower": page_response(status=b"http/1.1 200 OK"),
    "status_glued": page_response(status=b"HTTP/1.1 200OK"),
    "status_only": response(b"HTTP/1.1 200 OK"),
    "http_unterminated": response(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"),
    # WARC headers and lengths
    "cl_too_small": page_response(b"Content-Type: text/html", body=HTML, length=b"200"),
    "cl_in_headers": page_response(b"Content-Type: text/html", body=HTML, length=b"30"),
    "cl_too_large": page_response(b"Content-Type: text/html", body=b"short", length=b"100000"),
    "cl_words": page_response(body=b"x", length=b"abc"),
    "cl_negative": page_response(body=b"x", length=b"-5"),
    "cl_plus": page_response(body=b"x", length=b"+60"),
    "cl_zero": page_response(body=b"x", length=b"0"),
    "cl_missing": page_response(body=b"x", length=b""),
    "cl_twice": page_response(body=b"x", extra=(b"Content-Length: 5",)),
    "warc_type_twice": page_response(body=b"x", extra=(b"WARC-Type: request",)),
    "warc_header_folded": page_response(body=b"x", extra=(b"WARC-Note: a", b"  b")),
    "warc_header_invalid": page_response(body=b"x", extra=(b"not a header",)),
    "warc_latin1": page_response(body=b"x", extra=(b"WARC-Note: \xe9t\xe9",)),
    "version_0_18": page_response(body=b"x", version=b"WARC/0.18"),
    "version_lower": page_response(body=b"x", version=b"warc/1.0"),
    "version_spaces": page_response(body=b"x", version=b"WARC/1.0   "),
    "no_date": page_response(body=b"x", date=False),
    "no_target_uri": page_response(body=b"x", uri=None),
    "empty_target_uri": page_response(body=b"x", uri=b""),
    "bracketed_uri": page_response(body=b"x", uri=b"<http://x.example/b>"),
    "spaced_uri": page_response(body=b"x", uri=b"http://x.example/a b"),
    "upper_scheme_uri": page_response(body=b"x", uri=b"HTTP://x.example/"),
    "dns_uri": response(b"20240102030405\nexample.com. 300 IN A 1.2.3.4\n", uri=b"dns:example.com"),
    "no_tail": page_response(body=b"x", tail=b""),
    "long_tail": page_response(body=b"x", tail=b"\r\n" * 9 + b" \t\r\n"),
    "junk_tail": page_response(body=b"x", tail=b"\r\nJUNK\r\nMORE\r\n"),
    "junk_tail_first": page_response(body=b"x", tail=b"JUNK\r\n\r\n"),
    # not responses
    "request": warc([b"WARC-Type: request", b"WARC-Target-URI: http://x.example/"],
                    b"GET / HTTP/1.1\r\nHost: x.example\r\n\r\n"),
    "request_no_uri": warc([b"WARC-Type: request"], b"GET / HTTP/1.1\r\n\r\n"),
    "request_spaced_uri": warc([b"WARC-Type: request", b"WARC-Target-URI: http://x.example/a b"], b"GET / HTTP/1.1\r\n\r\n"),
    "metadata": warc([b"WARC-Type: metadata", b"WARC-Target-URI: http://x.example/"], b"fetch: 1\n"),
    "warcinfo": warc([b"WARC-Type: warcinfo"], b"software: x\n"),
    "revisit_empty": warc([b"WARC-Type: revisit", b"WARC-Target-URI: http://x.example/"], b""),
    "revisit_headers": warc([b"WARC-Type: revisit", b"WARC-Target-URI: http://x.example/"], http(b"HTTP/1.1 200 OK") + b"x"),
    "resource": warc([b"WARC-Type: resource", b"WARC-Target-URI: http://x.example/f"], b"abc"),
    "no_type": warc([b"WARC-Target-URI: http://x.example/"], b"abc"),
}

# the records the lean path reads itself (everything else must fall back to warcio)
LEAN = {
    "plain", "warc_1_1", "payload_type", "sniffed_pdf", "sniffed_bom_html", "no_content_type", "empty_body",
    "no_reason", "http_1_0", "trailing_space_status", "redirect", "redirect_relative", "redirect_two_locations",
    "redirect_no_location", "not_found", "status_000", "status_599", "folded", "folded_content_type", "duplicates",
    "first_header_indented_folded", "folded_tab",
    "case", "whitespace", "invalid_line", "first_header_indented", "colon_in_value", "cr_in_value", "lf_only_http",
    "bare_lf_in_block",
    "lf_only_warc", "latin1_header", "utf8_header", "nbsp_line_ends_headers", "utf8_nbsp_line", "x1c_line",
    "whitespace_line", "huge_headers", "huge_value", "large_body", "chunked_capital", "chunked_second", "br",
    "identity", "empty_encoding", "unknown_encoding", "orig_encoding_kept", "cl_too_small", "warc_type_twice",
    "warc_header_folded", "warc_header_invalid", "warc_latin1", "version_spaces", "no_date", "no_tail", "long_tail",
    "junk_tail", "junk_tail_first",
}


def _gz(record: bytes) -> bytes:
    return gzip.compress(record, mtime=0)


def _ours(path: str) -> None:
    """A few records from the project's writer (appended)."""
    with WarcWriter(path, write_request=True, user_agent="test/1") as writer:
        writer.write(FetchResult(url="http://o.example/a", final_url="http://o.example/b", status=200,
                                 headers={"Content-Type": "text/html", "Content-Encoding": "gzip", "X-Y": "z"},
                                 body=HTML, content_type="text/html", fetched_at=DATE,
                                 redirects=[{"url": "http://o.example/a", "status": 302, "location": "/b"}]))
        writer.write(FetchResult(url="http://o.example/p.pdf", final_url="http://o.example/p.pdf", status=200,
                                 headers={"content-type": "application/pdf"}, body=b"%PDF-1.4\n" + os.urandom(3000),
                                 content_type="application/pdf", fetched_at=DATE))
        writer.write(FetchResult(url="http://o.example/empty", final_url="http://o.example/empty", status=204,
                                 headers={}, body=b"", content_type="", fetched_at=DATE))
        writer.write(FetchResult(url="http://o.example/gone", final_url="http://o.example/gone", status=410,
                                 headers={"Content-Type": "text/html"}, fetched_at=DATE))


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_hostile_record(tmp_path, name):
    path = str(tmp_path / "case.warc.gz")
    _ours(path)
    with open(path, "ab") as fh:
        fh.write(_gz(RECORDS[name]))
    _ours(path)
    assert_same(path)


def test_lean_path_is_taken(tmp_path):
    """The plain shapes are read without warcio; every other one falls back."""
    for name, record in RECORDS.items():
        member = _gz(record)
        lean = warc_store._lean_result(io.BytesIO(member), 0, None, len(member)) is not None
        assert lean == (name in LEAN), name


def test_own_writer_never_uses_warcio(tmp_path, monkeypatch):
    path = str(tmp_path / "ours.warc.gz")
    for _ in range(3):
        _ours(path)
    expected = rows_outcome(reference_index(path))
    data = Path(path).read_bytes()
    expected_reads = {(o, m): outcome(reference_read, io.BytesIO(data[o : o + n]), 0, m)
                      for o, n in _members(data) for m in MAX_BYTES}

    def refuse(*args, **kwargs):
        raise AssertionError("warcio used")

    monkeypatch.setattr(warc_index, "_warcio_rows", refuse)
    monkeypatch.setattr(warc_store, "_warcio_result", refuse)
    assert rows_outcome(index_warc_file(path)) == expected
    rows = expected[0]
    assert len(rows) == 15 and {r["status"] for r in rows} == {200, 204, 302, 410}
    for row in rows:
        for max_bytes in MAX_BYTES:
            got = outcome(read_record, path, row["offset"], max_bytes, row["length"])
            assert got == expected_reads[(row["offset"], max_bytes)]


def _random_record(size: int, rng: random.Random) -> bytes:
    body = rng.randbytes(size)  # incompressible: members of a known size
    return page_response(b"Content-Type: application/octet-stream", body=body, uri=b"http://r.example/%d" % size)


def _corrupt_middle(member: bytes) -> bytes:
    broken = bytearray(member)
    for i in range(len(broken) // 2, len(broken) // 2 + 40):
        broken[i] ^= 0x5A
    return bytes(broken)


def _corrupt_crc(member: bytes) -> bytes:
    return member[:-8] + bytes(b ^ 0xFF for b in member[-8:-4]) + member[-4:]


# name -> the members after a run of good ones (ending the file unless more follow)
MEMBERS = {
    "truncated": lambda good: [good[0][: len(good[0]) // 2]],
    "truncated_then_more": lambda good: [good[0][: len(good[0]) // 2], good[1]],
    "corrupt_middle": lambda good: [_corrupt_middle(good[0]), good[1]],
    "corrupt_crc": lambda good: [_corrupt_crc(good[0]), good[1]],
    "two_records_one_member": lambda good: [_gz(RECORDS["plain"] + RECORDS["redirect"]), good[1]],
    "record_over_two_members": lambda good: [_gz(RECORDS["plain"][:300]), _gz(RECORDS["plain"][300:]), good[1]],
    "empty_member": lambda good: [gzip.compress(b""), good[1]],
    "empty_member_last": lambda good: [gzip.compress(b"")],
    "garbage_after": lambda good: [b"garbage after the last member\r\n"],
    "newlines_after": lambda good: [b"\r\n\r\n"],
    "zeros_after": lambda good: [b"\x00" * 100],
    "uncompressed_record": lambda good: [RECORDS["plain"], good[1]],
    "named_member": lambda good: [_named_gzip(RECORDS["plain"]), good[1]],
}


def _named_gzip(data: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(filename="record.warc", mode="wb", fileobj=out, mtime=1) as gz:
        gz.write(data)
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(MEMBERS))
@pytest.mark.parametrize("pad", [0, 1, 2])
def test_hostile_members(tmp_path, name, pad):
    """Bad members after good ones, at several positions against warcio's 16 KiB blocks."""
    rng = random.Random(f"{name}{pad}")
    good = [_gz(_random_record(rng.randrange(500, 20_000), rng)) for _ in range(2)]
    lead = [_gz(_random_record(rng.randrange(100, 40_000), rng)) for _ in range(pad + 1)]
    members = lead + MEMBERS[name](good)
    path = str(tmp_path / "members.warc.gz")
    Path(path).write_bytes(b"".join(members))
    assert_same(path, _spans(members))


def _spans(pieces: list[bytes]) -> list[tuple[int, int]]:
    """(offset, length) of each piece in the file they were written to, in order."""
    spans, at = [], 0
    for piece in pieces:
        spans.append((at, len(piece)))
        at += len(piece)
    return spans


@pytest.mark.parametrize("start", range(0, 16384, 1361))
def test_corrupt_member_at_each_block_offset(tmp_path, start):
    """Where warcio resumes after a damaged member depends on its block boundaries."""
    rng = random.Random(start)
    lead = _gz(_random_record(max(0, start - 400), rng))  # ~start bytes: the bad member starts near `start`
    bad = _corrupt_middle(_gz(_random_record(rng.randrange(2000, 40_000), rng)))
    path = str(tmp_path / "aligned.warc.gz")
    Path(path).write_bytes(lead + bad + _gz(RECORDS["plain"]) + _gz(RECORDS["redirect"]))
    assert rows_outcome(index_warc_file(path)) == rows_outcome(reference_index(path))


@pytest.mark.parametrize("compress", [True, False])
def test_a_file_cut_inside_its_last_record(tmp_path, compress, caplog):
    """A WARC cut short (a partial download or copy): warcio hands the last record over as if
    it were whole, which would replay its first bytes as the complete page. It is left out
    of the index, counted and logged; the records before it are indexed as they are."""
    rng = random.Random(7)
    records = [_random_record(size, rng) for size in (3000, 5000, 8000)]
    pieces = [_gz(r) if compress else r for r in records]
    path = tmp_path / ("cut.warc.gz" if compress else "cut.warc")
    whole = b"".join(pieces)
    path.write_bytes(whole[: len(whole) - len(pieces[-1]) // 2])
    counts: Counter = Counter()
    rows = list(index_warc_file(str(path), counts=counts))
    assert [r["url"] for r in rows] == ["http://r.example/3000", "http://r.example/5000"]
    assert [r["offset"] for r in rows] == [offset for offset, _ in _spans(pieces)[:2]]
    assert counts == Counter({warc_index.CUT_SHORT: 1})
    assert "http://r.example/8000" in caplog.text and "not indexed" in caplog.text


def test_uncompressed_warc(tmp_path):
    path = str(tmp_path / "plain.warc")
    records = [RECORDS[n] for n in ("plain", "request", "redirect", "chunked", "folded", "not_found")]
    Path(path).write_bytes(b"".join(records))
    assert_same(path, _spans(records))


def test_whole_file_gzip(tmp_path):
    """A WARC gzipped as one stream (warcio reads it inflated but will not seek into it) is
    read as its inflated records are: the same rows, offsets in the inflated stream, the
    file's own name; each record read from those offsets as from the uncompressed WARC."""
    raw = b"".join(RECORDS[n] for n in ("plain", "redirect", "not_found"))
    path, plain = str(tmp_path / "one-member.warc.gz"), str(tmp_path / "inflated.warc")
    Path(path).write_bytes(_gz(raw))
    Path(plain).write_bytes(raw)
    expected = [{**row, "warc_file": path} for row in reference_index(plain)]
    assert rows_outcome(index_warc_file(path)) == (expected, None)
    for row in expected:
        for max_bytes in MAX_BYTES:
            want = outcome(reference_read, io.BytesIO(raw), row["offset"], max_bytes)
            assert outcome(read_record, path, row["offset"], max_bytes, row["length"]) == want
            assert outcome(read_record, path, row["offset"], max_bytes) == want


def test_empty_file(tmp_path):
    path = str(tmp_path / "empty.warc.gz")
    Path(path).write_bytes(b"")
    assert_same(path, [(0, 0)])


@pytest.mark.skipif(not BENCH, reason="benchmark WARC not generated")
def test_benchmark_warc():
    """Every record of the benchmark WARC: same index rows, and the same answer read at each
    member (responses, requests, warcinfo) by range and by offset."""
    path = BENCH[0]
    rows = list(index_warc_file(path))
    assert rows == list(reference_index(path))
    data = Path(path).read_bytes()
    members = _members(data)
    assert {(r["offset"], r["length"]) for r in rows} < set(members)
    for offset, length in members:
        for max_bytes in (None, 32 * 1024 * 1024):
            expected = outcome(reference_read, io.BytesIO(data[offset : offset + length]), 0, max_bytes)
            assert outcome(read_record, path, offset, max_bytes, length) == expected
        assert outcome(read_record, path, offset, 0) == outcome(reference_read, io.BytesIO(data), offset, 0)
