"""`--fetch warc:` on archives as users have them: a WARC gzipped as one stream (not one
member per record) is read as warcio reads it, and a file that is not a WARC, or is empty,
is a counted reject naming the file instead of a stopped stage, and damage inside a WARC costs
only the records it covers."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest
from archive_samples import REDIRECT_URLS, add_papers, fetch_rows, write_redirect_warcs
from warcio.archiveiterator import ArchiveIterator

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.notices import stage_warnings
from openmsd_build.schemas import DOCUMENTS, REJECTS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch import WarcBackend, read_record
from openmsd_build.text.fetch.result import RECORD_UNREADABLE
from openmsd_build.text.fetch.warc_index import CUT_SHORT, DAMAGED, DAMAGED_BYTES, index_warc_file
from openmsd_build.text.fetch.warc_stream import archive_problem, is_one_stream

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]


def _one_stream(warcs: list[str], path: Path) -> str:
    """The records of `warcs`, inflated and gzipped again as ONE stream (as `gzip file.warc` does)."""
    path.write_bytes(gzip.compress(b"".join(gzip.decompress(Path(w).read_bytes()) for w in warcs)))
    return str(path)


def _warcio_urls(path: str) -> list[str]:
    """What a standard reader finds in the file (warcio refuses to seek into a one-stream
    gzip, but reads it from an inflated stream)."""
    with gzip.open(path, "rb") as fh:
        return [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh) if r.rec_type == "response"]


def test_one_stream_warc_indexes_and_reads_as_per_record(tmp_path):
    warcs = write_redirect_warcs(tmp_path / "members")
    one = _one_stream(warcs[:1], tmp_path / "one.warc.gz")
    assert is_one_stream(one) and not is_one_stream(warcs[0])
    rows, reference = list(index_warc_file(one)), list(index_warc_file(warcs[0]))
    assert [r["url"] for r in rows] == [r["url"] for r in reference]
    assert len(rows) == len(_warcio_urls(one))
    assert {r["warc_file"] for r in rows} == {one}
    for row, ref in zip(rows, reference, strict=True):
        got, want = read_record(one, row["offset"], None, row["length"]), read_record(warcs[0], ref["offset"], None)
        assert (got.status, got.headers, got.body) == (want.status, want.headers, want.body)
    # the whole-archive reference backend answers the same from either packing
    for url in REDIRECT_URLS:
        a, b = WarcBackend([one]).fetch(url), WarcBackend(warcs[:1]).fetch(url)
        assert (a.status, a.error, a.sha1) == (b.status, b.error, b.sha1)


def test_archive_problem_names_the_file(tmp_path):
    empty, text, gz_text = tmp_path / "empty.warc.gz", tmp_path / "notes.warc", tmp_path / "data.warc.gz"
    empty.write_bytes(b"")
    text.write_text("url,doi\nhttp://x,10.1/x\n")
    gz_text.write_bytes(gzip.compress(b'{"doi": "10.1/x"}\n' * 50))
    assert archive_problem(str(empty)) == ("archive_empty", f"{empty}: an empty file, not a WARC archive")
    for path in (text, gz_text):
        reason, detail = archive_problem(str(path))
        assert reason == "archive_not_warc" and detail.startswith(f"{path}: not a WARC archive")
    assert archive_problem(write_redirect_warcs(tmp_path / "ok")[0]) is None


def test_stage_reads_one_stream_and_rejects_non_warcs(tmp_path):
    warcs = write_redirect_warcs(tmp_path / "members")
    reference_out = tmp_path / "reference"
    add_papers(reference_out, REDIRECT_URLS)
    run_text(str(reference_out), "warc:" + ",".join(warcs), FNAPI)

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _one_stream(warcs[:1], mixed / "a-one-stream.warc.gz")
    (mixed / "b-second.warc.gz").write_bytes(Path(warcs[1]).read_bytes())
    (mixed / "c-empty.warc.gz").write_bytes(b"")
    (mixed / "d-notes.warc.gz").write_bytes(gzip.compress(b"not an archive at all\n" * 20))
    (mixed / "e-page.warc").write_bytes(b"<html><body>a saved page</body></html>")
    out = tmp_path / "out"
    add_papers(out, REDIRECT_URLS)
    counts = run_text(str(out), f"warc:{mixed}/*", FNAPI)

    assert counts["archive.files_indexed"] == 5
    assert counts["archive.rejected.archive_empty"] == 1
    assert counts["archive.rejected.archive_not_warc"] == 2
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "text"), schema=REJECTS).to_pylist()
    named = {r["key"]: r["reason"] for r in rejects if r["reason"].startswith("archive_")}
    assert named == {str(mixed / "c-empty.warc.gz"): "archive_empty",
                     str(mixed / "d-notes.warc.gz"): "archive_not_warc",
                     str(mixed / "e-page.warc"): "archive_not_warc"}
    # every URL answers as from the per-record archives; only the file names differ
    def _answers(rows):
        return {r["url"]: (r["status"], r["error"], r["sha1"]) for r in rows}

    assert _answers(fetch_rows(out)) == _answers(fetch_rows(reference_out))

    def _docs(where):
        return {r["doi"]: r["title"] for r in parquet_io.read_table(
            layout.documents_dir(str(where)), schema=DOCUMENTS).to_pylist()}

    assert _docs(out) == _docs(reference_out) and _docs(out)


def _record(url: str, title: str, claimed: object = None) -> bytes:
    """One WARC response record of a small page, whose Content-Length may lie (`claimed`)."""
    body = f"<html><head><title>{title}</title></head><body><p>{title}, an abstract.</p></body></html>".encode()
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
    length = len(block) if claimed is None else claimed
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{abs(hash(url))}>\r\n"
            f"WARC-Date: 2020-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {length}\r\n\r\n").encode()
    return gzip.compress(head + block + b"\r\n\r\n")


def test_a_record_of_negative_length_never_crashes_the_stage(tmp_path):
    """A record whose Content-Length is negative made the whole stage crash: warcio indexes it
    (with a length that is negative, or that names no readable record) and the replay's read
    raised. Now an index row that names no readable record is that URL's error and a reject,
    and the file's damage a reject of the file; neither quotes what the file holds."""
    urls = ["http://lies.example/good", "http://lies.example/negative"]
    warc = tmp_path / "lies.warc.gz"
    warc.write_bytes(_record(urls[0], "A good page") + _record(urls[1], "Negative about nitrate", -5))
    backend = WarcBackend([], index={urls[1]: (str(warc), -10, 50), urls[0]: (str(warc), 0, -482)})
    refused = backend.fetch(urls[1])
    assert refused.error == RECORD_UNREADABLE and "nitrate" not in refused.headers["x-error"]
    assert backend.fetch(urls[0]).status == 200  # a length that is not positive: read from the offset

    out = tmp_path / "out"
    add_papers(out, urls)
    counts = run_text(str(out), f"warc:{warc}", FNAPI)
    assert counts["fetch.ok"] == 1 and counts[f"fetch.error.{RECORD_UNREADABLE}"] == 1
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "text"), schema=REJECTS).to_pylist()
    assert sorted((r["reason"], r["key"]) for r in rejects) == [("archive_damaged", str(warc)),
                                                                (RECORD_UNREADABLE, urls[1])]
    assert not any("nitrate" in r["detail"] or "html" in r["detail"] for r in rejects)  # quotes nothing read


def test_index_leaves_out_a_record_of_negative_length(tmp_path):
    """warcio reads a record whose Content-Length lies short by enough as one of negative
    length; such a row sent the replay's range read a negative size. It is not indexed, and
    counted with the records cut short; warcio then reads on inside its block and finds no
    record there: the rest of the file is a damaged span, skipped and counted."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_warc_fast_path import RECORDS, _gz, _ours

    path = str(tmp_path / "case.warc.gz")
    _ours(path)
    with open(path, "ab") as fh:
        fh.write(_gz(RECORDS["cl_in_headers"]))
    counts: Counter = Counter()
    rows: list[dict] = []
    rows.extend(index_warc_file(path, counts=counts))  # warcio reads on inside the block: no record there
    assert rows and all(r["length"] > 0 for r in rows) and counts[CUT_SHORT] == 1
    assert counts[DAMAGED] == 1 and counts[DAMAGED_BYTES] > 0


def _flipped(member: bytes) -> bytes:
    """A gzip member with bytes flipped in its middle (bit rot, a bad copy)."""
    broken = bytearray(member)
    for i in range(len(broken) // 2, len(broken) // 2 + 12):
        broken[i] ^= 0x5A
    return bytes(broken)


@pytest.mark.parametrize("damage", ["flipped", "zeros", "other_bytes"])
def test_damage_in_the_middle_of_an_archive_costs_only_its_own_records(tmp_path, damage):
    """A span of a WARC where no record can be read (a damaged member, a block of zeros, another
    file's bytes written over it) cost every record after it: warcio stops there, so the rest
    of a 1 GB crawl file was lost for a bit flip. The records after the span start intact in
    their own members: they are indexed and replayed; the span is counted, warned about and
    named in one reject of the file (which quotes nothing it read)."""
    urls = [f"http://rot.example/{i}" for i in range(5)]
    members = [_record(url, f"Page number {i} about soil nitrate") for i, url in enumerate(urls)]
    bad = {"flipped": _flipped(members[2]), "zeros": b"\0" * 700,
           "other_bytes": b"%PDF-1.4 not a record\n" * 30}[damage]
    warc = tmp_path / "rot.warc.gz"
    warc.write_bytes(b"".join(members[:2]) + bad + b"".join(members[3:]))
    out = tmp_path / "out"
    add_papers(out, urls)
    counts = run_text(str(out), f"warc:{warc}", FNAPI)
    assert counts["fetch.ok"] == 4 and counts[DAMAGED] == 1
    assert counts[DAMAGED_BYTES] == len(bad) and counts["archive.files_damaged"] == 1
    assert not any(k.startswith("archive.rejected.") for k in counts)
    fetched = [(r["url"], r["status"]) for r in fetch_rows(out)]
    assert fetched == [(url, 200 if i != 2 else None) for i, url in enumerate(urls)]
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "text"), schema=REJECTS).to_pylist()
    assert [(r["reason"], r["key"]) for r in rejects] == [("archive_damaged", str(warc))]
    assert "nitrate" not in rejects[0]["detail"] and f"{len(bad)} bytes skipped" in rejects[0]["detail"]
    assert any("1 damaged span of an archive skipped" in w for w in stage_warnings("text", counts))


def test_a_file_of_damaged_spans_stops_at_the_cap(tmp_path):
    """Each damaged span is searched past and read again from the next record start: a file
    of thousands of near-records (a version line, then bytes that are no record) would be read
    and failed one by one. Past `MAX_DAMAGED_SPANS` the rest of the file is refused with a
    message (the stage's `archive_unreadable` reject), the spans before it counted."""
    from openmsd_build.text.fetch.warc_index import MAX_DAMAGED_SPANS

    near = gzip.compress(b"WARC/1.0\r\n") + b"JUNK\r\n"
    path = tmp_path / "near.warc.gz"
    path.write_bytes(_record("http://rot.example/first", "First") + near * (MAX_DAMAGED_SPANS + 500))
    counts: Counter = Counter()
    rows: list[dict] = []
    with pytest.raises(Exception, match=f"more than {MAX_DAMAGED_SPANS} damaged spans"):
        rows.extend(index_warc_file(str(path), counts=counts))
    assert [r["url"] for r in rows] == ["http://rot.example/first"] and counts[DAMAGED] == MAX_DAMAGED_SPANS


def test_cc_index_rows_with_negative_offsets_or_lengths(tmp_path):
    """An index extract row with a negative offset crashed the replay (OSError from seek), one
    with a negative length too (a negative read): the first is skipped and counted, the second
    read from its offset, as a row without a length is."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from openmsd_build.text.fetch.warc_index import read_cc_index

    warc = tmp_path / "cc.warc.gz"
    warc.write_bytes(_record("http://cc.example/a", "Page A"))
    index = tmp_path / "index.parquet"
    pq.write_table(pa.table({"url": ["http://cc.example/a", "http://cc.example/b"],
                             "warc_filename": [warc.name] * 2, "warc_record_offset": [0, -100],
                             "warc_record_length": [-10, 50], "fetch_status": [200, 200],
                             "content_mime_type": ["text/html"] * 2}), index)
    counts: Counter = Counter()
    rows = list(read_cc_index(str(index), str(tmp_path), counts))
    assert [(r["url"], r["offset"], r["length"]) for r in rows] == [("http://cc.example/a", 0, None)]
    assert counts["archive.index_rows_incomplete"] == 1
    backend = WarcBackend([], index={rows[0]["url"]: (rows[0]["warc_file"], rows[0]["offset"], rows[0]["length"])})
    assert backend.fetch("http://cc.example/a").status == 200


def test_damage_in_an_uncompressed_archive_costs_only_its_own_records(tmp_path):
    """In a WARC that is not gzipped per record (or one indexed from its inflated copy), the
    record after a block of zeros starts without a line end before it: it was looked for only
    after a newline, so it was lost with the damage."""
    urls = [f"http://plain.example/{i}" for i in range(4)]
    records = [gzip.decompress(_record(url, f"Page {i}")) for i, url in enumerate(urls)]
    path = tmp_path / "plain.warc"
    path.write_bytes(b"".join(records[:2]) + b"\0" * 700 + b"".join(records[2:]))
    counts: Counter = Counter()
    assert [r["url"] for r in index_warc_file(str(path), counts=counts)] == urls
    assert counts[DAMAGED] == 1


def _other_record(kind: str, url: str) -> bytes:
    """A request or metadata record for `url` (not a response: never indexed)."""
    block = (b"GET / HTTP/1.1\r\nHost: plain.example\r\n\r\n" if kind == "request"
             else b"fetchTimeMs: 12\r\noutlinks: 3\r\n")
    head = (f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Record-ID: <urn:uuid:{kind}-{abs(hash(url))}>\r\n"
            f"WARC-Date: 2020-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
            f"Content-Type: application/warc-fields\r\nContent-Length: {len(block)}\r\n\r\n").encode()
    return head + block + b"\r\n\r\n"


@pytest.mark.parametrize("compressed", [False, True])
def test_records_read_before_damage_are_not_counted_as_damaged(tmp_path, compressed):
    """The span counted as damaged starts where warcio stopped reading records, not after the
    last response: the request and metadata records between that response and the damage
    were read again, each failing at the same damage, and counted as damaged spans of their
    own (three spans and their bytes for one block of zeros)."""
    urls = [f"http://plain.example/{i}" for i in range(4)]
    pieces = []
    for i, url in enumerate(urls):
        pieces += [_other_record("request", url), gzip.decompress(_record(url, f"Page {i}")),
                   _other_record("metadata", url)]
    if compressed:  # one gzip member per record, the damage in a member that is not a tidy one
        pieces = [gzip.compress(p) for p in pieces]
    zeros = b"\0" * 700
    cut = 6  # after the second paper's metadata record
    path = tmp_path / ("crawl.warc.gz" if compressed else "crawl.warc")
    path.write_bytes(b"".join(pieces[:cut]) + zeros + b"".join(pieces[cut:]))
    counts: Counter = Counter()
    assert [r["url"] for r in index_warc_file(str(path), counts=counts)] == urls
    assert counts[DAMAGED] == 1 and counts[DAMAGED_BYTES] == len(zeros)


def test_an_unreadable_record_error_names_the_file_and_offset(tmp_path):
    """README ("Pages from Common Crawl"): errors about an unreadable record name the file and
    offset, never its bytes. A cc-index row whose offset is a few bytes off gave only
    `ArchiveLoadFailed: Unknown archive format, first line: <...>`, naming neither, so the row
    could not be found; the reject's detail now starts with `FILE @ OFFSET:`."""
    url = "http://lies.example/shifted"
    warc = tmp_path / "shifted.warc.gz"
    warc.write_bytes(_record(url, "Shifted about nitrate"))
    refused = WarcBackend([], index={url: (str(warc), 7, 300)}).fetch(url)
    assert refused.error == RECORD_UNREADABLE
    detail = refused.headers["x-error"]
    assert detail.startswith(f"{warc} @ 7: ") and "nitrate" not in detail
