"""Large-pool evaluation and the typed benchmark: top-K metrics equal trec_eval's
(pytrec_eval) on random rankings; sampling never admits a candidate newer than its query and
puts every positive in its pool; the benchmark's candidate types are what they claim; the
sparse BM25 equals bm25s; everything is determined by the seed; and the command end to end
on a small synthetic build (results, pools, benchmark, report section, export card)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main
from openmsd_build.evaluate import benchmark, large_pool, tasks, topk
from openmsd_build.evaluate.bm25 import BM25Scorer
from openmsd_build.evaluate.corpus import NO_YEAR, Corpus, attach_citations, load_corpus
from openmsd_build.evaluate.encoders import StaticEncoder, load_encoder
from openmsd_build.evaluate.pools_command import run_pools
from openmsd_build.evaluate.sparse_bm25 import SparseBM25
from openmsd_build.evaluate.synthetic import synthetic_build, synthetic_static_encoder

pytrec_eval = pytest.importorskip("pytrec_eval")


# --------------------------------------------------------------------------- metrics


@pytest.mark.parametrize("seed", range(5))
def test_topk_metrics_equal_trec_eval_on_random_rankings(seed):
    rng = np.random.default_rng(seed)
    n_docs, k, n_queries = 400, 50, 30
    qrels, run, ours = {}, {}, {}
    for q in range(n_queries):
        scores = rng.random(n_docs)  # continuous: no ties (trec_eval breaks ties by docno)
        if q % 7 == 3:
            scores[rng.random(n_docs) < 0.5] = -np.inf  # masked candidates are never returned
        relevant = np.sort(rng.choice(n_docs, size=int(rng.integers(1, 80)), replace=False))
        ranked = topk.top_k(scores[None, :], k)[0]
        assert list(ranked[ranked >= 0]) == [int(i) for i in np.argsort(-scores)[:k] if np.isfinite(scores[i])]
        m = topk.query_metrics(ranked, relevant, {"r@30": 30, "r@5": 5})
        qid = f"q{q}"
        qrels[qid] = {f"d{d}": 1 for d in relevant}
        run[qid] = {f"d{d}": float(k - r) for r, d in enumerate(ranked) if d >= 0}
        ours[qid] = m
    measures = {f"map_cut_{k}", f"ndcg_cut_{k}", "recall_30", "recall_5", "recip_rank"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    for qid, m in ours.items():
        assert m["map"] == pytest.approx(ref[qid][f"map_cut_{k}"], abs=1e-4)
        assert m["ndcg"] == pytest.approx(ref[qid][f"ndcg_cut_{k}"], abs=1e-4)
        assert m["r@30"] == pytest.approx(ref[qid]["recall_30"], abs=1e-4)
        assert m["r@5"] == pytest.approx(ref[qid]["recall_5"], abs=1e-4)
        assert m["mrr"] == pytest.approx(ref[qid]["recip_rank"], abs=1e-4)


def test_top_k_breaks_ties_by_position():
    scores = np.array([[1.0, 2.0, 2.0, 2.0, 0.5]])
    assert topk.top_k(scores, 2)[0].tolist() == [1, 2]
    assert topk.top_k(np.array([[-np.inf, 1.0, -np.inf]]), 3)[0].tolist() == [1, -1, -1]


def test_sparse_bm25_equals_bm25s():
    texts = ["alpha beta gamma", "alpha alpha delta", "epsilon beta", "", "gamma gamma gamma alpha zeta"]
    langs = ["en", None, "xx", "en", "de"]
    ref = BM25Scorer(texts, langs, k1=1.2, b=0.6)
    ours = SparseBM25(texts, langs).with_params(1.2, 0.6)
    for q in range(len(texts)):
        expect = ref.scores(q)
        got = ours.score_tokens([ref.tokens[q]])[0]
        assert got == pytest.approx(expect, rel=1e-5, abs=1e-6)


# --------------------------------------------------------------------------- sampling


def random_corpus(seed: int, n: int = 600) -> Corpus:
    """Random years (some unknown), languages, fields, relations and citations, with
    related papers newer than their query on purpose."""
    rng = np.random.default_rng(seed)
    years = rng.integers(2015, 2021, n).astype(np.int32)
    years[rng.random(n) < 0.05] = NO_YEAR
    langs = list(rng.choice(["en", "de", "zh"], n))
    relevance = {}
    for rel in ("dc", "cc", "bc"):
        a, b = rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n)
        relevance[rel] = tasks.relevance_from_pairs(rel, a, b, n)
    corpus = Corpus(split="idt", dois=[f"10.1/{i:05d}" for i in range(n)], titles=[f"t{i % 17} w{i % 5}"
                    for i in range(n)], abstracts=[f"a{i % 13} w{i % 3} common" for i in range(n)],
                    languages=langs, years=years, categories=[[f"f{i % 4}"] for i in range(n)], relevance=relevance)
    citing, cited = rng.integers(0, n, 4 * n), rng.integers(0, n, 4 * n)
    attach_citations(corpus, citing, cited, np.bincount(cited, minlength=n))
    return corpus


class RandomModel:
    def __init__(self, seed: int):
        self.seed = seed

    def prepare(self, candidates):
        rng = np.random.default_rng(self.seed)
        return lambda queries: rng.random((len(queries), candidates.size))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("field", [None, "f1"])
def test_sampling_never_admits_newer_candidates_and_keeps_every_positive(seed, field, monkeypatch):
    corpus = random_corpus(seed)
    rels = ("dc", "cc", "bc")
    sample = large_pool.sample_pool(corpus, 150, [seed], rels, latest_years=2, max_queries=80, field=field)
    assert sample.queries.size > 0 and sample.positives_newer > 0  # the data has newer partners
    cand = set(sample.candidates.tolist())
    max_q_year = corpus.years[sample.queries].max()
    assert (corpus.years[sample.candidates] != NO_YEAR).all()
    assert (corpus.years[sample.candidates] <= max_q_year).all()
    for q in sample.queries:
        assert corpus.years[q] in np.unique(corpus.years[corpus.years != NO_YEAR])[-2:]
        if field:
            assert field in corpus.categories[q]
        pos = large_pool.positives_of(corpus, int(q), rels)
        assert pos.size and set(pos.tolist()) <= cand  # every positive is in the pool
        assert (corpus.years[pos] <= corpus.years[q]).all()
    # every list the scorer returns respects the query's year and excludes the query
    seen = []
    real_top_k = topk.top_k

    def spy(scores, k):
        ranked = real_top_k(scores, k)
        seen.append(ranked)
        return ranked

    monkeypatch.setattr(topk, "top_k", spy)
    large_pool.evaluate_sample(corpus, sample, RandomModel(seed), rels, top_k=40, batch=16)
    assert len(seen) == 3 * -(-sample.queries.size // 16)
    for b, start in enumerate(range(0, sample.queries.size, 16)):
        queries = sample.queries[start : start + 16]
        for ranked in seen[3 * b : 3 * b + 3]:
            for row, q in enumerate(queries):
                got = sample.candidates[ranked[row][ranked[row] >= 0]]
                assert q not in got
                assert (corpus.years[got] <= corpus.years[q]).all()


@pytest.mark.parametrize("latest_years", [0, -1])
def test_latest_years_below_one_is_refused_for_callers_from_python(latest_years):
    """`query_candidates(..., latest_years=0)` took every year (`known[-0:]`) and -1 every year
    but the oldest; only the command line refused them, not a caller from Python (as
    bench/eval_bench.py, `run_pools`, `sample_pool`). A ValueError naming the argument now."""
    corpus = random_corpus(0)
    assert set(corpus.years[large_pool.query_candidates(corpus, ("dc",), 1)].tolist()) == {2020}
    with pytest.raises(ValueError, match=f"latest_years must be 1 or more, not {latest_years}"):
        large_pool.query_candidates(corpus, ("dc",), latest_years)
    with pytest.raises(ValueError, match="latest_years"):
        large_pool.sample_pool(corpus, 100, [0], ("dc",), latest_years=latest_years)


def test_pool_size_is_capped_and_the_filler_comes_from_the_split():
    corpus = random_corpus(7)
    small = large_pool.sample_pool(corpus, 10, [1], max_queries=5)
    big = large_pool.sample_pool(corpus, 10**6, [1], max_queries=5)
    assert small.candidates.size == small.positives  # positives are never dropped to meet the size
    eligible = (corpus.years != NO_YEAR) & (corpus.years <= corpus.years[big.queries].max())
    assert big.candidates.size == int(eligible.sum())


def test_the_same_seed_gives_the_same_pools_results_and_benchmark():
    corpus = random_corpus(3)
    a = large_pool.sample_pool(corpus, 200, large_pool.sample_seed(5, 200, 0), max_queries=20)
    b = large_pool.sample_pool(corpus, 200, large_pool.sample_seed(5, 200, 0), max_queries=20)
    c = large_pool.sample_pool(corpus, 200, large_pool.sample_seed(5, 200, 1), max_queries=20)
    assert a.candidates.tolist() == b.candidates.tolist() and a.queries.tolist() == b.queries.tolist()
    assert a.candidates.tolist() != c.candidates.tolist()
    model = large_pool.BM25Model(corpus)
    assert large_pool.evaluate_sample(corpus, a, model) == large_pool.evaluate_sample(corpus, b, model)
    cfg = benchmark.BenchmarkConfig(queries=20, seed=4)
    assert benchmark.build_benchmark(corpus, cfg) == benchmark.build_benchmark(corpus, cfg)
    other = benchmark.build_benchmark(corpus, benchmark.BenchmarkConfig(queries=20, seed=5))
    assert other != benchmark.build_benchmark(corpus, cfg)


# --------------------------------------------------------------------------- benchmark


def test_benchmark_candidate_types_are_what_they_claim():
    corpus = random_corpus(11)
    cfg = benchmark.BenchmarkConfig(queries=40, positives=3, per_type=4, relations=("dc",), seed=2)
    rows = benchmark.build_benchmark(corpus, cfg)
    assert {r["type"] for r in rows} == set(benchmark.TYPES)
    # the citation graph, brute force from the CSR lists
    n = len(corpus)
    cites = {i: set(corpus.cites.of(i).tolist()) for i in range(n)}
    cited_by = {i: set(corpus.cited_by.of(i).tolist()) for i in range(n)}
    tokens = [set(large_pool.BM25Model(corpus).tokens[i]) for i in range(n)]
    seen = set()
    for r in rows:
        q, c, kind = r["query"], r["candidate"], r["type"]
        assert (q, c) not in seen and q != c  # one type per candidate, never the query
        seen.add((q, c))
        assert corpus.years[c] != NO_YEAR and corpus.years[c] <= corpus.years[q]
        related_any = set().union(*(set(rel.of(q).tolist()) for rel in corpus.relevance.values()))
        if kind == "positive":
            assert r["label"] == 1 and c in set(corpus.relevance["dc"].of(q).tolist())
            continue
        assert r["label"] == 0 and c not in related_any and c not in cites[q] and c not in cited_by[q]
        if kind == "graph":
            assert any(c in cites[ref] or c in cited_by[ref] for ref in cites[q])
        elif kind == "bm25":
            assert tokens[q] & tokens[c]  # BM25 scored it above zero
        elif kind == "popular":
            assert corpus.categories[q][0] in corpus.categories[c]
    per_query: dict[int, list[dict]] = {}
    for r in rows:
        per_query.setdefault(r["query"], []).append(r)
    for q, qrows in per_query.items():
        types = [r["type"] for r in qrows]
        assert types.count("positive") <= 3 and all(types.count(t) <= 4 for t in benchmark.TYPES[1:])
        popular = [r["candidate"] for r in qrows if r["type"] == "popular"]
        if not popular:
            continue
        # no free, older, unrelated paper of the field is more cited than a popular pick
        taken = {r["candidate"] for r in qrows if r["type"] in ("positive", "bm25", "graph", "popular")}
        related_any = set(benchmark.related(corpus, q).tolist())
        floor = min(corpus.in_citations[c] for c in popular)
        for c in range(n):
            if (c != q and c not in taken and c not in related_any and corpus.years[c] != NO_YEAR
                    and corpus.years[c] <= corpus.years[q] and corpus.categories[q][0] in corpus.categories[c]):
                assert corpus.in_citations[c] <= floor


# --------------------------------------------------------------------------- end to end


def test_encoder_folder_round_trip(tmp_path):
    enc = StaticEncoder(["alpha", "beta"], np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    enc.save(str(tmp_path / "enc"))
    loaded = load_encoder(str(tmp_path / "enc"))
    assert loaded.encode(["alpha beta", "gamma"], ["en", "en"]).tolist() == [[0.5, 0.5], [0.0, 0.0]]
    with pytest.raises(Exception, match="never downloaded"):
        load_encoder(str(tmp_path / "missing"))


def test_evaluate_pools_end_to_end_on_a_synthetic_build(tmp_path, capsys):
    out = str(tmp_path / "build")
    counts = synthetic_build(out, 1500, seed=3)
    assert counts["splits"]["idt"] > 500
    synthetic_static_encoder(counts["topics"], dim=16).save(str(tmp_path / "static"))
    code = main(["evaluate-pools", "--out", out, "--split", "idt", "--pool-sizes", "300,800", "--resamples", "2",
                 "--max-queries", "40", "--encoder", str(tmp_path / "static"), "--benchmark-queries", "10",
                 "--field", "field-01", "--seed", "9"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "bm25_tuned" in printed and "static" in printed and "BM25 tuned on train" in printed
    # the validation MAP was printed with every digit of a float (0.04625173155363377)
    assert re.search(r"BM25 tuned on train: k1 [\d.]+, b [\d.]+ \(validation MAP (\d\.\d{4}|—)\)\n", printed)
    res = json.loads((tmp_path / "build" / "evaluation" / "large_pool" / "idt.json").read_text())
    assert res["seed"] == 9 and res["bm25_tuning"]["grid"] and res["top_k"] == 500
    assert [r["samples"][1]["seed"] for r in res["runs"]][:2] == [[9, 300, 1], [9, 800, 1]]
    assert {r["field"] for r in res["runs"]} == {None, "field-01"}
    m = res["runs"][0]["models"]["static"]["dc"]
    assert set(tasks.LANG_CLASSES) <= set(m) and any(k.startswith("lang:") for k in m)
    assert 0 <= m["all"]["map"]["mean"] <= 1 and m["all"]["map"]["n"] == 2
    # pools on disk: every query's positives are in its pool
    corpus = load_corpus(out, "idt")
    pool = pq.read_table(tmp_path / "build/evaluation/large_pool/pools/idt/size=300/resample=0.parquet").to_pylist()
    dois = {r["doi"] for r in pool if r["role"] != "query"} | {r["doi"] for r in pool if r["role"] == "query"}
    pos_of = {d: i for i, d in enumerate(corpus.dois)}
    for r in pool:
        if r["role"] == "query":
            for p in large_pool.positives_of(corpus, pos_of[r["doi"]], ("dc", "cc", "bc")):
                assert corpus.dois[p] in dois
    # the file tells candidates from queries that are not ranked: a query that is a candidate too
    # was written as `query` alone, and the pool could not be rebuilt from the file
    for run in res["runs"][:2]:
        assert run["field"] is None
        path = tmp_path / f"build/evaluation/large_pool/pools/idt/size={run['size_requested']}/resample=0.parquet"
        table = pq.read_table(path).to_pylist()
        assert sum(r["candidate"] for r in table) == run["samples"][0]["size"]
        assert all(r["candidate"] for r in table if r["role"] != "query")
    bench = pq.read_table(tmp_path / "build/evaluation/large_pool/benchmark/idt/candidates.parquet")
    assert set(bench.column("type").to_pylist()) <= set(benchmark.TYPES) and bench.num_rows > 10

    from openmsd_build.report.command import build_report

    stats = build_report(out)
    assert stats["large_pool"]["idt"]["seed"] == 9
    md = (tmp_path / "build" / "report" / "report.md").read_text()
    assert "## Large-pool citation recommendation" in md and "bm25_tuned" in md

    from openmsd_build.export.pools import export_pools

    summary = export_pools(out, str(tmp_path / "export"))
    card = (tmp_path / "export" / "large_pool" / "README.md").read_text()
    assert "published in or before" in card and "seed 9" in card
    assert summary["benchmark"]["idt"]["rows"] == bench.num_rows
    assert (tmp_path / "export" / "large_pool" / "benchmark" / "idt" / "qrels" / "test.tsv").exists()


def res_runs(tmp_path) -> list[dict]:
    return json.loads((tmp_path / "build" / "evaluation" / "large_pool" / "idt.json").read_text())["runs"]


def test_pools_that_say_little_are_warned_about(tmp_path, capsys):
    """A split with no paper printed tables of dashes and exited 0 silently; pool sizes larger
    than the split were capped without a word (the same pool printed three times); one query's
    figures were compared as if they meant something."""
    from openmsd_build.evaluate.pools_command import pool_warnings

    assert pool_warnings({"split": "idt", "papers": 0, "eligible_queries": 0, "runs": [], "relations": ["dc"]}) == [
        "idt holds no paper: nothing was evaluated (did split assign any to idt?)"]
    out = str(tmp_path / "build")
    synthetic_build(out, 300, seed=3)
    assert main(["evaluate-pools", "--out", out, "--split", "idt", "--pool-sizes", "50,100000,200000",
                 "--resamples", "1", "--max-queries", "5", "--no-tune"]) == 0
    printed, err = capsys.readouterr()
    assert "warning: idt: pools of 100,000, 200,000 candidates could not be filled (at most" in err
    # the capped pools' rows say the size asked, so the two identical blocks are told apart
    capped = next(r for r in res_runs(tmp_path) if r["size_requested"] == 100_000)["size"]
    assert f"{capped:,} (100,000)" in printed and f"{capped:,} (200,000)" in printed
    assert "queries: too few for their figures to compare models" in err
    res = json.loads((tmp_path / "build" / "evaluation" / "large_pool" / "idt.json").read_text())
    # 5 queries' positives outnumber a pool of 50: it was enlarged to hold them, silently
    fifty = next(r for r in res["runs"] if r["size_requested"] == 50)
    assert fifty["size"] > 55
    assert f"warning: idt: pools larger than asked (e.g. {fifty['size']:,} for 50)" in err
    assert len(res["warnings"]) == 3


def test_the_synthetic_build_is_the_same_in_every_process(tmp_path):
    """Its splits came from Python's hash() of each DOI, which changes with every process
    (PYTHONHASHSEED): the same seed gave another build, and a test's pool sizes moved with it."""
    import os
    import subprocess
    import sys

    script = ("import sys, hashlib, glob, pyarrow.parquet as pq\n"
              "from openmsd_build.evaluate.synthetic import synthetic_build\n"
              "synthetic_build(sys.argv[1], 200, seed=3)\n"
              "print(hashlib.sha1(b''.join(pq.read_table(p).to_string(preview_cols=0).encode() + "
              "str(pq.read_table(p).to_pylist()).encode() for p in sorted(glob.glob(sys.argv[1] + '/**/*.parquet', "
              "recursive=True)))).hexdigest())\n")
    digests = {subprocess.run([sys.executable, "-c", script, str(tmp_path / f"b{seed}")], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2)}
    assert len(digests) == 1


def test_a_field_or_model_name_cannot_write_elsewhere_or_vanish(tmp_path, capsys):
    """`--field` is a category name, written into the pools' folder as it was: `../../x` wrote
    pools outside the build. Two `--embeddings` files of one base name were one model (the
    last), the other dropped without a word."""
    from openmsd_build.evaluate.pools_command import field_folder

    assert field_folder("Arts & Humanities") == "field=Arts & Humanities"
    assert field_folder("../../x") == "field=..%2F..%2Fx"
    out = tmp_path / "deep" / "build"
    synthetic_build(str(out), 300, seed=3)
    args = ["evaluate-pools", "--out", str(out), "--split", "idt", "--pool-sizes", "50", "--resamples", "1",
            "--max-queries", "5", "--no-tune"]
    assert main([*args, "--field", "../../escaped"]) == 0
    assert not list(tmp_path.rglob("escaped*"))
    written = out / "evaluation" / "large_pool" / "pools" / "idt" / "field=..%2F..%2Fescaped" / "size=50"
    assert (written / "resample=0.parquet").is_file()
    assert main([*args, "--field", "x" * 300]) == 2
    assert "a category name of 1 to 200 characters" in capsys.readouterr().err

    corpus = load_corpus(str(out), "idt")
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        pq.write_table(pa.table({"doi": corpus.dois, "embedding": np.eye(len(corpus.dois), 8).tolist()}),
                       tmp_path / folder / "model.parquet")
    assert main([*args, "--embeddings", str(tmp_path / "a" / "model.parquet"),
                 "--embeddings", str(tmp_path / "b" / "model.parquet")]) == 2
    assert "two models are named 'model'" in capsys.readouterr().err


def test_counts_below_one_are_refused_and_an_unknown_field_is_warned_about(tmp_path, capsys):
    """`--latest-years 0` took every year (`years[-0:]`) and printed a table with no row and
    no warning; `--max-queries 0` evaluated pools of no query; `--field` naming a category no
    paper has gave empty field-level pools, said only as 'as few as 0 queries'. The first two
    are refused when the command line is parsed (usage errors, as every command's counts);
    the third names the field."""
    out = tmp_path / "build"
    synthetic_build(str(out), 300, seed=3)
    args = ["evaluate-pools", "--out", str(out), "--split", "idt", "--pool-sizes", "50", "--resamples", "1",
            "--max-queries", "5", "--no-tune"]
    for flag in ("--latest-years", "--max-queries", "--benchmark-queries"):
        least = 0 if flag == "--benchmark-queries" else 1  # 0 benchmark queries: no benchmark, as documented
        with pytest.raises(SystemExit) as stop:
            main([*args, flag, str(least - 1)])
        assert stop.value.code == 2, flag
        err = capsys.readouterr().err
        assert f"argument {flag}: must be {least} or more, not {least - 1}" in err and "Traceback" not in err, err
    assert main([*args, "--field", "No Such Category"]) == 0
    err = capsys.readouterr().err
    assert "warning: idt: --field 'No Such Category': no query of idt is in that category" in err, err


def test_a_recall_cut_off_past_the_retrieved_list_is_a_usage_error(tmp_path, capsys):
    """Every metric is computed from the top --top-k list, so `--top-k 1 --recall-k 30`
    reported R@30 that was R@1 (on the 300-paper sample: 0.00 where the full ranking gave
    100.00), under the R@30 heading. Refused before the build is looked at, naming both flags."""
    assert main(["evaluate-pools", "--out", str(tmp_path / "no-such-build"), "--top-k", "10", "--recall-k", "30"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert errors == ["openmsd-build evaluate-pools: error: argument --recall-k: must be at most --top-k (10), not 30: "
                      "recall is measured on the top-k list, so R@30 would be R@10"]


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--latest-years", "0", "must be 1 or more, not 0"),
    ("--max-queries", "0", "must be 1 or more, not 0"),
    ("--benchmark-queries", "-1", "must be 0 or more, not -1"),
    ("--max-queries", "ten", "'ten' is not a whole number"),
    ("--resamples", "0", "must be 1 or more, not 0"),
    ("--top-k", "0", "must be 1 or more, not 0"),
    ("--recall-k", "-3", "must be 1 or more, not -3"),
    ("--pool-sizes", "100,0", "each must be 1 or more, not 0"),
    ("--pool-sizes", "100,-5", "each must be 1 or more, not -5"),
    ("--pool-sizes", "100,1e3", "'1e3' is not a whole number (comma-separated whole numbers)"),
    ("--pool-sizes", ",", "',' holds no number (comma-separated whole numbers)"),
])
def test_pool_counts_are_usage_errors_when_parsed(tmp_path, capsys, flag, value, said):
    """evaluate-pools checked its counts inside its run, after the build was looked at (a
    missing --out was said instead: `--pool-sizes 0` on a missing build said only 'output
    root not found') and with a message of their own ('--pool-sizes, --resamples, --top-k and
    --recall-k must be positive', naming no one); they are usage errors when the command line
    is parsed now, as the other commands' counts (`core.inputs.at_least`, and
    `counts_at_least` for each of --pool-sizes): exit 2 and one error line naming the flag."""
    with pytest.raises(SystemExit) as stop:
        main(["evaluate-pools", "--out", str(tmp_path / "no-such-build"), flag, value])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert errors == [f"openmsd-build evaluate-pools: error: argument {flag}: {said}"], err


def test_an_interrupted_evaluation_keeps_the_earlier_results_whole(tmp_path, monkeypatch, capsys):
    """evaluate-pools wrote each split's results in place as it went: a Ctrl-C in the second
    split left the first split's new results beside the second's old ones (a half-written JSON
    when it fell in the write) under "the previous outputs are intact". A run's results now
    replace the earlier ones only when all are written; splits it does not evaluate keep theirs."""
    from openmsd_build.evaluate import pools_command

    out = tmp_path / "build"
    synthetic_build(str(out), 300, seed=3)
    args = ["evaluate-pools", "--out", str(out), "--pool-sizes", "50", "--resamples", "1", "--max-queries", "5",
            "--no-tune", "--benchmark-queries", "5"]
    assert main([*args, "--seed", "1"]) == 0
    results = out / "evaluation" / "large_pool"

    def snapshot() -> dict:
        return {p.relative_to(results): p.read_bytes() for p in results.rglob("*") if p.is_file()}

    before = snapshot()
    assert {"idt.json", "odt.json"} <= {str(p) for p in before}
    load = pools_command.load_corpus

    def ctrl_c_in_odt(build, split, *rest, **kwargs):
        if split == "odt":
            raise KeyboardInterrupt  # idt's results are written, odt's are under way
        return load(build, split, *rest, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(pools_command, "load_corpus", ctrl_c_in_odt)
        assert main([*args, "--seed", "2"]) == 130
    assert "interrupted; the previous outputs are intact" in capsys.readouterr().err
    assert snapshot() == before
    assert main([*args, "--seed", "2", "--split", "idt"]) == 0
    after = snapshot()
    assert after[Path("idt.json")] != before[Path("idt.json")]
    assert {p: d for p, d in after.items() if p.parts[-1] == "odt.json" or "odt" in p.parts} == {
        p: d for p, d in before.items() if p.parts[-1] == "odt.json" or "odt" in p.parts}
    assert not (results / pools_command.PARTIAL).exists()


def test_pairs_naming_papers_outside_the_split_are_counted_and_warned_about(tmp_path, capsys):
    """A pairs/ folder of another build (its DOIs not in this build's splits/) was dropped
    pair by pair with no count: on the 300-paper sample, 260 IDT pairs gone and the one
    warning 'no query has a relevant paper'. The results now count each relation's pairs read
    and those outside the split, and a warning says where they went."""
    out = tmp_path / "build"
    synthetic_build(str(out), 300, seed=3)
    folder = out / "pairs" / "dc" / "split=idt"
    for path in sorted(folder.glob("*.parquet")):
        table = pq.read_table(path)
        foreign = [f"10.0000/other-{d}" for d in table.column("doi_a").to_pylist()]
        pq.write_table(table.set_column(table.schema.get_field_index("doi_a"), "doi_a", pa.array(foreign)), path)
    read = pq.read_table(folder).num_rows
    assert read > 0
    args = ["evaluate-pools", "--out", str(out), "--split", "idt", "--pool-sizes", "50", "--resamples", "1",
            "--max-queries", "5", "--no-tune", "--benchmark-queries", "0"]
    assert main(args) == 0
    res = json.loads((out / "evaluation" / "large_pool" / "idt.json").read_text())
    assert res["pairs"]["dc"] == {"read": read, "outside_split": read}
    assert res["pairs"]["cc"]["outside_split"] == 0 < res["pairs"]["cc"]["read"]
    warning = (f"idt: {read:,} of {read:,} DC pairs of pairs/dc/split=idt/ name a paper splits/ does not put in idt "
               "(a pairs folder of another build?): they are no relevance here")
    assert warning in res["warnings"] and f"warning: {warning}" in capsys.readouterr().err


def test_r_at_mean_never_cuts_past_the_retrieved_list(tmp_path, capsys):
    """R@mean's cut-off is the mean number of positives of a pool's queries; with more than
    --top-k of them it was past the list (on the 300-paper synthetic build, `r@mean_k` 6 for
    a top-1 list) and reported as recall at 6 what was recall at 1. The cut-off is now capped
    at --top-k, the mean it came from is kept, and the command warns."""
    out = str(tmp_path / "build")
    synthetic_build(out, 300, seed=3)
    assert main(["evaluate-pools", "--out", out, "--split", "idt", "--pool-sizes", "100", "--resamples", "1",
                 "--top-k", "1", "--recall-k", "1", "--no-tune", "--benchmark-queries", "0"]) == 0
    err = capsys.readouterr().err
    doc = json.loads((tmp_path / "build" / "evaluation" / "large_pool" / "idt.json").read_text())
    metrics = doc["runs"][0]["models"]["bm25"][doc["relations"][0]]["all"]
    assert metrics["r@mean_k"] == [1] and metrics["r@mean_positives"][0] > 1
    assert "R@mean is recall at 1 there (its cut-off, r@mean_k, is capped at --top-k)" in err
    assert any("R@mean is recall at 1" in w for w in doc["warnings"])

    corpus = random_corpus(2)
    sample = large_pool.sample_pool(corpus, 200, [2], ("dc", "cc", "bc"), latest_years=2, max_queries=40)
    mean = large_pool.mean_positives(corpus, sample, "dc")
    assert mean > 2
    res = large_pool.evaluate_sample(corpus, sample, RandomModel(2), ("dc",), top_k=2, recall_k=1)["dc"]["all"]
    assert (res["r@mean_k"], res["r@mean_positives"]) == (2, mean)
    full = large_pool.evaluate_sample(corpus, sample, RandomModel(2), ("dc",), top_k=2, recall_k=2)["dc"]["all"]
    assert res["r@mean"] == full["r@2"]  # recall at the top-k list's end, under its true cut-off
    wide = large_pool.evaluate_sample(corpus, sample, RandomModel(2), ("dc",), top_k=500)["dc"]["all"]
    assert wide["r@mean_k"] == wide["r@mean_positives"] == mean  # below top-k: the mean itself
    assert large_pool.recall_cutoffs(30, 45, 40) == {"r@30": 30, "r@mean": 40}
    assert large_pool.recall_cutoffs(30, 7, 40) == {"r@30": 30, "r@mean": 7}


def test_field_pools_of_different_names_get_different_seeds_the_same_everywhere():
    """A field-level pool's seed took the sum of the name's bytes: "Biology" and its anagram
    "Bioglyo" (or any two names of equal byte sum, "ad" and "bc") drew the same pools. The
    seed now takes a keyed blake2b of the name (`core.hashing.hash64`): distinct for distinct
    names, and pinned here, so it is the same in every process and on every machine."""
    from openmsd_build.core.hashing import hash64

    for a, b in (("Biology", "Bioglyo"), ("ad", "bc"), ("ab", "ba")):
        assert large_pool.sample_seed(0, 100, 0, a) != large_pool.sample_seed(0, 100, 0, b), (a, b)
    assert large_pool.sample_seed(9, 300, 1, "Biology") == [9, 300, 1, 7182402469012804443]
    assert large_pool.sample_seed(9, 300, 1, "Biology")[-1] == hash64("Biology", large_pool.FIELD_SEED_KEY)
    assert large_pool.sample_seed(9, 300, 1) == large_pool.sample_seed(9, 300, 1, None) == [9, 300, 1]
    # two anagram categories on the same papers: the same eligible queries, other draws
    corpus = random_corpus(4)
    corpus.categories = [["ab", "ba"] if i % 2 else ["zz"] for i in range(len(corpus.categories))]
    pools = [large_pool.sample_pool(corpus, 150, large_pool.sample_seed(0, 150, 0, f), ("dc", "cc", "bc"),
                                    latest_years=2, max_queries=10, field=f) for f in ("ab", "ba")]
    assert pools[0].queries.size == pools[1].queries.size == 10
    assert pools[0].queries.tolist() != pools[1].queries.tolist()


def test_a_recall_cut_off_past_the_list_is_refused_for_callers_from_python(tmp_path):
    """Only `evaluate-pools` refused `--recall-k` over `--top-k`: `evaluate_sample(top_k=10,
    recall_k=30)` returned recall at 10 under the key "r@30". A ValueError now, as the
    command's usage error; the BM25 tuning (MAP only) keeps its recall cut-off within top_k."""
    corpus = random_corpus(2)
    sample = large_pool.sample_pool(corpus, 200, [2], ("dc",), latest_years=2, max_queries=20)
    with pytest.raises(ValueError, match=re.escape("recall_k must be at most top_k (10), not 30: recall is measured "
                                                   "on the top-k list, so R@30 would be R@10")):
        large_pool.evaluate_sample(corpus, sample, RandomModel(2), ("dc",), top_k=10, recall_k=30)
    with pytest.raises(ValueError, match="recall_k must be 1 or more, not 0"):
        large_pool.evaluate_sample(corpus, sample, RandomModel(2), ("dc",), top_k=10, recall_k=0)
    with pytest.raises(ValueError, match="top_k must be 1 or more, not 0"):
        large_pool.evaluate_sample(corpus, sample, RandomModel(2), ("dc",), top_k=0, recall_k=1)
    res = large_pool.evaluate_sample(corpus, sample, RandomModel(2), ("dc",), top_k=10, recall_k=10)["dc"]["all"]
    assert "r@10" in res
    # the tuning's default cut-off (30) is kept within a short list, not refused
    tuned = large_pool.tune_bm25(corpus, large_pool.BM25Model(corpus), sample, "dc", (1.2,), (0.75,), top_k=5)
    assert len(tuned["grid"]) == 1
    with pytest.raises(ValueError, match="recall_k must be at most top_k"):
        run_pools(str(tmp_path / "build"), ["idt"], [100], top_k=10, recall_k=30)
    assert not (tmp_path / "build").exists()  # refused before anything is written
