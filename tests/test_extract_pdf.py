"""PDF extraction on the real open-access PDFs (titles from real-samples/MANIFEST.md) and on
small inputs that pin the layout-repair rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openmsd_build.text.extract.pdf import (
    PdfParseError,
    _cut_references,
    _find_abstract,
    _join_lines,
    _page_lines,
    _remove_headers_footers,
    extract_pdf,
    resolve_breaks,
)

# file -> title as given in the MANIFEST pdf/ table
TITLES = {
    "cermine__test1_10.1186_1752-2897-4-1.pdf": "Complications related to deep venous thrombosis prophylaxis in trauma: a systematic review of the literature",
    "cermine__test2_10.1155_2010_157939.pdf": "Patient Experiences of Structured Heart Failure Programmes",
    "crminer__10.2903_j.efsa.2014.3550.pdf": "Endogenous formaldehyde turnover in humans compared with exogenous contribution from food sources",
    "crminer__10.3897.compcytogen.v10i4.9536.pdf": "Towards a FISH-based karyotype of Rosa L. (Rosaceae)",
    "s2orc-doc2json__N18-3011.pdf": "Construction of the Literature Graph in Semantic Scholar",
    "scms-upload__rsp_v38n1_18446.pdf": "Complicações maternas associadas ao tipo de parto em hospital universitário",
    "scms-upload__rsp_v38n1_en_18446.pdf": "Maternal complications and type of delivery",
}
# PDFs whose first page has an "Abstract" / "ABSTRACT" / "Resumo" heading (test2 has none)
WITH_ABSTRACT_HEADING = set(TITLES) - {"cermine__test2_10.1155_2010_157939.pdf"}
_REF_HEADING_RE = re.compile(r"^\s*(?:references|referências|bibliography)\s*$", re.IGNORECASE)


def title_words(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w{4,}", text)}


def squash(text: str) -> str:
    return re.sub(r"\W+", "", text.lower())


@pytest.fixture(scope="module")
def extracted(real_samples: Path) -> dict[str, dict]:
    return {name: extract_pdf((real_samples / "pdf" / name).read_bytes()) for name in TITLES}


@pytest.mark.parametrize("name", sorted(TITLES))
def test_title_words_in_text_and_title(extracted: dict, name: str) -> None:
    result = extracted[name]
    expected = title_words(TITLES[name])
    text_words = title_words((result["title"] or "") + " " + (result["content"] or ""))
    assert expected <= text_words, expected - text_words
    assert result["title"], name
    found = title_words(result["title"])
    assert len(expected & found) >= 0.7 * len(expected), (name, result["title"])


@pytest.mark.parametrize("name", sorted(WITH_ABSTRACT_HEADING))
def test_abstract_detected(extracted: dict, name: str) -> None:
    result = extracted[name]
    assert result["abstract"] and len(result["abstract"]) > 300, name
    assert result["rules"]["abstract"] == "abstract_heading"
    # the abstract stops before the introduction / keywords
    assert not re.search(r"\b(?:introduction|introdução|keywords?)\b", result["abstract"][-200:], re.IGNORECASE), name
    assert len(result["abstract"]) < len(result["content"]) / 3


def test_structured_abstract_set_as_one_paragraph_without_heading(extracted: dict) -> None:
    """test2 (Hindawi) prints its structured abstract with no "Abstract" heading, its labels run
    into the text ("... were examined. Methods. Focus groups ..."): the objective label opens
    it and the inline methods label confirms it; it ends before "1. Introduction"."""
    result = extracted["cermine__test2_10.1155_2010_157939.pdf"]
    assert result["abstract"].startswith("Objectives. Patient experiences of structured heart failure rehabilitation")
    assert result["abstract"].endswith("to sustain patients’ confidence in disease self-management.")
    assert "Introduction" not in result["abstract"] and "Copyright" not in result["abstract"]


@pytest.mark.parametrize("lines, opens", [
    (["Objectives. The aim was to compare two treatments in adults.", "over a year. Methods. A trial was run."], True),
    (["Objective: to compare two treatments.", "Methods: a randomized trial."], True),
    # "methods" inside a sentence, or lower case after a sentence, is no label
    (["Objective: the data show this.", "We describe the methods. the trial was run in 2010."], False),
    (["Objective: to compare two treatments.", "Several methods: were tried and compared there."], False),
    (["Background. Something happened.", "No label follows in these lines at all."], False),
])
def test_structured_start_inline_methods_label(lines: list[str], opens: bool) -> None:
    from openmsd_build.text.extract.pdf import _structured_start

    assert _structured_start(lines, 0) is opens


def test_portuguese_abstract_is_the_resumo(extracted: dict) -> None:
    result = extracted["scms-upload__rsp_v38n1_18446.pdf"]
    assert result["rules"]["abstract_heading"] == "Resumo"
    assert result["abstract"].startswith("Objetivo")
    assert "Objective" not in result["abstract"]  # the English abstract that follows is not glued on


def test_reference_list_is_cut(real_samples: Path, extracted: dict) -> None:
    import pypdfium2 as pdfium

    for name, result in extracted.items():
        assert result["rules"]["references_cut"], name
        doc = pdfium.PdfDocument((real_samples / "pdf" / name).read_bytes())
        lines = [ln.strip() for i in range(len(doc)) for ln in doc[i].get_textpage().get_text_range().splitlines()]
        doc.close()
        heads = [i for i, ln in enumerate(lines) if _REF_HEADING_RE.match(ln)]
        assert heads, name
        first_reference = next(ln for ln in lines[heads[-1] + 1 :] if len(ln) > 40)
        assert squash(first_reference) not in squash(result["content"]), (name, first_reference)


def test_no_page_numbers_or_soft_hyphens(extracted: dict) -> None:
    for name, result in extracted.items():
        assert "\ufffe" not in result["content"], name
        assert not re.search(r"(?m)^\d{1,3}$", result["content"]), name
    assert "appropriately utilized" in extracted["cermine__test1_10.1186_1752-2897-4-1.pdf"]["abstract"]


def test_dehyphenation() -> None:
    # a break between lower-case letters is joined when the document has no such compound
    assert resolve_breaks(_page_lines("appro\ufffe\r\npriately done"), "") == ["appropriately done"]
    assert resolve_breaks(_page_lines("long\ufffe\r\nterm care"), "a long-term study") == ["long-term care"]
    assert _page_lines("FISH\ufffe\r\nbased") == ["FISH-based"]
    assert _join_lines(["the experi-", "ments were run"]) == "the experiments were run"
    assert _join_lines(["FISH-", "based karyotype"]) == "FISH-\nbased karyotype"


def test_running_headers_and_page_numbers_removed() -> None:
    bodies = ["Diffusion was measured.", "The model fits.", "Errors are small.", "We conclude here.", "Thanks to all."]
    pages = [[f"J. Chem. Phys. 12 ({n})", body, str(n)] for n, body in enumerate(bodies, 1)]
    assert _remove_headers_footers(pages) == [[body] for body in bodies]


def test_reference_cut_multilingual() -> None:
    for heading in ("References", "7. REFERENCES", "Literaturverzeichnis", "Références", "Список литературы", "参考文献"):
        lines = [f"body line {i}" for i in range(10)] + [heading, "Smith J (2001) A paper. J Stuff 1:2"]
        kept, cut = _cut_references(lines)
        assert cut and kept == lines[:10], heading
    # an early "References" (a table of contents) is not a reference list
    lines = ["References"] + [f"body line {i}" for i in range(10)]
    assert _cut_references(lines) == (lines, False)


@pytest.mark.parametrize(
    ("heading", "body", "stop"),
    [
        ("Resumen", "Estudiamos la difusión en películas delgadas y comparamos los datos con un modelo continuo.", "Palabras clave: difusión"),
        ("Аннотация", "Мы изучаем диффузию в тонких плёнках и сравниваем данные с непрерывной моделью среды.", "Ключевые слова: диффузия"),
        ("Zusammenfassung", "Wir untersuchen die Diffusion in dünnen Schichten und vergleichen sie mit einem Modell.", "1 Einleitung"),
        ("ABSTRACT", "We study diffusion in thin films and compare the data with a continuum model here.", "Introduction"),
    ],
)
def test_abstract_headings(heading: str, body: str, stop: str) -> None:
    lines = ["Some title", "Author Name", heading, body, body, stop, "Text after the abstract."]
    text, found = _find_abstract(lines)
    assert found == heading
    assert text == f"{body} {body}"


def test_abstract_glued_to_heading() -> None:
    text, found = _find_abstract(["Abstract: We study diffusion in thin films and compare the data with a model.", "It fits well over four decades of concentration and temperature.", "Keywords: diffusion"])
    assert found == "Abstract" and text.startswith("We study diffusion") and "Keywords" not in text


def test_not_a_pdf() -> None:
    with pytest.raises(PdfParseError):
        extract_pdf(b"%PDF-1.4 garbage that is not a document")
