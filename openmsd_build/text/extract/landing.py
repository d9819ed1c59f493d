"""Title, abstract, main text, PDF link and language hints from a publisher landing page.

Landing pages carry the best metadata in `<meta>` tags (Highwire `citation_*`, Dublin Core,
OpenGraph, schema.org), so fields come from there first and from the page body only when the
meta tags say nothing; the main text comes from trafilatura. The result records which rule
produced each field (`rules`), because the quality of an abstract depends on where it came
from and the build report counts them.

Named `landing.py`, not `html.py`, so it can never shadow the standard library `html` module.

Thresholds (why):

* `MIN_ABSTRACT_CHARS` (50) for scholarly meta fields (`citation_abstract`, `DC.description`,
  `dcterms.abstract`, schema.org `abstract`): shorter values are placeholders ("n/a", a
  journal name), not abstracts.
* `MIN_GENERIC_DESCRIPTION_CHARS` (200) for `description` / `og:description` / schema.org
  `description`, which many sites fill with their own blurb ("Founded in 1920, the NBER
  is ...", "Abstract page for arXiv paper ...") or a one-sentence teaser; they are also
  rejected when they look generic (cookies, sign in, "abstract page for"), start with a
  citation "(2013). Title. Journal", or are truncated ("…") — a truncated teaser is not the
  paper's abstract.
* `MIN_SECTION_CHARS` (100, CJK characters counting four: `textclean.weighted_length`) /
  `MAX_SECTION_CHARS` (20,000) for an abstract found in the body: a container larger than
  that is the whole article, not its abstract.
* `MIN_CONTENT_CHARS` (300): shorter "main text" is a cookie wall or a menu.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import lxml.etree
import lxml.html

from openmsd_build.core.language import normalize_language_code
from openmsd_build.core.regex_gates import first_characters, start_gate
from openmsd_build.core.textclean import (
    ABSTRACT_LABELS,
    clean_abstract,
    clean_title,
    collapse_letter_spacing,
    is_breadcrumb_line,
    is_tex_source_line,
    join_surrogates,
    normalize_text,
    strip_markup,
    weighted_length,
    word_chars,
)
from openmsd_build.text.charset import UndecodableText, decode_page
from openmsd_build.text.extract.caps import cap_extraction

MIN_TITLE_CHARS = 3
MAX_TITLE_CHARS = 1000
MIN_ABSTRACT_CHARS = 50
MIN_GENERIC_DESCRIPTION_CHARS = 200
MIN_SECTION_CHARS = 100
MAX_SECTION_CHARS = 20_000
MAX_ABSTRACT_CHARS = 20_000
MIN_CONTENT_CHARS = 300

# Meta names, in order of trust, and the rule name reported for each.
_TITLE_META = (
    ("citation_title", "citation_title"),
    ("dc.title", "DC.title"),
    ("dcterms.title", "DC.title"),
    ("og:title", "og:title"),
)
_ABSTRACT_META = (
    ("citation_abstract", "citation_abstract"),
    ("dc.description", "DC.description"),
    ("dcterms.abstract", "dcterms.abstract"),
    ("dcterms.description", "DC.description"),
    ("eprints.abstract", "citation_abstract"),
    ("bepress_citation_abstract", "citation_abstract"),
)
_GENERIC_DESCRIPTION_META = (("og:description", "og:description"), ("description", "og:description"))
_PDF_META = (
    ("citation_pdf_url", "citation_pdf_url"),
    ("bepress_citation_pdf_url", "citation_pdf_url"),
    ("eprints.document_url", "eprints.document_url"),
    ("wkhealth_pdf_url", "citation_pdf_url"),
)
_LANGUAGE_META = (
    ("citation_language", "citation_language"),
    ("dc.language", "DC.language"),
    ("dcterms.language", "DC.language"),
    ("content-language", "content-language"),
)

_GENERIC_TEXT_RE = re.compile(
    r"cookie|javascript|sign in|log in|login|subscribe|abstract page for|all rights reserved|"
    r"click here|read the full|access options|purchase|founded in \d{4}|is a (?:private|non-profit|leading)",
    re.IGNORECASE,
)
_CITATION_PREFIX_RE = re.compile(r"^\(\d{4}\)\.\s")  # "(2013). Title. Journal: Vol. 111 ..."
_TRUNCATED_RE = re.compile(r"(?:…|\.\.\.|\[…\]|\[\.\.\.\])\s*$")
_XML_DECL_STR_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
_TITLE_SPLIT_RE = re.compile(r"\s+[|–—-]\s+|\s+::\s+")

# Class / id tokens of abstract containers, and tokens that mark a part of one (an image,
# a heading, a toggle) or something next to it (highlights, graphical abstract).
_ABSTRACT_TOKEN_RE = re.compile(
    r"abstract|^(?:article-?)?summary$|resumo|resumen|résumé|zusammenfassung", re.IGNORECASE
)
# Every match of `_ABSTRACT_TOKEN_RE` holds one of these (lower-cased); ASCII class and id
# names (almost all) are looked up with `in` on their lower-cased string, which for ASCII text
# is what the regex's case-insensitive comparison does.
_ABSTRACT_TOKEN_PIECES = ("abstract", "summary", "resumo", "resumen", "zusammenfassung")


def _may_name_abstract(names: str) -> bool:
    """False when no token of `names` (class and id) can match `_ABSTRACT_TOKEN_RE`: an ASCII
    string without any of its pieces (the piece "résumé" is not ASCII, so it cannot occur in
    one). Other strings are left to the regex."""
    if not names.isascii():
        return True
    lower = names.lower()
    return any(piece in lower for piece in _ABSTRACT_TOKEN_PIECES)


_NOT_ABSTRACT_TOKEN_RE = re.compile(
    r"img|image|figure|graphic|dropzone|heading|title|toggle|link|btn|button|nav|menu|highlight|"
    r"keyword|teaser|^tabs?(?:-|$)|label|preview|related|list|metric|download|citation|cite|promo",
    re.IGNORECASE,
)
# the heading words: `textclean.ABSTRACT_LABELS`, one list for pages, PDFs and metadata
_ABSTRACT_HEADING_RE = re.compile(rf"^\s*(?:{ABSTRACT_LABELS})\s*[:.：]?\s*$", re.IGNORECASE)
# An element's text starts with its own leading text (`.text`): when that holds a character,
# its first one decides whether the whole text can be a heading word (`regex_gates`), and
# most labels, bold runs and spans are passed over without building their text.
_may_start_heading_word = start_gate(first_characters(ABSTRACT_LABELS))
_BOILERPLATE_LINE_RE = re.compile(
    r"^(?:download (?:pdf|citation|article)|view pdf|pdf|full text|cookie|we use cookies|"
    r"accept(?: all)? cookies|share (?:this|on)|sign in|log in|subscribe|print|email|"
    r"references?|cited by|google scholar|crossref|pubmed|export citation|open in new tab|"
    r"back to top|skip to (?:main )?content|advertisement|rights and permissions|reprints and permissions|"
    r"about this article|metrics|altmetric)\b",
    re.IGNORECASE,
)
_BOILERPLATE_ANYWHERE_RE = re.compile(r"\bcookies?\b|\bjavascript\b|your browser", re.IGNORECASE)
_COOKIE_WORD_RE = re.compile(r"\bcookies?\b", re.IGNORECASE)
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


class LandingParseError(ValueError):
    """The bytes are not an HTML document lxml can parse (reported as `parse_error`)."""


def decode_html(body: bytes | str) -> str:
    """Bytes as text (`text.charset.decode_page`: a byte-order mark decides, then valid
    UTF-8, then the declared charset, then cp1252, all strict); `LandingParseError` for
    bytes that are not text in the encoding that applies (no mis-decoded text in a field).
    An XML declaration is dropped (lxml refuses one in a str)."""
    if isinstance(body, str):
        return body
    try:
        text = decode_page(body)
    except UndecodableText as exc:
        raise LandingParseError(str(exc)) from None
    return _XML_DECL_STR_RE.sub("", text, count=1)


def _html_classes() -> lxml.etree.ElementNamespaceClassLookup:
    """The element classes `lxml.html`'s parser gives (`HtmlElement`, and `FormElement`,
    `InputElement`, ... for form tags), chosen in C. `lxml.html` chooses them in a Python
    method that runs each time lxml wraps a node for Python -- hundreds of thousands of
    times a page in trafilatura's passes (~4% of a landing page's extraction).

    Exact for parsed trees, whose tags libxml2's HTML parser lower-cases and leaves without a
    namespace. `lxml.html`'s method also lower-cases tags and ignores namespaces of elements
    added later ("FORM", "{ns}input"); here those would be plain `HtmlElement`s. Neither
    trafilatura nor these rules add such elements."""
    lookup = lxml.etree.ElementNamespaceClassLookup(lxml.etree.ElementDefaultClassLookup(
        element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment,
        pi=lxml.html.HtmlProcessingInstruction, entity=lxml.html.HtmlEntity))
    by_tag = lookup.get_namespace(None)
    for tag, cls in lxml.html.HtmlElementClassLookup._default_element_classes.items():
        by_tag[tag] = cls
    return lookup


_HTML_CLASSES = _html_classes()


def parse_html(body: bytes | str) -> lxml.html.HtmlElement:
    """One lxml tree shared by the meta rules and trafilatura (which copies it before cleaning),
    so the page is parsed once. Parser options follow trafilatura's own loader; the element
    classes are `lxml.html`'s (`_html_classes`)."""
    text = decode_html(body)
    if not text.strip():
        raise LandingParseError("empty document")
    parser = lxml.etree.HTMLParser(
        collect_ids=False, default_doctype=False, encoding="utf-8", remove_comments=True, remove_pis=True
    )
    parser.set_element_class_lookup(_HTML_CLASSES)
    try:
        tree = lxml.html.document_fromstring(text.encode("utf-8", errors="replace"), parser=parser)
    except (lxml.etree.ParserError, ValueError) as exc:
        raise LandingParseError(str(exc)) from exc
    if tree is None:
        raise LandingParseError("no HTML tree")
    return tree


def _meta_values(tree: lxml.html.HtmlElement) -> dict[str, list[str]]:
    """Every `<meta name|property|itemprop|http-equiv=K content=V>` as lower-case K -> [V, ...]
    in document order (empty values dropped: ACS pages repeat `dc.Description` empty)."""
    values: dict[str, list[str]] = {}
    for meta in tree.iter("meta"):
        content = meta.get("content")
        if content is None or not content.strip():
            continue
        for attr in ("name", "property", "itemprop", "http-equiv"):
            key = meta.get(attr)
            if key:
                values.setdefault(key.strip().lower(), []).append(content.strip())
    return values


_SURROGATE_ESCAPE_RE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate half: how JSON spells a character outside the BMP (two of
them), and what a broken generator leaves alone."""


def _joined_halves(value: Any) -> Any:
    """A parsed JSON value with every string's surrogate halves joined, a lone one left out
    (`textclean.join_surrogates`): `json.loads` keeps a lone escaped half as it is, and a
    title holding one stopped every UTF-8 writer. Only JSON-LD that spells a half is walked."""
    if isinstance(value, str):
        return join_surrogates(value)
    if isinstance(value, list):
        return [_joined_halves(v) for v in value]
    if isinstance(value, dict):
        return {k: _joined_halves(v) for k, v in value.items()}
    return value


def _json_ld_objects(tree: lxml.html.HtmlElement) -> Iterator[dict[str, Any]]:
    """schema.org objects from `<script type="application/ld+json">`, flattened (`@graph`,
    lists); invalid JSON is skipped, since sites often ship broken JSON-LD."""
    for script in tree.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json" or not script.text:
            continue
        try:
            data = json.loads(script.text)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's limit
            continue
        if _SURROGATE_ESCAPE_RE.search(script.text):
            data = _joined_halves(data)
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(reversed(item))
            elif isinstance(item, dict):
                yield item
                if isinstance(item.get("@graph"), list):
                    stack.extend(reversed(item["@graph"]))


def _node_text(node: lxml.html.HtmlElement) -> str:
    """Text of an element with paragraph breaks kept and scripts / styles / buttons dropped
    (from a copy; an element holding none of them is serialized in place, without its tail)."""
    if next(node.iterdescendants(*_NOT_TEXT_TAGS), None) is None:
        return strip_markup(lxml.html.tostring(node, encoding="unicode", with_tail=False))
    node = copy.deepcopy(node)
    node.tail = None
    lxml.etree.strip_elements(node, *_NOT_TEXT_TAGS, with_tail=False)
    return strip_markup(lxml.html.tostring(node, encoding="unicode"))


_NOT_TEXT_TAGS = ("script", "style", "noscript", "button", "svg", "math")


def _title_from_tag(tree: lxml.html.HtmlElement) -> str:
    """`<title>` without a site suffix ("Paper title | Journal"): the longest part wins."""
    node = tree.find(".//title")
    if node is None or not node.text_content():
        return ""
    text = clean_title(node.text_content())
    parts = [p for p in _TITLE_SPLIT_RE.split(text) if p.strip()]
    return max(parts, key=len) if parts else text


def _is_good_title(text: str) -> bool:
    return MIN_TITLE_CHARS <= len(text) <= MAX_TITLE_CHARS


def _is_usable_description(text: str, title: str) -> bool:
    """A `description` / `og:description` is used as the abstract only when it is long, not a
    site blurb, not a citation line and not cut off (see the module docstring)."""
    return (
        len(text) >= MIN_GENERIC_DESCRIPTION_CHARS
        and not _GENERIC_TEXT_RE.search(text[:300])
        and not _CITATION_PREFIX_RE.match(text)
        and not _TRUNCATED_RE.search(text)
        and text.strip().lower() != title.strip().lower()
    )


# Containers of other papers: a reference list, "cited by" and "recommended" boxes, whose
# items carry their own "show abstract" boxes (ScienceDirect's `reference-abstract` inside
# `citing-articles`); an abstract box or heading inside one is another paper's.
_OTHER_PAPERS_TOKEN_RE = re.compile(
    r"(?:^|[-_])(?:ref(?:erence)?s?|bibliograph\w*|citing|cited|citations?|related|recommend\w*|similar|"
    r"more-?like\w*|also-?read|trending|popular|most-?read)(?:$|[-_])",
    re.IGNORECASE,
)


def _another_papers(node: lxml.html.HtmlElement) -> bool:
    """Whether `node` sits in a container of other papers (`_OTHER_PAPERS_TOKEN_RE` on its own
    class / id or an ancestor's below `body`: a page-wide "has-related-posts" says nothing)."""
    for element in (node, *node.iterancestors()):
        if element.tag in ("body", "html"):
            return False
        tokens = f"{element.get('class') or ''} {element.get('id') or ''}".split()
        if any(_OTHER_PAPERS_TOKEN_RE.search(t) for t in tokens):
            return True
    return False


def _abstract_candidates(tree: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """Elements whose class / id says "abstract" (and not a part next to it, nor another
    paper's: `_another_papers`), innermost first in document order: the outer `Abstracts` box
    of ScienceDirect also holds the highlights, the inner `abstract author` holds only the
    abstract."""
    found = []
    for node in tree.iter("section", "div", "article", "blockquote", "p", "span"):
        names = f"{node.get('class') or ''} {node.get('id') or ''}"
        if node.get("itemprop") in ("abstract", "description") and node.tag != "meta":
            if not _another_papers(node):
                found.append(node)
            continue
        if not _may_name_abstract(names):
            continue
        tokens = names.split()
        if any(_ABSTRACT_TOKEN_RE.search(t) for t in tokens) and not any(
            _NOT_ABSTRACT_TOKEN_RE.search(t) for t in tokens
        ):
            if not any(a.tag in ("nav", "footer", "header", "aside") for a in node.iterancestors()) and not _another_papers(node):
                found.append(node)
    # a box holding another found box is one of its ancestors (looked up from each found box:
    # a few levels each, where the boxes' descendants are whole articles)
    holding = {ancestor for node in found for ancestor in node.iterancestors()}
    inner = [node for node in found if node not in holding]
    # innermost boxes first, then their containers (used when the inner ones are too short)
    return inner + [n for n in found if n not in inner]


def _abstracts_after_headings(tree: lxml.html.HtmlElement, limit: int = 4) -> list[str]:
    """The text after each heading that says "Abstract" (in any of the lexicon's languages)
    up to the next heading of the same or a higher level, for pages that mark abstracts only
    with headings (SciELO prints RESUMO / ABSTRACT / RESUMEN as `h1` over `h2` section labels
    "Objetivo", "Métodos": the labels stay, glued to their paragraph, as printed)."""
    found: list[str] = []
    for heading in tree.iter(*_HEADINGS, "strong", "b", "dt", "label", "th", "span"):
        if len(found) >= limit:
            break
        lead = heading.text
        if lead and not lead.isspace() and not _may_start_heading_word(lead):
            continue
        if not _ABSTRACT_HEADING_RE.match(heading.text_content() or ""):
            continue
        if _another_papers(heading):  # a "show abstract" heading in a reference list
            continue
        if heading.tag not in _HEADINGS:
            # an inline label ("<label>摘要：</label><span>text</span>", "<b>Resumo:</b> text")
            # followed by the abstract inside the same parent
            inline = _text_after_label(heading)
            if MIN_SECTION_CHARS <= weighted_length(inline) and len(inline) <= MAX_SECTION_CHARS:
                found.append(inline)
                continue
        parts: list[str] = []
        anchor = heading if heading.tag in _HEADINGS else heading.getparent()
        if anchor is None or any(a.tag in ("nav", "footer", "header", "aside") for a in anchor.iterancestors()):
            continue
        level = int(anchor.tag[1]) if anchor.tag in _HEADINGS else 6
        if anchor is not heading and anchor.tail and anchor.tail.strip():
            parts.append(anchor.tail)
        label = ""
        for sibling in anchor.itersiblings():
            if not isinstance(sibling.tag, str):
                continue
            if sibling.tag in _HEADINGS:
                if int(sibling.tag[1]) <= level:
                    break
                label = (sibling.text_content() or "").strip()  # a structured-abstract label
                continue
            text = _node_text(sibling)
            parts.append(f"{label} {text}" if label else text)
            label = ""
            if sum(len(p) for p in parts) > MAX_SECTION_CHARS:
                break
        text = clean_abstract("\n\n".join(parts))
        if MIN_SECTION_CHARS <= weighted_length(text) and len(text) <= MAX_SECTION_CHARS:
            found.append(text)
    return found


def _text_after_label(label: lxml.html.HtmlElement) -> str:
    """The text after an inline label inside its parent (the label's tail and its following
    siblings), cleaned: the abstract of pages that print "Abstract:" as a label in the same
    paragraph or table row (CNKI, repository record pages)."""
    parts = [label.tail or ""]
    size = len(parts[0])
    for sibling in label.itersiblings():
        if not isinstance(sibling.tag, str):
            continue
        text = _node_text(sibling)
        if len(text) <= 8 and (sibling.tag == "a" or sibling.find(".//a") is not None):
            continue  # a "more" / "reset" toggle after the text
        parts.append(text + (sibling.tail or ""))
        size += len(parts[-1])
        if size > MAX_SECTION_CHARS:
            break
    return clean_abstract(" ".join(p for p in parts if p.strip()))


def _body_abstracts(tree: lxml.html.HtmlElement) -> list[tuple[str, str]]:
    """Every abstract in the page body as (text, rule): innermost abstract containers, then
    heading-marked sections (duplicates are removed by `build_document`)."""
    out: list[tuple[str, str]] = []
    for node in _abstract_candidates(tree):
        text = clean_abstract(_node_text(node))
        if MIN_SECTION_CHARS <= weighted_length(text) and len(text) <= MAX_SECTION_CHARS:
            out.append((text, "schema.org" if node.get("itemprop") in ("abstract", "description") else "abstract_section"))
        if len(out) >= 4:
            break
    out += [(t, "abstract_section") for t in _abstracts_after_headings(tree)]
    return out


def clean_content(text: str | None) -> str:
    """trafilatura's text (one paragraph per line) without boilerplate lines ("Download PDF",
    cookie notices, share / sign-in links, "Skip to main content"), breadcrumb trails
    ("Computer Science > Digital Libraries") and LaTeX source lines, letter-spaced headings
    collapsed ("R EVI EW"), as paragraphs separated by blank lines."""
    if not text:
        return ""
    kept = []
    for line in text.splitlines():
        line = line.strip()
        if not line or is_breadcrumb_line(line) or is_tex_source_line(line):
            continue
        line = collapse_letter_spacing(line)
        if len(line) < 80 and (_BOILERPLATE_LINE_RE.match(line) or _BOILERPLATE_ANYWHERE_RE.search(line)):
            continue
        if len(line) < 300 and "consent" in line.lower() and _COOKIE_WORD_RE.search(line):
            continue
        kept.append(line)
    return normalize_text("\n\n".join(kept))


# How the stage calls trafilatura (also the benchmarks' direct call, so that they time the
# same extraction): no comments, no tables (their cells read as word salad), no images, no
# dedup cache (it makes the result depend on what the worker saw before), precision first.
TRAFILATURA_OPTIONS: dict[str, Any] = {
    "output_format": "txt",
    "include_comments": False,
    "include_tables": False,
    "include_images": False,
    "include_links": False,
    "include_formatting": False,
    "deduplicate": False,
    "favor_precision": True,
    "with_metadata": False,
}


def extract_main_text(tree: lxml.html.HtmlElement | bytes | str, url: str | None = None) -> str:
    """Main text with trafilatura, called with `TRAFILATURA_OPTIONS`."""
    import trafilatura

    return trafilatura.extract(tree, url=url, **TRAFILATURA_OPTIONS) or ""


def warm_up() -> None:
    """Do trafilatura's first-use work now, so that no child pays it inside a document's time
    limit and each pays it never rather than once (the fork server calls this before forking).

    At its first jusText fallback trafilatura builds the union of jusText's 100 stoplists
    (154,484 words, ~0.2 s) as a tuple, and jusText's `classify_paragraphs` passes it to
    `define_stoplist`, an `lru_cache` keyed by that tuple: every call hashes all of its words
    again (~2 ms a page), and every new child lower-cases them once more (~85 ms a child). As
    a frozenset, whose hash Python keeps, the cache answers at once; lower-cased here, every
    child inherits the answer. jusText only asks whether a word is in it, so a set (of the
    same words, in any order) classifies the same."""
    from trafilatura import external

    if getattr(external, "JT_STOPLIST", True) is None and hasattr(external, "jt_stoplist_init"):
        external.jt_stoplist_init()
    if isinstance(getattr(external, "JT_STOPLIST", None), tuple):
        from justext.core import define_stoplist

        external.JT_STOPLIST = frozenset(external.JT_STOPLIST)
        define_stoplist(external.JT_STOPLIST)


def _absolute_http_url(href: str, base: str | None) -> str | None:
    """`href` as an absolute http(s) URL, or None. A link `urljoin` refuses (an unclosed IPv6
    bracket, a host that NFKC turns into URL syntax) is no link: its ValueError ended the whole
    page's extraction, losing its title and text for one bad field."""
    href = href.strip()
    if base:
        try:
            href = urljoin(base, href)
        except ValueError:
            return None
    return href if re.match(r"^https?://", href, re.IGNORECASE) else None


def extract_landing(body: bytes | str, url: str | None = None, with_content: bool = True) -> dict[str, Any]:
    """Fields of one landing page (see the module docstring for the rules and thresholds).

    Returns `{"title", "abstract", "content", "pdf_url", "language_hints", "rules"}`; missing
    fields are None, `language_hints` is a list of ISO 639-1 codes in order of trust and
    `rules[field]` names the rule that produced each field (None when nothing did).
    `with_content=False` skips trafilatura, for callers that only need the metadata.
    Raises `LandingParseError` for bytes that are not HTML.
    """
    tree = parse_html(body)
    meta = _meta_values(tree)
    json_ld = list(_json_ld_objects(tree))
    rules: dict[str, Any] = {"title": None, "abstract": None, "content": None, "pdf_url": None, "language_hints": []}

    # title
    title = ""
    for key, rule in _TITLE_META:
        for value in meta.get(key, ()):
            candidate = clean_title(value)
            if _is_good_title(candidate):
                title, rules["title"] = candidate, rule
                break
        if title:
            break
    if not title:
        for obj in json_ld:
            value = obj.get("headline") or obj.get("name")
            if isinstance(value, str) and _is_good_title(clean_title(value)):
                title, rules["title"] = clean_title(value), "schema.org"
                break
    if not title:
        candidate = _title_from_tag(tree)
        if _is_good_title(candidate):
            title, rules["title"] = candidate, "title_tag"
    if not title:  # an empty <title>: the article's own heading
        for node in tree.iter("h1"):
            if any(a.tag in ("nav", "footer", "header", "aside") for a in node.iterancestors()):
                continue
            candidate = clean_title(_node_text(node))
            if _is_good_title(candidate) and not _ABSTRACT_HEADING_RE.match(candidate):
                title, rules["title"] = candidate, "h1"
                break

    # abstracts: every scholarly meta value (a bilingual page carries one per language),
    # schema.org abstracts, body sections; the first is `abstract`, as before. Long generic
    # descriptions only when nothing else was found.
    found: list[tuple[str, str]] = []
    for key, rule in _ABSTRACT_META:
        for value in meta.get(key, ()):
            candidate = clean_abstract(value)
            if len(candidate) >= MIN_ABSTRACT_CHARS and candidate.lower() != title.lower():
                found.append((candidate, rule))
    for obj in json_ld:
        value = obj.get("abstract")
        if isinstance(value, str) and len(clean_abstract(value)) >= MIN_ABSTRACT_CHARS:
            found.append((clean_abstract(value), "schema.org"))
    found += _body_abstracts(tree)
    if not found:
        generic = [(v, r) for k, r in _GENERIC_DESCRIPTION_META for v in meta.get(k, ())]
        generic += [(o["description"], "schema.org") for o in json_ld if isinstance(o.get("description"), str)]
        for value, rule in generic:
            candidate = clean_abstract(value)
            if _is_usable_description(candidate, title):
                found.append((candidate, rule))
                break
    abstracts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for text, rule in found:
        key = word_chars(text)[:200]
        if key not in seen:
            seen.add(key)
            abstracts.append({"text": text[:MAX_ABSTRACT_CHARS], "rule": rule})
    abstract = abstracts[0]["text"] if abstracts else ""
    rules["abstract"] = abstracts[0]["rule"] if abstracts else None
    abstract = abstract[:MAX_ABSTRACT_CHARS]

    # PDF link
    pdf_url = None
    for key, rule in _PDF_META:
        for value in meta.get(key, ()):
            pdf_url = _absolute_http_url(value, url)
            if pdf_url:
                rules["pdf_url"] = rule
                break
        if pdf_url:
            break
    if not pdf_url:
        for link in tree.iter("link"):
            if (link.get("type") or "").lower() == "application/pdf" and link.get("href"):
                pdf_url = _absolute_http_url(link.get("href"), url)
                if pdf_url:
                    rules["pdf_url"] = "link_pdf"
                    break

    # language hints, most trusted first, de-duplicated
    hints: list[str] = []
    hint_rules: list[str] = []
    sources = [(v, r) for k, r in _LANGUAGE_META for v in meta.get(k, ())]
    sources.append((tree.get("lang") or tree.get("{http://www.w3.org/XML/1998/namespace}lang") or "", "html_lang"))
    for value, rule in sources:
        code = normalize_language_code(value)
        if code and code not in hints:
            hints.append(code)
            hint_rules.append(rule)
    rules["language_hints"] = hint_rules

    # main text
    content = ""
    if with_content:
        content = clean_content(extract_main_text(tree, url=url))
        if len(content) < MIN_CONTENT_CHARS:
            content = ""
        else:
            rules["content"] = "trafilatura"

    return cap_extraction({
        "title": title or None,
        "abstract": abstract or None,
        "abstracts": abstracts[:6],
        "content": content or None,
        "pdf_url": pdf_url,
        "language_hints": hints,
        "rules": rules,
    })
