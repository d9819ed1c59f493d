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

from openmsd_build.core.textclean import clean_abstract, clean_title, count_tokens, normalize_text
from openmsd_build.text.language import detect_language, normalize_language_code

MIN_ABSTRACT_TOKENS = 15
MIN_CONTENT_TOKENS = 150
# Content must be this much longer than the abstract to count as full text.
CONTENT_OVER_ABSTRACT = 1.5
LANGUAGE_TEXT_CHARS = 2000

# Extraction kinds in order of preference for each field.
_TITLE_ORDER = ("landing", "pdf")
_ABSTRACT_ORDER = ("landing", "pdf")
_CONTENT_ORDER = ("pdf", "landing")


def _candidates(paper: dict, extractions: list[dict], field: str, order: tuple[str, ...]) -> list[tuple[str, str]]:
    """(raw text, source) for `field`: the metadata's value first, then every extraction's
    in `order` of kinds (URL order inside a kind). Callers take the first that passes their
    test, so a placeholder ("No abstract available.") or a truncated PDF never hides a
    better candidate behind it."""
    found: list[tuple[str, str]] = []
    if (paper.get(field) or "").strip():
        found.append((paper[field], paper.get(f"{field}_source") or "metadata"))
    for kind in order:
        found += [(e[field], kind) for e in extractions if e.get("kind") == kind and (e.get(field) or "").strip()]
    return found


def build_document(paper: dict, extractions: Iterable[dict] = ()) -> tuple[dict | None, str]:
    """(document row, "kept") or (None, drop reason) for one paper.

    `paper` is a `papers` row (or its projection); `extractions` are the extractor outputs
    for its fetched URLs, each with `kind` ("landing" or "pdf"), `url`, `title`,
    `abstract`, `content` (any may be empty). Extractions are sorted by (kind, url) first
    so the result never depends on the order fetches finished in.

    Drop reasons: `no_text` (nothing fetched or extracted and no metadata abstract),
    `abstract_too_short` / `content_too_short` (text found, all of it under the minimum),
    `nothing_extracted` (pages fetched, no text in them)."""
    extractions = sorted(extractions, key=lambda e: (e.get("kind") or "", e.get("url") or ""))

    title, title_source = "", None
    for raw, source in _candidates(paper, extractions, "title", _TITLE_ORDER):
        title = clean_title(raw)
        if title:
            title_source = source
            break

    abstract, abstract_source, n_abstract = "", None, 0
    abstracts = _candidates(paper, extractions, "abstract", _ABSTRACT_ORDER)
    for raw, source in abstracts:
        text = clean_abstract(raw)
        n_text = count_tokens(text)
        if n_text >= MIN_ABSTRACT_TOKENS:
            abstract, abstract_source, n_abstract = text, source, n_text
            break

    content, content_source = "", None
    contents = _candidates({}, extractions, "content", _CONTENT_ORDER)
    for raw, source in contents:
        text = normalize_text(raw)
        n_text = count_tokens(text)
        if n_text >= MIN_CONTENT_TOKENS and n_text >= CONTENT_OVER_ABSTRACT * n_abstract:
            content, content_source = text, source
            break
    n_content = count_tokens(content)

    if not abstract and not content:
        if abstracts:
            return None, "abstract_too_short"
        if contents:
            return None, "content_too_short"
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
