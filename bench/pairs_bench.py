"""Benchmark of the pairs stage on a skewed citation graph, next to plain polars.

Why: the project asks each heavy stage to stay within ~3x of
plain polars doing the same work on one machine. This script generates a graph whose
in-degree is power-law (Pareto weights on the cited side, as in real citation data),
writes it as a `citations/` + `splits/` build, and times, each in its own process so that
the peak RSS (`resource.getrusage`) belongs to that phase alone:

* `reference` — plain polars CC and BC counts on int ids (self-join per C + group_by),
  no splits, the same cap, nothing written: the yardstick of the first version;
* `full` — plain polars doing the stage's whole work the obvious way (annotate by id, DC,
  same-split CC/BC with the ODT rule, DOIs and languages by joins, DOI order, zstd Parquet
  per relation and split): the "same work" yardstick;
* `pure` — `pairing.compute_pairs` (the stage's functions without Beam, with DOIs, splits,
  languages, the cap and the DOI mapping);
* `beam` — `pipelines.pairs.run_pairs` on the FnApiRunner.

Usage: `python bench/pairs_bench.py --edges 1000000 [--papers N] [--shards 16] [--phases reference,full,pure,beam]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl


def generate(edges: int, papers: int, alpha: float = 2.0, seed: int = 7) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(citations with DOIs, splits) of a random graph with power-law in-degree."""
    rng = np.random.default_rng(seed)
    weights = rng.pareto(alpha, papers) + 1.0
    weights /= weights.sum()
    n = int(edges * 1.08)  # extra for duplicates and self-loops removed below
    citing = rng.integers(0, papers, n)
    cited = rng.choice(papers, n, p=weights)
    ids = pl.DataFrame({"a": citing, "b": cited}).filter(pl.col("a") != pl.col("b")).unique(maintain_order=True).head(edges)
    doi = pl.format("10.5555/b{}", pl.col("i"))
    langs = np.array(["en"] * 8 + ["de", "fr"])[rng.integers(0, 10, papers)]
    split = np.array(["train"] * 98 + ["idt", "odt"])[rng.integers(0, 100, papers)]
    from openmsd_build.core.hashing import hash64

    nodes = pl.DataFrame({"i": np.arange(papers)}).with_columns(doi.alias("doi"))
    nodes = nodes.with_columns(
        pl.Series("paper_id", [hash64(d) for d in nodes["doi"].to_list()], dtype=pl.Int64),
        pl.Series("split", split),
        pl.Series("language", langs),
        pl.col("doi").alias("group"),
    )
    linked = pl.concat([ids["a"], ids["b"]]).unique()
    splits = nodes.filter(pl.col("i").is_in(linked.implode())).select("doi", "paper_id", "split", "language", "group")
    pid = nodes.select("i", "paper_id")
    cit = ids.join(pid.rename({"i": "a", "paper_id": "citing_id"}), on="a").join(
        pid.rename({"i": "b", "paper_id": "cited_id"}), on="b"
    )
    cit = cit.select(
        pl.format("10.5555/b{}", pl.col("a")).alias("citing_doi"), pl.format("10.5555/b{}", pl.col("b")).alias("cited_doi"),
        "citing_id", "cited_id",
    )  # as the citations stage writes them: ids are hash64(doi), the split stage's paper_id
    return cit, splits


def reference(cit: pl.DataFrame, max_degree: int) -> dict:
    """Plain polars CC and BC on int ids: what the stage must stay within ~3x of. The same
    degree cap is applied (Cs over it dropped) so both sides enumerate the same pairs."""
    e = cit.select(
        pl.col("citing_doi").str.slice(9).cast(pl.Int64).alias("a"), pl.col("cited_doi").str.slice(9).cast(pl.Int64).alias("b")
    )
    t0 = time.perf_counter()
    cc_e = e.filter(pl.len().over("a") <= max_degree)
    bc_e = e.filter(pl.len().over("b") <= max_degree)
    cc = cc_e.join(cc_e, on="a", suffix="_2").filter(pl.col("b") < pl.col("b_2")).group_by("b", "b_2").len()
    bc = bc_e.join(bc_e, on="b", suffix="_2").filter(pl.col("a") < pl.col("a_2")).group_by("a", "a_2").len()
    return {"seconds": time.perf_counter() - t0, "cc_pairs": cc.height, "bc_pairs": bc.height,
            "cc_instances": int(cc["len"].sum()), "bc_instances": int(bc["len"].sum())}


def reference_full(cit: pl.DataFrame, splits: pl.DataFrame, max_degree: int, out: Path) -> dict:
    """Plain polars doing the stage's whole work on one machine, written the obvious way:
    annotate both ends by id, DC, CC/BC by a self-join on (C, split) with the cap and the
    ODT En-En rule, counts, DOIs and languages by joins, DOI order, zstd Parquet per
    relation and split. No Beam, no sharding, no counters."""
    t0 = time.perf_counter()
    look = splits.select(pl.col("paper_id").alias("id"), "doi", pl.col("language").alias("lang"), "split",
                         (pl.col("language") == "en").alias("en"))
    attrs = look.select("id", "split", "en")
    e = cit.select("citing_id", "cited_id")
    e = e.join(attrs.rename({"id": "citing_id", "split": "s1", "en": "e1"}), on="citing_id")
    e = e.join(attrs.rename({"id": "cited_id", "split": "s2", "en": "e2"}), on="cited_id")
    names = look.select("id", "doi", "lang")
    frames = {"dc": e.filter((pl.col("s1") == pl.col("s2")) & ~((pl.col("s1") == "odt") & pl.col("e1") & pl.col("e2")))
              .select(pl.col("citing_id").alias("x"), pl.col("cited_id").alias("y"), pl.col("s1").alias("s"),
                      pl.lit(1).alias("support"))}
    for rel, c, x, s, en in (("cc", "citing_id", "cited_id", "s2", "e2"), ("bc", "cited_id", "citing_id", "s1", "e1")):
        m = e.select(pl.col(c).alias("c"), pl.col(x).alias("x"), pl.col(s).alias("s"), pl.col(en).alias("en"))
        m = m.filter(pl.len().over("c") <= max_degree)
        p = m.join(m, on=["c", "s"], suffix="_2").filter(pl.col("x") < pl.col("x_2"))
        p = p.filter(~((pl.col("s") == "odt") & pl.col("en") & pl.col("en_2")))
        frames[rel] = p.group_by("x", "x_2", "s").len("support").rename({"x_2": "y"})
    rows = {}
    for rel, f in frames.items():
        f = f.join(names.rename({"id": "x", "doi": "doi_a", "lang": "lang_a"}), on="x")
        f = f.join(names.rename({"id": "y", "doi": "doi_b", "lang": "lang_b"}), on="y")
        if rel != "dc":
            sw = pl.col("doi_a") > pl.col("doi_b")
            f = f.with_columns(pl.when(sw).then(pl.col(b)).otherwise(pl.col(a)).alias(a)
                               for a, b in (("doi_a", "doi_b"), ("doi_b", "doi_a"), ("lang_a", "lang_b"),
                                            ("lang_b", "lang_a")))
        f = f.with_columns((pl.when(pl.col("lang_a") == "en").then(pl.lit("en")).otherwise(pl.lit("xx")) + "-"
                            + pl.when(pl.col("lang_b") == "en").then(pl.lit("en")).otherwise(pl.lit("xx")))
                           .alias("lang_class")).sort("x", "y")
        for split in ("train", "idt", "odt"):
            part = f.filter(pl.col("s") == split).select("doi_a", "doi_b", "lang_a", "lang_b", "lang_class", "support")
            part.write_parquet(out / f"{rel}-{split}.parquet", compression="zstd")
            rows[f"{rel}/{split}"] = part.height
    return {"seconds": time.perf_counter() - t0, "rows": rows, "cc_instances": int(frames["cc"]["support"].sum()),
            "bc_instances": int(frames["bc"]["support"].sum())}


def phase(name: str, root: Path, shards: int, max_degree: int) -> dict:
    from openmsd_build.core import layout, parquet_io

    cit = pl.from_arrow(parquet_io.read_table(layout.citations_dir(str(root))))
    t0 = time.perf_counter()
    if name == "reference":
        result = reference(cit, max_degree)
    elif name == "full":
        splits = pl.from_arrow(parquet_io.read_table(layout.splits_dir(str(root))))
        (root / "full").mkdir(exist_ok=True)
        result = reference_full(cit, splits, max_degree, root / "full")
    elif name == "pure":
        from openmsd_build.pairs.relations import compute_pairs

        splits = pl.from_arrow(parquet_io.read_table(layout.splits_dir(str(root))))
        t0 = time.perf_counter()
        frames, counts = compute_pairs(cit, splits, max_degree)
        result = {"seconds": time.perf_counter() - t0, "rows": {f"{r}/{s}": f.height for (r, s), f in frames.items()},
                  "cc_instances": counts["cc_instances"], "bc_instances": counts["bc_instances"]}
    else:
        from openmsd_build.pairs.command import run_pairs

        counts = run_pairs(str(root), ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"],
                           shards=shards, max_degree=max_degree)
        result = {"seconds": time.perf_counter() - t0, "cc_instances": counts["cc_instances"],
                  "bc_instances": counts["bc_instances"],
                  "pairs": {k: v for k, v in counts.items() if "_pairs." in k or k.startswith("dc_kept")}}
    result["edges"] = cit.height
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", type=int, default=200_000)
    ap.add_argument("--papers", type=int, default=0, help="default edges // 5")
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--max-degree", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=2.0, help="Pareto shape of the cited-side weights (smaller = more skew)")
    ap.add_argument("--phase", choices=["reference", "full", "pure", "beam"], help=argparse.SUPPRESS)
    ap.add_argument("--phases", default="reference,full,pure,beam", help="comma-separated phases to run")
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--data", help="keep the generated graph in this folder and reuse it (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="end with one JSON line of every phase's result")
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, Path(args.root), args.shards, args.max_degree)))
        return
    from openmsd_build.core import layout, parquet_io

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.data) if args.data else Path(tmp)
        tmp = str(root)
        t0 = time.perf_counter()
        if not (root / "generated").exists():
            cit, splits = generate(args.edges, args.papers or max(10, args.edges // 5), args.alpha)
            for directory, frame in ((layout.citations_dir(tmp), cit), (layout.splits_dir(tmp), splits)):
                Path(directory).mkdir(parents=True, exist_ok=True)
                parquet_io.write_table(frame.to_arrow(), parquet_io.part_path(directory, 0, 1))
            (root / "generated").write_text("")
        else:
            cit = pl.from_arrow(parquet_io.read_table(layout.citations_dir(tmp)))
            splits = pl.from_arrow(parquet_io.read_table(layout.splits_dir(tmp)))
        indeg = cit.group_by("cited_doi").len()["len"]
        print(f"graph: {cit.height:,} edges, {splits.height:,} papers, max in-degree {indeg.max():,}, "
              f"ready in {time.perf_counter() - t0:.1f}s", flush=True)
        results = {}
        for name in args.phases.split(","):
            cmd = [sys.executable, __file__, "--phase", name, "--root", str(root), "--shards", str(args.shards),
                   "--max-degree", str(args.max_degree)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
            r = results[name]
            print(f"{name:9s} {r['seconds']:7.2f}s  {r['edges'] / r['seconds']:12,.0f} edges/s  "
                  f"cc_instances {r['cc_instances']:,}  bc_instances {r['bc_instances']:,}  "
                  f"peak RSS {r['peak_rss_mb']:,.0f} MB", flush=True)
        if "reference" in results:
            print("reference distinct pairs: cc", f"{results['reference']['cc_pairs']:,}", "bc",
                  f"{results['reference']['bc_pairs']:,}")
        if "beam" in results:
            print("beam pairs written:", json.dumps(results["beam"]["pairs"]))
        if args.json:
            print(json.dumps(results))
        for base in ("reference", "full"):
            for other in ("pure", "beam"):
                if base in results and other in results:
                    print(f"ratio {other}/{base} {results[other]['seconds'] / results[base]['seconds']:.2f}x")


if __name__ == "__main__":
    main()
