"""Export of the large-pool evaluation's pools and the typed benchmark (`evaluate-pools`),
with their own card: `<dest>/large_pool/` holds

    README.md                                  how the pools and the benchmark were sampled
    pools/<split>/[field=F/]size=N/resample=i.parquet   doi, role, candidate, year, language
    benchmark/<split>/corpus.jsonl, queries.jsonl, qrels/test.tsv   BEIR task
    benchmark/<split>/candidates.parquet       query-id, corpus-id, score, type, languages

Nothing is written when `evaluate-pools` has not run (`export_pools` returns None).
"""

from __future__ import annotations

import os
import shutil

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core.parquet_io import join_path, write_bytes
from openmsd_build.evaluate import benchmark
from openmsd_build.report.large_pool import large_pool_section

BENCHMARK_TYPES = {
    "positive": "related to the query by the benchmark's relation(s), published in or before the query's year",
    "bm25": "the best BM25 candidates of the split that are related to the query by no relation",
    "graph": "papers cited by or citing the query's references, not cited by the query, not related to it",
    "popular": "the most cited papers of the query's field (first subject category), not related to it",
    "random": "any other paper of the split published in or before the query's year",
}


def card(sections: dict) -> str:
    """The card: sampling rules, seeds and sizes per split, benchmark types and counts."""
    first = next(iter(sections.values()))
    lines = ["# OpenMSD large-pool citation recommendation: pools and benchmark", "",
             "## Large candidate pools", "", first.get("sampling", ""), "",
             "Each file lists a pool's papers by DOI with their role: `query`, `positive` (related to a query "
             "and in the pool by rule) or `sampled` (the random rest), and `candidate`: whether the paper is "
             "ranked (a query is one when it is a positive of another query or was drawn).", ""]
    for split, doc in sections.items():
        lines.append(f"- {split}: sizes {', '.join(f'{s:,}' for s in doc.get('sizes', []))}, "
                     f"{doc.get('resamples')} resamples, seed {doc.get('seed')}, relations "
                     f"{', '.join(doc.get('relations', []))}, queries from the latest {doc.get('latest_years')} "
                     f"year(s), at most {doc.get('max_queries')} queries per pool; the seed of each pool is "
                     "(seed, size, resample) and is listed in the results' `samples`.")
    lines += ["", "## Benchmark", "",
              "Per query a few positives and negatives of labelled types (`type` in candidates.parquet; "
              "BEIR qrels hold the same rows with score 1 for positives, 0 otherwise). A candidate never is the "
              "query, never is newer than it, and has one type (the first that fits in this order):", ""]
    lines += [f"- `{t}`: {what}" for t, what in BENCHMARK_TYPES.items()]
    lines.append("")
    for split, doc in sections.items():
        b = doc.get("benchmark")
        if b:
            types = ", ".join(f"{t} {n:,}" for t, n in b.get("by_type", {}).items())
            lines.append(f"- {split}: {b.get('queries'):,} queries, {b.get('rows'):,} rows ({types}); seed "
                         f"{b.get('seed')}, relations {', '.join(b.get('relations', []))}.")
    return "\n".join(lines) + "\n"


def export_pools(out: str, dest: str) -> dict | None:
    """Copy the pools and benchmark of `out` (a local build: `evaluate-pools` writes them
    there) into `dest/large_pool/` with the card; `dest` may be local or remote (gs://)."""
    sections = large_pool_section(out)
    if not sections:
        return None
    assert set(BENCHMARK_TYPES) == set(benchmark.TYPES)
    src = join_path(out, "evaluation", "large_pool")
    target = join_path(dest, "large_pool")
    remote = "://" in dest
    for part in ("pools", "benchmark"):
        if not os.path.isdir(join_path(src, part)):
            continue
        if not remote:
            shutil.copytree(join_path(src, part), join_path(target, part), dirs_exist_ok=True)
            continue
        for folder, _dirs, files in os.walk(join_path(src, part)):
            for name in sorted(files):
                path = os.path.join(folder, name)
                with open(path, "rb") as f, FileSystems.create(
                        join_path(target, *os.path.relpath(path, src).split(os.sep))) as copy:
                    shutil.copyfileobj(f, copy, 8 << 20)  # a benchmark's corpus.jsonl may be GBs
    if not remote:
        os.makedirs(target, exist_ok=True)
    write_bytes(card(sections).encode("utf-8"), join_path(target, "README.md"))
    return {"splits": sorted(sections),
            "benchmark": {s: d["benchmark"] for s, d in sections.items() if d.get("benchmark")}}

