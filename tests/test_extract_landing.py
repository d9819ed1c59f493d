"""Landing-page extraction: real publisher pages (meta tags read here with an independent
regex, so the test knows which pages carry a title / abstract / PDF link) and small pages
that pin each rule."""

from __future__ import annotations

import html as html_module
import re
from pathlib import Path

import pytest

from openmsd_build.text.extract.landing import (
    MIN_GENERIC_DESCRIPTION_CHARS,
    LandingParseError,
    clean_content,
    extract_landing,
)

_META_TAG_RE = re.compile(r"<meta\b[^>]*>", re.IGNORECASE | re.DOTALL)
_ATTR_RE = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.DOTALL)


def meta_tags(text: str) -> dict[str, list[str]]:
    """name/property (lower-case) -> non-empty contents, with a plain regex (not lxml)."""
    tags: dict[str, list[str]] = {}
    for tag in _META_TAG_RE.findall(text):
        attrs = {m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3) for m in _ATTR_RE.finditer(tag)}
        key = (attrs.get("name") or attrs.get("property") or "").lower()
        content = html_module.unescape(attrs.get("content") or "").strip()
        if key and content:
            tags.setdefault(key, []).append(content)
    return tags


def words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w{4,}", text)}


def html_pages(real_samples: Path) -> list[Path]:
    pages = sorted((real_samples / "html").glob("*.html"))
    assert len(pages) >= 20
    return pages


@pytest.fixture(scope="module")
def extracted(real_samples: Path) -> dict[str, tuple[dict, dict]]:
    out = {}
    for page in html_pages(real_samples):
        raw = page.read_bytes()
        out[page.name] = (extract_landing(raw, url="https://example.org/article/1"), meta_tags(raw.decode("utf-8", "replace")))
    return out


def test_title_found_where_meta_has_one(extracted: dict) -> None:
    checked = 0
    for name, (result, meta) in extracted.items():
        expected = next((meta[k][0] for k in ("citation_title", "dc.title", "og:title") if k in meta), None)
        if expected is None:
            continue
        checked += 1
        assert result["title"], name
        assert result["rules"]["title"] in {"citation_title", "DC.title", "og:title"}, name
        overlap = words(expected) & words(result["title"])
        assert len(overlap) >= 0.8 * len(words(expected)), (name, expected, result["title"])
    assert checked >= 20


def test_abstract_found_where_meta_has_one(extracted: dict) -> None:
    checked = 0
    for name, (result, meta) in extracted.items():
        carried = [v for k in ("citation_abstract", "dc.description", "dcterms.abstract") for v in meta.get(k, ()) if len(v) >= 50]
        if not carried:
            continue
        checked += 1
        assert result["abstract"], name
        assert len(words(carried[0]) & words(result["abstract"])) >= 0.6 * len(words(carried[0][:500])), name
    assert checked >= 10


def test_every_real_page_has_some_text(extracted: dict) -> None:
    for name, (result, _meta) in extracted.items():
        assert result["abstract"] or result["content"], name
        if result["content"]:
            assert result["rules"]["content"] == "trafilatura"
            assert "\n\n" in result["content"] or len(result["content"]) < 2000, name


def test_pdf_url_and_language_hints(extracted: dict) -> None:
    for name, (result, meta) in extracted.items():
        if "citation_pdf_url" in meta:
            assert result["pdf_url"] and result["pdf_url"].startswith("http"), name
            assert result["rules"]["pdf_url"] == "citation_pdf_url"
        lang = (meta.get("citation_language") or meta.get("dc.language") or [None])[0]
        if lang:
            assert result["language_hints"][0] == lang.lower()[:2], name


def test_known_pages(extracted: dict) -> None:
    hal, _ = extracted["papis__HAL_THESES_tel_02083632v1.html"]
    assert hal["rules"]["abstract"] == "citation_abstract"
    assert hal["language_hints"] == ["en", "fr"]  # citation_language=en, <html lang=fr>
    sd, _ = extracted["papis__ScienceDirect_S146290112300117X.html"]
    assert sd["rules"]["abstract"] == "abstract_section"
    assert not sd["abstract"].lower().startswith("highlights")  # the box next to the abstract
    nber, _ = extracted["papis__NBER_w29971.html"]
    assert not (nber["abstract"] or "").startswith("In addition to working papers")  # site blurb


PAGE = """<html lang="{lang}"><head><meta charset="utf-8"><title>{title} | Some Journal</title>{meta}</head>
<body><nav>Home | Download PDF | Sign in</nav><article><h1>{title}</h1>{body}
<p>{para}</p><p>{para}</p><p>Download PDF</p><p>We use cookies to improve your experience.</p></article></body></html>"""
PARA = "The measured diffusion coefficients agree with the model over four orders of magnitude in concentration. " * 3


def page(meta: str = "", body: str = "", title: str = "A study of diffusion in thin films", lang: str = "en") -> str:
    return PAGE.format(meta=meta, body=body, title=title, para=PARA, lang=lang)


def test_title_falls_back_to_title_tag_without_site_suffix() -> None:
    result = extract_landing(page())
    assert result["title"] == "A study of diffusion in thin films"
    assert result["rules"]["title"] == "title_tag"


def test_abstract_section_in_body() -> None:
    body = '<section class="abstract"><h2>Abstract</h2><p>' + "We report new diffusion data for thin films. " * 5 + "</p></section>"
    result = extract_landing(page(body=body))
    assert result["rules"]["abstract"] == "abstract_section"
    assert result["abstract"].startswith("We report new diffusion data")


def test_abstract_after_heading() -> None:
    body = "<h2>Resumen</h2><p>" + "Presentamos nuevos datos de difusión en películas delgadas. " * 4 + "</p><h2>Introducción</h2>"
    result = extract_landing(page(body=body))
    assert result["rules"]["abstract"] == "abstract_section"
    assert result["abstract"].startswith("Presentamos") and "Introducción" not in result["abstract"]


def test_generic_description_threshold() -> None:
    short = '<meta property="og:description" content="A journal of physics.">'
    assert extract_landing(page(meta=short))["abstract"] is None
    long_text = "We measure diffusion in thin films and compare it with a continuum model. " * 4
    assert len(long_text) >= MIN_GENERIC_DESCRIPTION_CHARS
    result = extract_landing(page(meta=f'<meta property="og:description" content="{long_text}">'))
    assert result["rules"]["abstract"] == "og:description"
    truncated = long_text[:250] + "…"
    assert extract_landing(page(meta=f'<meta name="description" content="{truncated}">'))["abstract"] is None


def test_citation_meta_relative_pdf_and_language() -> None:
    meta = (
        '<meta name="citation_title" content="Über Diffusion in dünnen Schichten">'
        '<meta name="citation_abstract" content="&lt;p&gt;Wir messen Diffusion in dünnen Schichten und vergleichen sie mit einem Modell.&lt;/p&gt;">'
        '<meta name="citation_pdf_url" content="/content/paper.pdf">'
        '<meta name="citation_language" content="ger">'
    )
    result = extract_landing(page(meta=meta, lang="de-DE"), url="https://journal.example/article/7")
    assert result["title"] == "Über Diffusion in dünnen Schichten"
    assert result["abstract"].startswith("Wir messen Diffusion") and "<p>" not in result["abstract"]
    assert result["pdf_url"] == "https://journal.example/content/paper.pdf"
    assert result["language_hints"] == ["de"]
    assert result["rules"]["language_hints"] == ["citation_language"]
    # no base URL: a relative link cannot be made absolute and is not reported
    assert extract_landing(page(meta=meta))["pdf_url"] is None


def test_latin1_bytes_are_decoded() -> None:
    raw = page(meta='<meta name="citation_title" content="Études sur la diffusion">').replace('charset="utf-8"', 'charset="iso-8859-1"')
    result = extract_landing(raw.encode("iso-8859-1"))
    assert result["title"] == "Études sur la diffusion"


def test_content_is_cleaned() -> None:
    result = extract_landing(page())
    assert result["content"] and "diffusion coefficients" in result["content"]
    assert "Download PDF" not in result["content"] and "cookies" not in result["content"]
    assert clean_content("Download PDF\nReal text here.\nAccept all cookies") == "Real text here."


def test_not_html() -> None:
    with pytest.raises(LandingParseError):
        extract_landing(b"   ")


def _classes_match_lxml_html(body: bytes) -> None:
    import lxml.html

    from openmsd_build.text.extract.landing import decode_html, parse_html

    ours = parse_html(body)
    theirs = lxml.html.document_fromstring(
        decode_html(body).encode("utf-8", errors="replace"),
        parser=lxml.html.HTMLParser(collect_ids=False, default_doctype=False, encoding="utf-8",
                                    remove_comments=True, remove_pis=True))
    assert [(node.tag, type(node)) for node in ours.iter()] == [(node.tag, type(node)) for node in theirs.iter()]


def test_parsed_form_tags_get_lxml_html_element_classes() -> None:
    """`parse_html` picks element classes in C (`_html_classes`); every node of a page with
    each form tag (in odd cases, which the parser lower-cases) must get the class
    `lxml.html`'s own parser gives it, since trafilatura and readability call their methods."""
    from openmsd_build.text.extract.landing import parse_html

    forms = (b"<html><body><FORM action=x><Input name=a value=1><select><option>o</option></select>"
             b"<TEXTAREA>t</TEXTAREA><label for=a>l</label></FORM><p>x</p></body></html>")
    _classes_match_lxml_html(forms)
    kinds = {type(node).__name__ for node in parse_html(forms).iter()}
    assert {"FormElement", "InputElement", "SelectElement", "TextareaElement", "LabelElement"} <= kinds


def test_real_pages_get_lxml_html_element_classes(real_samples: Path) -> None:
    """The same on every node of every real landing page."""
    pages = html_pages(real_samples)
    for page in pages:
        _classes_match_lxml_html(page.read_bytes())


_WARM_OR_NOT = """
import json, sys
from pathlib import Path
from trafilatura import external
from openmsd_build.text.extract.landing import extract_landing, warm_up
assert external.JT_STOPLIST is None
from justext.core import define_stoplist
if sys.argv[1] == "warm":
    warm_up()
    assert len(external.JT_STOPLIST) > 10_000
    assert isinstance(external.JT_STOPLIST, frozenset)  # its hash is kept: jusText's cache answers at once
    # the lower-cased stoplist is made here, before the first page (a fork server's children inherit it)
    assert define_stoplist.cache_info().misses == 1
before = define_stoplist.cache_info().misses
out = [extract_landing(Path(p).read_bytes(), url="https://example.org/" + Path(p).name) for p in sys.argv[2:]]
# cold: the first jusText fallback makes it
print(json.dumps({"misses_while_extracting": define_stoplist.cache_info().misses - before,
                  "hits": define_stoplist.cache_info().hits, "out": out}, sort_keys=True))
"""


def test_warm_up_builds_the_jusText_stoplists_and_changes_no_extraction(real_samples: Path) -> None:
    """`landing.warm_up` (run by the fork server before it forks the children) does
    trafilatura's first-use work -- the union of jusText's stoplists, as a frozenset already
    lower-cased by jusText's cache, so no page makes it again -- and every real page extracts
    the same with it as without it (each side in a fresh interpreter)."""
    import json
    import subprocess
    import sys

    pages = [str(p) for p in html_pages(real_samples)]
    warm, cold = [json.loads(subprocess.run([sys.executable, "-c", _WARM_OR_NOT, mode, *pages], capture_output=True,
                                            text=True, check=True).stdout) for mode in ("warm", "cold")]
    assert warm["out"] == cold["out"] and len(json.dumps(warm["out"])) > 1000
    assert cold["misses_while_extracting"] == 1 and warm["misses_while_extracting"] == 0
    assert warm["hits"] > 0  # some real page falls back to jusText, and the warm set answered it
