"""Sentence splitting for citation contexts: Latin abbreviations, CJK terminators, markers
placed after the period."""

from __future__ import annotations

import time

import pytest

from openmsd_build.contexts.sentences import split_sentences


def test_latin_sentences_keep_abbreviations_and_initials() -> None:
    text = ("As shown by Smith et al. (2019), the effect in Fig. 3 holds. It was e.g. large. "
            "J. R. Smith disagreed [4]. See p. 5 for details. Is it? Yes.")
    assert split_sentences(text) == [
        "As shown by Smith et al. (2019), the effect in Fig. 3 holds.",
        "It was e.g. large.",
        "J. R. Smith disagreed [4].",
        "See p. 5 for details.",
        "Is it?",
        "Yes.",
    ]


def test_a_word_that_is_also_an_abbreviation_ends_a_sentence_before_a_capital() -> None:
    assert split_sentences("We found no. Then we looked again.") == ["We found no.", "Then we looked again."]
    assert split_sentences("See No. 5 here.") == ["See No. 5 here."]


def test_no_split_before_a_lower_case_word_or_inside_a_decimal() -> None:
    assert split_sentences("The mass was 3.5 kg. approx. and more.") == ["The mass was 3.5 kg. approx. and more."]


def test_markers_after_the_period_stay_with_their_sentence() -> None:
    assert split_sentences("This was shown.[3] The next one.\u00b2 Third.") == [
        "This was shown.[3]", "The next one.\u00b2", "Third."]


def test_cjk_splits_on_fullwidth_terminators_without_spaces() -> None:
    text = "这是第一句［3］。这是第二句！第三句？日本語の文です．最後"
    assert split_sentences(text) == ["这是第一句［3］。", "这是第二句！", "第三句？", "日本語の文です．", "最後"]
    assert split_sentences("第一句。［4］第二句。") == ["第一句。［4］", "第二句。"]


def test_cyrillic_abbreviations_and_paragraphs() -> None:
    text = "Величина (Иванов и др., 2019) растёт, т.е. быстро. Далее см. рис. 2.\n\nНовый абзац\nпродолжается."
    assert split_sentences(text) == ["Величина (Иванов и др., 2019) растёт, т.е. быстро.", "Далее см. рис. 2.",
                                     "Новый абзац продолжается."]


@pytest.mark.timeout(30)
def test_a_huge_paragraph_is_split_in_linear_time() -> None:
    """The abbreviation look-back reads a window before each period, not the paragraph up
    to it (it did: 2 MB of short sentences took minutes)."""
    from openmsd_build.contexts.markers import find_markers

    paragraph = "See Fig. 2 and it works [3]. " * 70_000
    sentences = split_sentences(paragraph)
    assert len(sentences) == 70_000
    assert sum(len(find_markers(s)) for s in sentences[:1000]) == 1000
    assert find_markers("(" + "Smith and " * 5000 + "2019)") == []


RUN = 200_000


@pytest.mark.parametrize("run", [".", "!", "?", "\u2026", "!?", ".\u2026", "\u3002"],
                         ids=["period", "exclamation", "question", "ellipsis", "mixed", "period-ellipsis", "cjk"])
@pytest.mark.parametrize("after", ["", "x", "2019??", " next"], ids=["end", "letter", "digits", "sentence"])
@pytest.mark.timeout(60)
def test_a_run_of_terminators_is_split_in_linear_time(run: str, after: str) -> None:
    """A run of terminators not followed by whitespace and a word was tried as a sentence end
    from each of its positions, each scanning to the run's end: 20,000 periods took a minute,
    200,000 would take hours. Now one pass; the run stays at the end of its sentence."""
    text = "Results are shown [1]. A" + run * (RUN // len(run)) + after
    began = time.process_time()
    sentences = split_sentences(text)
    assert time.process_time() - began < 5
    assert sentences[0] == "Results are shown [1]."
    assert "".join(sentences[1:]).replace(" ", "") == text[len("Results are shown [1]. "):].replace(" ", "")


def test_a_run_of_terminators_ends_a_sentence_as_one_terminator_does() -> None:
    assert split_sentences("Really?!? Yes... And so on.\u2026 End") == ["Really?!?", "Yes...", "And so on.\u2026", "End"]
    assert split_sentences("A run!!!x and no end... here") == ["A run!!!x and no end... here"]
    assert split_sentences("Shown.!.[3] Next") == ["Shown.!.[3]", "Next"]
