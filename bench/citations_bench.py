"""Citations stage time and peak memory, next to plain polars doing the same job.

    .venv/bin/python bench/citations_bench.py --edges 2000000
    .venv/bin/python bench/citations_bench.py --edges 2000000 --only polars   # one side, JSON line

The job (both sides): read a COCI CSV (`oci,citing,cited,creation,timespan,journal_sc,
author_sc`), normalize both DOIs, drop rows whose DOI is not a DOI, self-citations and
duplicate edges, keep edges whose two ends are in `documents/` with a non-empty abstract,
attach each end's `paper_id` (`hashing.paper_id`, the split stage's key) and write zstd
Parquet. Our side is `openmsd-build citations` on the in-process FnApiRunner (which also
writes rejects and reconciled counts); the polars side is what a careful polars user writes
on one machine, normalizing DOIs with string expressions as `papers_bench.py` does. On the
generated data both definitions agree, and the script checks that both keep the same number
of edges.

Inputs are generated once under bench/data/citations-<edges>/ (documents/ Parquet and a
COCI CSV with upper-case and `doi:` / `https://doi.org/` spellings, self-citations,
duplicates, rows whose ends are not documents or have no abstract, a few malformed rows) and
reused. Each side runs in its own process so its peak RSS is its own; each reports wall
seconds and `cpu_seconds` (user + system of its process: the machine may be shared). `--parse-only` also
times the CSV parser alone, columnar path against the row parser (µs per row).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable


def ensure_inputs(edges: int, seed: int = 7) -> Path:
    """bench/data/citations-<edges>/: documents/ (one part) and coci/coci.csv."""
    import numpy as np
    import polars as pl

    from openmsd_build.core import layout, parquet_io

    root = HERE / "data" / f"citations-{edges}-{seed}"
    if (root / "done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(seed)
    papers = max(1000, edges // 10)
    pool = int(papers * 1.1)  # ~10% of cited/citing DOIs are not documents
    dois = pl.Series("doi", [f"10.{1000 + i % 9000}/j.x{i:07d}" for i in range(pool)])
    has = rng.random(papers) < 0.9
    docs = pl.DataFrame({"doi": dois[:papers], "abstract": np.where(has, "An abstract.", "")})
    directory = layout.documents_dir(str(root))
    Path(directory).mkdir(parents=True)
    parquet_io.write_table(docs.to_arrow(), parquet_io.part_path(directory, 0, 1))
    citing = rng.integers(0, pool, edges)
    cited = np.where(rng.random(edges) < 0.02, citing, rng.integers(0, pool, edges))  # 2% self-citations
    dup = rng.random(edges) < 0.03
    cited[dup] = np.roll(cited, 1)[dup]
    citing[dup] = np.roll(citing, 1)[dup]  # 3% repeats of the previous row
    frame = pl.DataFrame({"a": dois.gather(citing), "b": dois.gather(cited)})
    style = rng.random(edges)
    spelled = (pl.when(pl.lit(style) < 0.01).then(pl.col("a").str.to_uppercase())
               .when(pl.lit(style) < 0.02).then("https://doi.org/" + pl.col("a")).otherwise(pl.col("a")))
    frame = frame.with_columns(spelled.alias("a")).with_row_index("i").select(
        pl.format("0200{}-0300{}", "i", "i").alias("oci"), pl.col("a").alias("citing"), pl.col("b").alias("cited"),
        pl.lit("2019-03-01").alias("creation"), pl.lit("P1Y2M").alias("timespan"), pl.lit("no").alias("journal_sc"),
        pl.lit("no").alias("author_sc"),
    )
    (root / "coci").mkdir()
    frame.write_csv(root / "coci" / "coci.csv")
    with open(root / "coci" / "coci.csv", "a") as f:
        f.write("0,10.1000/only-two-fields\n1,not-a-doi,10.1000/x,,,,\n")  # one malformed row, one bad DOI
    (root / "done").write_text("")
    return root


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """User + system CPU of this process so far (the machine is shared: wall time alone
    says little when other work competes for the cores)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_ours(root: Path, out: Path) -> dict:
    from openmsd_build.citations.command import run_citations

    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(root / "documents", out / "documents")
    started, cpu = time.perf_counter(), cpu_seconds()
    counts = run_citations(str(out), [str(root / "coci" / "*.csv")], None,
                           ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])
    return {"side": "openmsd-build citations (FnApiRunner)", "seconds": time.perf_counter() - started,
            "cpu_seconds": cpu_seconds() - cpu, "rows": counts["rows_read"], "kept": counts["edges_kept"], "peak_rss_mb": peak_rss_mb()}


def run_polars(root: Path, out: Path) -> dict:
    """The same job in polars on one machine (DOIs normalized as papers_bench does)."""
    import polars as pl

    from openmsd_build.core.hashing import paper_id

    started, cpu = time.perf_counter(), cpu_seconds()
    doi = r"^10\.[0-9]{4,9}(\.[0-9]+)*/\S+$"

    def norm(c: str) -> pl.Expr:
        return (pl.col(c).str.strip_chars().str.to_lowercase()
                .str.replace(r"^(https?://(dx\.)?doi\.org/|doi:)", "").alias(c))

    edges = pl.read_csv(root / "coci" / "coci.csv", columns=["citing", "cited"], schema_overrides={
        "citing": pl.String, "cited": pl.String}, truncate_ragged_lines=True)
    rows = edges.height
    edges = edges.select(norm("citing"), norm("cited")).filter(
        pl.col("citing").str.contains(doi) & pl.col("cited").str.contains(doi) & (pl.col("citing") != pl.col("cited"))
    ).unique()
    docs = pl.read_parquet(root / "documents", columns=["doi", "abstract"]).filter(
        pl.col("abstract").str.strip_chars().str.len_chars() > 0).select("doi").unique()
    docs = docs.with_columns(pl.col("doi").map_elements(paper_id, return_dtype=pl.Int64).alias("id"))
    kept = (edges.join(docs.rename({"doi": "citing", "id": "citing_id"}), on="citing")
            .join(docs.rename({"doi": "cited", "id": "cited_id"}), on="cited")
            .sort("citing", "cited"))
    out.mkdir(parents=True, exist_ok=True)
    kept.rename({"citing": "citing_doi", "cited": "cited_doi"}).write_parquet(out / "citations.parquet",
                                                                             compression="zstd")
    return {"side": "polars (single machine)", "seconds": time.perf_counter() - started,
            "cpu_seconds": cpu_seconds() - cpu, "rows": rows,
            "kept": kept.height, "peak_rss_mb": peak_rss_mb()}


def run_parse(root: Path, columnar: bool) -> dict:
    """The CSV parser alone (no Beam pipeline): µs per row of the columnar path or the row
    parser. Beam's file layer is imported before the clock starts: files are opened through
    it, and in the stage it is loaded already."""
    import apache_beam.io.filesystems  # noqa: F401

    from openmsd_build.citations.opencitations import parse_citation_file

    path = str(root / "coci" / "coci.csv")
    started, cpu = time.perf_counter(), cpu_seconds()
    rows = 0
    for _table, _rejects, counts in parse_citation_file(path, columnar=columnar):
        rows += counts.get("rows_read", 0)
    seconds = time.perf_counter() - started
    return {"side": "columnar" if columnar else "row parser", "seconds": seconds,
            "cpu_seconds": cpu_seconds() - cpu, "rows": rows,
            "us_per_row": seconds / rows * 1e6, "peak_rss_mb": peak_rss_mb()}


def side(name: str, edges: int) -> dict:
    """Run one side in a fresh process; its last stdout line is its JSON result."""
    proc = subprocess.run([PYTHON, __file__, "--edges", str(edges), "--only", name], check=True,
                          capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edges", type=int, default=2_000_000)
    parser.add_argument("--only", choices=["ours", "polars", "parse-columnar", "parse-rows"])
    parser.add_argument("--parse-only", action="store_true", help="time the CSV parser alone, both paths")
    args = parser.parse_args()
    root = ensure_inputs(args.edges)
    if args.only:
        out = HERE / "data" / f"out-citations-{args.only}-{args.edges}"
        if args.only == "ours":
            result = run_ours(root, out)
        elif args.only == "polars":
            result = run_polars(root, out)
        else:
            result = run_parse(root, args.only == "parse-columnar")
        print(json.dumps(result))
        return
    if args.parse_only:
        results = [side("parse-rows", args.edges), side("parse-columnar", args.edges)]
        for r in results:
            print(f"{r['side']:12} {r['seconds']:7.1f}s  {r['us_per_row']:6.2f} µs/row  peak {r['peak_rss_mb']:,.0f} MB")
        print(f"row parser / columnar: {results[0]['seconds'] / results[1]['seconds']:.1f}x")
        return
    results = [side("polars", args.edges), side("ours", args.edges)]
    print(f"\ncitations stage on {args.edges:,} generated COCI rows")
    print(f"{'side':40} {'seconds':>8} {'cpu s':>8} {'kept':>10} {'peak RSS MB':>12}")
    for r in results:
        print(f"{r['side']:40} {r['seconds']:8.1f} {r['cpu_seconds']:8.1f} {r['kept']:10,} {r['peak_rss_mb']:12,.0f}")
    if results[0]["kept"] != results[1]["kept"]:
        print(f"WARNING: the sides kept different edge counts ({results[0]['kept']} vs {results[1]['kept']})")
    print(f"ours / polars time ratio: {results[1]['seconds'] / results[0]['seconds']:.2f}x")


if __name__ == "__main__":
    main()
