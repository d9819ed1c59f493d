"""One big Unpaywall file, parsed by 1 vs 2 SDK workers on Beam's portable runner.

Why: Unpaywall's snapshot is a single gzip JSON Lines file of tens of GB. Decompression is
serial, parsing need not be: the papers stage cuts the file into chunks of raw lines,
reshuffles them and parses them on every worker. If parsing were still done by the one
worker reading the file, two SDK workers would take as long as one.

    .venv/bin/python bench/papers_parallel.py --lines 1000000 --split-files-over 0,1024

(`--split-files-over 0`: the file is cut into line chunks; 1024: parsed in place; `--embed`:
upstream `--job_endpoint=embed` instead of the job server below, to see it use one worker.)

Writes `bench/data/unpaywall-<lines>.jsonl.gz` once (records of a generated sample with
renumbered DOIs). For every run it starts, each as its own process:

* a local SDK worker pool (`worker_pool_main`, the venv first on PATH; it starts one SDK
  worker *process* per worker the runner asks for);
* a job server: Beam's local job service (`LocalJobServicer`, the same FnApiRunner-based
  service `--job_endpoint=embed` runs inside the launcher) on 127.0.0.1, started by this
  script with `--serve-jobs PORT` (see `_WorkersBeamJob` for the one thing it changes);
* the launcher, `openmsd-build papers ... --runner=PortableRunner
  --job_endpoint=localhost:PORT --environment_type=EXTERNAL --environment_config=localhost:POOL
  --direct_num_workers=N`.

Why not `--job_endpoint=embed` or `local_job_service_main`: their job service builds an
`FnApiRunner()` and calls `run_via_runner_api` (local_job_service.py, `BeamJob._invoke_runner`),
which skips `FnApiRunner.run_pipeline`, the only place that reads `--direct_num_workers`
(fn_runner.py, `run_pipeline`: `self._num_workers = ...direct_num_workers`). So the runner
keeps `self._num_workers = 1` (fn_runner.py, `__init__`), asks the pool for one SDK worker and
runs every bundle on it, whatever `--direct_num_workers` or `--sdk_worker_parallelism` say
(the latter is read by no Python runner at all). `_WorkersBeamJob` sets the runner's worker
count from `--direct_num_workers` before `run_via_runner_api`; the runner then starts N
SDK workers through the pool and, for every stage that is not stateful, splits the stage's
input N ways and runs the parts at once, one bundle per worker (`ParallelBundleManager`).

While a run goes, /proc is sampled every 0.5 s for the CPU time of the launcher, the job
server and every SDK worker process; `both_busy_s` is the time during which every SDK
worker used at least half a core at once (the parsing spread, shown rather than inferred
from the wall time); `other_processes_cpu_s` is what the rest of the machine used meanwhile
(each run first waits, `--wait-idle`, for the machine to be idle). `stage_wall_s` comes from
the runner's "Running bundle for stage" log lines. The papers/ and rejects/ files of every
run must be byte-identical to the first run's. `PAPERS_PARALLEL_TIMELINE=PREFIX` also keeps
each run's CPU samples and job server log as PREFIX.<workers>.json / .log.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
TICK = os.sysconf("SC_CLK_TCK")


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


# --- the job server -------------------------------------------------------------------------

def serve_jobs(port: int) -> None:
    """Beam's local job service on 127.0.0.1:`port`, honouring `--direct_num_workers`."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(created).3f %(name)s %(message)s")
    # one line per bundle the runner starts: the stages' wall times (`_stage_seconds`)
    logging.getLogger("apache_beam.runners.portability.fn_api_runner.fn_runner.run_bundle").setLevel(logging.DEBUG)
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.portability.api import beam_job_api_pb2
    from apache_beam.runners.portability import local_job_service
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    class _WorkersBeamJob(local_job_service.BeamJob):
        """`BeamJob._invoke_runner` with the runner's worker count taken from the options
        (upstream leaves it at 1: `run_via_runner_api` does not read `direct_num_workers`)."""

        def _invoke_runner(self):
            self.set_state(beam_job_api_pb2.JobState.RUNNING)
            options = self.pipeline_options()
            runner = fn_runner.FnApiRunner(provision_info=self._provision_info)
            runner._num_workers = max(1, int(options.view_as(DirectOptions).direct_num_workers or 1))
            return runner.run_via_runner_api(self._pipeline_proto, options)

    class _Servicer(local_job_service.LocalJobServicer):
        def get_bind_address(self):
            return "127.0.0.1"

        def get_service_address(self):
            return "127.0.0.1"

    servicer = _Servicer(beam_job_type=_WorkersBeamJob)
    servicer.start_grpc_server(port)
    print(f"job server on 127.0.0.1:{port}", flush=True)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    servicer.stop()


# --- per-process CPU ------------------------------------------------------------------------

def _machine_busy() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / TICK


def _procs() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds) of every process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path("/proc", name, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    return out


class CpuSampler(threading.Thread):
    """Samples the CPU time of the launcher, the job server and the pool's SDK workers."""

    def __init__(self, launcher: int, job_server: int | None, pool: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.roles = {launcher: "launcher"} | ({job_server: "job_server"} if job_server else {})
        self.pool = pool
        self.interval = interval
        self.cpu: dict[int, float] = {}
        self.both_busy = 0.0
        self.timeline: list[tuple[float, dict[str, float]]] = []
        self.stop = threading.Event()

    def workers(self) -> list[int]:
        return sorted(p for p in self.cpu if p not in self.roles)

    def run(self) -> None:
        t0 = last_t = time.monotonic()
        last = {}
        self.machine_start = _machine_busy()
        while not self.stop.wait(self.interval):
            now, procs = time.monotonic(), _procs()
            self.machine_end = _machine_busy()
            workers = [p for p, (ppid, _) in procs.items() if ppid == self.pool]
            for p in list(self.roles) + workers:
                if p in procs:
                    self.cpu[p] = procs[p][1]
            dt = now - last_t
            busy = [(procs[p][1] - last.get(p, procs[p][1])) / dt for p in workers]
            if len(busy) >= 2 and all(b >= 0.5 for b in busy):
                self.both_busy += dt
            self.timeline.append((round(now - t0, 1), {"machine": self.machine_end - self.machine_start} | {
                self.roles.get(p, str(p)): v for p, v in self.cpu.items()}))
            last_t, last = now, {p: procs[p][1] for p in workers}


# --- one run --------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"nothing listens on port {port}")


def _digest(out: Path) -> str:
    h = hashlib.sha256()
    for sub in ("papers", "rejects"):
        for f in sorted(Path(out, sub).rglob("*")):
            if f.is_file():
                h.update(str(f.relative_to(out)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def wait_for_idle(limit_s: float, busy_cores: float = 0.3) -> float:
    """Wait (up to `limit_s`) until the machine's other processes use under `busy_cores`
    cores over 5 s; returns how busy it was when the run started."""
    deadline = time.monotonic() + limit_s
    while True:
        before = _machine_busy()
        time.sleep(5)
        busy = (_machine_busy() - before) / 5
        if busy < busy_cores or time.monotonic() > deadline:
            return round(busy, 2)
        print(f"  machine busy ({busy:.1f} cores), waiting", flush=True)


STAGES = ("ReadSourceFiles", "ParseLineChunks", "MergeAndWrite")


def _stage_seconds(log: Path, end: float) -> dict[str, float]:
    """Wall seconds from the start of each stage's first bundle to the next bundle of another
    stage (or to `end`), summed by the papers transform the stage runs (`STAGES`; "runner":
    every other stage, e.g. the small counts and rejects stages), from the job server log."""
    starts = []
    for line in log.read_text(errors="replace").splitlines():
        if "Running bundle for stage" in line:
            starts.append((float(line.split(" ", 1)[0]), line.split("Running bundle for stage", 1)[1].strip()))
    out: dict[str, float] = {}
    for (t, stage), (t_next, _) in zip(starts, starts[1:] + [(end, "")], strict=True):
        name = next((s for s in STAGES if s in stage), "other")
        out[name] = round(out.get(name, 0.0) + t_next - t, 1)
    return out


def _loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def run(input_path: Path, workers: int, split_over_mib: float, embed: bool = False, wait_idle: float = 0) -> dict:
    started_procs = []
    logs = Path(tempfile.mkdtemp(prefix="papers-parallel-logs-"))

    def start(name: str, cmd: list[str]) -> subprocess.Popen:
        with open(logs / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(cmd, env=_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        started_procs.append(proc)
        return proc

    out = Path(tempfile.mkdtemp(prefix="papers-parallel-"))
    pool_port, job_port = _free_port(), _free_port()
    try:
        pool = start("worker_pool", [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main",
                      f"--service_port={pool_port}"])
        job_server = None if embed else start(
            "job_server", [sys.executable, str(Path(__file__).resolve()), "--serve-jobs", str(job_port)])
        _wait_port(pool_port)
        if job_server:
            _wait_port(job_port)
        busy_before = wait_for_idle(wait_idle) if wait_idle else None
        load_before = _loadavg()
        started = time.monotonic()
        launcher = subprocess.Popen(
            [sys.executable, "-m", "openmsd_build.cli", "papers", "--out", str(out), "--unpaywall",
             str(input_path), "--split-files-over", str(split_over_mib), "--runner=PortableRunner",
             "--job_endpoint=" + ("embed" if embed else f"localhost:{job_port}"), "--environment_type=EXTERNAL",
             f"--environment_config=localhost:{pool_port}", f"--direct_num_workers={workers}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
        sampler = CpuSampler(launcher.pid, job_server and job_server.pid, pool.pid)
        sampler.start()
        _, stderr = launcher.communicate()
        wall = time.monotonic() - started
        sampler.stop.set()
        sampler.join()
        if os.environ.get("PAPERS_PARALLEL_TIMELINE"):
            Path(os.environ["PAPERS_PARALLEL_TIMELINE"] + f".{workers}.json").write_text(json.dumps(sampler.timeline))
        if launcher.returncode != 0:
            raise SystemExit(f"papers failed with {workers} workers:\n{stderr[-3000:]}\n(logs of the job server "
                             f"and worker pool: {logs})")
        stages = _stage_seconds(logs / "job_server.log", time.time()) if job_server else {}
        if os.environ.get("PAPERS_PARALLEL_TIMELINE") and job_server:
            shutil.copy(logs / "job_server.log", os.environ["PAPERS_PARALLEL_TIMELINE"] + f".{workers}.log")
        counts = json.loads((out / "_stats" / "papers.json").read_text())["counts"]
        digest = _digest(out)
    finally:
        for proc in reversed(started_procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.wait()
        shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(logs, ignore_errors=True)
    read = sum(v for k, v in counts.items() if k.startswith("read."))
    worker_cpu = [round(sampler.cpu[p], 1) for p in sampler.workers()]
    total_cpu = sum(sampler.cpu.values())
    others = max(0.0, sampler.machine_end - sampler.machine_start - total_cpu)
    by_role = {role: round(sampler.cpu.get(pid, 0.0), 1) for pid, role in sampler.roles.items()}
    return {
        "job_server": "embed (upstream, in the launcher)" if embed else "separate, worker count honoured",
        "workers": workers, "chunked": split_over_mib * (1 << 20) < input_path.stat().st_size,
        "wall_s": round(wall, 1), "records": read, "records_per_s": round(read / wall),
        "sdk_worker_cpu_s": worker_cpu, "job_server_cpu_s": by_role.get("job_server"),
        "launcher_cpu_s": by_role["launcher"], "cpu_per_wall": round(total_cpu / wall, 2),
        "both_workers_busy_s": round(sampler.both_busy, 1), "other_processes_cpu_s": round(others, 1),
        "load_avg_1m_before": load_before, "machine_busy_cores_before": busy_before,
        "stage_wall_s": stages, "output_sha256": digest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--workers", default="1,2", help="comma-separated SDK worker counts (default 1,2)")
    parser.add_argument("--split-files-over", default="0", metavar="MIB[,MIB]",
                        help="passed to the papers stage; 0 (default) cuts the file into line chunks, a value "
                        "over the file's size parses it in place; several values: one series each")
    parser.add_argument("--embed", action="store_true",
                        help="upstream --job_endpoint=embed instead (runs every bundle on one SDK worker, see above)")
    parser.add_argument("--wait-idle", type=float, default=900, metavar="S",
                        help="before each run wait up to S seconds for the machine to be idle (default 900; 0: not)")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results_papers_parallel.json"))
    parser.add_argument("--serve-jobs", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_jobs:
        serve_jobs(args.serve_jobs)
        return
    input_path = make_input(args.lines)
    rows = []
    for split in (float(s) for s in args.split_files_over.split(",")):
        for w in (int(x) for x in args.workers.split(",")):
            r = run(input_path, w, split, args.embed, args.wait_idle)
            rows.append(r)
            print(f"{'chunked' if r['chunked'] else 'in place'}, {w} SDK worker(s): {r['wall_s']} s wall, "
                  f"{r['records']:,} records, {r['records_per_s']:,}/s; CPU s: workers {r['sdk_worker_cpu_s']}, "
                  f"job server {r['job_server_cpu_s']}, launcher {r['launcher_cpu_s']}; CPU/wall "
                  f"{r['cpu_per_wall']}; both workers busy {r['both_workers_busy_s']} s; other processes "
                  f"{r['other_processes_cpu_s']} CPU s; stages {r['stage_wall_s']}", flush=True)
    digests = {r["output_sha256"] for r in rows}
    if len(digests) != 1:
        raise SystemExit(f"outputs differ between runs: {digests}")
    Path(args.json).write_text(json.dumps({
        "lines": args.lines, "input_bytes": input_path.stat().st_size,
        "setup": "PortableRunner, EXTERNAL environment (local worker_pool_main, one process per SDK worker), "
                 "job server = Beam's LocalJobServicer on 127.0.0.1 with the runner's worker count taken from "
                 "--direct_num_workers (bench/papers_parallel.py --serve-jobs)",
        "runs": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
