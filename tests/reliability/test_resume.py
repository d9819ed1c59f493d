"""An interrupted live fetch, resumed: the final outputs equal an uninterrupted run and
nothing that was archived is fetched twice.

The server answers the first N page/PDF requests, then stops answering (it holds the
connection past the fetcher's deadline), as a site or network going away mid-crawl. The
text stage finishes with timeouts for the rest; it is run again with the server healthy:
archived URLs come from `OUT/warc/` (`fetch.resumed`), only the others hit the network, and
`documents/` equals that of a run that was never interrupted.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from reconcile import check_text, read_rows, table_digest

from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import PAPERS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch.config import FetchConfig
from openmsd_build.text.fetch.testing import LocalServer, respond

N_OK = 4


def _site(real_samples: Path):
    pdfs = sorted((real_samples / "pdf").glob("*.pdf"))[:3]
    htmls = sorted((real_samples / "html").glob("*.html"))[:5]
    routes = {"/robots.txt": lambda h, s: respond(h, 200, b"User-agent: *\nAllow: /\n", "text/plain")}
    for i, p in enumerate(pdfs):
        routes[f"/pdf/{i}"] = (lambda data: lambda h, s: _answer(h, s, data, "application/pdf"))(p.read_bytes())
    for i, p in enumerate(htmls):
        routes[f"/html/{i}"] = (lambda data: lambda h, s: _answer(h, s, data, "text/html"))(p.read_bytes())
    routes["/gone"] = lambda h, s: _answer(h, s, b"gone", "text/html", status=404)
    return routes, len(pdfs), len(htmls)


def _answer(h, srv, data, ctype, status=200):
    limit = srv.data.get("answer_limit")
    if limit is not None and srv.bump("answered") > limit:
        time.sleep(2.0)  # stop answering: the client's deadline (1 s) passes first
        return
    respond(h, status, data, ctype)


def _papers(out: Path, srv: LocalServer, n_pdf: int, n_html: int) -> None:
    rows = []
    for i in range(n_pdf):
        rows.append((f"10.1234/p{i}", [(srv.url(f"/pdf/{i}"), "pdf")]))
    for i in range(n_html):
        rows.append((f"10.1234/h{i}", [(srv.url(f"/html/{i}"), "landing"), (srv.url("/gone"), "pdf")]))
    table = [{"doi": d, "sources": ["unpaywall"], "n_records": 1, "categories": [], "relations": [],
              "urls": [{"url": u, "kind": k, "host_type": None, "license": None, "version": None,
                        "source": "unpaywall", "rank": r} for r, (u, k) in enumerate(urls)]} for d, urls in rows]
    parquet_io.write_table(parquet_io.table_from_rows(table, PAPERS), parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))


CONFIG = FetchConfig(allow_networks=["127.0.0.0/8"], per_host_rate=None, connect_timeout=1, read_timeout=1,
                     total_timeout=1, max_retries=0, backoff_base=0.01)


def _run(out: Path) -> dict:
    return run_text(str(out), "http", [], CONFIG, extract_timeout=30, host_shards=2, follow=False)


def test_interrupted_fetch_resumes_without_refetching(real_samples, tmp_path):
    routes, n_pdf, n_html = _site(real_samples)
    with LocalServer(routes) as srv:
        clean, resumed = tmp_path / "clean", tmp_path / "resumed"
        for out in (clean, resumed):
            _papers(out, srv, n_pdf, n_html)
        _run(clean)
        srv.reset()

        srv.data["answer_limit"] = N_OK  # interrupted: only N answers, then silence
        first = _run(resumed)
        assert first.get("fetch.error.timeout", 0) >= 1, first
        first_hits = Counter(h.path for h in srv.hits if h.path != "/robots.txt")
        assert check_text(resumed) == []

        archived = {u for u, f in zip(*(read_rows(resumed / "fetch").column(c).to_pylist()
                                         for c in ("url", "warc_file")), strict=True) if f}
        assert len(archived) >= 1

        srv.reset()  # healthy again
        second = _run(resumed)
        second_hits = Counter(h.path for h in srv.hits if h.path != "/robots.txt")
        assert second.get("fetch.resumed", 0) == len(archived), second

    # nothing archived was fetched twice; every URL fetched at most once per run
    for url in archived:
        path = "/" + url.split("/", 3)[3]
        assert second_hits[path] == 0, (url, second_hits)
    assert all(n == 1 for n in first_hits.values() if n), first_hits
    # final outputs equal the uninterrupted run
    assert check_text(resumed) == []
    for folder in ("documents", "rejects/text"):
        a, b = read_rows(clean / folder), read_rows(resumed / folder)
        assert (a is None) == (b is None)
        if a is not None:
            assert table_digest(a) == table_digest(b), folder
    volatile = ("fetched_at", "warc_file", "warc_offset", "warc_length", "attempts")
    assert table_digest(read_rows(clean / "fetch"), volatile) == table_digest(read_rows(resumed / "fetch"), volatile)
