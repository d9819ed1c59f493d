"""Memory amplification within the byte caps: small gzip/zip inputs that inflate into
hundreds of MB of JSON or millions of bad CSV rows. Each reader runs in a fresh subprocess
whose own peak RSS (`VmHWM`, Rust allocations of polars included) must
stay under `PEAK_LIMIT_MB`, and its counts must still reconcile. The interpreter with Beam,
polars and pyarrow imported is ~230 MB of that; before the caps these inputs took 7-11 GB."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# ~230 MB is the interpreter with Beam, polars and pyarrow; the citations parser reads 8 MiB
# blocks into polars. The attacks this guards against took 7-11 GB before the caps.
PEAK_LIMIT_MB = 800


def _gzip_stream(path: Path, parts, level: int = 1) -> None:
    """Write a gzip file from an iterable of byte chunks (level 1: fast, still ~1000:1)."""
    comp = zlib.compressobj(level, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        for part in parts:
            out.write(comp.compress(part))
        out.write(comp.flush())


def _repeat(unit: bytes, total: int, chunk: int = 1 << 20):
    block = unit * (chunk // len(unit))
    for _ in range(total // len(block)):
        yield block


_PEAK = """def _own_peak_mb():
    # this process's own peak (VmHWM): ru_maxrss of a child started by a big parent (pytest
    # after many tests) reports the parent's peak on Linux
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

_PAPERS = """
import json, resource, sys, time
""" + _PEAK + """
from collections import Counter
from openmsd_build.papers.join import read_source_file
path, source = sys.argv[1], sys.argv[2]
started = time.perf_counter()
records = rejects = 0
counts = {}
reasons = Counter()
for tag, value in read_source_file(path, source, 4):
    if tag == "batch":
        records += value[1].num_rows
    elif tag == "reject":
        rejects += 1
        reasons[value["reason"]] += 1
    else:
        counts = value
print(json.dumps({"records": records, "rejects": rejects, "counts": counts, "reasons": reasons,
                  "seconds": time.perf_counter() - started,
                  "peak_mb": _own_peak_mb()}))
"""

_CITATIONS = """
import json, resource, sys, time
""" + _PEAK + """
from collections import Counter
from openmsd_build.citations.opencitations import REJECT_FLUSH_ROWS, parse_citation_file
started = time.perf_counter()
total = Counter()
rejects = edges = biggest = 0
reasons = Counter()
for table, rej, counts in parse_citation_file(sys.argv[1]):
    total.update(counts)
    edges += table.num_rows
    rejects += len(rej)
    biggest = max(biggest, len(rej))
    reasons.update(r["reason"] for r in rej)
print(json.dumps({"counts": total, "edges": edges, "rejects": rejects, "biggest_batch": biggest,
                  "flush": REJECT_FLUSH_ROWS, "reasons": reasons, "seconds": time.perf_counter() - started,
                  "peak_mb": _own_peak_mb()}))
"""


def _run(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _papers_reconcile(out: dict, source: str) -> None:
    counts = out["counts"]
    rejected = sum(v for k, v in counts.items() if k.startswith("rejected."))
    assert counts[f"read.{source}"] == out["records"] + rejected
    assert rejected == out["rejects"] + counts.get(f"rejects_suppressed.{source}", 0)


def test_200mib_line_of_empty_objects(tmp_path):
    """One JSON Lines line of 200 MiB `[{},{},...]` (~200 KB of gzip): 70M dicts if parsed.
    It is skipped in chunks as one `record_too_large` reject; the records around it are kept."""
    path = tmp_path / "bomb.jsonl.gz"
    _gzip_stream(path, [b'{"doi": "10.1234/before"}\n[', *_repeat(b"{},", 200 << 20), b'{}]\n',
                        b'{"doi": "10.1234/after"}\n'])
    assert path.stat().st_size < 2 << 20
    out = _run(_PAPERS, str(path), "unpaywall")
    assert out["peak_mb"] < PEAK_LIMIT_MB, out
    assert out["records"] == 2 and out["reasons"] == {"record_too_large": 1}, out
    _papers_reconcile(out, "unpaywall")


def test_crossref_file_of_30mib_empty_items(tmp_path):
    """`{"items": [{}, {}, ...]}` of 30 MiB: 10M items. The polars reader would need ~10 GB
    and orjson ~700 MB; the node count bound sends it to the line reader: one reject."""
    path = tmp_path / "crossref.json.gz"
    _gzip_stream(path, [b'{"items": [', *_repeat(b"{},", 30 << 20), b"{}]}"])
    out = _run(_PAPERS, str(path), "crossref")
    assert out["peak_mb"] < PEAK_LIMIT_MB, out
    assert out["records"] == 0 and out["rejects"] == 1, out
    _papers_reconcile(out, "crossref")


def test_crossref_file_of_items_under_the_caps_suppresses_rejects(tmp_path):
    """300k `{}` items (1 MB): under the document node cap, so parsed whole (orjson, not the
    1 KB-per-item polars path) and every item fails `no_doi`. Only `MAX_REJECTS_PER_FILE`
    reject rows leave the reader, the rest are counted, and read = records + rejected."""
    from openmsd_build.core.rejects import MAX_REJECTS_PER_FILE

    path = tmp_path / "crossref.json.gz"
    n = 300_000
    _gzip_stream(path, [b'{"items": [', b"{}," * (n - 1), b'{"DOI": "10.1234/ok"}]}'])
    out = _run(_PAPERS, str(path), "crossref")
    assert out["peak_mb"] < PEAK_LIMIT_MB, out
    assert out["records"] == 1 and out["rejects"] == MAX_REJECTS_PER_FILE, out
    assert out["counts"]["rejects_suppressed.crossref"] == n - 1 - MAX_REJECTS_PER_FILE
    _papers_reconcile(out, "crossref")


def test_opencitations_zip_of_a_million_bad_rows(tmp_path):
    """A zip whose member has 600k rows that all fail (malformed rows and bad DOIs), plus a
    member with one 64 MiB line: rejects leave in batches of at most `REJECT_FLUSH_ROWS`,
    at most `MAX_REJECTS_PER_FILE` rows for the whole zip, the rest counted as suppressed."""
    from openmsd_build.core.rejects import MAX_REJECTS_PER_FILE

    path = tmp_path / "coci.zip"
    rows = 600_000
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("bad.csv", "w") as member:
            member.write(b"oci,citing,cited\n")
            block = b"1,only-two\n2,nodoi,10.x\n" * 5_000
            for _ in range(rows // 10_000):
                member.write(block)
            member.write(b"3,10.1234/a,10.1234/b\n")
        with archive.open("long.csv", "w", force_zip64=True) as member:
            member.write(b"citing,cited\n10.1234/a,")
            for part in _repeat(b"x", 64 << 20):
                member.write(part)
            member.write(b"\n10.1234/c,10.1234/d\n")
    out = _run(_CITATIONS, str(path))
    counts = out["counts"]
    assert out["peak_mb"] < PEAK_LIMIT_MB, out
    assert out["biggest_batch"] <= out["flush"], out
    assert out["rejects"] == MAX_REJECTS_PER_FILE, out
    assert out["edges"] == counts["rows_parsed"] == 2, out
    drops = ("rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "rows_parsed")
    assert counts["rows_read"] == sum(counts.get(k, 0) for k in drops) == rows + 3, counts
    assert out["rejects"] + counts["rejects_suppressed"] == counts["malformed_row"] + counts["bad_doi"]
    assert counts["rows_too_long"] == 1


_WARC_BOMB = """
import json, os, resource, sys, tempfile
""" + _PEAK + """
from openmsd_build.text.fetch.warc_index import index_warc_file
from openmsd_build.text.fetch.warc_store import read_record
from openmsd_build.text.fetch import warc_stream
path, how = sys.argv[1], sys.argv[2]
rows, error = [], None
try:
    if how == "index":
        for row in index_warc_file(path):
            rows.append(row["url"])
    elif how == "record":
        offset = int(sys.argv[3])
        read_record(path, offset, 50 * 1024 * 1024, os.path.getsize(path) - offset)
    else:
        warc_stream.plain_copy(path)
except ValueError as exc:
    error = type(exc).__name__ + ": " + str(exc)
left = os.listdir(warc_stream._COPY_DIR) if warc_stream._COPY_DIR else []
print(json.dumps({"rows": rows, "error": error, "copies_left": left, "peak_mb": _own_peak_mb()}))
"""


def _warc_record(url: str) -> bytes:
    body = b"<html><head><title>A page</title></head><body><p>Text.</p></body></html>"
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
            f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def test_opencitations_csv_of_blank_lines(tmp_path):
    """16 MiB of blank lines (16M lines) between a header and a row: the columnar path decided
    8 MiB blocks of 8M lines each and peaked at 1.2 GB per block (2.1 GB with two decided at
    once); blocks now also end after `BLOCK_LINES` lines. The row after the flood is read, and
    every line is counted. (Plain CSV: a gzip of them is a compression bomb, cut at a million
    lines, `opencitations.MAX_LINES_PER_COMPRESSED_BYTE`.)"""
    path = tmp_path / "blank.csv"
    with path.open("wb") as out:
        out.write(b"oci,citing,cited\n")
        for part in _repeat(b"\n", 16 << 20):
            out.write(part)
        out.write(b"1,10.1234/a,10.1234/b\n")
    out = _run(_CITATIONS, str(path))
    assert out["peak_mb"] < PEAK_LIMIT_MB, out
    counts = out["counts"]
    assert out["edges"] == 1 and counts["rows_read"] == 1, out
    assert counts["input_lines"] == counts["lines_parsed"] == (16 << 20) + 2, out


def test_warc_members_that_inflate_to_a_line_without_end(tmp_path):
    """A 0.3 MB gzip member of 300 MiB of NUL bytes: warcio reads a record's header lines with
    `readline`, which holds the whole line (1.2-3.5 GB of memory for such a member of 0.25-1
    MB, 13.9 GB read by a cc-index row). A WARC gzipped as one stream (two records, then the
    zeros) was inflated to a temporary copy with no cap (1.1 GB of disk per MB), left behind
    when the run was killed. Each is now refused: the index keeps the rows before it, the row's
    record is unreadable, the copy stops at 100 times the file's size and is removed."""
    zeros = list(_repeat(b"\0", 300 << 20))
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb_member = b"".join(bomb.compress(block) for block in zeros) + bomb.flush()
    first = zlib.compress(_warc_record("https://example.org/a"), wbits=31)
    members = tmp_path / "members.warc.gz"
    members.write_bytes(first + bomb_member)
    out = _run(_WARC_BOMB, str(members), "index")
    assert out["rows"] == ["https://example.org/a"] and out["error"].startswith("UnboundedRecord"), out
    assert out["peak_mb"] < PEAK_LIMIT_MB, out
    out = _run(_WARC_BOMB, str(members), "record", str(len(first)))
    assert out["error"].startswith("UnboundedRecord") and out["peak_mb"] < PEAK_LIMIT_MB, out

    # the bomb as the first member, saying it is a PDF of 3 GB: warcio reads HTTP headers in a
    # response whatever its Content-Type, and the one-stream probe inflated to the claimed end
    head = (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.org/x\r\n"
            b"WARC-Record-ID: <urn:uuid:1>\r\nContent-Type: application/pdf\r\nContent-Length: 3000000000\r\n\r\n")
    lead = zlib.compressobj(9, zlib.DEFLATED, 31)
    first_bomb = tmp_path / "first.warc.gz"
    first_bomb.write_bytes(lead.compress(head) + b"".join(lead.compress(block) for block in zeros) + lead.flush())
    out = _run(_WARC_BOMB, str(first_bomb), "index")
    assert out["rows"] == [] and out["error"].startswith("UnboundedRecord") and out["peak_mb"] < PEAK_LIMIT_MB, out

    stream = tmp_path / "stream.warc.gz"
    _gzip_stream(stream, [_warc_record("https://example.org/a"), _warc_record("https://example.org/b"), *zeros])
    out = _run(_WARC_BOMB, str(stream), "copy")
    assert "inflates to more than" in out["error"] and out["copies_left"] == [], out
    assert out["peak_mb"] < PEAK_LIMIT_MB, out
