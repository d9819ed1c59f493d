"""Renderers and parsers that interpret data treat it as data:

- labels from the input (languages, categories, hosts) reach matplotlib (mathtext `$...$`,
  TeX), Markdown and HTML: crafted labels are drawn and shown as written, and never stop
  the report;
- an enrichment endpoint's answer nested past json's limit (RecursionError), or any other
  answer the parser cannot use, is that document's `malformed_response` reject; the other
  documents of the run are enriched (a local server on 127.0.0.1 made here).
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pyarrow as pa
import pytest

from openmsd_build.core import layout, parquet_io
from openmsd_build.enrich import command
from openmsd_build.enrich.prompts import PROMPTS
from openmsd_build.enrich.summarizers import ChatSummarizer, Http, RateLimiter, RetryPolicy
from openmsd_build.report.render import MAX_FIGURE_LABEL, _md_cell, bar_chart, figure_label
from openmsd_build.schemas import tables

LABELS = [
    "$\\frac{$", "$\\undefinedcommand$", "a$x^{$b", "$$", "\\$", "$" * 101, "\\textbf{x}", "%", "_^{}",
    "$\\mathcal{" + "{" * 500 + "$", "<script>alert(1)</script>", "![img](http://127.0.0.1/x.png)",
    "[link](javascript:alert(1))", "`code`", "**bold**", "a|b|c", "line\nbreak\r\x00\x1b[31m",
    "x" * 1_000_000, "\u202eevil", "😀" * 50, None,
]


def test_crafted_labels_are_drawn_as_text():
    rows = [{"language": label, "papers": i + 1} for i, label in enumerate(LABELS)]
    png = bar_chart(rows, "language", "Top $\\frac{$ languages")
    assert png.startswith(b"\x89PNG")


@pytest.mark.parametrize("label", LABELS)
def test_each_crafted_label_alone(label):
    assert bar_chart([{"category": label, "papers": 3}], "category", "t").startswith(b"\x89PNG")
    shown = figure_label(label)
    assert len(shown) <= MAX_FIGURE_LABEL and "\n" not in shown and "\x00" not in shown


def test_markdown_and_html_cells_are_literal():
    md = _md_cell("![img](http://127.0.0.1/x.png) <script>x</script> [a](b) `c` *d* _e_ f|g rejected.crossref.bad_doi")
    assert "![" not in md and "<script>" not in md and "](" not in md.replace("\\](", "")
    assert "\\|" in md and "bad_doi" in md  # an underscore inside a word is not emphasis: kept


# --------------------------------------------------------------------------- enrichment

DEEP = b"[" * 200_000 + b"]" * 200_000  # past json's recursion limit: RecursionError, not ValueError
ANSWERS = {
    "deep": b'{"choices": [{"message": {"content": ' + DEEP + b"}}]}",
    "deep_object": b'{"choices": ' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}",
    "nan": b'{"choices": [{"message": {"content": NaN}}]}',
    "not_utf8": b'{"choices": [{"message": {"content": "\xff\xfe"}}]}',
    "content_list": b'{"choices": [{"message": {"content": [1, 2]}}]}',
    "choices_string": b'{"choices": "x"}',
}
OK = json.dumps({"choices": [{"message": {"content": "An English summary of the paper's findings here."}}]}).encode()


class _Endpoint(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        answer = next((a for marker, a in ANSWERS.items() if f"MARK:{marker}." in text), OK)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@pytest.fixture()
def endpoint(serve_http):
    return serve_http(_Endpoint) + "/v1"


GERMAN = ("Wir untersuchen die Wirkung von Schlafqualität auf die psychische Gesundheit von Studierenden "
          "und finden einen deutlichen Zusammenhang in einer großen Stichprobe.")


def test_unparseable_answers_are_each_one_reject(tmp_path, endpoint):
    out = str(tmp_path / "build")
    docs = [(f"10.1/{m}", "de", "Titel", f"{GERMAN} MARK:{m}.") for m in ANSWERS]
    docs += [("10.1/ok1", "de", "Titel", GERMAN), ("10.1/ok2", "de", "Titel", GERMAN + " Noch ein Satz.")]
    rows = [{"doi": d, "language": lg, "title": t, "abstract": a, "text_source": "test"} for d, lg, t, a in docs]
    parquet_io.write_table(pa.Table.from_pylist(rows, schema=tables.DOCUMENTS),
                           parquet_io.part_path(layout.documents_dir(out), 0, 1))
    summarizer = ChatSummarizer(endpoint, "m", PROMPTS["summary30"], Http(5.0, 2),
                                RetryPolicy(retries=0, backoff=0.01, max_wait=1.0), RateLimiter(0), batch_size=3)
    stats = command.run_enrich(out, summarizer, max_tokens=64, concurrency=2)
    counts = stats["counts"]
    assert command.check_counts(counts) == []
    rejects = parquet_io.read_table(layout.rejects_dir(out, "enrich")).to_pylist()
    assert {r["key"]: r["reason"] for r in rejects} == {f"10.1/{m}": "malformed_response" for m in ANSWERS}
    assert all(len(r["detail"] or "") <= 2000 for r in rejects)
    assert counts["enriched"] == 2
