"""Ranking metrics against hand-computed cases (ties, exclusions, queries without relevant
documents), the fast rank computation against a full sort, and the evaluation loop per
relation and language class, including `evaluate --embeddings` on Parquet and .npy."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main
from openmsd_build.evaluate import metrics, tasks
from openmsd_build.evaluate.command import EmbeddingScorer, evaluate_pool
from openmsd_build.evaluate.testing import DOCS, write_tiny_build

L2, L3, L4, L5 = (math.log2(x) for x in (2, 3, 4, 5))


def test_average_precision_and_ndcg_by_hand():
    # Scores rank positions 0..4 in order; relevant {1, 3} sit at ranks 2 and 4.
    ranks = metrics.relevant_ranks([0.9, 0.8, 0.7, 0.6, 0.5], [1, 3])
    assert ranks.tolist() == [2, 4]
    assert metrics.average_precision(ranks) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert metrics.ndcg_at_k(ranks) == pytest.approx((1 / L3 + 1 / L5) / (1 / L2 + 1 / L3))
    # A relevant document below the cut-off adds nothing to DCG but counts in IDCG.
    assert metrics.ndcg_at_k([1, 11]) == pytest.approx((1 / L2) / (1 / L2 + 1 / L3))
    assert metrics.ndcg_at_k([3], k=2) == 0.0
    # Perfect ranking.
    assert metrics.average_precision([1, 2, 3]) == 1.0
    assert metrics.ndcg_at_k([1, 2, 3]) == pytest.approx(1.0)
    # Relevant documents never retrieved count as precision 0 when n_relevant says so.
    assert metrics.average_precision([1], n_relevant=2) == 0.5
    with pytest.raises(ValueError):
        metrics.average_precision([])
    with pytest.raises(ValueError):
        metrics.ndcg_at_k([])


def test_query_itself_is_excluded():
    # The query (position 0) scores highest against itself; without it, 2 is first.
    scores = [1.0, 0.5, 0.7]
    assert metrics.ranking(scores, exclude=0).tolist() == [2, 1]
    assert metrics.relevant_ranks(scores, [2], exclude=0).tolist() == [1]
    assert metrics.relevant_ranks(scores, [1], exclude=0).tolist() == [2]
    # A self pair is no relevant document.
    assert metrics.relevant_ranks(scores, [0], exclude=0).tolist() == []


def test_ties_are_broken_by_pool_position_ascending():
    scores = [0.5, 0.5, 0.5, 0.1]
    assert metrics.ranking(scores).tolist() == [0, 1, 2, 3]
    assert metrics.relevant_ranks(scores, [2]).tolist() == [3]
    assert metrics.relevant_ranks(scores, [0]).tolist() == [1]
    assert metrics.relevant_ranks(scores, [2], exclude=1).tolist() == [2]
    # All-equal scores (e.g. a BM25 query sharing no term): pure DOI order.
    assert metrics.relevant_ranks([0.0] * 6, [4, 1], exclude=0).tolist() == [1, 4]
    assert metrics.average_precision([1, 4]) == pytest.approx((1 + 2 / 4) / 2)
    # NaN ranks as -inf, below every real score, and ties among NaNs also go by position.
    assert metrics.ranking([float("nan"), 0.2, float("nan"), -5.0]).tolist() == [1, 3, 0, 2]


def test_mask_restricts_the_candidates():
    scores = [0.9, 0.8, 0.7, 0.6]
    mask = np.array([False, True, False, True])
    assert metrics.relevant_ranks(scores, [3], mask=mask).tolist() == [2]
    assert metrics.relevant_ranks(scores, [2, 3], mask=mask).tolist() == [2]  # 2 is masked out


def test_queries_without_relevant_are_excluded_from_the_mean_and_counted():
    rows = [
        (np.array([0.0, 0.9, 0.1]), [1], 0),  # AP 1, nDCG 1
        (np.array([0.9, 0.0, 0.8]), [2], 1),  # excluded 1: order 0, 2 -> rank 2
        (np.array([0.3, 0.2, 0.1]), [], 2),  # no relevant document
        (np.array([0.3, 0.2, 0.1]), [0], 0),  # only itself: no relevant document either
    ]
    result = metrics.evaluate_rankings(rows)
    assert result["queries"] == 2
    assert result["queries_without_relevant"] == 2
    assert result["relevant"] == 2
    assert result["map"] == pytest.approx((1 + 0.5) / 2)
    assert result["ndcg@10"] == pytest.approx((1 + 1 / L3) / 2)
    empty = metrics.evaluate_rankings([(np.array([1.0, 2.0]), [], 0)])
    assert empty["map"] is None and empty["ndcg@10"] is None and empty["queries_without_relevant"] == 1


def test_fast_ranks_match_a_full_sort():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 40))
        scores = rng.integers(0, 5, n).astype(float)  # many ties
        if rng.random() < 0.2:
            scores[rng.integers(0, n)] = np.nan
        exclude = int(rng.integers(0, n))
        relevant = rng.choice(n, size=int(rng.integers(0, n)), replace=False)
        mask = rng.random(n) < 0.7
        order = metrics.ranking(scores, exclude=exclude, mask=mask).tolist()
        expected = sorted(order.index(r) + 1 for r in set(relevant.tolist()) if r in order)
        assert metrics.relevant_ranks(scores, relevant, exclude=exclude, mask=mask).tolist() == expected


def test_relevance_is_symmetric_without_self_pairs_or_duplicates():
    rel = tasks.relevance_from_pairs("dc", np.array([0, 1, 2, 2, 0, -1]), np.array([1, 0, 2, 3, 1, 3]), 4)
    assert [rel.of(q).tolist() for q in range(4)] == [[1], [0], [3], [2]]
    assert rel.pairs_outside_pool == 1


class _FixedScorer:
    def __init__(self, matrix):
        self.matrix = np.asarray(matrix, dtype=float)

    def score_batch(self, queries):
        return self.matrix[queries]


def test_evaluate_pool_per_language_class():
    # Pool: 0 en, 1 en, 2 de, 3 ja. Relevant pairs (0,1), (0,2). Scores: row = query.
    pool = tasks.Pool("idt", ["10.1/0", "10.1/1", "10.1/2", "10.1/3"], [None] * 4, [None] * 4, ["en", "en", "de", "ja"])
    rel = {"dc": tasks.relevance_from_pairs("dc", np.array([0, 0]), np.array([1, 2]), 4)}
    scores = [
        [9, 1, 5, 7],  # query 0: all -> 3, 2, 1 : relevant 2 at rank 2, 1 at rank 3
        [3, 9, 3, 3],  # query 1: 0, 2, 3 tie at 3 -> position order: 0 first
        [0, 0, 9, 1],  # query 2: 3 first, then 0 and 1 tie -> 0 second
        [1, 1, 1, 9],  # query 3: no relevant document
    ]
    result = evaluate_pool(pool, rel, _FixedScorer(scores), batch=2)["dc"]
    assert result["all"]["queries"] == 3 and result["all"]["queries_without_relevant"] == 1
    ap_all = [(1 / 2 + 2 / 3) / 2, 1.0, 1 / 2]
    assert result["all"]["map"] == pytest.approx(sum(ap_all) / 3)
    # en-en: queries 0 and 1 rank the English papers only: q0 -> [1] rank 1; q1 -> [0] rank 1.
    assert result["en-en"]["map"] == pytest.approx(1.0) and result["en-en"]["queries"] == 2
    # en-xx: q0 ranks {2, 3}: 3 (7) before 2 (5) -> rank 2; q1 has no non-English partner.
    assert result["en-xx"]["map"] == pytest.approx(0.5)
    assert result["en-xx"]["queries"] == 1 and result["en-xx"]["queries_without_relevant"] == 1
    # xx-en: q2 ranks {0, 1} (tie at 0) -> 0 first; q3 has no English partner.
    assert result["xx-en"]["map"] == pytest.approx(1.0) and result["xx-en"]["queries_without_relevant"] == 1
    assert result["xx-xx"]["map"] is None and result["xx-xx"]["queries_without_relevant"] == 2


def test_cosine_scorer_normalizes_and_handles_zero_vectors():
    s = EmbeddingScorer(np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 0.0]]))
    out = s.score_batch(np.array([0]))
    assert out[0].tolist() == pytest.approx([1.0, 1 / math.sqrt(2), 0.0])


def _vectors(dois):
    # Topic vectors: protein papers, galaxy papers, translation papers, graphs, training.
    topic = {"a": 0, "b": 0, "c": 0, "d": 0, "e": 1, "f": 1, "g": 2, "h": 2, "i": 2, "j": 3}
    out = []
    for d in dois:
        v = np.zeros(5, dtype=np.float32)
        v[topic.get(d[-1], 4)] = 1.0
        v[4] += 0.01 * (ord(d[-1]) - 96)
        out.append(v)
    return np.stack(out)


def test_evaluate_embeddings_parquet_and_npy(tmp_path, capsys):
    out = str(tmp_path / "build")
    write_tiny_build(out)
    dois = [d[0].upper() for d in DOCS]  # DOIs are normalized before matching
    vectors = _vectors([d[0] for d in DOCS])
    path = tmp_path / "emb.parquet"
    pq.write_table(pa.table({"doi": dois, "embedding": pa.array(vectors.tolist(), pa.list_(pa.float32()))}), path)
    assert main(["evaluate", "--out", out, "--embeddings", str(path), "--split", "idt"]) == 0
    result = json.loads((tmp_path / "build" / "evaluation" / "emb_idt.json").read_text())
    assert result["model"] == "emb" and result["pool"] == 6 and result["tie_rule"] == metrics.TIE_RULE
    # Protein papers a-d are one topic, so every DC partner is ranked in the top 3.
    assert result["relations"]["dc"]["all"]["queries"] == 4
    assert result["relations"]["dc"]["all"]["map"] > 0.5
    np.save(tmp_path / "emb.npy", vectors)
    (tmp_path / "ids.txt").write_text("\n".join(d[0] for d in DOCS) + "\n")
    assert main(["evaluate", "--out", out, "--embeddings", str(tmp_path / "emb.npy"), "--ids",
                 str(tmp_path / "ids.txt"), "--name", "npy", "--split", "idt"]) == 0
    again = json.loads((tmp_path / "build" / "evaluation" / "npy_idt.json").read_text())
    assert again["relations"] == result["relations"]
    # a name is one file of OUT/evaluation/, never a path out of it
    assert main(["evaluate", "--out", out, "--baseline", "bm25", "--name", "../../escaped", "--split", "idt"]) == 2
    assert "--name '../../escaped' must be letters, digits" in capsys.readouterr().err
    assert not list(tmp_path.glob("escaped*")) and not list(tmp_path.parent.glob("escaped*"))
    # A pool paper without a vector is an error, not a silent skip.
    pq.write_table(pa.table({"doi": dois[:3], "embedding": pa.array(vectors[:3].tolist())}), path)
    assert main(["evaluate", "--out", out, "--embeddings", str(path), "--split", "idt"]) == 2
    assert "have no embedding" in capsys.readouterr().err


def test_vectors_that_rank_nothing_are_refused(tmp_path, capsys):
    """NaN, infinite, all-zero or empty vectors gave a full table with no warning (the ranking
    by DOI order, which beat random vectors); a DOI given twice kept its first vector silently;
    strings for numbers ended in a traceback."""
    out = str(tmp_path / "build")
    write_tiny_build(out)
    dois = [d[0] for d in DOCS]
    good = _vectors(dois)
    cases = {
        "nan": (dois, np.where(np.arange(good.size).reshape(good.shape) == 3, np.nan, good).tolist(),
                "1 vectors hold NaN or infinite values, e.g. the one of " + dois[0]),
        "inf": (dois, np.full(good.shape, np.inf).tolist(), f"{len(dois)} vectors hold NaN or infinite values"),
        "zero": (dois, np.vstack([np.zeros(good.shape[1]), good[1:]]).tolist(), "are all zeros"),
        "empty": (dois, [[] for _ in dois], "vectors of length 0"),
        # one vector empty or missing among good ones was "vectors must all be non-null and of
        # one length", naming neither the DOI nor the lengths
        "one_empty": (dois, good.tolist()[:-1] + [[]], f"1 vectors are not of length {good.shape[1]} (the first "
                      f"vector's), e.g. the one of {dois[-1]} (length 0)"),
        "one_null": (dois, [None] + good.tolist()[1:], f"1 vectors are missing (null), e.g. the one of {dois[0]}"),
        "twice": (dois + [dois[0].upper()], good.tolist() + [good[0].tolist()],
                  f"1 DOI has more than one vector: {dois[0]} (2 vectors, also written {dois[0].upper()})"),
        "strings": (dois, [["a"] * good.shape[1] for _ in dois], "vectors must be numbers"),
    }
    for name, (ids, vectors, said) in cases.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"doi": ids, "embedding": vectors}), path)
        assert main(["evaluate", "--out", out, "--embeddings", str(path), "--split", "idt"]) == 2, name
        assert said in capsys.readouterr().err, name


def test_duplicate_dois_are_named_counted_and_the_fix_said(tmp_path, capsys):
    """A DOI given more than one vector was refused as "the DOI X has two vectors (also as Y):
    give one a DOI", which named one of them, whatever their number, and asked for what cannot
    be done. The refusal names the first few DOIs with their vector counts and spellings,
    counts them all and says what to do, for a Parquet file and for a .npy's --ids."""
    out = str(tmp_path / "build")
    write_tiny_build(out)
    dois = [d[0] for d in DOCS]
    good = _vectors(dois)
    # 10.1/a three times (two spellings), 10.1/b twice as given, 10.1/c..10.1/f once more each
    extra = [dois[0].upper(), dois[0], dois[1], *dois[2:6]]
    ids = dois + extra
    matrix = np.vstack([good, good[[0, 0, 1, 2, 3, 4, 5]]])
    path = tmp_path / "dup.parquet"
    pq.write_table(pa.table({"doi": ids, "embedding": matrix.tolist()}), path)
    npy, id_file = tmp_path / "dup.npy", tmp_path / "dup_ids.txt"
    np.save(npy, matrix)
    id_file.write_text("\n".join(ids) + "\n")
    for args, named in (([str(path)], str(path)), ([str(npy), "--ids", str(id_file)], str(id_file))):
        assert main(["evaluate", "--out", out, "--split", "idt", "--embeddings", *args]) == 2
        err = capsys.readouterr().err
        assert (f"{named}: 6 DOIs have more than one vector: 10.1/a (3 vectors, also written "
                "10.1/A); 10.1/b (2 vectors); 10.1/c (2 vectors); and 3 more. Evaluation needs "
                "one vector per DOI") in err, err
        assert "keep one row for each DOI" in err
        assert not list((tmp_path / "build").glob("evaluation/*.json"))


def test_a_refused_embeddings_file_exits_2_as_a_process(tmp_path):
    """The command printed its error and returned 2, then the process aborted in most runs
    (exit 134, "terminate called without an active exception"): Arrow's dataset scan released
    the file's buffer from a pool thread after the read, and that thread took the GIL during
    the interpreter's shutdown. Run as a user runs it, in a process of its own, a few times
    (the abort was a race)."""
    import subprocess
    import sys

    out = str(tmp_path / "build")
    write_tiny_build(out)
    dois = [d[0] for d in DOCS]
    good = _vectors(dois)
    path = tmp_path / "twice.parquet"
    pq.write_table(pa.table({"doi": dois + [dois[0].upper()], "embedding": good.tolist() + [good[0].tolist()]}), path)
    for _ in range(4):
        done = subprocess.run([sys.executable, "-m", "openmsd_build.cli", "evaluate", "--out", out, "--embeddings",
                               str(path), "--split", "idt"], capture_output=True, text=True, timeout=120)
        assert (done.returncode, "terminate called" in done.stderr) == (2, False), done.stderr[-500:]
        assert "1 DOI has more than one vector" in done.stderr


@pytest.mark.parametrize("scale", [1e36, 1e-36])
def test_vectors_at_any_scale_rank_as_at_unit_scale(tmp_path, scale):
    """Cosine does not depend on a vector's length, but float32 squares of components near
    1e38 overflow and those near 1e-36 underflow: every vector became zeros, every score 0,
    and the model was ranked by DOI order with exit 0. The same directions at any scale now
    score alike (`evaluate.vectors.unit_rows`), in `evaluate` and in the large pools' model."""
    from openmsd_build.evaluate.large_pool import DenseModel

    out = str(tmp_path / "build")
    write_tiny_build(out)
    dois = [d[0] for d in DOCS]
    good = _vectors(dois)
    results = {}
    for name, vectors in (("unit", good), ("scaled", good * scale)):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"doi": dois, "embedding": pa.array(vectors.astype(np.float32).tolist(),
                                                                    pa.list_(pa.float32()))}), path)
        assert main(["evaluate", "--out", out, "--embeddings", str(path), "--split", "idt"]) == 0
        results[name] = json.loads((tmp_path / "build" / "evaluation" / f"{name}_idt.json").read_text())["relations"]
    assert results["scaled"] == results["unit"] and results["unit"]["dc"]["all"]["map"] > 0.5
    assert np.allclose(DenseModel((good * scale).astype(np.float32)).unit, DenseModel(good).unit, atol=1e-6)
