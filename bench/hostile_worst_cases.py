"""The worst cases of the third hostile-input round, measured: one subprocess per case, its
wall time, its own peak RSS (VmHWM) and the largest field it produced.

    .venv/bin/python bench/hostile_worst_cases.py [--json OUT.json]

Cases (inputs are made here, in a temporary folder; nothing is downloaded):
  bad_records   a 27 MB Crossref chunk (16,000 works), three works in ten malformed (a control
                character, NaN, cut short): read item by item after the whole parse fails
  inverted_index  an OpenAlex record whose 1 MB word is listed at 100,000 positions (100 GB
                unbounded)
  merged_key    one DOI in 2,000 records at the per-record caps (200k URLs unmerged)
  shared_pdf    a 55 KB PDF: one compressed stream drawn 1,000 times by each of 300 pages
                (600M characters unbounded)
  doi           20,000 look-alike DOIs at the raw length cap (invisible characters, full
                width, other digits)
  charset       a 32 MB page with a UTF-16 BOM, then a 32 MB page undecodable in its charset
  cc_index      an index extract of 1M rows whose names leave the prefix
  deep_answer   a 4 MB enrichment answer nested 2M deep
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_PRELUDE = """
import json, sys, time
def _peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
started = time.perf_counter()
"""
_REPORT = """
print(json.dumps({"seconds": round(time.perf_counter() - started, 2), "peak_mb": round(_peak_mb()),
                  "largest_field": largest, "held": held, "note": note}))
"""

CASES: dict[str, str] = {
    "bad_records": """
import gzip
from openmsd_build.papers.join import read_source_file
works = []
for i in range(16_000):
    w = json.dumps({"DOI": f"10.1000/w{i}", "title": [f"Work {i}"], "abstract": "x" * 1500,
                    "author": [{"given": "A", "family": "B"}] * 5}).encode()
    if i % 10 == 3:
        w = w.replace(b"Work", b"Wo\\x01rk", 1)
    elif i % 10 == 6:
        w = w[:-1] + b', "n": NaN}'
    elif i % 10 == 9:
        w = w[: len(w) // 2]
    works.append(w)
path = sys.argv[1] + "/chunk.json.gz"
open(path, "wb").write(gzip.compress(b'{"items": [' + b",".join(works) + b"]}"))
started = time.perf_counter()
kept = rejected = 0
largest = 0
for tag, value in read_source_file(path, "crossref", 8):
    if tag == "batch":
        kept += value[1].num_rows
        largest = max(largest, max(len(a or "") for a in value[1].column("abstract").to_pylist()))
    elif tag == "reject":
        rejected += 1
held = kept == 16_000 - 4_800 and rejected == 4_800
note = f"{kept} kept, {rejected} rejects"
""",
    "inverted_index": """
from openmsd_build.papers.caps import FIELD_CAPS
from openmsd_build.papers.sources.openalex import parse_openalex
record = {"doi": "10.1000/x", "abstract_inverted_index": {"x" * 1_000_000: list(range(100_000))}}
started = time.perf_counter()
largest = len(parse_openalex(record)["abstract"])
held = largest <= FIELD_CAPS["abstract"] + 1
note = "abstract cut while built (cap + 1; the field cap counts the cut)"
""",
    "merged_key": """
from collections import Counter
import pyarrow as pa
from openmsd_build.papers.join import projected_table
from openmsd_build.papers.merge_fast import merge_frame
def rec(k):
    return {"doi": "10.1000/same", "source": "crossref", "origin": f"f:{k}", "title": "T", "titles": [],
            "abstract": None, "venue": None, "publisher": None, "year": None, "type": None, "categories": [],
            "publisher_language": None, "license": None, "is_oa": None,
            "urls": [{"url": f"https://h{k}.example/{i}", "kind": "landing", "host_type": None, "license": None,
                      "version": None, "source": "crossref", "rank": i} for i in range(100)],
            "relations": [{"type": "has-version", "doi": f"10.1000/v{k}.{i}"} for i in range(100)]}
table = pa.concat_tables([projected_table([rec(k) for k in range(j, j + 200)], "crossref", Counter())
                          for j in range(0, 2000, 200)])
started = time.perf_counter()
merged, counts = merge_frame(table)
row = merged.to_pylist()[0]
largest = max(len(row["urls"]), len(row["relations"]))
held = largest <= 100
note = "entries in the merged row's urls / relations (200,000 before the cap)"
""",
    "shared_pdf": """
sys.path.insert(0, "tests/hostile")
from test_caps_after_transformations import shared_stream_pdf
from openmsd_build.text.extract.caps import MAX_FIELD_UTF8_BYTES
from openmsd_build.text.extract.pdf import extract_pdf
pdf = shared_stream_pdf(300, 1000, 2000)
started = time.perf_counter()
out = extract_pdf(pdf)
largest = max(len((out.get(k) or "").encode()) for k in ("title", "abstract", "content"))
held = largest <= MAX_FIELD_UTF8_BYTES
note = f"{len(pdf)} byte PDF; pages read {out['rules'].get('pages_capped')} of 300"
""",
    "doi": """
from openmsd_build.core.doi import MAX_RAW_DOI_LENGTH, try_normalize_doi
base = "１０．\\u0661\\u0662\\u0663\\u0664／" + "\\u200dａ" * 1000
value = base[:MAX_RAW_DOI_LENGTH]
started = time.perf_counter()
keys = {try_normalize_doi(value) for _ in range(20_000)}
largest = max(len(k or "") for k in keys)
held = keys <= {None} or all(k.isascii() for k in keys if k)
note = f"{len(value)}-character look-alikes; {sorted(map(str, keys))[0][:24]}..."
""",
    "charset": """
from openmsd_build.text.charset import UndecodableText, decode_page
page = b"\\xff\\xfe" + ("<html><body><p>" + "Schlafqualität " * 2_100_000 + "</p></body></html>").encode("utf-16-le")
page = page[:32 << 20]
started = time.perf_counter()
text = decode_page(page)
bad = b'<meta charset="shift_jis">' + b"\\x81\\x7f" * (16 << 20)
try:
    decode_page(bad)
    held = False
except UndecodableText:
    held = True
largest = len(text)
note = "32 MB UTF-16 page decoded by its BOM; 32 MB undecodable page rejected"
""",
    "cc_index": """
from collections import Counter
import pyarrow as pa, pyarrow.parquet as pq
from openmsd_build.text.fetch.warc_index import read_cc_index
n = 1_000_000
names = ["../../etc/x.warc.gz", "s3://other/x", "/abs/../../x", "a\\\\b"] * (n // 4)
pq.write_table(pa.table({"url": [f"https://e.org/{i}" for i in range(n)], "warc_filename": names,
                         "warc_record_offset": [0] * n, "warc_record_length": [10] * n,
                         "fetch_status": [200] * n, "content_mime_type": ["text/html"] * n}),
               sys.argv[1] + "/index.parquet")
counts = Counter()
started = time.perf_counter()
rows = sum(1 for _ in read_cc_index(sys.argv[1] + "/index.parquet", sys.argv[1], counts))
largest = 0
held = rows == 0 and sum(counts.values()) == n
note = f"{dict(counts)}"
""",
    "deep_answer": """
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from openmsd_build.enrich.summarizers import CallError, Http
answer = b'{"choices": [{"message": {"content": ' + b"[" * (2 << 20) + b"]" * (2 << 20) + b"}}]}"
answer = answer[: (4 << 20) - 1]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200); self.send_header("Content-Length", str(len(answer))); self.end_headers()
        self.wfile.write(answer)
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=server.serve_forever, daemon=True).start()
started = time.perf_counter()
try:
    Http(10, 1).post_json(f"http://127.0.0.1:{server.server_address[1]}/x", {"q": 1})
    held = False; note = "parsed?"
except CallError as exc:
    held = exc.reason == "malformed_response"; note = exc.reason
server.shutdown()
largest = 0  # nothing is produced: the answer is refused
""",
}


def run_case(name: str, folder: str) -> dict:
    script = _PRELUDE + CASES[name] + _REPORT
    done = subprocess.run([sys.executable, "-c", script, folder], capture_output=True, text=True, cwd=REPO,
                          timeout=1200, check=False)
    if done.returncode != 0:
        return {"held": False, "error": done.stderr.strip().splitlines()[-1:] or ["?"]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    results = {}
    print(f"{'case':<15} {'held':<5} {'seconds':>8} {'peak MB':>8} {'largest':>10}  note")
    for name in args.cases:
        with tempfile.TemporaryDirectory() as folder:
            r = results[name] = run_case(name, folder)
        print(f"{name:<15} {str(r.get('held')):<5} {r.get('seconds', '-'):>8} {r.get('peak_mb', '-'):>8} "
              f"{r.get('largest_field', '-'):>10}  {r.get('note') or r.get('error')}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
