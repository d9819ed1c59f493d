"""A context's language: the sentence's own on strong evidence, else its document's."""

from __future__ import annotations

from openmsd_build.contexts.extract import sentence_language
from openmsd_build.contexts.markers import find_markers


def _language(sentence: str, document: str) -> tuple[str | None, bool]:
    return sentence_language(sentence, find_markers(sentence), document)


def test_a_sentence_in_another_language_than_its_document() -> None:
    english = "This was shown in an earlier study of the same cohort and region (Smith et al., 2019)."
    assert _language(english, "ru") == ("en", True)
    assert _language("Эти результаты согласуются с данными предыдущих исследований [3, 4].", "ru") == ("ru", True)


def test_weak_evidence_keeps_the_documents_language() -> None:
    # CLD3 reads this German sentence as Luxembourgish at 0.73: not enough to overrule "de"
    german = "Die Resilienz globaler Lieferketten hat in den letzten Jahren zunehmend an Bedeutung gewonnen [2]."
    assert _language(german, "de")[0] == "de"
    assert _language("[1, 2]", "ja") == ("ja", False)


def test_markers_are_not_evidence() -> None:
    # Latin-script author names in a Cyrillic sentence are cut before detection
    sentence = "Результаты (Smith and Jones, 2019; Brown et al., 2020; Taylor, 2018) подтверждены."
    assert _language(sentence, "ru")[0] == "ru"
