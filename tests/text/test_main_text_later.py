"""A landing page's main text is extracted only when its paper needs it: pages of papers with
a PDF planned are extracted without trafilatura first, and only papers whose result that
text could change are completed from the archived record. The documents must be exactly
those of extracting every page whole, live and from the archive."""

from __future__ import annotations

from pathlib import Path

import pytest
from stage_papers import copy_papers, fetch_live, paper_row, stage_documents, write_papers

from openmsd_build.text import beam as text_beam
from openmsd_build.text.beam import CompleteMainText, main_text_later
from openmsd_build.text.command import run_text
from openmsd_build.text.documents import TITLE_MATCH_MIN, main_text_needed, main_text_needed_unbuilt
from openmsd_build.text.fetch.testing import LocalServer, respond

PDF = "pdf/crminer__10.3897.compcytogen.v10i4.9536.pdf"
PT_PDF = "pdf/scms-upload__rsp_v38n1_18446.pdf"  # a Portuguese article
LANDING = "html/papis__HAL_THESES_tel_02083632v1.html"  # a thesis page: citation_abstract and a long main text


def test_main_text_later_only_for_landing_pages_of_papers_with_a_pdf():
    assert main_text_later([{"kind": "landing", "follow": False}])
    assert main_text_later([{"kind": "landing", "follow": False}, {"kind": "landing", "follow": False}])
    assert not main_text_later([{"kind": "landing", "follow": True}])  # no PDF planned: the page is the text
    assert not main_text_later([{"kind": "landing", "follow": False}, {"kind": "landing", "follow": True}])
    assert not main_text_later([{"kind": "pdf", "follow": False}])  # a "PDF" link that answered HTML
    assert not main_text_later([{"kind": "citation_pdf", "follow": False}])


def _landing(title: str | None, later: bool = True) -> dict:
    return {"kind": "landing", "url": "https://h/x", "title": title, "content": None,
            "content_from": ["a.warc.gz", 0, None, "https://h/x"] if later else None}


def _row(content_source: str | None, title_match: float | None) -> dict:
    return {"content_source": content_source, "title_match": title_match}


def test_main_text_needed_exactly_when_the_text_could_change_the_document():
    paper = {"doi": "10.1/x", "title": "Chromosome maps of wild roses in the Caucasus"}
    same = _landing("Chromosome maps of wild roses in the Caucasus")
    other = _landing("Annual report of the society")
    # no page waiting for its text: nothing to do, whatever the result
    assert not main_text_needed(paper, [_landing("x", later=False)], None)
    # dropped, or not a PDF's text: the page's text may be the content
    assert main_text_needed(paper, [same], None)
    assert main_text_needed(paper, [same], _row("landing", 1.0))
    assert main_text_needed(paper, [same], _row(None, 1.0))
    # a PDF's text with full agreement, and the page agrees without its text
    assert not main_text_needed(paper, [same], _row("pdf", 1.0))
    # weaker evidence: the page's text could raise the agreement (title_match) ...
    assert main_text_needed(paper, [same], _row("pdf", 0.8))
    # ... or keep the page from being taken for another text
    assert main_text_needed(paper, [other, same], _row("pdf", 1.0))
    # a page without a title of its own is never another text
    assert not main_text_needed(paper, [_landing(None)], _row("pdf", 1.0))
    # no metadata title: no title evidence at all
    assert not main_text_needed({"doi": "10.1/x", "title": None}, [other], _row("pdf", None))
    assert TITLE_MATCH_MIN > 0


def test_main_text_needed_before_building_only_without_any_pdf_text():
    pdf = {"kind": "pdf", "url": "https://h/a.pdf", "title": None, "content": "Body text of the article."}
    assert main_text_needed_unbuilt([_landing("x")])
    assert main_text_needed_unbuilt([_landing("x"), {**pdf, "content": None}])  # the PDF gave no text
    assert not main_text_needed_unbuilt([_landing("x"), pdf])  # build first: the PDF's text may do
    assert not main_text_needed_unbuilt([_landing("x", later=False)])  # no page waits for its text


@pytest.fixture()
def site(real_samples: Path):
    landing = (real_samples / LANDING).read_bytes()
    routes = {
        "/robots.txt": lambda h, s: respond(h, 200, b"User-agent: *\n", "text/plain"),
        "/files/rosa.pdf": lambda h, s: respond(h, 200, (real_samples / PDF).read_bytes(), "application/pdf"),
        "/files/pt.pdf": lambda h, s: respond(h, 200, (real_samples / PT_PDF).read_bytes(), "application/pdf"),
        "/files/broken.pdf": lambda h, s: respond(h, 200, b"%PDF-1.4 not really a PDF", "application/pdf"),
        "/landing/a": lambda h, s: respond(h, 200, landing),
        "/landing/b": lambda h, s: respond(h, 200, landing.replace(b"<html", b"<html data-copy='b'", 1)),
        "/landing/c": lambda h, s: respond(h, 200, landing.replace(b"<html", b"<html data-copy='c'", 1)),
        "/landing/d": lambda h, s: respond(h, 200, landing.replace(b"<html", b"<html data-copy='d'", 1)),
        "/landing/e": lambda h, s: respond(h, 200, landing.replace(b"<html", b"<html data-copy='e'", 1)),
        "/landing/f": lambda h, s: respond(h, 200, landing.replace(b"<html", b"<html data-copy='f'", 1)),
        "/landing/g": lambda h, s: respond(h, 200, landing.replace(b"<html", b"<html data-copy='g'", 1)),
        "/gone.pdf": lambda h, s: respond(h, 404, b"gone"),
    }
    with LocalServer(routes) as server:
        yield server


def _write_papers(out: Path, server: LocalServer) -> None:
    rows = [
        # the PDF gives the content: the page's main text is never needed
        paper_row("10.1/pdf-ok", [(server.url("/landing/a"), "landing"), (server.url("/files/rosa.pdf"), "pdf")]),
        # the PDF is gone / cannot be read: the page is read again for its main text
        paper_row("10.1/pdf-gone", [(server.url("/landing/b"), "landing"), (server.url("/gone.pdf"), "pdf")]),
        paper_row("10.1/pdf-broken", [(server.url("/landing/c"), "landing"), (server.url("/files/broken.pdf"), "pdf")]),
        # no PDF planned: the page is extracted whole at once
        paper_row("10.1/landing-only", [(server.url("/landing/d"), "landing")]),
        # metadata titles: the page's title is the paper's and the PDF is another text (its
        # text cannot be the content); the PDF's title is the paper's and the page's is not
        # (weak evidence for the page: its text could change the title match)
        paper_row("10.1/titled-page", [(server.url("/landing/e"), "landing"), (server.url("/files/rosa.pdf"), "pdf")],
               title="Global discharging methods for coloring problems in graphs"),
        paper_row("10.1/titled-pdf", [(server.url("/landing/f"), "landing"), (server.url("/files/rosa.pdf"), "pdf")],
               title="Towards a FISH-based karyotype of Rosa L. (Rosaceae)"),
        # the page's title is the paper's, the PDF (in another language, so not another text)
        # gives the content: the page's text cannot change anything
        paper_row("10.1/titled-lean", [(server.url("/landing/g"), "landing"), (server.url("/files/pt.pdf"), "pdf")],
               title="Global discharging methods for coloring problems in graphs"),
    ]
    write_papers(out, rows)


def test_documents_equal_extracting_every_page_whole(tmp_path, site, beam_args, monkeypatch):
    live = tmp_path / "live"
    _write_papers(live, site)
    counts, docs = fetch_live(live, beam_args)
    assert docs["10.1/pdf-ok"]["content_source"] == "pdf"
    for doi in ("10.1/pdf-gone", "10.1/pdf-broken", "10.1/landing-only"):
        assert docs[doi]["content_source"] == "landing" and len(docs[doi]["content"]) > 1000, doi
    assert docs["10.1/titled-page"]["content_source"] == "landing"  # the PDF is another text
    assert docs["10.1/titled-pdf"]["content_source"] == "pdf" and docs["10.1/titled-pdf"]["title_match"] == 1.0
    assert docs["10.1/titled-lean"]["content_source"] == "pdf" and docs["10.1/titled-lean"]["title_match"] == 1.0
    assert counts["main_text.deferred"] == 6  # landing/a, b, c, e, f, g
    assert counts["main_text.completed"] == 4  # b, c (no PDF text), e (the PDF is another text), f (weak evidence)
    assert not any(k.startswith("main_text_failed.") for k in counts)

    # the same papers from the archive, once as the stage runs and once with every page
    # extracted whole at once: the same documents
    replay, whole = tmp_path / "replay", tmp_path / "whole"
    copy_papers(live, replay)
    copy_papers(live, whole)
    site.stop()
    replayed = run_text(str(replay), f"warc:{live}/warc/*.warc.gz", beam_args, extract_timeout=60, extract_workers=2)
    assert (replayed["main_text.deferred"], replayed["main_text.completed"]) == (6, 4)
    monkeypatch.setattr(text_beam, "main_text_later", lambda tasks: False)
    at_once = run_text(str(whole), f"warc:{live}/warc/*.warc.gz", beam_args, extract_timeout=60)
    assert "main_text.deferred" not in at_once
    assert stage_documents(replay) == stage_documents(whole) == docs


def _unwrap(output):
    """An output's value without its TaggedOutput and windowing (finish_bundle's carry both)."""
    while hasattr(output, "value"):
        output = output.value
    return output


@pytest.mark.parametrize(("scheme", "workers", "build_job"), [
    ("", 1, None), ("file://", 1, None), ("", 2, None),
    ("", 2, "openmsd_build.text.extract.pool:_debug_exit"),  # the child building it dies: built in the worker
])
def test_a_page_that_cannot_be_read_again_keeps_its_first_extraction(tmp_path, scheme, workers, build_job):
    paper = {"doi": "10.1/x", "title": None, "abstract": None, "abstract_source": None}
    abstract = ("We describe chromosome maps of wild roses collected across the Caucasus, with counts, "
                "karyotypes and the first banding patterns for six species of the genus.")
    page = {"kind": "landing", "url": "https://h/x", "title": "Chromosome maps of wild roses", "abstract": abstract,
            "abstracts": [{"text": abstract, "rule": "citation_abstract"}], "content": None, "pdf_url": None,
            "language_hints": ["en"], "rules": {}, "content_from": [scheme + str(tmp_path / "gone.warc.gz"), 0, None, "https://h/x"]}
    dofn = CompleteMainText(extract_timeout=30, workers=workers)
    if build_job:
        dofn.JOBS = {**dofn.JOBS, "documents": build_job}
    dofn.setup()
    try:
        dofn.start_bundle()
        outputs = list(dofn.process(("10.1/x", (paper, [page])))) + list(dofn.finish_bundle())
    finally:
        dofn.teardown()
    values = [_unwrap(o) for o in outputs]
    rows = [v for v in values if isinstance(v, dict) and v.get("doi") == "10.1/x"]
    rejects = [v for v in values if isinstance(v, dict) and v.get("reason") == "main_text_unreadable"]
    counts = [v for v in values if isinstance(v, dict) and "main_text_failed.unreadable" in v]
    assert len(rejects) == 1 and rejects[0]["key"] == "https://h/x"
    assert counts and counts[-1]["main_text_failed.unreadable"] == 1 and counts[-1]["documents.kept"] == 1
    assert rows and rows[0]["abstract"] == abstract and rows[0]["content"] is None
    assert dofn.pool.stats["documents"] == (workers > 1)  # built by a child (in a batch) when there are several
    assert dofn.pool.stats["crashed"] == bool(build_job)
