"""A PDF's printed title is looked for only when a paper it was fetched for can use it
(`documents.printed_title_needed`): the predicate case by case and against `build_document`,
`extract_pdf` with and without the papers' title keys, and the text stage end to end, whose
documents must be those of extracting every PDF's title."""

from __future__ import annotations

from pathlib import Path

import pytest
from stage_papers import copy_papers, fetch_live, paper_row, stage_documents, write_papers

from openmsd_build.text import beam as text_beam
from openmsd_build.text.beam import PlanFetches, pdf_title_keys
from openmsd_build.text.command import run_text
from openmsd_build.text.documents import (
    MATCH_TEXT_CHARS,
    TITLE_NOT_NEEDED,
    build_document,
    printed_title_evidence,
    printed_title_needed,
)
from openmsd_build.text.extract.pdf import extract_pdf
from openmsd_build.text.fetch.testing import LocalServer, respond

TITLE = "Soil microbial biomass in the northern valleys"
KEY = "soilmicrobialbiomassinthenorthernvalleys"
BODY = " ".join(["The survey of forest soils in the northern valleys measured carbon, nitrogen and the "
                 "microbial biomass of every plot twice a year, and the results were compared across sites."] * 20)
ABSTRACT = ("We measured the microbial biomass of forest soils in six northern valleys twice a year for a "
            "decade and compare carbon and nitrogen across sites, seasons and the altitude of the plots.")


# --- the predicate ---------------------------------------------------------------------------

def test_title_keys_only_when_the_metadata_main_title_is_the_documents():
    assert printed_title_evidence({"title": TITLE}) == [KEY]
    assert printed_title_evidence({"title": f"<i>{TITLE}</i>", "titles": [TITLE, "Mikrobielle Biomasse der "
                                                                           "Böden in den nördlichen Tälern"]}) == [
        KEY, "mikrobiellebiomassederbödenindennördlichentälern"]  # squashed, each once
    assert printed_title_evidence({"title": "Editorial"}) == []  # too short to be evidence: none at all
    # no usable main title: an extraction's title may become the document's
    assert printed_title_evidence({"title": None, "titles": [TITLE]}) is None
    assert printed_title_evidence({"title": "  <b> </b> "}) is None
    # a main title from an extraction kind is refused when damaged (`build_document`)
    damaged = "\ue000\ue001\ue002\ue003\ue004 \ue005\ue006\ue007"
    assert printed_title_evidence({"title": damaged, "title_source": "pdf"}) is None
    assert printed_title_evidence({"title": TITLE, "title_source": "pdf"}) == [KEY]


def test_printed_title_needed_case_by_case():
    content = f"Journal of Valleys\n{TITLE.upper()}.\n{BODY}"
    assert not printed_title_needed([KEY], content)  # printed (case and punctuation apart)
    assert not printed_title_needed(["another", KEY], content)  # any of the paper's titles
    assert not printed_title_needed([], None)  # no title evidence: the PDF's title is never read
    assert printed_title_needed(None, content)  # the paper may take the PDF's title
    assert printed_title_needed([KEY], BODY)  # not printed: the PDF's title decides its agreement
    assert printed_title_needed([KEY], None)  # no text: the same
    assert printed_title_needed([KEY], "x" * MATCH_TEXT_CHARS + TITLE)  # printed too far in


def _pdf(title: str | None, content: str | None) -> dict:
    rules = {"title": "largest_font" if title else TITLE_NOT_NEEDED, "abstract": "abstract_heading"}
    return {"kind": "pdf", "url": "https://h/a.pdf", "title": title, "content": content, "abstract": ABSTRACT,
            "abstracts": [{"text": ABSTRACT, "rule": "abstract_heading", "heading": "Abstract"}],
            "pdf_url": None, "language_hints": [], "rules": rules}


PAPERS_CASES = [
    {"doi": "10.1/a", "title": TITLE},
    {"doi": "10.1/b", "title": "Editorial"},
    {"doi": "10.1/c", "title": "Mikrobielle Biomasse", "titles": [TITLE]},
    {"doi": "10.1/d", "title": None, "titles": [TITLE]},
    {"doi": "10.1/e", "title": None},
]
CONTENTS = [f"{TITLE}\n{BODY}", BODY, None]
PRINTED_TITLES = [None, TITLE, "Annual report of the Society of Northern Valleys for the year", "Editorial"]


@pytest.mark.parametrize("paper", PAPERS_CASES, ids=lambda p: p["doi"])
def test_a_title_not_needed_cannot_change_the_document(paper):
    """Wherever the predicate says a PDF's title is not needed, every title it could print
    gives the same document; where it is needed, some title changes it (the predicate is not
    vacuous: it says "needed" for the papers whose row a title can change)."""
    keys = printed_title_evidence(paper)
    for content in CONTENTS:
        landing = {"kind": "landing", "url": "https://h/x", "title": "Northern valleys", "content": None,
                   "abstract": None, "abstracts": [], "pdf_url": None, "language_hints": [], "rules": {}}
        rows = {title: (build_document(paper, [_pdf(title, content)]), build_document(paper, [_pdf(title, content),
                                                                                               landing]))
                for title in PRINTED_TITLES}
        if not printed_title_needed(keys, content):
            assert len({repr(r) for r in rows.values()}) == 1, (paper, content)
    if paper["doi"] in ("10.1/d", "10.1/e"):
        assert printed_title_needed(keys, f"{TITLE}\n{BODY}")
        row_none = build_document(paper, [_pdf(None, BODY)])[0]
        row_title = build_document(paper, [_pdf(TITLE, BODY)])[0]
        assert row_none != row_title


# --- the extractor ---------------------------------------------------------------------------

PDFS = [  # a metadata title; a Portuguese article; a title broken at a hyphen (its size lines
    # resolved with the page's compounds); a journal cover (the title printed above the abstract)
    ("pdf/crminer__10.3897.compcytogen.v10i4.9536.pdf", "Towards a FISH-based karyotype of Rosa L. (Rosaceae)"),
    ("pdf/scms-upload__rsp_v38n1_18446.pdf", "Complicações maternas associadas ao tipo de parto em hospital universitário"),
    ("multilingual-journals/docs_extractor__demo_ru7.pdf",
     "Средство мониторинга узлов системы управления сервис-ориентированными научными приложениями"),
    ("pdf-multilingual/mpilhlt__10.26321_a.facchinetti.01.2025.05.pdf",
     "Does the EU Corporate Sustainability Due Diligence Directive protect indigenous peoples' right to food"),
]


@pytest.mark.parametrize(("name", "title"), PDFS, ids=[n.split("/")[-1] for n, _ in PDFS])
def test_extract_pdf_with_title_keys_finds_the_same_text(real_samples: Path, name: str, title: str):
    data = (real_samples / name).read_bytes()
    full = extract_pdf(data)
    keys = printed_title_evidence({"title": title})
    printed = not printed_title_needed(keys, full["content"])
    # some paper needs the title (no keys, not printed, one paper of two): the full extraction
    assert extract_pdf(data, titles=[None]) == full
    assert extract_pdf(data, titles=[keys, None]) == full
    assert extract_pdf(data, titles=[["notprintedanywhereinthisdocumentatall"]]) == full
    # no paper needs it: the same content and abstracts, no title
    for titles in ([keys], [keys, keys], [[]]) if printed else ([[]],):
        lean = extract_pdf(data, titles=titles)
        assert lean["title"] is None and lean["rules"]["title"] == TITLE_NOT_NEEDED
        assert {**lean, "title": full["title"], "rules": {**lean["rules"], "title": full["rules"]["title"]}} == full
    if name.endswith("demo_ru7.pdf"):  # the title's line-break hyphen resolved as the page writes it
        assert full["title"] == title
    if "facchinetti" in name:
        assert full["rules"]["title"] == "title_above_abstract"


def test_a_large_first_page_is_not_held_open_and_gives_the_same_title(real_samples: Path, monkeypatch):
    """A first page past `_FirstPage.KEEP_CHARS` characters has its size lines read at once
    and is closed (a text bomb's page is not held while the rest is read): the same result."""
    from openmsd_build.text.extract import pdf

    datas = [(real_samples / name).read_bytes() for name, _title in PDFS]
    kept = [extract_pdf(data) for data in datas]
    monkeypatch.setattr(pdf._FirstPage, "KEEP_CHARS", 0)
    assert [extract_pdf(data) for data in datas] == kept


def test_every_task_carries_its_papers_title_keys():
    import pyarrow as pa

    table = pa.Table.from_pylist([
        {"doi": "10.1/a", "title": TITLE, "titles": None, "urls": [{"url": "https://h/a", "kind": "landing"},
                                                                   {"url": "https://h/a.pdf", "kind": "pdf"}]},
        {"doi": "10.1/b", "title": None, "titles": [TITLE], "urls": [{"url": "https://h/b", "kind": "landing"}]},
    ])
    tasks = [v for v in PlanFetches(3, 1).process(table) if isinstance(v, tuple) and isinstance(v[1], dict)
             and "url" in v[1]]
    assert {(t["url"], repr(t["title_keys"])) for _k, t in tasks} == {
        ("https://h/a", repr([KEY])), ("https://h/a.pdf", repr([KEY])), ("https://h/b", "None")}
    assert pdf_title_keys([t for _k, t in tasks]) == [[KEY], [KEY], None]
    assert pdf_title_keys([{"doi": "10.1/x", "url": "u"}]) == [None]  # a task without keys: the title is looked for


# --- the stage, end to end -------------------------------------------------------------------

ROSA = "pdf/crminer__10.3897.compcytogen.v10i4.9536.pdf"
PT = "pdf/scms-upload__rsp_v38n1_18446.pdf"
ROSA_TITLE = "Towards a FISH-based karyotype of Rosa L. (Rosaceae)"


@pytest.fixture()
def site(real_samples: Path):
    rosa, pt = (real_samples / ROSA).read_bytes(), (real_samples / PT).read_bytes()

    def pdf(body):
        return lambda h, s: respond(h, 200, body, "application/pdf")

    routes = {"/robots.txt": lambda h, s: respond(h, 200, b"User-agent: *\n", "text/plain")}
    for name in ("a", "c", "e", "g", "h", "i"):
        routes[f"/files/rosa-{name}.pdf"] = pdf(rosa)
    for name in ("b", "d"):
        routes[f"/files/pt-{name}.pdf"] = pdf(pt)
    routes["/landing/served-pdf"] = pdf(rosa)  # a landing URL that answers a PDF
    with LocalServer(routes) as server:
        cite = (f'<html><head><title>Rosa</title><meta name="citation_title" content="{ROSA_TITLE}">'
                f'<meta name="citation_pdf_url" content="{server.url("/files/rosa-h.pdf")}"></head>'
                "<body><h1>Rosa</h1><p>Chromosomes of wild roses.</p></body></html>").encode()
        server.routes["/landing/cite"] = lambda h, s: respond(h, 200, cite)
        yield server


def _write_papers(out: Path, server: LocalServer) -> None:
    other = "Global discharging methods for coloring problems in graphs"
    rows = [
        paper_row("10.1/a", [(server.url("/files/rosa-a.pdf"), "pdf")], ROSA_TITLE),  # printed: not needed
        paper_row("10.1/b", [(server.url("/files/pt-b.pdf"), "pdf")], other),  # not printed: needed
        paper_row("10.1/c", [(server.url("/files/rosa-c.pdf"), "pdf")], None),  # no metadata title: needed
        paper_row("10.1/d", [(server.url("/files/pt-d.pdf"), "pdf")], "Editorial"),  # no evidence: not needed
        # one PDF, two papers: one needs the title, so both get it
        paper_row("10.1/e1", [(server.url("/files/rosa-e.pdf"), "pdf")], ROSA_TITLE),
        paper_row("10.1/e2", [(server.url("/files/rosa-e.pdf"), "pdf")], None),
        paper_row("10.1/g", [(server.url("/landing/served-pdf"), "landing")], ROSA_TITLE),  # not needed
        paper_row("10.1/h", [(server.url("/landing/cite"), "landing")], ROSA_TITLE),  # its follow-up PDF: not needed
        paper_row("10.1/i", [(server.url("/files/rosa-i.pdf"), "pdf")], None, [ROSA_TITLE]),  # needed
    ]
    write_papers(out, rows)


def test_documents_equal_finding_every_pdf_title(tmp_path, site, beam_args, monkeypatch):
    live = tmp_path / "live"
    _write_papers(live, site)
    counts, docs = fetch_live(live, beam_args)
    assert counts["extracted.pdf"] == 8  # a, b, c, d, e (two papers), g, h (followed), i
    assert counts["pdf_title.not_needed"] == 4  # a, d, g, h
    assert counts["follow.citation_pdf_url"] == 1
    assert docs["10.1/c"]["title"] == ROSA_TITLE and docs["10.1/c"]["title_source"] == "pdf"
    assert docs["10.1/e2"]["title_source"] == "pdf" and docs["10.1/i"]["title_source"] == "pdf"
    assert docs["10.1/a"]["title_match"] == docs["10.1/h"]["title_match"] == 1.0

    replay, whole = tmp_path / "replay", tmp_path / "whole"
    copy_papers(live, replay)
    copy_papers(live, whole)
    site.stop()
    replayed = run_text(str(replay), f"warc:{live}/warc/*.warc.gz", beam_args, extract_timeout=60, extract_workers=2)
    assert replayed["pdf_title.not_needed"] == 4
    # every PDF's title looked for, as a stage without title keys would
    monkeypatch.setattr(text_beam, "pdf_title_keys", lambda tasks: [None] * len(tasks))
    at_once = run_text(str(whole), f"warc:{live}/warc/*.warc.gz", beam_args, extract_timeout=60)
    assert "pdf_title.not_needed" not in at_once
    assert stage_documents(replay) == stage_documents(whole) == docs
