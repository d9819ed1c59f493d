"""Landing pages, PDFs and error pages for the sample's WARC.

The text stage reads what real publisher sites serve: Highwire `citation_*` meta tags,
Dublin Core / Open Graph descriptions, an abstract section and full-text paragraphs inside
page chrome (navigation, footer) that an extractor must skip. These builders produce that
shape from a paper's generated words, varying which signals are present so the extractor's
fallbacks are exercised.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from openmsd_build.sample.pdf import make_pdf


@dataclass
class PageContent:
    """What a landing page or PDF shows for one paper."""

    doi: str
    lang: str
    title: str
    abstract: str
    authors: list[str]
    journal: str
    publisher: str
    year: int
    date: str  # YYYY/MM/DD
    license: str | None
    words: tuple[str, str, str, str, str, str, str]  # abstract, intro, methods, results, discussion, refs, keywords
    paragraphs: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    pdf_url: str | None = None


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def landing_html(c: PageContent, *, html_lang: bool, citation_lang: bool, citation_abstract: bool,
                 dc_description: bool, og_description: bool, abstract_section: bool, fulltext: bool) -> bytes:
    """A publisher landing page; the flags choose which metadata and body parts appear."""
    head = [
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(c.title)} | {_e(c.journal)}</title>",
        f'<meta name="citation_title" content="{_e(c.title)}">',
    ]
    head += [f'<meta name="citation_author" content="{_e(a)}">' for a in c.authors]
    head += [
        f'<meta name="citation_publication_date" content="{c.date}">',
        f'<meta name="citation_journal_title" content="{_e(c.journal)}">',
        f'<meta name="citation_publisher" content="{_e(c.publisher)}">',
        f'<meta name="citation_doi" content="{_e(c.doi)}">',
    ]
    if citation_lang:
        head.append(f'<meta name="citation_language" content="{c.lang}">')
    if c.pdf_url:
        head.append(f'<meta name="citation_pdf_url" content="{_e(c.pdf_url)}">')
    if citation_abstract:
        head.append(f'<meta name="citation_abstract" content="{_e(c.abstract)}">')
    if dc_description:
        head.append(f'<meta name="DC.description" content="{_e(c.abstract)}">')
        head.append(f'<meta name="DC.identifier" content="doi:{_e(c.doi)}">')
    if og_description:
        head.append(f'<meta property="og:title" content="{_e(c.title)}">')
        head.append(f'<meta property="og:description" content="{_e(c.abstract)}">')
    head.append('<link rel="stylesheet" href="/static/css/article.css">')
    w_abs, w_intro, w_meth, w_res, w_disc, w_refs, w_kw = c.words
    body = [
        '<header class="site-header"><a class="logo" href="/">' + _e(c.publisher) + "</a>",
        '<nav><ul><li><a href="/journals">Journals</a></li><li><a href="/about">About</a></li>'
        '<li><a href="/submit">Submit</a></li><li><a href="/login">Log in</a></li></ul></nav></header>',
        '<main><article class="article">',
        f'<p class="journal">{_e(c.journal)}, {c.year}</p>',
        f'<h1 class="article-title">{_e(c.title)}</h1>',
        '<ul class="authors">' + "".join(f"<li>{_e(a)}</li>" for a in c.authors) + "</ul>",
        f'<p class="doi">DOI: <a href="https://doi.org/{_e(c.doi)}">https://doi.org/{_e(c.doi)}</a></p>',
    ]
    if c.pdf_url:
        body.append(f'<p class="download"><a href="{_e(c.pdf_url)}">PDF</a></p>')
    if abstract_section:
        body.append(f'<section class="abstract" id="abstract"><h2>{_e(w_abs)}</h2><p>{_e(c.abstract)}</p>')
        if c.keywords:
            body.append(f'<p class="keywords"><strong>{_e(w_kw)}:</strong> {_e(", ".join(c.keywords))}</p>')
        body.append("</section>")
    if fulltext and c.paragraphs:
        headings = (w_intro, w_meth, w_res, w_disc)
        body.append('<div class="article-body" id="fulltext">')
        per = max(1, len(c.paragraphs) // len(headings))
        for k, para in enumerate(c.paragraphs):
            if k % per == 0 and k // per < len(headings):
                body.append(f"<h2>{_e(headings[k // per])}</h2>")
            body.append(f"<p>{_e(para)}</p>")
        body.append("</div>")
        if c.references:
            body.append(f'<section class="references"><h2>{_e(w_refs)}</h2><ol>'
                        + "".join(f"<li>{_e(r)}</li>" for r in c.references) + "</ol></section>")
    body.append("</article></main>")
    lic = f' Published under {_e(c.license)}.' if c.license else ""
    body.append(f'<footer class="site-footer"><p>© {c.year} {_e(c.publisher)}.{lic}</p>'
                '<p><a href="/privacy">Privacy</a> · <a href="/cookies">Cookies</a> · '
                '<a href="/contact">Contact</a></p></footer>')
    lang_attr = f' lang="{c.lang}"' if html_lang else ""
    page = (f"<!DOCTYPE html>\n<html{lang_attr}>\n<head>\n" + "\n".join(head) + "\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
    return page.encode("utf-8")


def paper_pdf(c: PageContent) -> bytes:
    """The paper as a PDF: title, authors, abstract, body sections and references."""
    w_abs, w_intro, w_meth, w_res, w_disc, w_refs, w_kw = c.words
    blocks: list[tuple[str, str]] = [
        ("title", c.title),
        ("meta", ", ".join(c.authors)),
        ("meta", f"{c.journal} ({c.year}) - https://doi.org/{c.doi}"),
        ("heading", w_abs),
        ("para", c.abstract),
    ]
    if c.keywords:
        blocks.append(("meta", f"{w_kw}: " + ", ".join(c.keywords)))
    headings = (w_intro, w_meth, w_res, w_disc)
    per = max(1, len(c.paragraphs) // len(headings))
    for k, para in enumerate(c.paragraphs):
        if k % per == 0 and k // per < len(headings):
            blocks.append(("heading", f"{k // per + 1}. {headings[k // per]}"))
        blocks.append(("para", para))
    blocks.append(("heading", w_refs))
    blocks += [("ref", r) for r in c.references]
    if c.license:
        blocks.append(("meta", f"(c) {c.year} The authors. {c.license}"))
    return make_pdf(blocks, title=c.title, author="; ".join(c.authors))


_REASONS = {404: "Not Found", 500: "Internal Server Error"}


def error_html(status: int, url: str) -> bytes:
    """The small HTML body servers send with a 404 or 500."""
    reason = _REASONS.get(status, "Error")
    return (f"<!DOCTYPE html>\n<html><head><title>{status} {reason}</title></head>"
            f"<body><h1>{reason}</h1><p>The requested URL {html.escape(url)} could not be served.</p>"
            f"<hr><address>example-httpd</address></body></html>\n").encode()
