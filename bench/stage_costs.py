"""Per-record CPU seconds and bytes of every stage, measured through our own pipelines.

    .venv/bin/python bench/stage_costs.py [--papers 1000,6000] [--seed 7] [--work DIR] [--json PATH]

For each sample size it generates the embedded sample (`openmsd-build sample`), then runs
the stages one after another in this process on the in-process FnApiRunner (one worker,
as a local build does), and records per stage:

- CPU seconds: `getrusage` of this process plus its children (the text stage's isolated
  extractor runs in child processes), user + system, before and after the stage;
- wall seconds;
- records in / out, counted from the stage's own `_stats/<stage>.json` and its Parquet;
- bytes out: Parquet bytes on disk (zstd) and the uncompressed Arrow size of the rows.

A fixed cost per pipeline (Beam start-up, pickling the graph, runner threads) does not grow
with the data, so after a discarded warm-up build (imports, first-use caches) the
per-record cost is the *marginal* one between the two sample sizes:
(cpu_large - cpu_small) / (records_large - records_small). Both sizes are printed, and a
table plus a JSON file (default `bench/stage_costs.json`) hold the results; the full-build
estimate in `deploy/ESTIMATE.md` is computed from that JSON.

What this does not measure: network time of live fetching (the sample is replayed from a
WARC), real-world page and PDF sizes (generated pages are small; see deploy/ESTIMATE.md for measured
extraction speeds on real documents), and the cost of a distributed shuffle (approximated by
the Arrow bytes a stage moves through its GroupByKey, see `shuffle_bytes`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from openmsd_build.cli import main as cli_main

RUNNER = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]
from openmsd_build.core.stages import STAGE_NAMES  # noqa: E402

# Output folders of each stage (relative to OUT) and the folders its GroupByKey moves: the
# shuffle is estimated as the Arrow size of those rows (a batch is pickled Arrow / row dicts).
OUTPUTS = {
    "papers": ["papers"],
    "text": ["documents", "fetch"],
    "citations": ["citations"],
    "split": ["splits"],
    "pairs": ["pairs"],
}
STAGES = [stage for stage in STAGE_NAMES if stage in OUTPUTS]
"""The stages of the full-build estimate, in build order; `contexts` (after `pairs`, which
does not read it) is measured by `contexts_bench.py` instead (deploy/ESTIMATE.md)."""


def cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def folder_bytes(root: Path, names: list[str]) -> tuple[int, int, int]:
    """(rows, parquet bytes, arrow bytes) of every Parquet file under the named folders."""
    rows = disk = arrow = 0
    for name in names:
        for path in (root / name).rglob("*.parquet"):
            disk += path.stat().st_size
            table = pq.read_table(path)
            rows += table.num_rows
            arrow += table.nbytes
    return rows, disk, arrow


def stage_inputs(stage: str, out: Path, sample: Path) -> dict[str, int]:
    """The natural input units of a stage, from its counts and its inputs."""
    stats = json.loads((out / "_stats" / f"{stage}.json").read_text()).get("counts", {})
    if stage == "papers":
        records = sum(v for k, v in stats.items() if k.startswith("read."))
        in_bytes = sum(p.stat().st_size for d in ("unpaywall", "crossref") for p in (sample / d).glob("*"))
        return {"records": records, "input_bytes": in_bytes}
    if stage == "text":
        urls = sum(v for k, v in stats.items() if k == "fetch.ok" or k.startswith("fetch.error."))
        warc = sum(p.stat().st_size for p in (sample / "warc").glob("*"))
        return {"records": stats.get("papers", 0), "urls": urls, "input_bytes": warc}
    if stage == "citations":
        return {"records": stats.get("rows_read", 0),
                "input_bytes": sum(p.stat().st_size for p in (sample / "opencitations").glob("*"))}
    if stage == "split":
        return {"records": stats.get("documents_read", 0), "edges": stats.get("citations_read", 0)}
    if stage == "pairs":
        pairs = sum(v for k, v in stats.items() if k.startswith(("cc_pairs.", "bc_pairs.", "dc_kept.")))
        return {"records": stats.get("edges_read", 0), "pairs": pairs}
    return {}


def measure(papers: int, seed: int, work: Path) -> dict:
    sample, out = work / f"sample-{papers}", work / f"build-{papers}"
    for d in (sample, out):
        shutil.rmtree(d, ignore_errors=True)
    assert cli_main(["sample", "--out", str(sample), "--papers", str(papers), "--seed", str(seed)]) == 0
    result = {}
    for stage in STAGES:
        cpu0, wall0 = cpu_seconds(), time.time()
        argv = ["run", "--inputs", str(sample), "--out", str(out), "--from-stage", stage, "--to-stage", stage,
                "--no-report", "--seed", str(seed), *RUNNER]
        assert cli_main(argv) == 0, stage
        cpu, wall = cpu_seconds() - cpu0, time.time() - wall0
        rows, disk, arrow = folder_bytes(out, OUTPUTS[stage])
        result[stage] = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "rows_out": rows,
                         "parquet_bytes_out": disk, "arrow_bytes_out": arrow, **stage_inputs(stage, out, sample)}
    return result


def marginal(small: dict, large: dict) -> dict:
    out = {}
    for stage in STAGES:
        s, g = small[stage], large[stage]
        d_rec = max(1, g["records"] - s["records"])
        entry = {
            "unit": {"papers": "input record", "text": "paper", "citations": "citation row",
                     "split": "document", "pairs": "citation edge"}[stage],
            "cpu_s_per_record": (g["cpu_s"] - s["cpu_s"]) / d_rec,
            "fixed_cpu_s": max(0.0, s["cpu_s"] - s["records"] * (g["cpu_s"] - s["cpu_s"]) / d_rec),
            "parquet_bytes_out_per_record": (g["parquet_bytes_out"] - s["parquet_bytes_out"]) / d_rec,
            "shuffle_bytes_per_record": (g["arrow_bytes_out"] - s["arrow_bytes_out"]) / d_rec,
            "rows_out_per_record": (g["rows_out"] - s["rows_out"]) / d_rec,
        }
        if "input_bytes" in g:
            entry["input_bytes_per_record"] = (g["input_bytes"] - s["input_bytes"]) / d_rec
        if stage == "text":
            d_urls = max(1, g["urls"] - s["urls"])
            entry["cpu_s_per_url"] = (g["cpu_s"] - s["cpu_s"]) / d_urls
            entry["urls_per_paper"] = d_urls / d_rec
        if stage == "pairs":
            d_pairs = max(1, g["pairs"] - s["pairs"])
            entry["cpu_s_per_pair"] = (g["cpu_s"] - s["cpu_s"]) / d_pairs
            entry["shuffle_bytes_per_pair"] = (g["arrow_bytes_out"] - s["arrow_bytes_out"]) / d_pairs
            entry["parquet_bytes_per_pair"] = (g["parquet_bytes_out"] - s["parquet_bytes_out"]) / d_pairs
        out[stage] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", default="1000,6000", help="two sample sizes, small,large")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one, removed)")
    parser.add_argument("--json", default=str(Path(__file__).with_name("stage_costs.json")))
    args = parser.parse_args(argv)
    small_n, large_n = (int(x) for x in args.papers.split(","))
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="stage-costs-"))
    try:
        measure(100, args.seed, work)  # warm-up: imports and first-use caches are not per-record costs
        small = measure(small_n, args.seed, work)
        large = measure(large_n, args.seed, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    per_record = marginal(small, large)
    report = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "runner": "FnApiRunner (1 worker)"},
        "samples": {str(small_n): small, str(large_n): large},
        "per_record": per_record,
    }
    Path(args.json).write_text(json.dumps(report, indent=2, sort_keys=True))
    print(f"{'stage':<10} {'unit':<13} {'CPU µs/rec':>11} {'fixed CPU s':>11} {'out B/rec':>10} "
          f"{'shuffle B/rec':>13}   notes")
    for stage, e in per_record.items():
        notes = ""
        if stage == "text":
            notes = f"{e['cpu_s_per_url'] * 1e3:.2f} ms/URL, {e['urls_per_paper']:.2f} URLs/paper"
        if stage == "pairs":
            notes = f"{e['cpu_s_per_pair'] * 1e6:.2f} µs/pair, {e['shuffle_bytes_per_pair']:.1f} shuffle B/pair"
        print(f"{stage:<10} {e['unit']:<13} {e['cpu_s_per_record'] * 1e6:>11.1f} {e['fixed_cpu_s']:>11.2f} "
              f"{e['parquet_bytes_out_per_record']:>10.1f} {e['shuffle_bytes_per_record']:>13.1f}   {notes}")
    for n, res in report["samples"].items():
        print(f"  sample {n}: " + ", ".join(f"{s} {r['cpu_s']:.1f} s CPU / {r['wall_s']:.1f} s wall"
                                           for s, r in res.items()))
    print(f"written {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
