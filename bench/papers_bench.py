"""Papers stage throughput and peak memory, next to plain polars doing the same
parse-and-join on one machine.

    .venv/bin/python bench/papers_bench.py --papers 1000000      # generates inputs once
    .venv/bin/python bench/papers_bench.py --papers 200000 --only polars

Each side runs in its own process (so peak RSS is that side's alone) and prints one JSON
line; the script prints a table at the end. Inputs are written by `openmsd-build sample
--no-warc` under bench/data/ (not committed) and reused by later runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable


def ensure_inputs(papers: int, seed: int) -> Path:
    directory = HERE / "data" / f"sample-{papers}-{seed}"
    if not (directory / "manifest.json").exists():
        subprocess.run(
            [PYTHON, "-m", "openmsd_build.cli", "sample", "--out", str(directory), "--papers", str(papers),
             "--seed", str(seed), "--no-warc"],
            check=True,
        )
    return directory


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """User + system CPU of this process and its finished children (the papers stage's
    parsing processes), so a run on every core is not mistaken for a cheaper one."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_beam(inputs: Path, out: Path) -> dict:
    from openmsd_build.papers.command import run_papers

    manifest = json.loads((inputs / "manifest.json").read_text())["inputs"]
    started = time.perf_counter()
    counts = run_papers(str(out), {"unpaywall": [str(inputs / manifest["unpaywall"])],
                                   "crossref": [str(inputs / manifest["crossref"])]},
                        ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])
    seconds = time.perf_counter() - started
    read = sum(v for k, v in counts.items() if k.startswith("read."))
    return {"side": "beam (openmsd-build papers)", "seconds": seconds, "cpu_s": cpu_seconds(), "records": read,
            "rows": counts.get("written", 0), "peak_rss_mb": peak_rss_mb(),
            "child_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def run_polars(inputs: Path, out: Path) -> dict:
    """The simplest single-machine alternative: polars reads both sources, normalizes the
    DOI with string expressions, projects, joins and writes zstd Parquet."""
    import polars as pl

    manifest = json.loads((inputs / "manifest.json").read_text())["inputs"]
    started = time.perf_counter()
    doi = (
        pl.col("doi").str.strip_chars().str.to_lowercase()
        .str.replace(r"^(https?://(dx\.)?doi\.org/|doi:)", "")
    )
    # Explicit schemas of just the needed fields: what a careful polars user writes (schema
    # inference over the full nested records is about twice as slow and uses far more memory).
    location = pl.Struct({"url": pl.String, "url_for_pdf": pl.String, "url_for_landing_page": pl.String,
                          "license": pl.String, "host_type": pl.String, "version": pl.String, "is_best": pl.Boolean})
    unpaywall_schema = {"doi": pl.String, "title": pl.String, "year": pl.Int64, "genre": pl.String,
                        "journal_name": pl.String, "publisher": pl.String, "is_oa": pl.Boolean,
                        "oa_locations": pl.List(location)}
    unpaywall = pl.concat(
        [pl.read_ndjson(p, schema=unpaywall_schema) for p in sorted(inputs.glob(manifest["unpaywall"]))]
    ).with_columns(doi=doi)
    crossref_schema = {"items": pl.List(pl.Struct({
        "DOI": pl.String, "title": pl.List(pl.String), "abstract": pl.String, "container-title": pl.List(pl.String),
        "subject": pl.List(pl.String), "type": pl.String, "language": pl.String}))}
    crossref = pl.concat(
        [pl.read_json(p, schema=crossref_schema).explode("items").unnest("items")
         for p in sorted(inputs.glob(manifest["crossref"]))]
    ).select(
        pl.col("DOI").alias("doi"), pl.col("title").list.first().alias("cr_title"), "abstract",
        pl.col("container-title").list.first().alias("venue"), "subject", "type", "language",
    ).with_columns(doi=doi, abstract=pl.col("abstract").str.replace_all(r"<[^>]+>", ""))
    joined = unpaywall.join(crossref, on="doi", how="full", coalesce=True)
    out.mkdir(parents=True, exist_ok=True)
    joined.write_parquet(out / "papers.parquet", compression="zstd")
    seconds = time.perf_counter() - started
    return {"side": "polars (single machine)", "seconds": seconds, "cpu_s": cpu_seconds(),
            "records": unpaywall.height + crossref.height, "rows": joined.height, "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", choices=["beam", "polars"])
    args = parser.parse_args()
    inputs = ensure_inputs(args.papers, args.seed)
    if args.only:
        out = HERE / "data" / f"out-{args.only}-{args.papers}"
        result = (run_beam if args.only == "beam" else run_polars)(inputs, out)
        print(json.dumps(result))
        return
    results = []
    for side in ("polars", "beam"):
        proc = subprocess.run([PYTHON, __file__, "--papers", str(args.papers), "--seed", str(args.seed), "--only", side],
                              check=True, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"\npapers stage on {args.papers:,} generated papers ({results[1]['records']:,} source records), "
          "each side in its own process (beam: plus its parsing processes)")
    print(f"{'side':32} {'seconds':>8} {'CPU s':>7} {'records/s':>10} {'rows':>10} {'peak RSS MB':>12}")
    for r in results:
        print(f"{r['side']:32} {r['seconds']:8.1f} {r['cpu_s']:7.1f} {r['records'] / r['seconds']:10,.0f} {r['rows']:10,} "
              f"{r['peak_rss_mb']:12,.0f}")
    print(f"beam / polars time ratio: {results[1]['seconds'] / results[0]['seconds']:.1f}x")


if __name__ == "__main__":
    main()
