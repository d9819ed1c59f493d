"""The BM25 baseline: tokenization (CJK bigrams, lower-casing, bundled stop words), a BM25
score checked by hand, the baseline on a tiny build, and its section in the report."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from openmsd_build.cli import main
from openmsd_build.evaluate import tasks
from openmsd_build.evaluate.bm25 import BM25Scorer
from openmsd_build.evaluate.command import result_path, run_bm25_baseline
from openmsd_build.evaluate.testing import write_tiny_build
from openmsd_build.evaluate.tokenize import char_bigrams, tokenize
from openmsd_build.report.command import build_report


def test_word_tokenization_lowercases_and_drops_stopwords():
    assert tokenize("The Quick, brown-fox: 2023 CAFÉ", "en") == ["quick", "brown", "fox", "2023", "café"]
    # No stop-word list for Indonesian: every word stays.
    assert tokenize("Dan yang", "id") == ["dan", "yang"]
    assert tokenize("Der Hund und die Katze", "de") == ["hund", "katze"]
    assert tokenize("", "en") == [] and tokenize(None, "en") == []
    # NFKC: full-width Latin letters become ASCII words.
    assert tokenize("ＡＢＣ", None) == ["abc"]


def test_cjk_is_cut_into_character_bigrams_by_script():
    assert char_bigrams("机器学习") == ["机器", "器学", "学习"]
    assert char_bigrams("学") == ["学"]
    assert tokenize("机器学习", "zh") == ["机器", "器学", "学习"]
    # Latin words inside Japanese stay words; each kana/kanji run becomes bigrams.
    assert tokenize("深層学習とCNN", "ja") == ["深層", "層学", "学習", "習と", "cnn"]
    assert tokenize("한국어 처리", "ko") == ["한국", "국어", "처리"]
    # The rule follows the script, not the language tag: a Chinese term in an English text.
    assert tokenize("the 蛋白质 fold", "en") == ["蛋白", "白质", "fold"]


def test_bm25_score_by_hand():
    # Lucene BM25 (as Lucene >= 8 and bm25s: no constant (k1 + 1) factor):
    # idf = ln(1 + (N - df + 0.5) / (df + 0.5)), score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)).
    texts = ["alpha beta", "alpha alpha gamma delta", "epsilon"]
    scorer = BM25Scorer(texts, ["xx"] * 3)
    k1, b, n, avgdl = 1.5, 0.75, 3, (2 + 4 + 1) / 3
    idf = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))

    def term(tf, dl):
        return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))

    scores = scorer.model.get_scores(["alpha"])
    assert scores.tolist() == pytest.approx([term(1, 2), term(2, 4), 0.0], rel=1e-5)
    # A query's repeated terms count once: document 1 as the query gives the distinct
    # tokens alpha, gamma, delta.
    assert scorer.query_tokens(1) == ["alpha", "gamma", "delta"]
    assert scorer.scores(2)[0] == 0.0 and scorer.scores(2)[2] > 0


def test_empty_documents_and_queries_score_zero():
    scorer = BM25Scorer(["", "alpha"], [None, "en"])
    assert scorer.scores(0).tolist() == [0.0, 0.0]
    assert scorer.score_batch(np.array([1])).shape == (1, 2)


def test_bm25_baseline_on_a_tiny_build_and_in_the_report(tmp_path):
    out = str(tmp_path / "build")
    write_tiny_build(out)
    results = run_bm25_baseline(out)
    assert set(results) == {"idt", "odt"}
    written = json.loads(open(result_path(out, "bm25", "idt"), encoding="utf-8").read())
    assert written["model"] == "bm25" and written["params"]["k1"] == 1.5 and written["pool"] == 6
    dc = written["relations"]["dc"]
    # DC in IDT: a-b, c-a, d-b -> partners a:{b,c} b:{a,d} c:{a} d:{b}; e, f have none.
    assert dc["all"]["queries"] == 4 and dc["all"]["queries_without_relevant"] == 2
    assert set(dc) == {"all", *tasks.LANG_CLASSES}
    for rel in ("dc", "cc", "bc"):
        for m in written["relations"][rel].values():
            assert m["map"] is None or 0 < m["map"] <= 1
    # ODT BC has no pairs: every query is counted without relevant documents.
    odt_bc = results["odt"]["relations"]["bc"]["all"]
    assert odt_bc["map"] is None and odt_bc["queries_without_relevant"] == 4
    # The English "Neural machine translation" (DC partners g, h) shares no token with the
    # French, Spanish or Russian papers: all three score 0 and the tie rule (DOI order)
    # ranks g, h before j — a perfect score that comes from the tie rule alone.
    assert results["odt"]["relations"]["dc"]["en-xx"]["map"] == 1.0

    stats = build_report(out)
    assert stats["evaluation"]["bm25"]["idt"]["relations"]["dc"]["all"]["map"] == pytest.approx(dc["all"]["map"])
    md = (tmp_path / "build" / "report" / "report.md").read_text()
    assert "## Retrieval evaluation" in md and "### bm25 on idt (pool 6 papers)" in md
    assert f"| DC | all | {dc['all']['map']:.4f} | {dc['all']['ndcg@10']:.4f} | 4 | 2 |" in md
    assert "Retrieval evaluation" in (tmp_path / "build" / "report" / "report.html").read_text()


def test_report_without_evaluation_has_no_section(tmp_path):
    out = str(tmp_path / "build")
    write_tiny_build(out)
    stats = build_report(out)
    assert stats["evaluation"] is None
    assert "Retrieval evaluation" not in (tmp_path / "build" / "report" / "report.md").read_text()


def test_evaluate_cli_bm25_and_stray_beam_args(tmp_path, capsys):
    out = str(tmp_path / "build")
    write_tiny_build(out)
    assert main(["evaluate", "--out", out, "--baseline", "bm25", "--split", "odt"]) == 0
    printed = capsys.readouterr().out
    assert "bm25 on odt (pool 4 papers)" in printed and "written:" in printed
    assert main(["evaluate", "--out", out, "--baseline", "bm25", "--runner=DirectRunner"]) == 2
    assert "runs no Beam pipeline" in capsys.readouterr().err
    assert main(["evaluate", "--out", str(tmp_path / "missing"), "--baseline", "bm25"]) == 2


def test_empty_split_pool_gives_empty_relevance_without_error():
    from openmsd_build.evaluate import tasks

    pool = tasks.Pool(split="odt", dois=[], titles=[], abstracts=[], languages=[])
    relevance = tasks.load_relevance("/nonexistent-build", "cc", pool)
    assert relevance.indices.size == 0
    assert relevance.n_links == 0


def test_a_ctrl_c_while_a_result_is_written_keeps_the_earlier_one(tmp_path, monkeypatch):
    """A result's JSON was written in place: a Ctrl-C as it was written (`evaluate`, or `run`'s
    baseline) left the earlier result an empty or truncated file."""
    from openmsd_build.evaluate import command

    out = str(tmp_path)
    write_tiny_build(out)
    run_bm25_baseline(out)
    path = tmp_path / "evaluation" / "bm25_idt.json"
    before = path.read_bytes()

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt  # the Ctrl-C as the result is turned into its file's bytes

    monkeypatch.setattr(command.json, "dumps", interrupted)
    with pytest.raises(KeyboardInterrupt):
        command.write_result(out, "bm25", {"split": "idt"})
    assert path.read_bytes() == before and json.loads(before)
    assert not list(path.parent.glob("*.tmp"))
