"""Every cap holds on what a step produces, at every step that can grow a field:

- an OpenAlex abstract rebuilt from its inverted index (a 1 MB word listed at thousands of
  positions is a small record that would expand to GBs) is bounded while it is built;
- `urls` / `relations`, capped per source record, are capped again after the records of one
  DOI are merged (both merges: `merge_fast` and `merge_reference`);
- text extracted from a PDF whose one compressed content stream is drawn many times per
  page and shared by every page is bounded by `text.extract.caps`, so no field is larger
  than the body cap of every source (`fetch.result.MAX_BODY_BYTES`).

Sizes and peaks are measured in a fresh subprocess (`VmHWM`), as in test_amplification."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pyarrow as pa
from pdf_bytes import pdf_file

from openmsd_build.papers.caps import FIELD_CAPS, LIST_CAPS, MERGED_LIST_CAPS
from openmsd_build.papers.join import projected_table
from openmsd_build.papers.merge_fast import merge_frame
from openmsd_build.papers.merge_reference import merge_records
from openmsd_build.papers.sources.openalex import parse_openalex, rebuild_abstract
from openmsd_build.text.extract.caps import MAX_CONTENT_CHARS, MAX_FIELD_UTF8_BYTES, cap_extraction
from openmsd_build.text.fetch.config import FetchConfig
from openmsd_build.text.fetch.result import MAX_BODY_BYTES

REPO = Path(__file__).resolve().parents[2]
PEAK_LIMIT_MB = 800  # the interpreter with pyarrow/polars/pdfium is ~200 MB of it

_PEAK = """
def _own_peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""


def _run(script: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _PEAK + script, *args], capture_output=True, text=True,
                          timeout=600, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- inverted index

def test_inverted_index_is_bounded_while_it_expands():
    assert rebuild_abstract({"b": [1], "a": [0, 2]}) == "a b a"
    text = rebuild_abstract({"x" * 1_000_000: list(range(10_000))})
    assert len(text) == FIELD_CAPS["abstract"] + 1  # one over: the field cap still counts the cut
    text = rebuild_abstract({"w": list(range(0, 2_000_000, 2))})
    assert len(text) <= FIELD_CAPS["abstract"] + 1


def test_openalex_bomb_record_through_the_projection(tmp_path):
    """A 1 MB word at 100,000 positions: 1.6 MB of JSON that would be a 100 GB abstract."""
    record = {"id": "W1", "doi": "https://doi.org/10.1000/bomb", "title": "T",
              "abstract_inverted_index": {"x" * 1_000_000: list(range(100_000)), "y": [100_001]}}
    path = tmp_path / "works.jsonl"
    path.write_text(json.dumps(record) + "\n")
    result = _run("""
import json, sys, time
from collections import Counter
from openmsd_build.papers.join import read_source_file
started = time.perf_counter()
longest = 0
counts = {}
for tag, value in read_source_file(sys.argv[1], "openalex", 2):
    if tag == "batch":
        longest = max(len(a or "") for a in value[1].column("abstract").to_pylist())
    elif tag == "counts":
        counts = value
print(json.dumps({"longest": longest, "counts": counts, "seconds": time.perf_counter() - started,
                  "peak_mb": _own_peak_mb()}))
""", str(path))
    assert result["longest"] <= FIELD_CAPS["abstract"]
    assert result["counts"]["truncated.openalex.abstract"] == 1
    assert result["peak_mb"] < PEAK_LIMIT_MB, result
    print("openalex bomb:", result)


def test_parse_openalex_never_builds_past_the_cap():
    record = {"doi": "10.1000/x", "abstract_inverted_index": {"ab" * 50_000: list(range(5_000))}}
    assert len(parse_openalex(record)["abstract"]) <= FIELD_CAPS["abstract"] + 1


# --------------------------------------------------------------------------- merged keys

def _record(doi: str, source: str, k: int, n_urls: int, n_relations: int) -> dict:
    return {
        "doi": doi, "source": source, "origin": f"{source}.json:{k}", "title": f"T {k}", "titles": [],
        "abstract": None, "venue": None, "publisher": None, "year": None, "type": None, "categories": [],
        "publisher_language": None, "license": None, "is_oa": None,
        "urls": [{"url": f"https://h{k}.example/{i}", "kind": "landing", "host_type": None, "license": None,
                  "version": None, "source": source, "rank": i} for i in range(n_urls)],
        "relations": [{"type": "has-version", "doi": f"10.1000/v{k}.{i}"} for i in range(n_relations)],
    }


def test_one_key_repeated_makes_one_capped_row():
    """500 records of one DOI, each at the per-record caps: the merged row is capped again,
    in both merges, with the same result, and the cut is counted."""
    records = [_record("10.1000/same", ("crossref", "openalex", "unpaywall")[k % 3], k,
                       LIST_CAPS["urls"], LIST_CAPS["relations"]) for k in range(500)]
    counts: Counter = Counter()
    table = pa.concat_tables([projected_table([dict(r) for r in records[i:i + 100]], "crossref", counts)
                              for i in range(0, 500, 100)])
    merged, merge_counts = merge_frame(table)
    row = merged.to_pylist()[0]
    assert merged.num_rows == 1
    assert len(row["urls"]) == MERGED_LIST_CAPS["urls"]
    assert len(row["relations"]) == MERGED_LIST_CAPS["relations"]
    assert merge_counts["truncated.merged.urls"] == 1 and merge_counts["truncated.merged.relations"] == 1
    reference = merge_records(records)
    assert reference["urls"] == row["urls"]
    assert reference["relations"] == row["relations"]
    assert [u["rank"] for u in row["urls"]] == list(range(MERGED_LIST_CAPS["urls"]))


def test_caps_hold_for_keys_under_them_unchanged():
    records = [_record("10.1000/a", "crossref", 1, 3, 2), _record("10.1000/a", "unpaywall", 2, 4, 0)]
    table = projected_table([dict(r) for r in records], "crossref", Counter())
    merged, counts = merge_frame(table)
    assert len(merged.to_pylist()[0]["urls"]) == 7
    assert not any(k.startswith("truncated.merged") for k in counts)


# --------------------------------------------------------------------------- PDF text

def shared_stream_pdf(pages: int, draws: int, text_chars: int) -> bytes:
    """A PDF whose every page uses one content stream that draws one form XObject `draws`
    times; the form shows `text_chars` characters. Flate makes both tiny: the document is a
    few KB and its text `pages * draws * text_chars` characters."""
    form = b"BT /F1 1 Tf 0 0 Td (" + b"A" * text_chars + b") Tj ET"
    content = b"q /X0 Do Q\n" * draws
    objects: list[bytes] = []

    def stream(raw: bytes, extra: bytes = b"") -> bytes:
        packed = zlib.compress(raw, 9)
        return b"<< /Length %d /Filter /FlateDecode %s>>\nstream\n" % (len(packed), extra) + packed + b"\nendstream"

    first_page = 6
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(stream(form, b"/Type /XObject /Subtype /Form /BBox [0 0 600 800] "
                                b"/Resources << /Font << /F1 3 0 R >> >> "))
    objects.append(stream(content))
    for _ in range(pages):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 600 800] /Contents 5 0 R "
                       b"/Resources << /XObject << /X0 4 0 R >> /Font << /F1 3 0 R >> >> >>")
    return pdf_file(objects)


def test_field_caps_are_under_the_body_cap():
    assert MAX_FIELD_UTF8_BYTES <= MAX_BODY_BYTES


def test_every_source_takes_the_one_body_cap():
    """A live answer, a replayed payload and a local file are held to one number, so a
    document is never kept from one source and refused as `too_large` from another."""
    import inspect

    from openmsd_build.text.fetch.local_files import LocalFilesBackend
    from openmsd_build.text.fetch.warc_backend import WarcBackend

    assert FetchConfig().max_bytes == MAX_BODY_BYTES
    for backend in (WarcBackend, LocalFilesBackend):
        assert inspect.signature(backend).parameters["max_bytes"].default == MAX_BODY_BYTES, backend


def test_cap_extraction_cuts_every_text_field():
    fields = {"title": "t" * 10_000, "abstract": "a" * 50_000, "content": "c" * (MAX_CONTENT_CHARS + 5),
              "abstracts": [{"text": "x" * 50_000}], "rules": {}}
    out = cap_extraction(fields)
    assert len(out["content"]) == MAX_CONTENT_CHARS
    assert len(out["abstracts"][0]["text"]) == len(out["abstract"]) == 20_000
    assert out["rules"]["truncated"] == ["title", "abstract", "content", "abstracts"]


def test_shared_compressed_stream_pdf_is_bounded(tmp_path):
    """300 pages x 1,000 draws x 2,000 characters: a 55 KB PDF with 600M characters of text."""
    pdf = shared_stream_pdf(pages=300, draws=1000, text_chars=2000)
    assert len(pdf) < 100_000
    path = tmp_path / "bomb.pdf"
    path.write_bytes(pdf)
    result = _run("""
import json, sys, time
from openmsd_build.text.extract.pdf import extract_pdf
started = time.perf_counter()
out = extract_pdf(open(sys.argv[1], "rb").read())
sizes = {k: len((out.get(k) or "").encode("utf-8")) for k in ("title", "abstract", "content")}
print(json.dumps({"sizes": sizes, "pages_capped": out["rules"].get("pages_capped"),
                  "seconds": time.perf_counter() - started, "peak_mb": _own_peak_mb()}))
""", str(path))
    assert max(result["sizes"].values()) <= MAX_FIELD_UTF8_BYTES
    assert result["sizes"]["content"] <= MAX_CONTENT_CHARS
    assert result["pages_capped"] is not None and result["pages_capped"] < 300
    assert result["peak_mb"] < PEAK_LIMIT_MB, result
    print("shared-stream pdf:", len(pdf), "bytes ->", result)
