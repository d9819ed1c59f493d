"""A paper's document row: metadata plus whatever was extracted from its pages and PDFs.

This is where the kept text of a paper is decided (pure function, no Beam):

- title: metadata (Crossref > OpenAlex > Unpaywall, see `merge`) > landing page > PDF;
- abstract: metadata (Crossref JATS, OpenAlex) > landing page (meta tags or abstract
  section) > PDF abstract section — metadata abstracts are the publisher's own text;
- content (full text): PDF body > landing page main text (trafilatura). Content that is
  hardly longer than the abstract is the abstract again, not full text, and is dropped;
- language: CLD3 on title + abstract (title + start of content when there is no abstract);
- kept when it has an abstract of at least `MIN_ABSTRACT_TOKENS` tokens or content of at
  least `MIN_CONTENT_TOKENS` tokens (the paper's "text could be extracted").

Every field keeps where it came from (`*_source`: crossref, openalex, unpaywall, landing, pdf).
"""

from __future__ import annotations

from collections.abc import Iterable

from openmsd_build.language import detect_language, normalize_language_code
from openmsd_build.textclean import clean_abstract, clean_title, count_tokens, normalize_text

MIN_ABSTRACT_TOKENS = 15
MIN_CONTENT_TOKENS = 150
# Content must be this much longer than the abstract to count as full text.
CONTENT_OVER_ABSTRACT = 1.5
LANGUAGE_TEXT_CHARS = 2000

# Extraction kinds in order of preference for each field.
_TITLE_ORDER = ("landing", "pdf")
_ABSTRACT_ORDER = ("landing", "pdf")
_CONTENT_ORDER = ("pdf", "landing")


def _first(extractions: list[dict], field: str, order: tuple[str, ...]) -> tuple[str, str | None]:
    for kind in order:
        for ext in extractions:
            if ext.get("kind") == kind and (ext.get(field) or "").strip():
                return ext[field], kind
    return "", None


def build_document(paper: dict, extractions: Iterable[dict] = ()) -> tuple[dict | None, str]:
    """(document row, "kept") or (None, drop reason) for one paper.

    `paper` is a `papers` row (or its projection); `extractions` are the extractor outputs
    for its fetched URLs, each with `kind` ("landing" or "pdf"), `url`, `title`,
    `abstract`, `content` (any may be empty). Extractions are sorted by (kind, url) first
    so the result never depends on the order fetches finished in."""
    extractions = sorted(extractions, key=lambda e: (e.get("kind") or "", e.get("url") or ""))

    title = clean_title(paper.get("title"))
    title_source = paper.get("title_source") if title else None
    if not title:
        raw, title_source = _first(extractions, "title", _TITLE_ORDER)
        title = clean_title(raw)

    abstract = clean_abstract(paper.get("abstract"))
    abstract_source = paper.get("abstract_source") if abstract else None
    if not abstract:
        raw, abstract_source = _first(extractions, "abstract", _ABSTRACT_ORDER)
        abstract = clean_abstract(raw)
    n_abstract = count_tokens(abstract)
    if n_abstract < MIN_ABSTRACT_TOKENS:
        abstract, abstract_source, n_abstract = "", None, 0

    content, content_source = "", None
    for kind in _CONTENT_ORDER:
        raw, source = _first([e for e in extractions if e.get("kind") == kind], "content", (kind,))
        text = normalize_text(raw)
        n_text = count_tokens(text)
        if n_text >= MIN_CONTENT_TOKENS and n_text >= CONTENT_OVER_ABSTRACT * n_abstract:
            content, content_source = text, source
            break
    n_content = count_tokens(content)

    if not abstract and not content:
        if paper.get("abstract") or any(e.get("abstract") for e in extractions):
            return None, "abstract_too_short"
        return None, "no_text" if not extractions else "nothing_extracted"

    language, probability, reliable = detect_language(title, abstract or content[:LANGUAGE_TEXT_CHARS])
    row = {
        "doi": paper["doi"],
        "title": title or None,
        "abstract": abstract or None,
        "content": content or None,
        "language": language,
        "language_prob": float(probability),
        "language_reliable": bool(reliable),
        "publisher_language": normalize_language_code(paper.get("publisher_language")),
        "title_source": title_source,
        "abstract_source": abstract_source,
        "content_source": content_source,
        "text_source": content_source or abstract_source,
        "n_tokens_title": count_tokens(title),
        "n_tokens_abstract": n_abstract,
        "n_tokens_content": n_content,
        "year": paper.get("year"),
        "venue": paper.get("venue"),
        "type": paper.get("type"),
        "categories": list(paper.get("categories") or []),
        "relations": list(paper.get("relations") or []),
    }
    return row, "kept"
