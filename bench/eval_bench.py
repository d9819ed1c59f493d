"""Large-pool evaluation at scale, on SYNTHETIC data (`openmsd_build/evaluate/synthetic.py`).

Why: the MDCR protocol needs candidate pools of 200k-1M papers; a pipeline build of that size
does not fit this 2-core machine in minutes, so the tables `evaluate-pools` reads are
synthesised directly (following `schemas/` exactly). Two parts:

* `timing` — BM25 and exact dense search over N candidates (200k and 1M), each engine in its
  own process (peak RSS is its own), next to the simplest alternative:
  - `bm25`: ours (`SparseBM25`: one sparse product per batch of queries, then top-K) vs
    `rank_bm25.BM25Okapi` (a Python loop over the documents per query term; its Okapi IDF
    differs slightly, this is a timing comparison only);
  - `dense`: ours (batched matmul + `topk.top_k`) vs a numpy loop (one query at a time,
    full `argsort`).
  Tokenization is timed apart (the same for both). Queries: `--queries` for ours, fewer for
  the slow alternatives (`--slow-queries`); times are also given per query.
* `table` — a synthetic build of `--papers` papers (idt large enough for 200k pools), then
  `evaluate-pools` with BM25 (default and tuned), a static-embedding encoder made here, pool
  sizes 10k / 50k / 200k, three resamples: the headline table per language class.

Usage: `nice -n 10 .venv/bin/python bench/eval_bench.py timing --sizes 200000,1000000`
       `nice -n 10 .venv/bin/python bench/eval_bench.py table --papers 260000`
Writes bench/results_eval.json (both parts merge into it; `--json PATH` writes elsewhere, e.g. for a
small trial run that must not replace the quoted figures).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "results_eval.json"
TOP_K = 500
DIM = 256


def _texts(n: int) -> Path:
    """Synthetic texts of `n` papers, tokenized once into a Parquet file (a list of tokens a
    paper); the tokenization time is kept in its metadata (it is the same for every engine)."""
    path = DATA / f"eval_tokens_{n}.parquet"
    if not path.exists():
        from openmsd_build.evaluate.synthetic import synthetic_papers
        from openmsd_build.evaluate.tokenize import tokenize

        DATA.mkdir(exist_ok=True)
        p = synthetic_papers(n, seed=1)
        t = time.perf_counter()
        tokens = [[sys.intern(w) for w in tokenize(f"{a}\n{b}", lg)]
                  for a, b, lg in zip(p["titles"], p["abstracts"], p["languages"], strict=True)]
        table = pa.table({"tokens": pa.array(tokens, type=pa.list_(pa.string()))})
        table = table.replace_schema_metadata({"tokenize_s": str(round(time.perf_counter() - t, 2))})
        pq.write_table(table, path)
    return path


def _load_tokens(path: Path) -> tuple[list[list[str]], float]:
    """The token lists of `_texts`, interned batch by batch (the engines share the strings, and
    no second full copy is held while loading), and the recorded tokenization time."""
    parquet = pq.ParquetFile(path)
    tokens: list[list[str]] = []
    for batch in parquet.iter_batches(batch_size=20_000):
        tokens.extend([sys.intern(w) for w in doc] for doc in batch.column(0).to_pylist())
    return tokens, float(parquet.schema_arrow.metadata[b"tokenize_s"])


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(engine: str, n: int, queries: int) -> dict:
    """One engine in this process (what the child runs)."""
    from openmsd_build.evaluate import topk

    rng = np.random.default_rng(5)
    out: dict = {"engine": engine, "candidates": n, "queries": queries}
    if engine.startswith("bm25"):
        tokens, out["tokenize_s"] = _load_tokens(_texts(n))
        qs = rng.choice(n, size=queries, replace=False)
        if engine == "bm25":
            from openmsd_build.evaluate.sparse_bm25 import SparseBM25

            t = time.perf_counter()
            index = SparseBM25([], [], token_lists=tokens)
            out["index_s"] = round(time.perf_counter() - t, 2)
            t = time.perf_counter()
            for s in range(0, queries, 32):
                topk.top_k(index.score_tokens([tokens[q] for q in qs[s : s + 32]]), TOP_K)
        else:
            from rank_bm25 import BM25Okapi

            t = time.perf_counter()
            index = BM25Okapi(tokens)
            out["index_s"] = round(time.perf_counter() - t, 2)
            t = time.perf_counter()
            for q in qs:
                scores = index.get_scores(list(dict.fromkeys(tokens[q])))
                np.argsort(-scores)[:TOP_K]
    else:
        vectors = rng.standard_normal((n, DIM), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        qs = rng.choice(n, size=queries, replace=False)
        out["index_s"] = 0.0
        t = time.perf_counter()
        if engine == "dense":
            cand_t = np.ascontiguousarray(vectors.T)
            for s in range(0, queries, 32):
                topk.top_k(vectors[qs[s : s + 32]] @ cand_t, TOP_K)
        else:
            for q in qs:
                np.argsort(-(vectors @ vectors[q]))[:TOP_K]
    out["search_s"] = round(time.perf_counter() - t, 2)
    out["ms_per_query"] = round(1000 * out["search_s"] / queries, 2)
    out["peak_rss_mb"] = round(_peak_mb())
    return out


def timing(sizes: list[int], queries: int, slow_queries: int) -> list[dict]:
    rows = []
    for n in sizes:
        _texts(n)
        for engine, q in (("bm25", queries), ("bm25-rank_bm25", slow_queries), ("dense", queries),
                          ("dense-numpy-loop", slow_queries)):
            started = time.perf_counter()
            proc = subprocess.run([sys.executable, __file__, "_one", engine, str(n), str(q)], capture_output=True,
                                  text=True, check=True)
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row["wall_s"] = round(time.perf_counter() - started, 1)
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def table(papers: int, sizes: list[int], resamples: int, max_queries: int, out: Path) -> dict:
    from openmsd_build.evaluate import benchmark
    from openmsd_build.evaluate.pools_command import format_split, run_pools
    from openmsd_build.evaluate.synthetic import synthetic_build, synthetic_static_encoder

    t = time.perf_counter()
    counts = synthetic_build(str(out), papers, seed=1, split_fractions=(0.15, 0.85))
    synth_s = time.perf_counter() - t
    print(f"synthetic build: {json.dumps(counts)} in {synth_s:.0f} s", flush=True)
    encoder = synthetic_static_encoder(counts["topics"], dim=64)
    t = time.perf_counter()
    results = run_pools(str(out), ["idt"], sizes, resamples, seed=0, max_queries=max_queries,
                        encoders={"static64": encoder}, bench_config=benchmark.BenchmarkConfig(queries=100))
    eval_s = time.perf_counter() - t
    res = results["idt"]
    print(format_split(res))
    return {"papers": papers, "counts": counts, "synthesis_s": round(synth_s, 1), "evaluate_s": round(eval_s, 1),
            "peak_rss_mb": round(_peak_mb()), "bm25_tuning": {k: res["bm25_tuning"][k] for k in ("k1", "b",
                                                                                                  "validation_map")},
            "table": format_split(res), "benchmark": res.get("benchmark")}


def _merge(key: str, value, results: Path = RESULTS) -> None:
    doc = json.loads(results.read_text()) if results.exists() else {}
    doc[key] = value
    doc["machine"] = "2 cores shared with other engineers' jobs (load 6-11 during the runs): quote ratios"
    results.write_text(json.dumps(doc, indent=2) + "\n")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        print(json.dumps(one(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, default=RESULTS, help="results file the part merges into")
    sub = ap.add_subparsers(dest="part", required=True)
    t = sub.add_parser("timing")
    t.add_argument("--sizes", default="200000,1000000")
    t.add_argument("--queries", type=int, default=256)
    t.add_argument("--slow-queries", type=int, default=16)
    b = sub.add_parser("table")
    b.add_argument("--papers", type=int, default=260_000)
    b.add_argument("--pool-sizes", default="10000,50000,200000")
    b.add_argument("--resamples", type=int, default=3)
    b.add_argument("--max-queries", type=int, default=300)
    b.add_argument("--out", default=str(DATA / "eval_synthetic_build"))
    args = ap.parse_args()
    if args.part == "timing":
        _merge("timing", timing([int(s) for s in args.sizes.split(",")], args.queries, args.slow_queries), args.json)
    else:
        _merge("table", table(args.papers, [int(s) for s in args.pool_sizes.split(",")], args.resamples,
                              args.max_queries, Path(args.out)), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
