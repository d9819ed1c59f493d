"""Titles holding a character outside the Basic Multilingual Plane, or half of one.

PDFium counts such a character (a mathematical italic letter, an emoji, a CJK extension
ideograph) as two characters, its UTF-16 halves. The font-size pass that finds a PDF's title
reads a page one PDFium character at a time when the page's text and PDFium's count differ, and
it gave the title two lone surrogates; a landing page's JSON-LD that escapes one half without
the other gave the title that half (`json.loads` keeps it). `inspect` then stopped with a
UnicodeEncodeError, and no UTF-8 writer (Parquet, a Beam coder) takes such a string.
"""

from __future__ import annotations

import pytest
from pdf_bytes import pdf_file

from openmsd_build.text.extract.pdf import extract_pdf

MATH_X = "\U0001d465"  # MATHEMATICAL ITALIC SMALL X


def _pdf_with_mapped_title(title: str, body: str, info_title: bytes | None = None) -> bytes:
    """A one-page PDF: `title` at 24 pt in glyph codes that a ToUnicode CMap maps to its
    characters (so the text layer may hold any character, as a LaTeX PDF's does), then `body`
    at 10 pt in plain Helvetica; `info_title`: the Info dictionary's Title, as UTF-16BE bytes."""
    codes = bytes(range(0x21, 0x21 + len(title)))
    entries = " ".join(f"<{c:02X}> <{ch.encode('utf-16-be').hex().upper()}>" for c, ch in zip(codes, title, strict=True))
    cmap = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /T def "
            "1 begincodespacerange <00> <FF> endcodespacerange "
            f"{len(title)} beginbfchar {entries} endbfchar endcmap "
            "CMapName currentdict /CMap defineresource pop end end").encode()
    content = (b"BT /F1 24 Tf 72 700 Td <" + codes.hex().encode() + b"> Tj ET "
               b"BT /F2 10 Tf 72 650 Td (" + body.encode("latin-1") + b") Tj ET")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R /F2 6 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 7 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
    ]
    if info_title is not None:
        objects.append(b"<< /Title <FEFF" + info_title.hex().upper().encode() + b"> >>")
    return pdf_file(objects, info=len(objects) if info_title is not None else None)


ABSTRACT = ("Abstract. This paper studies the equation in detail and gives its solutions for all real "
            "values of the parameter.")


@pytest.mark.parametrize("title", [
    f"Solutions of the equation for {MATH_X}",
    f"Counting {MATH_X} and {MATH_X} in one line",
    "\U00020000 \U00020001 extension ideographs in a title line",
])
def test_a_title_outside_the_bmp_is_whole_characters(title):
    extraction = extract_pdf(_pdf_with_mapped_title(title, ABSTRACT))
    assert extraction["title"] == title
    extraction["title"].encode("utf-8")  # no lone surrogate left: a UTF-8 writer takes it
    assert extraction["abstract"].startswith("This paper studies the equation")


def test_a_metadata_title_with_half_a_character_loses_only_that_half():
    """pypdfium2 decodes the Info dictionary's strings strictly: a UTF-16 half without its
    partner there raised out of the extractor, and the whole PDF was an extraction failure."""
    broken = b"\xd8\x35" + "Solutions of the equation for all".encode("utf-16-be")
    extraction = extract_pdf(_pdf_with_mapped_title("Solutions of the equation for all", ABSTRACT, info_title=broken))
    assert extraction["title"] == "Solutions of the equation for all"
    assert extraction["abstract"].startswith("This paper studies the equation")


def test_inspect_prints_such_a_title(tmp_path, capsys):
    from openmsd_build.cli import main

    pdf = tmp_path / "astral.pdf"
    pdf.write_bytes(_pdf_with_mapped_title(f"Solutions of the equation for {MATH_X}", ABSTRACT))
    assert main(["inspect", str(pdf)]) == 0
    assert f"title:     Solutions of the equation for {MATH_X}" in capsys.readouterr().out


def test_json_ld_halves_are_joined_and_a_lone_one_left_out(tmp_path, capsys):
    from openmsd_build.cli import main
    from openmsd_build.text.extract.landing import extract_landing

    page = (b'<html><head><title>x</title><script type="application/ld+json">{"@type": "ScholarlyArticle", '
            b'"headline": "Solutions for \\ud835\\udc65 and \\ud835 half of one", "description": "We study the '
            b'equation \\udc65 in detail and give its solutions for all real values of the parameter here, '
            b'then compare them with the numerical solutions found by three standard methods over a wide range '
            b'of the parameter and of the initial conditions."}'
            b'</script></head><body><p>Hello</p></body></html>')
    extraction = extract_landing(page, url="https://example.org/article")
    assert extraction["title"] == f"Solutions for {MATH_X} and half of one"
    assert extraction["abstract"].startswith("We study the equation in detail and give its solutions")
    html = tmp_path / "page.html"
    html.write_bytes(page)
    assert main(["inspect", str(html)]) == 0
    assert f"Solutions for {MATH_X} and half of one" in capsys.readouterr().out


def test_join_surrogates():
    from openmsd_build.core.textclean import join_surrogates

    assert join_surrogates("x \ud835\udc65 y") == f"x {MATH_X} y"
    assert join_surrogates("a \ud835 b \udc65 c") == "a  b  c"  # a half without its partner is left out
    assert join_surrogates("plain text") == "plain text"


def test_the_text_stage_writes_such_a_document(tmp_path):
    """End to end (`--fetch local:`): the extraction crosses Beam's coders and the document is
    written to Parquet, both UTF-8 writers that refused the halves (the whole stage failed)."""
    from openmsd_build.cli import main
    from openmsd_build.core import layout, parquet_io
    from openmsd_build.schemas import DOCUMENTS, PAPERS

    folder, out = tmp_path / "pdfs", tmp_path / "build"
    folder.mkdir()
    title = f"Solutions of the equation for {MATH_X}"
    (folder / "10.1000_astral.pdf").write_bytes(_pdf_with_mapped_title(title, ABSTRACT))
    papers = [{"doi": "10.1000/astral", "sources": ["unpaywall"], "n_records": 1, "categories": [], "relations": [],
               "urls": []}]
    parquet_io.write_table(parquet_io.table_from_rows(papers, PAPERS),
                           parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))
    assert main(["text", "--out", str(out), "--fetch", f"local:{folder}",
                 "--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]) == 0
    rows = parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()
    assert [(r["doi"], r["title"]) for r in rows] == [("10.1000/astral", title)]
