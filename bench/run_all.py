"""`make bench`: every stage next to its anchor, one table, `bench/results.json`.

    .venv/bin/python bench/run_all.py                 # text 20,000 papers, papers 300,000, citations + pairs 2M edges
    .venv/bin/python bench/run_all.py --stages citations,pairs --scale 0.1
    .venv/bin/python bench/run_all.py --stages text --text-turns 5   # the text row's middle of 5 turns

Why one driver: the performance goal is stated as ratios (each Beam stage within 2x of the
single-machine tool doing the same job), so the ratios must come from one command, with both
sides measured in the same run on the same (possibly shared) machine. Each side runs in its
own process, so its peak RSS is its own; inputs are generated once under bench/data/ and
reused (generation time is not in any figure). The per-stage scripts hold the two sides:

* text — `openmsd-build text --fetch warc:` (FnApiRunner) vs trafilatura (called with the
  stage's options, `landing.TRAFILATURA_OPTIONS`) + pypdfium2 directly on the same WARC
  (`text_bench.direct`), once in one process and once split over as many processes as cores;
  each side a whole process (start-up and imports included), its CPU that of every process
  it started (`_MEASURE`); one turn at 20,000 papers (per-document cost decides there), or
  `--text-turns N` (the CPU figures are then the middle turn's, by its own CPU ratio);
* text-real — the same three sides on the 73 real pages and PDFs of ../shared/real-samples
  (`text_real_bench.py`), REAL_TURNS turns; kept beside the rows in `results.json`
  (`text_real_samples`), skipped when the folder is absent;
* papers — `papers_bench.py --only beam|polars`, the two in turn three times, medians (polars swings by a third between runs here);
* citations — `citations_bench.py --only ours|polars`, the two in turn five times (a ~5 s run), medians;
* pairs — `pairs_bench.py --phases full,beam` (polars doing the stage's whole job).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
CLI = [PYTHON, "-m", "openmsd_build.cli"]
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}
TURNS = 3
# The text row at 20,000 papers is a ~2-minute run a side (per-document cost decides there,
# not start-up): one turn by default, so that the whole bench stays within 10 minutes on an
# idle machine; one turn's CPU ratio moves by a tenth or more either way with the host (1.42x
# and 1.76x in consecutive turns on 2026-11-28), so `--text-turns N` reports the middle of N.
# The real samples' row, a few seconds a side, takes REAL_TURNS.
TEXT_TURNS = 1
REAL_TURNS = 3
# The citations stage runs ~5 s a side: a pause of the VM of a second is a fifth of a run,
# so it takes more turns (it is also the cheapest stage to repeat).
SHORT_TURNS = 5
SIZES = {"text": 20_000, "papers": 300_000, "citations": 2_000_000, "pairs": 2_000_000}

# Runs a command and prints its wall time, the CPU time (user + system) of every process it
# started -- this process is a child subreaper (Linux), so helpers re-parented when their
# parent exits (a fork server's children) are waited for and counted too -- and the peak RSS of
# its largest process, so that every side is measured alike, from outside, in a fresh parent.
_MEASURE = """
import ctypes, json, os, resource, subprocess, sys, time
try:
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except (AttributeError, OSError):
    pass
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seconds = time.perf_counter() - t
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024,
                  "load": os.getloadavg()[0]}))
"""
# The text anchor as a whole process (interpreter start and imports included), measured by
# `_MEASURE` like the stage's command: both sides pay their own start-up. Arguments: bench
# folder, WARC folder, then `lanes`: that many processes at once, each taking every lanes-th
# record (the anchor on the same cores as the stage).
_DIRECT = """
import subprocess, sys
from pathlib import Path
here, warcs, lanes = sys.argv[1], sys.argv[2], int(sys.argv[3])
if lanes == 1:
    sys.path.insert(0, here)
    from text_bench import direct
    direct(sorted(Path(warcs).glob("*.warc.gz")))
else:
    procs = [subprocess.Popen([sys.executable, f"{here}/text_bench.py", "--direct", warcs, "--lane", str(k),
                               "--lanes", str(lanes)]) for k in range(lanes)]
    assert all(p.wait() == 0 for p in procs)
"""


def _json_line(cmd: list[str]) -> dict:
    """Run `cmd` and return the last JSON object it printed on stdout."""
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, env=ENV, cwd=HERE.parent)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def prepare_text_sample(papers: int) -> tuple[Path, Path]:
    """(sample, build) for the text row: a generated sample with its WARC and a build run up
    to the papers stage, made once under bench/data/ (also used by `profile_text.py`)."""
    data = HERE / "data" / f"text-{papers}"
    sample, build = data / "sample", data / "build"
    if not (data / "ready").exists():
        subprocess.run([*CLI, "sample", "--out", str(sample), "--papers", str(papers), "--seed", "5"], check=True,
                       capture_output=True, env=ENV)
        subprocess.run([*CLI, "run", "--inputs", str(sample), "--out", str(build), "--to-stage", "papers",
                        "--no-report"], check=True, capture_output=True, env=ENV)
        (data / "ready").write_text("")
    return sample, build


TEXT_ANCHOR = "trafilatura (stage options) + pypdfium2"


def text_commands(build: Path, warc_dir: Path) -> tuple[list[str], list[str], list[str]]:
    """The three sides of a text row, each measured as a whole process (`_MEASURE`): the
    stage on `build` replaying the WARCs of `warc_dir`; the direct loop over them
    (trafilatura with the stage's options) in one process; the same loop split over as many
    processes as the stage has cores."""
    ours = [PYTHON, "-c", _MEASURE, *CLI, "text", "--out", str(build), "--fetch", f"warc:{warc_dir}/*.warc.gz"]
    anchor = [PYTHON, "-c", _MEASURE, PYTHON, "-c", _DIRECT, str(HERE), str(warc_dir)]
    return ours, [*anchor, "1"], [*anchor, str(len(os.sched_getaffinity(0)))]


def text_row(stage: str, size: int, ours: list[dict], anchor: list[dict], parallel: list[dict]) -> dict:
    """A text row from the turns of its three sides: wall of each side's median run, and the
    ratios the goal is stated in (CPU vs the one-process anchor; wall vs the anchor spread
    over the same cores), plus the CPU against that spread anchor's.

    The CPU figures are all the middle turn's (by its CPU ratio; the lower middle for an
    even number of turns): each turn's sides ran back to back, in one phase of a shared
    host's speed, so a turn's own ratio is the measurement, and a ratio of two medians from
    different turns is not. Every turn's CPU ratio is listed in `cpu_turn_ratios`.
    `parallel_cpu_ratio`: the stage's CPU over the anchor's on as many processes as the
    stage's cores, which pays what the host charges for keeping both cores busy, as the
    stage does. `ours_cores` and `anchor_parallel_cores`: how many cores each side kept busy
    in the run whose wall is reported (its CPU over its wall). The wall ratio is about
    `parallel_cpu_ratio` times `anchor_parallel_cores / ours_cores`: the stage's CPU over the
    split anchor's, times the anchor's busy cores over the stage's (about, because the CPU
    figures are the middle turn's and the wall figures the median runs)."""
    mine, one, spread = _median_run(ours), _median_run(anchor), _median_run(parallel)
    row = _row(stage, size, mine, TEXT_ANCHOR, one)
    ratios = [o["cpu_s"] / a["cpu_s"] for o, a in zip(ours, anchor, strict=True)]
    turns = sorted(zip(ratios, ours, anchor, parallel, strict=True), key=lambda t: t[0])
    cpu_ours, cpu_one, cpu_spread = (run["cpu_s"] for run in turns[(len(turns) - 1) // 2][1:])
    row.update(ours_cpu_s=round(cpu_ours, 1), anchor_cpu_s=round(cpu_one, 1),
               anchor_parallel_s=round(spread["seconds"], 2), anchor_parallel_cpu_s=round(cpu_spread, 1),
               cpu_ratio=round(cpu_ours / cpu_one, 2),
               cpu_turn_ratios=[round(r, 2) for r in ratios],
               parallel_cpu_ratio=round(cpu_ours / cpu_spread, 2),
               parallel_ratio=round(mine["seconds"] / spread["seconds"], 2),
               ours_cores=round(mine["cpu_s"] / mine["seconds"], 2),
               anchor_parallel_cores=round(spread["cpu_s"] / spread["seconds"], 2),
               load=[round(r["load"], 1) for r in (*ours, *anchor, *parallel)])
    return row


def bench_text(papers: int, turns: int = TEXT_TURNS) -> dict:
    sample, build = prepare_text_sample(papers)
    # the sides take turns (on a shared machine a turn is a phase of its load)
    runs: tuple[list[dict], list[dict], list[dict]] = ([], [], [])
    for _ in range(turns):
        for side, cmd in zip(runs, text_commands(build, sample / "warc"), strict=True):
            side.append(_json_line(cmd))
    return text_row("text", papers, *runs)


def bench_text_real() -> dict | None:
    """The text row's comparison on the real pages and PDFs of ../shared/real-samples
    (`text_real_bench.py`); None, with a note, when that folder is absent."""
    from text_real_bench import SAMPLES, measure, samples_present

    if not samples_present(SAMPLES):
        print(f"  text-real skipped: no real samples at {SAMPLES}", flush=True)
        return None
    return measure(SAMPLES, REAL_TURNS)


def _turns(row: dict) -> str:
    """The printed range of a row's turn CPU ratios (", turns 1.42x-1.76x"); empty for one turn."""
    turns = row.get("cpu_turn_ratios") or []
    return f", turns {min(turns):.2f}x-{max(turns):.2f}x" if len(turns) > 1 else ""


def _median_run(runs: list[dict]) -> dict:
    """The run with the median time (its own peak RSS with it)."""
    return sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]


def bench_papers(papers: int) -> dict:
    script = str(HERE / "papers_bench.py")
    # polars' time on this input swings by a third from run to run on a shared 2-core VM
    # (17-24 s): the two sides take turns TURNS times and each side's median run is used
    ours_runs, anchor_runs = [], []
    for _ in range(TURNS):
        anchor_runs.append(_json_line([PYTHON, script, "--papers", str(papers), "--only", "polars"]))
        ours = _json_line([PYTHON, script, "--papers", str(papers), "--only", "beam"])
        # the largest process: on the local runner the parsing processes can outgrow the worker
        ours["peak_rss_mb"] = max(ours["peak_rss_mb"], ours.get("child_peak_rss_mb", 0))
        ours_runs.append(ours)
    return _row("papers", papers, _median_run(ours_runs), "polars", _median_run(anchor_runs))


def bench_citations(edges: int) -> dict:
    script = str(HERE / "citations_bench.py")
    # one run each swung from 6.2 to 9.3 s for the same code on this VM: turns and medians, as above
    anchor_runs, ours_runs = [], []
    for _ in range(SHORT_TURNS):
        anchor_runs.append(_json_line([PYTHON, script, "--edges", str(edges), "--only", "polars"]))
        ours_runs.append(_json_line([PYTHON, script, "--edges", str(edges), "--only", "ours"]))
    anchor, ours = _median_run(anchor_runs), _median_run(ours_runs)
    if anchor["kept"] != ours["kept"]:
        print(f"warning: citations kept {ours['kept']} edges, polars {anchor['kept']}", file=sys.stderr)
    return _row("citations", edges, ours, "polars", anchor)


def bench_pairs(edges: int) -> dict:
    results = _json_line([PYTHON, str(HERE / "pairs_bench.py"), "--edges", str(edges), "--phases", "full,beam",
                          "--data", str(HERE / "data" / f"pairs-{edges}"), "--json"])
    return _row("pairs", edges, results["beam"], "polars (whole job)", results["full"])


def _row(stage: str, size: int, ours: dict, anchor: str, theirs: dict) -> dict:
    return {"stage": stage, "size": size, "ours_s": round(ours["seconds"], 2), "anchor": anchor,
            "anchor_s": round(theirs["seconds"], 2), "ratio": round(ours["seconds"] / theirs["seconds"], 2),
            "ours_rss_mb": int(ours["peak_rss_mb"]), "anchor_rss_mb": int(theirs["peak_rss_mb"])}


def machine() -> str:
    """One line about the machine (the figures only mean something next to it)."""
    mem = ""
    try:
        kb = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
        mem = f", {kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cores{mem}, {platform.python_implementation()} {platform.python_version()}, " \
           f"load average {load:.1f} at start"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stages", default="text,text-real,papers,citations,pairs")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every size (quick checks)")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    parser.add_argument("--text-turns", type=int, default=TEXT_TURNS,
                        help="turns of the 20,000-paper text row (each ~7 min); its CPU figures are the "
                             "middle turn's by CPU ratio (one turn lands anywhere in the spread that "
                             "bench/README.md reports)")
    args = parser.parse_args()
    if args.text_turns < 1:
        parser.error(f"--text-turns must be 1 or more, not {args.text_turns}")
    runners = {"text": lambda size: bench_text(size, args.text_turns), "papers": bench_papers,
               "citations": bench_citations, "pairs": bench_pairs, "text-real": bench_text_real}
    about = machine()
    print(f"machine: {about}", flush=True)
    rows = []
    started = time.perf_counter()
    extra = {}
    for stage in args.stages.split(","):
        t0 = time.perf_counter()
        if stage == "text-real":  # a fixed set of documents: no size to scale
            row = bench_text_real()
            if row is None:
                continue
            extra["text_real_samples"] = row
        else:
            row = runners[stage](max(100, int(SIZES[stage] * args.scale)))
            rows.append(row)
        print(f"  {stage} done in {time.perf_counter() - t0:.0f}s: {json.dumps(row)}", flush=True)
    header = f"{'stage':10} {'size':>10} {'ours s':>8}  {'anchor':40} {'anchor s':>8} {'ratio':>6} " \
             f"{'ours MB':>8} {'anchor MB':>9}"
    print("\n" + header)
    for r in [*rows, *extra.values()]:
        print(f"{r['stage']:10} {r['size']:>10,} {r['ours_s']:8.1f}  {r['anchor']:40} {r['anchor_s']:8.1f} "
              f"{r['ratio']:5.2f}x {r['ours_rss_mb']:8,} {r['anchor_rss_mb']:9,}")
        if "cpu_ratio" in r:
            print(f"{'':10} {'':>10} {'':>8}  CPU s: ours {r['ours_cpu_s']:.1f}, anchor {r['anchor_cpu_s']:.1f} "
                  f"({r['cpu_ratio']:.2f}x{_turns(r)}); anchor on {len(os.sched_getaffinity(0))} processes "
                  f"{r['anchor_parallel_s']:.1f} s ({r['parallel_ratio']:.2f}x wall, "
                  f"{r['parallel_cpu_ratio']:.2f}x CPU); cores kept busy: ours {r['ours_cores']:.2f}, "
                  f"the anchor on {len(os.sched_getaffinity(0))} processes {r['anchor_parallel_cores']:.2f}")
    print(f"total {time.perf_counter() - started:.0f}s")
    Path(args.out).write_text(json.dumps({"machine": about, "rows": rows, **extra}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
