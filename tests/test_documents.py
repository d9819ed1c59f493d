"""What text a paper keeps (documents.build_document): precedence, thresholds, drop reasons."""

from __future__ import annotations

from openmsd_build.text.documents import build_document

# Real-looking English: CLD3 labels one sentence repeated six times French (reliably).
LONG_ABSTRACT = (
    "We measure how citation graphs shape multilingual retrieval across forty languages, and we find "
    "that links between papers predict relevance better than shared words do. The effect holds for "
    "small languages, for old papers and for papers whose abstracts were translated by their authors."
)
LONG_CONTENT = " ".join(["The body of the paper discusses methods, data and results at length."] * 40)


def _paper(**fields) -> dict:
    return {"doi": "10.1000/x", "categories": [], "relations": [], **fields}


def test_metadata_abstract_wins_and_pdf_gives_content():
    doc, outcome = build_document(
        _paper(title="Citation graphs", abstract=LONG_ABSTRACT, abstract_source="crossref", title_source="crossref"),
        [{"kind": "pdf", "url": "u1", "title": "PDF title", "abstract": "Other abstract " * 20, "content": LONG_CONTENT},
         {"kind": "landing", "url": "u2", "content": "short landing text"}],
    )
    assert outcome == "kept"
    assert (doc["title"], doc["title_source"]) == ("Citation graphs", "crossref")
    assert doc["abstract_source"] == "crossref" and doc["abstract"] == LONG_ABSTRACT
    assert doc["content_source"] == "pdf" and doc["text_source"] == "pdf"


def test_placeholder_metadata_abstract_does_not_hide_the_landing_abstract():
    doc, outcome = build_document(
        _paper(title="T", abstract="No abstract available.", abstract_source="crossref"),
        [{"kind": "landing", "url": "u", "abstract": LONG_ABSTRACT}],
    )
    assert outcome == "kept"
    assert doc["abstract_source"] == "landing"


def test_a_truncated_pdf_does_not_hide_a_complete_one():
    doc, outcome = build_document(
        _paper(title="T"),
        [{"kind": "pdf", "url": "a.pdf", "content": "three short tokens"},
         {"kind": "pdf", "url": "b.pdf", "content": LONG_CONTENT}],
    )
    assert outcome == "kept"
    assert doc["content"].startswith("The body") and doc["content_source"] == "pdf"


def test_content_that_is_only_the_abstract_again_is_not_full_text():
    doc, _ = build_document(
        _paper(title="T", abstract=LONG_ABSTRACT, abstract_source="crossref"),
        [{"kind": "landing", "url": "u", "content": LONG_ABSTRACT}],
    )
    assert doc["content"] is None and doc["text_source"] == "crossref"


def test_drop_reasons():
    assert build_document(_paper(title="T")) == (None, "no_text")
    assert build_document(_paper(title="T"), [{"kind": "landing", "url": "u"}]) == (None, "nothing_extracted")
    assert build_document(_paper(title="T", abstract="Too short."), [])[1] == "abstract_too_short"
    assert build_document(_paper(title="T"), [{"kind": "pdf", "url": "u", "content": "tiny"}])[1] == "content_too_short"


def test_extraction_order_does_not_matter():
    exts = [{"kind": "pdf", "url": "b", "content": LONG_CONTENT + " b"},
            {"kind": "pdf", "url": "a", "content": LONG_CONTENT + " a"},
            {"kind": "landing", "url": "c", "abstract": LONG_ABSTRACT, "title": "Landing title"}]
    assert build_document(_paper(), exts) == build_document(_paper(), list(reversed(exts)))
    doc, _ = build_document(_paper(), exts)
    assert doc["content"].endswith(" a") and doc["title_source"] == "landing"
