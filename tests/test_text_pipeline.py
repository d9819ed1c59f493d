"""The text stage end to end: live fetching from a 127.0.0.1 server serving real landing
pages and PDFs, resuming without refetching, and the same build offline from the WARCs."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import DOCUMENTS, FETCH, PAPERS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch.config import FetchConfig
from openmsd_build.text.fetch.testing import LocalServer, respond

PDF = "pdf/crminer__10.3897.compcytogen.v10i4.9536.pdf"
PDF_TITLE_WORDS = ["FISH-based", "karyotype", "Rosa"]
PT_PDF = "pdf/scms-upload__rsp_v38n1_18446.pdf"
LANDING = "html/papis__HAL_THESES_tel_02083632v1.html"  # carries citation_abstract


def _paper(doi: str, urls: list[tuple[str, str]], abstract: str | None = None) -> dict:
    return {
        "doi": doi, "title": None, "abstract": abstract, "abstract_source": "crossref" if abstract else None,
        "categories": ["Biology"], "sources": ["unpaywall"], "n_records": 1, "relations": [],
        "urls": [{"url": u, "kind": k, "host_type": "repository", "license": None, "version": None,
                  "source": "unpaywall", "rank": i} for i, (u, k) in enumerate(urls)],
    }


@pytest.fixture()
def site(real_samples: Path):
    follow_landing = (
        b'<html lang="en"><head><meta name="citation_title" content="Chromosome maps of wild roses">'
        b'<meta name="citation_pdf_url" content="/files/rosa.pdf"></head><body><p>Landing.</p></body></html>'
    )
    routes = {
        "/robots.txt": lambda h, s: respond(h, 200, b"User-agent: *\nDisallow: /private/\n", "text/plain"),
        "/files/rosa.pdf": lambda h, s: respond(h, 200, (real_samples / PDF).read_bytes(), "application/pdf"),
        "/files/pt.pdf": lambda h, s: respond(h, 200, (real_samples / PT_PDF).read_bytes(), "application/pdf"),
        "/landing/hal": lambda h, s: respond(h, 200, (real_samples / LANDING).read_bytes()),
        "/landing/rosa": lambda h, s: respond(h, 200, follow_landing),
        "/gone": lambda h, s: respond(h, 404, b"gone"),
        "/private/secret.pdf": lambda h, s: respond(h, 200, b"%PDF-1.4 never served"),
    }
    with LocalServer(routes) as server:
        yield server


def _write_papers(out: Path, server: LocalServer) -> None:
    rows = [
        _paper("10.1/pdf", [(server.url("/files/rosa.pdf"), "pdf")]),
        _paper("10.1/follow", [(server.url("/landing/rosa"), "landing")]),
        _paper("10.1/hal", [(server.url("/landing/hal"), "landing")]),
        _paper("10.1/pt", [(server.url("/files/pt.pdf"), "pdf"), (server.url("/gone"), "landing")]),
        _paper("10.1/robots", [(server.url("/private/secret.pdf"), "pdf")]),
        _paper("10.1/meta-only", [], abstract="A metadata abstract that is long enough to be kept as the text of "
               "this paper without any fetching at all, since it has more than fifteen tokens."),
        _paper("10.1/nothing", [(server.url("/gone"), "pdf")]),
    ]
    parquet_io.write_table(parquet_io.table_from_rows(rows, PAPERS), parquet_io.part_path(str(out / "papers"), 0, 1))


def _config() -> FetchConfig:
    return FetchConfig(allow_networks=("127.0.0.0/8",), per_host_rate=None, max_retries=0, read_timeout=10)


def test_http_fetch_extract_resume_and_warc_replay(tmp_path, site, beam_args):
    out = tmp_path / "build"
    _write_papers(out, site)
    counts = run_text(str(out), "http", beam_args, _config(), extract_timeout=60)

    docs = {r["doi"]: r for r in parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()}
    fetch = parquet_io.read_table(layout.fetch_dir(str(out)), schema=FETCH).to_pylist()
    assert set(docs) == {"10.1/pdf", "10.1/follow", "10.1/hal", "10.1/pt", "10.1/meta-only"}
    for word in PDF_TITLE_WORDS:
        assert word.lower() in (docs["10.1/pdf"]["title"] + docs["10.1/pdf"]["content"]).lower()
    assert docs["10.1/pdf"]["content_source"] == "pdf" and docs["10.1/pdf"]["language"] == "en"
    # the landing page's citation_pdf_url was followed and its PDF gave the full text
    assert docs["10.1/follow"]["title"] == "Chromosome maps of wild roses"
    assert docs["10.1/follow"]["content_source"] == "pdf"
    assert docs["10.1/hal"]["abstract_source"] == "landing"
    assert docs["10.1/pt"]["language"] == "pt"
    assert docs["10.1/meta-only"]["text_source"] == "crossref"
    by_url = {r["url"].rsplit("/", 1)[-1]: r for r in fetch}
    assert by_url["gone"]["status"] == 404 and by_url["gone"]["error"] == "http_404"
    assert by_url["secret.pdf"]["error"] == "robots_disallowed"
    assert not site.hits_for("/private/")
    ok = [r for r in fetch if r["error"] is None]
    assert all(r["warc_file"] and r["warc_offset"] is not None and r["sha1"] for r in ok)
    assert counts["documents.kept"] == 5
    assert counts["documents.no_text"] + counts.get("documents.nothing_extracted", 0) == 2
    assert counts["papers"] == 7

    # resume: a second run serves every archived URL from the WARCs and fetches nothing twice
    site.reset()
    again = run_text(str(out), "http", beam_args, _config(), extract_timeout=60)
    content_hits = [h for h in site.hits if h.path != "/robots.txt" and h.path != "/gone"]
    assert content_hits == []
    assert again["fetch.resumed"] >= 4
    docs_again = {r["doi"]: r for r in parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()}
    assert docs_again == docs

    # offline: the same documents from the archives alone, with the server stopped
    offline = tmp_path / "offline"
    (offline / "papers").mkdir(parents=True)
    for part in (out / "papers").glob("*.parquet"):
        (offline / "papers" / part.name).write_bytes(part.read_bytes())
    site.stop()
    counts_offline = run_text(str(offline), f"warc:{out}/warc/*.warc.gz", beam_args, extract_timeout=60)
    docs_offline = {r["doi"]: r for r in parquet_io.read_table(layout.documents_dir(str(offline)), schema=DOCUMENTS).to_pylist()}
    assert docs_offline == docs

    # one extractor or three at once (answers come back out of order): the same documents
    # and the same counts
    for workers in (1, 3):
        again_offline = tmp_path / f"offline-{workers}"
        (again_offline / "papers").mkdir(parents=True)
        for part in (out / "papers").glob("*.parquet"):
            (again_offline / "papers" / part.name).write_bytes(part.read_bytes())
        counts_n = run_text(str(again_offline), f"warc:{out}/warc/*.warc.gz", beam_args, extract_timeout=60,
                            extract_workers=workers)
        docs_n = {r["doi"]: r for r in parquet_io.read_table(
            layout.documents_dir(str(again_offline)), schema=DOCUMENTS).to_pylist()}
        assert docs_n == docs
        assert {k: v for k, v in counts_n.items() if k != "seconds"} == {
            k: v for k, v in counts_offline.items() if k != "seconds"}
