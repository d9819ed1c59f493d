"""Fuzzing the untrusted-document parsers (HTML landing pages, PDFs).

In-process properties: `extract_landing` returns a dict of strings/None or raises
`LandingParseError`; `extract_pdf` returns a dict or raises `PdfParseError` — nothing else,
within a deadline. Production path (`ExtractorPool`, what the text stage calls): every
input ends as `(result, None)` or `(None, reason)` with a known reason, within the
extractor's time limit, and the extractor keeps working afterwards.
"""

from __future__ import annotations

import random
import time

import pytest
from corrupt import bit_flips, truncate
from harness import deadline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openmsd_build.text.extract.landing import LandingParseError, extract_landing
from openmsd_build.text.extract.pdf import PdfParseError, extract_pdf
from openmsd_build.text.extract.pool import (
    CRASHED,
    OUT_OF_MEMORY,
    PARSE_ERROR,
    TIMEOUT,
    TOO_LARGE,
    ExtractorPool,
)

REASONS = {CRASHED, OUT_OF_MEMORY, PARSE_ERROR, TIMEOUT, TOO_LARGE}
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

tags = st.sampled_from(["html", "head", "body", "meta", "title", "p", "div", "script", "section", "h1", "h2",
                        "article", "![CDATA[", "!--", "?xml", "svg", "math", "table", "td", "a"])
attrs = st.sampled_from(['', ' name="citation_title" content="T"', ' name="citation_abstract" content="A b c"',
                         ' name="citation_pdf_url" content="javascript:alert(1)"', ' charset="utf-16"',
                         ' type="application/ld+json"', ' class="abstract"', ' href="//x"', ' content="' + "x" * 50])
pieces = st.one_of(tags.flatmap(lambda t: attrs.map(lambda a: f"<{t}{a}>")), tags.map(lambda t: f"</{t}>"),
                   st.text(max_size=30), st.sampled_from(["&#0;", "&#xD800;", "&nbsp;", "{", '{"@type":', "\x00"]))
html_docs = st.lists(pieces, max_size=60).map("".join)


def _check_landing(body) -> None:
    with deadline(20):
        try:
            out = extract_landing(body, url="https://example.org/a/b")
        except LandingParseError:
            return
    assert isinstance(out, dict)
    for key in ("title", "abstract", "content", "pdf_url"):
        assert out.get(key) is None or isinstance(out[key], str), (key, out.get(key))
    if out.get("pdf_url"):
        assert out["pdf_url"].startswith(("http://", "https://")), out["pdf_url"]


@FUZZ
@given(doc=html_docs)
def test_landing_html_fuzz(doc):
    _check_landing(doc.encode("utf-8", "surrogatepass"))


@FUZZ
@given(data=st.binary(max_size=4096))
def test_landing_arbitrary_bytes(data):
    _check_landing(data)


def _check_pdf(data: bytes) -> None:
    with deadline(20):
        try:
            out = extract_pdf(data)
        except PdfParseError:
            return
    assert isinstance(out, dict)
    for key in ("title", "abstract", "content"):
        assert out.get(key) is None or isinstance(out[key], str)


@FUZZ
@given(data=st.binary(max_size=2048).map(lambda b: b"%PDF-1.4\n" + b))
def test_pdf_arbitrary_bytes(data):
    _check_pdf(data)


def test_corrupted_real_html_and_pdf_in_process(real_samples):
    """Real pages and PDFs, truncated and bit-flipped (seeded), parsed in this process."""
    htmls = sorted((real_samples / "html").glob("*.html"))[:8]
    pdfs = sorted((real_samples / "pdf").glob("*.pdf"))[:3]
    for i, path in enumerate(htmls):
        data = path.read_bytes()
        rng = random.Random(i)
        for bad in (truncate(data, rng), bit_flips(data, rng, 64), data.decode("utf-8", "replace").encode("utf-16"),
                    data.decode("utf-8", "replace").encode("latin-1", "replace")):
            _check_landing(bad)
    for i, path in enumerate(pdfs):
        data = path.read_bytes()
        rng = random.Random(i)
        for bad in (truncate(data, rng), data[: len(data) // 3], bit_flips(data, rng, 64), bit_flips(data, rng, 2000)):
            _check_pdf(bad)


@pytest.fixture(scope="module")
def extractor():
    with ExtractorPool(timeout=20, max_bytes=8 << 20, max_memory_mb=1536) as ex:
        yield ex


def _isolated(extractor, kind, data):
    started = time.monotonic()
    result, reason = extractor.extract(kind, data, **({"url": "https://example.org/"} if kind == "html" else {}))
    # the behaviour: the isolated extractor's own deadline fires (10 s of room past it)
    assert time.monotonic() - started < extractor.timeout + 10
    assert (result is None) != (reason is None)
    if reason is not None:
        assert reason in REASONS, (reason, extractor.last_error)
    return reason


def test_isolated_malformed_pdfs_and_pages(real_samples, extractor):
    """The production path: malformed PDFs (truncated, bit-flipped, empty, a fake header, a
    PDF bomb of nested objects, an oversized file) end as a result or a reason."""
    pdf = sorted((real_samples / "pdf").glob("*.pdf"))[0].read_bytes()
    html = sorted((real_samples / "html").glob("*.html"))[0].read_bytes()
    rng = random.Random(7)
    nested = b"%PDF-1.4\n1 0 obj\n" + b"[" * 200_000 + b"]" * 200_000 + b"\nendobj\ntrailer<</Root 1 0 R>>\n%%EOF"
    cases = [
        ("pdf", b""), ("pdf", b"%PDF-"), ("pdf", pdf[:1000]), ("pdf", pdf[: len(pdf) // 2]),
        ("pdf", bit_flips(pdf, rng, 500)), ("pdf", nested), ("pdf", b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(5000))),
        ("pdf", b"%PDF-1.4\n" + b"0" * (9 << 20)),  # over max_bytes: too_large, nothing sent
        ("html", b""), ("html", html[:500]), ("html", bit_flips(html, rng, 300)),
        ("html", b"<html>" + b"<div>" * 100_000 + b"</html>"), ("html", b"<p>" + b"x" * (4 << 20) + b"</p>"),
    ]
    reasons = [_isolated(extractor, kind, data) for kind, data in cases]
    assert reasons[7] == TOO_LARGE
    # still healthy after all that
    assert _isolated(extractor, "pdf", pdf) is None
