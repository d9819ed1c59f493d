"""Peak RSS of the split and pairs stages as the input grows, with a fixed shard size.

Why: a stage is only runnable on the full snapshot when what one worker holds depends on
the size of a shard, not on the size of the build. With the shard count proportional to
the input (`--per-shard` units per shard), a stage whose steps are all partitioned keeps a
flat peak RSS from size to size; one that funnels everything through a global step (or
through the in-process runner's in-memory shuffle buffers) grows with the input.

Inputs are synthetic and written directly with the stages' input schemas (faster than
`openmsd-build sample` at millions of papers, and the text is irrelevant to memory here):

* split, N papers: `documents/` (doi, title, abstract, language, relations) with ~1% exact
  title+abstract duplicates (pairs and triples), ~2% relation links (half to DOIs outside
  the build), a Zipf-like language mix with `und` and nulls, 10% of papers without any
  link; `citations/` with 2N random edges (Pareto in-degree);
* pairs, N edges: `bench/pairs_bench.generate` (N edges over N/5 papers, power-law
  in-degree, 98/1/1 train/idt/odt) as `citations/` + `splits/`.

Each stage runs in its own subprocess on the in-process FnApiRunner (one worker, as a
local build does) and reports its own peak RSS: `VmHWM` from `/proc/self/status` (and the
max RSS of any process it started). Not `getrusage(RUSAGE_SELF).ru_maxrss`: Linux carries
the exec'ing process's old high-water mark into `ru_maxrss`, so a child forked from this
launcher reported the launcher's peak when that was higher — generating the 5M split
inputs (~4.5 GB) made both 5M stages read 4,478 MB while their own peak was ~0.85 GB.
Inputs are generated in a subprocess of their own too, so the launcher stays small.

Usage:
    .venv/bin/python bench/scale_memory.py [--sizes 1000000,2000000,5000000] [--stages split,pairs]
        [--per-shard 100000] [--src DIR] [--label after] [--json bench/results_scale.json]

`--src DIR` puts DIR first on the child's PYTHONPATH (a copy of `openmsd_build/` etc. from
before a change) to measure the old code on the same inputs; results are merged into the
JSON under `--label`.
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

import numpy as np
import polars as pl
import pyarrow as pa

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "scale"
RUNNER = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]


def write_parts(frame: pl.DataFrame, directory: Path, rows_per_part: int = 250_000) -> None:
    """`frame` as part files of at most `rows_per_part` rows (as an upstream stage writes)."""
    from openmsd_build.core import parquet_io

    directory.mkdir(parents=True, exist_ok=True)
    parts = max(1, -(-frame.height // rows_per_part))
    for i in range(parts):
        chunk = frame.slice(i * rows_per_part, rows_per_part)
        parquet_io.write_table(chunk.to_arrow(), parquet_io.part_path(str(directory), i, parts))


def split_inputs(n: int, root: Path, seed: int = 11) -> None:
    """documents/ + citations/ for the split stage (see the module docstring)."""
    from openmsd_build.schemas import RELATION_STRUCT

    rng = np.random.default_rng(seed)
    i = np.arange(n)
    doi = pl.Series("doi", [f"10.{1000 + k % 97}/s{k:09d}" for k in i.tolist()])
    codes = np.array(["en", "de", "fr", "es", "ja", "zh", "pt", "ru", "it", "ko", "nl", "pl", "tr", "sv", "fi",
                      "cs", "uk", "ar", "fa", "id", "und"])
    weights = 1.0 / np.arange(1, len(codes) + 1) ** 1.3
    weights[0] *= 6
    lang = codes[rng.choice(len(codes), n, p=weights / weights.sum())].astype(object)
    lang[rng.random(n) < 0.01] = None
    title = np.array([f"title {k}" for k in i.tolist()], dtype=object)
    abstract = np.array([f"abstract of paper {k} " for k in i.tolist()], dtype=object)
    dup = np.flatnonzero(rng.random(n) < 0.01)
    dup = dup[dup > 0]
    title[dup], abstract[dup] = title[dup - 1], abstract[dup - 1]
    rel_rows: list[list[dict] | None] = [None] * n
    for k in np.flatnonzero(rng.random(n) < 0.02).tolist():
        target = f"10.{1000 + (k + 1) % 97}/s{(k + 1) % n:09d}" if k % 2 else f"10.9999/ext{k // 4}"
        rel_rows[k] = [{"type": "is-preprint-of", "doi": target}]
    docs = pl.from_arrow(pa.table({
        "doi": doi.to_arrow(), "title": pa.array(title, pa.string()), "abstract": pa.array(abstract, pa.string()),
        "language": pa.array(lang, pa.string()), "relations": pa.array(rel_rows, pa.list_(RELATION_STRUCT)),
    }))
    write_parts(docs, root / "documents")
    linked = np.flatnonzero(rng.random(n) >= 0.10)
    m = int(2.1 * n)
    pw = rng.pareto(2.0, len(linked)) + 1.0
    citing = linked[rng.integers(0, len(linked), m)]
    cited = linked[rng.choice(len(linked), m, p=pw / pw.sum())]
    e = pl.DataFrame({"a": citing, "b": cited}).filter(pl.col("a") != pl.col("b")).unique().head(2 * n)
    e = e.sort("a", "b")
    cit = pl.DataFrame({"citing_doi": doi.gather(e["a"]), "cited_doi": doi.gather(e["b"])})
    write_parts(cit, root / "citations")


def pairs_inputs(n: int, root: Path) -> None:
    """citations/ + splits/ for the pairs stage (bench/pairs_bench.generate)."""
    sys.path.insert(0, str(HERE))
    from pairs_bench import generate

    cit, splits = generate(n, max(10, n // 5))
    write_parts(cit, root / "citations")
    write_parts(splits, root / "splits")


def ensure_inputs(stage: str, n: int) -> Path:
    """The cached inputs of `stage` at size `n`, generated in a child process when missing
    (generation peaks at ~0.9 GB per million papers; in a child it leaves this launcher,
    and so the next measurement's machine, as small as before)."""
    root = DATA / f"{stage}-{n}"
    done = root / ".inputs-done"
    if not done.exists():
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--generate", stage, "--root", str(root), "--size", str(n)],
                       check=True)
        print(f"inputs {stage} {n:,}: {time.perf_counter() - t0:.1f}s", flush=True)
    return root


def generate(stage: str, root: Path, n: int) -> None:
    """Write the inputs (in the `--generate` child), then mark them done."""
    (split_inputs if stage == "split" else pairs_inputs)(n, root)
    (root / ".inputs-done").write_text("ok")


def peak_rss_mb() -> int:
    """This process's peak RSS in MB (and its children's, if it started any).

    `VmHWM` is the high-water mark of this process's own address space, which exec starts
    afresh; `ru_maxrss` (RUSAGE_SELF) is not: Linux folds the pre-exec image's high-water
    mark into it, i.e. the launcher's peak at fork time. RUSAGE_CHILDREN is kept for a
    runner that starts worker processes (their inherited value is at most this process's).
    """
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        with open("/proc/self/status") as f:
            own = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):  # not Linux: ru_maxrss is the best there is
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(max(own, kids) / 1024)


def phase(stage: str, root: Path, shards: int) -> dict:
    """Run one stage in this (child) process; its peak RSS is this process's."""
    t0 = time.perf_counter()
    if stage == "split":
        from openmsd_build.split.assign import SplitConfig
        from openmsd_build.split.command import run_split

        counts = run_split(str(root), RUNNER, shards=shards, config=SplitConfig(top_k=10))
        summary = {k: counts.get(k, 0) for k in ("papers_linked", "train", "idt", "odt", "groups_multi")}
    else:
        from openmsd_build.pairs.command import run_pairs

        counts = run_pairs(str(root), RUNNER, shards=shards)
        summary = {k: counts.get(k, 0) for k in ("edges_read", "cc_instances", "bc_instances")}
    import openmsd_build

    return {"seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": peak_rss_mb(),
            "counts": summary, "code": str(Path(openmsd_build.__file__).parent)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,2000000,5000000")
    ap.add_argument("--stages", default="split,pairs")
    ap.add_argument("--per-shard", type=int, default=100_000, help="papers (split) or edges (pairs) per shard")
    ap.add_argument("--src", help="directory put first on the children's PYTHONPATH (old code)")
    ap.add_argument("--label", default="after")
    ap.add_argument("--json", default=str(HERE / "results_scale.json"))
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--shards", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--generate", help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.generate:
        generate(args.generate, Path(args.root), args.size)
        return
    if args.phase:
        print(json.dumps(phase(args.phase, Path(args.root), args.shards)))
        return
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = args.src + os.pathsep + env.get("PYTHONPATH", "")
    path = Path(args.json)
    results = json.loads(path.read_text()) if path.exists() else {}
    for stage in args.stages.split(","):
        for n in [int(s) for s in args.sizes.split(",")]:
            root = ensure_inputs(stage, n)
            shards = max(1, n // args.per_shard)
            cmd = [sys.executable, __file__, "--phase", stage, "--root", str(root), "--shards", str(shards)]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode:
                print(proc.stderr[-3000:], file=sys.stderr)
                r = {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
            else:
                r = json.loads(proc.stdout.strip().splitlines()[-1])
            r["shards"] = shards
            results.setdefault(args.label, {}).setdefault(stage, {})[str(n)] = r
            print(f"{args.label:6s} {stage:6s} {n:>9,} shards {shards:3d}  "
                  + (f"{r['seconds']:7.1f}s  peak RSS {r['peak_rss_mb']:6,} MB  {r['counts']}" if "error" not in r
                     else r["error"]), flush=True)
            path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
