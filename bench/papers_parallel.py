"""One big Unpaywall file, parsed by 1 vs 2 SDK workers on Beam's portable runner.

Why: Unpaywall's snapshot is a single gzip JSON Lines file of tens of GB. Decompression is
serial, parsing need not be: the papers stage cuts the file into chunks of raw lines,
reshuffles them and parses them on every worker. If parsing were still done by the one
worker reading the file, two SDK workers would take as long as one.

    .venv/bin/python bench/papers_parallel.py --lines 1000000

Writes `bench/data/unpaywall-<lines>.jsonl.gz` once (records of a generated sample with
renumbered DOIs), starts a local SDK worker pool (`worker_pool_main`, the venv first on
PATH), runs the papers stage with `--direct_num_workers` 1 and 2 (separate SDK worker
processes) and prints wall time, CPU time of the worker processes and records/s. The
machine's other load shows in the CPU/wall ratio; quote the ratio of the two runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"


def _env() -> dict:
    env = os.environ.copy()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def make_input(lines: int) -> Path:
    path = DATA / f"unpaywall-{lines}.jsonl.gz"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "openmsd_build.cli", "sample", "--out", tmp, "--papers", "2000",
                        "--seed", "3"], check=True, capture_output=True, env=_env())
        base = []
        for part in sorted(Path(tmp, "unpaywall").glob("*.jsonl.gz")):
            with gzip.open(part, "rt", encoding="utf-8") as f:
                base += [json.loads(x) for x in f if x.strip()]
    tmp_path = path.with_suffix(".tmp")
    with gzip.open(tmp_path, "wt", encoding="utf-8", compresslevel=1) as out:
        for i in range(lines):
            record = dict(base[i % len(base)])
            record["doi"] = f"10.5555/bench.{i}"
            out.write(json.dumps(record) + "\n")
    tmp_path.rename(path)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(input_path: Path, workers: int, port: int) -> dict:
    out = Path(tempfile.mkdtemp(prefix="papers-parallel-"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "openmsd_build.cli", "papers", "--out", str(out), "--unpaywall", str(input_path),
         "--split-files-over", "0", "--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
         f"--environment_config=localhost:{port}", f"--direct_num_workers={workers}"],
        capture_output=True, text=True, env=_env(),
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"papers failed with {workers} workers:\n{proc.stderr[-3000:]}")
    counts = json.loads((out / "_stats" / "papers.json").read_text())["counts"]
    shutil.rmtree(out, ignore_errors=True)
    read = sum(v for k, v in counts.items() if k.startswith("read."))
    return {"workers": workers, "wall_s": round(wall, 1), "launcher_cpu_s": round(
        (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 1),
        "records": read, "records_per_s": round(read / wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--json", default=str(ROOT / "bench" / "results_papers_parallel.json"))
    args = parser.parse_args()
    input_path = make_input(args.lines)
    port = _free_port()
    pool = subprocess.Popen([sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                             f"--service_port={port}"], env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(3)
        rows = [run(input_path, w, port) for w in (1, 2)]
    finally:
        os.killpg(pool.pid, signal.SIGTERM)
    for r in rows:
        print(f"{r['workers']} SDK worker(s): {r['wall_s']} s wall, {r['records']:,} records, {r['records_per_s']:,}/s")
    print(f"speed-up 1 -> 2 workers: {rows[0]['wall_s'] / rows[1]['wall_s']:.2f}x")
    Path(args.json).write_text(json.dumps({"lines": args.lines, "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
