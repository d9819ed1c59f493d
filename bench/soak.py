"""Longer soak of the reliability harness (tests/reliability): many seeds, bigger builds.

    .venv/bin/python bench/soak.py --minutes 30 --papers 2000 --work /tmp/soak

Loops until the time is up:
1. fuzz rounds: every real sample file (`../shared/real-samples`) corrupted with every
   corruption of `tests/reliability/corrupt.py` under a new seed, read by the papers and
   citations parsers, and real pages / PDFs corrupted and extracted in the isolated
   extractor; every item must be accounted for;
2. build rounds: a fresh `openmsd-build sample` (new seed) built twice with
   `openmsd-build run`, plus the papers stage with injected bundle failures on the
   bundle-retrying runner; every stage must reconcile and both builds must be identical.

Prints the table for the closing note: inputs tried, faults injected, runs resumed, records
lost (must be 0). Exit status 1 if anything was lost or differed. A round (both parts) takes
about five minutes on 2 cores, so `--minutes 1` still runs one whole round.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "reliability"))

import corrupt  # noqa: E402
import faults  # noqa: E402
import harness  # noqa: E402
import reconcile  # noqa: E402

CLI = [sys.executable, "-m", "openmsd_build.cli"]


def fuzz_round(samples: Path, work: Path, seed: int, tally: dict) -> None:
    from openmsd_build.citations.opencitations import parse_citation_file
    from openmsd_build.text.extract.pool import ExtractorPool

    files = {
        "unpaywall": sorted((samples / "unpaywall").glob("*.jsonl.gz")),
        "crossref": sorted((samples / "crossref" / "files_as_found").glob("*.json*")),
        "openalex": sorted((samples / "openalex" / "parseland_eval_shards").glob("*.ndjson.gz")),
    }
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    for source, paths in files.items():
        for path in paths:
            for name, fn in corrupt.CORRUPTIONS.items():
                bad = work / f"{source}-{name}-{path.name}"
                bad.write_bytes(fn(path.read_bytes(), random.Random(rng.random())))
                try:
                    with harness.deadline(120):
                        acc = harness.account_source_file(str(bad), source)
                    tally["inputs"] += acc["read"]
                except AssertionError as exc:
                    tally["lost"] += 1
                    tally["problems"].append(f"{bad.name}: {exc}"[:300])
                tally["files"] += 1
    for path in sorted((samples / "opencitations").rglob("*.csv")):
        for name in ("truncate", "bit_flips", "latin1", "giant_field", "splice_binary"):
            bad = work / f"oc-{name}-{path.name}"
            bad.write_bytes(corrupt.CORRUPTIONS[name](path.read_bytes(), random.Random(rng.random())))
            totals: dict = {}
            for _table, _rejects, counts in parse_citation_file(str(bad)):
                for k, v in counts.items():
                    totals[k] = totals.get(k, 0) + v
            accounted = sum(totals.get(k, 0) for k in ("rows_unrecognized_file", "malformed_row", "bad_doi",
                                                        "no_doi", "rows_parsed"))
            tally["inputs"] += totals.get("rows_read", 0)
            tally["lost"] += abs(totals.get("rows_read", 0) - accounted)
            tally["files"] += 1
    with ExtractorPool(timeout=30) as ex:
        for kind, pattern in (("html", "html/*.html"), ("pdf", "pdf/*.pdf")):
            for path in sorted(samples.glob(pattern)):
                data = path.read_bytes()
                for bad in (corrupt.truncate(data, rng), corrupt.bit_flips(data, rng, 200)):
                    result, reason = ex.extract(kind, bad)
                    tally["inputs"] += 1
                    tally["files"] += 1
                    if (result is None) == (reason is None):
                        tally["lost"] += 1


def build_round(work: Path, papers: int, seed: int, tally: dict) -> None:
    from openmsd_build.papers import command as papers_pipeline

    inputs, a, b = work / "inputs", work / "a", work / "b"
    for d in (inputs, a, b):
        shutil.rmtree(d, ignore_errors=True)
    subprocess.run([*CLI, "sample", "--out", str(inputs), "--papers", str(papers), "--seed", str(seed)],
                   check=True, capture_output=True)
    for out in (a, b):
        subprocess.run([*CLI, "run", "--inputs", str(inputs), "--out", str(out), "--no-report"],
                       check=True, capture_output=True)
        tally["builds"] += 1
    for out in (a, b):
        problems = reconcile.check_build(out)
        tally["lost"] += reconcile.records_lost(out)
        tally["problems"] += [f"seed {seed}: {p}" for p in problems]
    tally["inputs"] += sum((reconcile.stage_counts(a, "papers") or {}).get(k, 0)
                           for k in ("read.unpaywall", "read.crossref"))
    tally["inputs"] += (reconcile.stage_counts(a, "citations") or {}).get("rows_read", 0)
    diff = reconcile.diff_digests(reconcile.output_digest(a), reconcile.output_digest(b))
    if diff:
        tally["problems"] += [f"seed {seed}: runs differ: {d}" for d in diff]
        tally["lost"] += len(diff)
    # injected bundle failures on the bundle-retrying runner
    fault_dir, c = work / "faults", work / "c"
    shutil.rmtree(fault_dir, ignore_errors=True)
    shutil.rmtree(c, ignore_errors=True)
    fault_dir.mkdir()
    os.environ[faults.ENV] = str(fault_dir)
    from openmsd_build.pipelines import papers as papers_graph

    saved = papers_graph.ReadSourceFile, papers_graph.MergeAndWriteShard
    papers_graph.ReadSourceFile, papers_graph.MergeAndWriteShard = (faults.FlakyReadSourceFile,
                                                                          faults.FlakyMergeAndWriteShard)
    try:
        papers_pipeline.run_papers(str(c), {"unpaywall": [str(inputs / "unpaywall" / "*")], "crossref": [str(inputs / "crossref" / "*")]},
                                   ["--runner=BundleBasedDirectRunner"])
    finally:
        papers_graph.ReadSourceFile, papers_graph.MergeAndWriteShard = saved
        os.environ.pop(faults.ENV, None)
    tally["faults"] += len(list(fault_dir.iterdir()))
    tally["resumed"] += 1
    keys = ("papers", "rejects/papers", "_stats/papers")
    da = {k: v for k, v in reconcile.output_digest(a).items() if k.startswith(keys)}
    dc = {k: v for k, v in reconcile.output_digest(c).items() if k.startswith(keys)}
    if reconcile.diff_digests(da, dc) or reconcile.check_build(c, ["papers"]):
        tally["lost"] += 1
        tally["problems"].append(f"seed {seed}: retried papers stage differs")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--papers", type=int, default=1000)
    parser.add_argument("--work", default="/tmp/openmsd-soak")
    parser.add_argument("--samples", default=str(REPO.parent / "shared" / "real-samples"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    work, samples = Path(args.work), Path(args.samples)
    tally = {"inputs": 0, "files": 0, "faults": 0, "resumed": 0, "builds": 0, "lost": 0, "problems": []}
    end = time.monotonic() + args.minutes * 60
    seed = args.seed
    while True:
        if samples.is_dir():
            fuzz_round(samples, work / "fuzz", seed, tally)
        build_round(work / "build", args.papers, seed, tally)
        print(f"round seed={seed}: {tally['inputs']} inputs, {tally['faults']} faults, lost {tally['lost']}",
              flush=True)
        seed += 1
        if time.monotonic() > end:
            break
    print("\n| inputs tried | input files | faults injected | runs resumed / retried | builds | records lost |")
    print("|---|---|---|---|---|---|")
    print(f"| {tally['inputs']} | {tally['files']} | {tally['faults']} | {tally['resumed']} | {tally['builds']} "
          f"| {tally['lost']} |")
    for p in tally["problems"][:50]:
        print("problem:", p)
    return 1 if tally["lost"] or tally["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
