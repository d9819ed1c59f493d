"""Multilingual text fidelity: the rules behind `abstracts`, languages and cleaning, pinned on
small inputs, and the hand-checked multilingual set of ../shared/real-samples scored with
bench/fidelity.py (skipped when the samples are absent; nothing is copied into the repo)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openmsd_build.core.language import detect_language
from openmsd_build.core.textclean import clean_abstract, clean_title
from openmsd_build.text.documents import build_document, wrong_abstract_reason
from openmsd_build.text.extract.pdf import _find_abstracts

PT = ("Este estudo avalia a utilização do índice-h como medida do impacto bibliográfico da produção "
      "científica de pesquisadores brasileiros, comparando três fontes de dados diferentes e seus resultados.")
EN = ("This study evaluates the use of the h-index as a measure of the bibliographic impact of the "
      "scientific production of Brazilian researchers, comparing three different data sources and results.")


def test_inline_tags_and_entities_leave_clean_titles() -> None:
    assert clean_title("BiFeO<sub>3</sub>-based &Delta;depth of <I>Rhodococcus</I>") == "BiFeO3-based Δdepth of Rhodococcus"


@pytest.mark.parametrize("label", ["Zusammenfassung", "Resumo", "SUMMARY", "Abstract:", "摘要："])
def test_heading_labels_are_removed_structured_labels_stay(label: str) -> None:
    assert clean_abstract(f"{label} Die Studie zeigt etwas.") == "Die Studie zeigt etwas."
    assert clean_abstract("OBJECTIVE: To evaluate the benefits.").startswith("OBJECTIVE:")


def test_han_without_kana_is_chinese() -> None:
    assert detect_language("基于多通道LSTM的不平衡情绪分类方法")[0] == "zh"


def test_letter_spaced_and_multilingual_pdf_headings() -> None:
    lines = ["Some title", "摘 要", "本文设计并实现了一个基于微服务架构的动态负载均衡选课系统，重点解决了传统选课系统在高并发场景下的稳定性、安全性和用户体验问题。" * 2,
             "关键词：微服务", "A B S T R A C T", EN, "Keywords: h-index", "Contents", "Abstract ........ 2"]
    found = _find_abstracts(lines)
    assert [f.heading for f in found] == ["摘 要", "A B S T R A C T"]


def test_every_abstract_kept_with_its_language_and_own_language_chosen() -> None:
    body = " ".join([PT] * 12)
    doc, outcome = build_document({"doi": "10.1/x", "title": "Diferenças entre as medidas do índice-h"},
                                  [{"kind": "pdf", "url": "u", "abstracts": [{"text": EN}, {"text": PT}], "content": body}])
    assert outcome == "kept"
    assert [(a["language"], a["source"]) for a in doc["abstracts"]] == [("en", "pdf"), ("pt", "pdf")]
    assert doc["abstract"] == PT and doc["language"] == "pt"


def test_one_heading_over_two_languages_is_two_abstracts() -> None:
    doc, _ = build_document({"doi": "10.1/y", "title": "Índice-h"}, [{"kind": "pdf", "url": "u", "abstract": f"{PT}\n\n{EN}"}])
    assert [a["language"] for a in doc["abstracts"]] == ["pt", "en"]


def test_citation_lines_are_not_abstracts() -> None:
    text = "Masai François. Recherches sur les manuscrits. In: Scriptorium, Tome 22 n°1, 1968. pp. 3-12."
    assert wrong_abstract_reason(text) == "citation"
    assert build_document({"doi": "10.1/z", "title": "T", "abstract": text + " " + text, "abstract_source": "openalex"})[1] == "abstract_wrong"


def test_multilingual_set_fidelity(real_samples: Path, real_sample, repo_script) -> None:
    truth_path = real_sample("multilingual-truth.json")
    bench = repo_script("bench/fidelity.py")
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    _table, summary = bench.summarize(bench.score(real_samples, truth))
    ok, n = summary["ALL"]["all"]
    # measured 195/197 (99.0 %) after issue 33, 192/197 (97.5 %) before, every language
    # group >= 90 %; 160/197 (81 %) and 120/197
    # (61 %) in earlier rounds: a regression guard
    assert ok / n >= 0.95, _table
    for key, row in summary.items():
        if key.startswith("group:") and row["docs"] >= 3:
            assert row["all"][0] / row["all"][1] >= 0.90, (key, _table)
    lang_ok, lang_n = summary["ALL"]["language"]
    assert lang_ok / lang_n >= 0.95
    # precision first: every entry of `abstracts` is an abstract of the paper (the issue's
    # target, 98 %). Measured 86 % (63/73) before the abstract-boundary rules, 95.5 % (64/67)
    # with them, 100 % (64/64) once a block cut at the word cap keeps only its first
    # language run, a heading printed twice gives one abstract and a reference list is cut
    precision_ok, precision_n = summary["ALL"]["precision"]
    assert precision_n and precision_ok / precision_n >= 0.98, _table


def test_journals_set_fidelity(real_samples: Path, real_sample, repo_script) -> None:
    """The journals set (29 articles and pages, 12 languages; its held half never read): the
    issue's acceptance bar, >= 95 % overall and every language with three documents or more
    >= 90 %. Measured 92.6 % when it arrived, 96.7 % (118/122) now."""
    truth = json.loads(real_sample("multilingual-journals-truth.json").read_text(encoding="utf-8"))
    bench = repo_script("bench/fidelity.py")
    table, summary = bench.summarize(bench.score(real_samples, truth), failures=False)
    ok, n = summary["ALL"]["all"]
    assert ok / n >= 0.95, table
    for key, row in summary.items():
        if key.startswith("lang:") and row["docs"] >= 3:
            assert row["all"][0] / row["all"][1] >= 0.90, (key, table)


def test_fidelity_halves_are_deterministic_and_stratified(repo_script) -> None:
    bench = repo_script("bench/fidelity.py")
    truth = [{"file": f"d/{lang}{k}.pdf", "lang": lang} for lang in ("pt", "zh", "ar") for k in range(5)]
    halves = [bench.half_of(doc, truth) for doc in truth]
    assert halves == [bench.half_of(doc, list(reversed(truth))) for doc in truth]  # order does not matter
    for lang in ("pt", "zh", "ar"):  # each language split 3/2 or 2/3
        mine = [h for doc, h in zip(truth, halves, strict=True) if doc["lang"] == lang]
        assert sorted((mine.count("dev"), mine.count("held"))) == [2, 3]


def test_abstract_precision_check_matches_entries_to_truth_starts(repo_script) -> None:
    bench = repo_script("bench/fidelity.py")
    truth = [{"lang": "pt", "start": PT[:80]}]
    assert bench.abstract_is_true("RESUMO " + PT, truth)
    assert not bench.abstract_is_true("* Pesquisadora da Universidade de São Paulo, bolsista do CNPq.", truth)


def test_chrome_words_match_whole_words_only() -> None:
    text = "We used a cross-sectional design involving 2227 participants and found a clear increase in the outcome."
    assert wrong_abstract_reason(text) is None
    assert wrong_abstract_reason("Please sign in to read the full text of this article.") == "page_chrome"
