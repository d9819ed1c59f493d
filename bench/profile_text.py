"""Where the text stage's CPU goes, per process, with the extractor children profiled in place.

    .venv/bin/python bench/profile_text.py                  # the 2,000-paper bench sample
    .venv/bin/python bench/profile_text.py --papers 300 --top 25
    .venv/bin/python bench/profile_text.py --papers 20000 --by-role   # the children summed

Runs `openmsd-build text --fetch warc:` on a copy of the bench sample's build (made by
`make bench` or by this script) with a sampling profiler in the worker and in every
extractor child, then prints each process's CPU and its costliest functions (inclusive).

Why sampling and not cProfile: cProfile's per-call overhead made every small Python function
look about ten times costlier than it is, and it cannot see into the children. Here a
`SIGPROF` timer fires every 2 ms of the process's CPU and records the Python stack; each
sample is weighted by the CPU used since the previous one, so a long call into C (PDFium,
lxml, CLD3) is charged to the Python function that made it. The profiler is installed by a
`sitecustomize` module on `PYTHONPATH` (the children are started by the stage itself) and
writes its table every ~0.5 s of CPU, since the children (forks of multiprocessing's fork
server) end with `os._exit`; a fork starts a profile of its own.

`--real` profiles the run on the real pages and PDFs of ../shared/real-samples instead
(`text_real_bench.py` writes their WARC; `--copies N`, every document N times, as there).

`--phases` runs the stage without the profiler and prints where its wall time goes instead:
the local runner executes its fused stages one after another, so the run is a sequence of
phases, and each is shown with its wall time and how many cores all the stage's processes
kept busy meanwhile (their CPU read from /proc every 0.2 s). A phase on about one core is the
worker alone (start-up, the archive index, the joins, writing Parquet): that is the wall time
two processes of the direct extractors do not pay. Then the run's CPU by role, without a
profiler's distortion: the Beam worker, and the pool's children by the name each gives itself
("omsd-extract", "omsd-build", "omsd-complete"), so the extractors' share can be set beside
the direct extractors' own CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable

_SITECUSTOMIZE = r'''
import os, sys
_out = os.environ.get("OPENMSD_PROFILE_DIR")
# the worker (`-m openmsd_build.cli`) and the extractor children's fork server (multiprocessing's,
# a `-c` interpreter); each child forked from the server starts its own profile (`_forked`)
_server = sys.argv[:1] == ["-c"]
if _out:
    import collections, json, signal, time
    _cost = collections.Counter()
    _last = [time.process_time(), 0.0]
    _role = "fork server" if _server else "worker"

    def _forked():
        global _role
        _role = "extractor child"
        _cost.clear()
        _last[:] = [time.process_time(), 0.0]
        signal.setitimer(signal.ITIMER_PROF, 0.002, 0.002)  # timers are not inherited

    os.register_at_fork(after_in_child=_forked)

    def _dump():
        path = os.path.join(_out, f"{os.getpid()}.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"role": _role, "cpu_s": _last[0], "functions": _cost.most_common(200)}, f)
        os.replace(path + ".tmp", path)

    _busy = [False]  # a tick while the handler (or a dump) runs is skipped, not nested

    def _sample(_sig, frame):
        if _busy[0]:
            return
        _busy[0] = True
        try:
            _record(frame)
        finally:
            _busy[0] = False

    def _record(frame):
        now = time.process_time()
        weight, _last[0] = now - _last[0], now
        seen = set()
        while frame is not None:
            code = frame.f_code
            key = f"{os.path.basename(os.path.dirname(code.co_filename))}/{os.path.basename(code.co_filename)}:{code.co_name}"
            if key not in seen:
                seen.add(key)
                _cost[key] += weight
            frame = frame.f_back
        if now - _last[1] > 0.5:
            _last[1] = now
            _dump()

    signal.signal(signal.SIGPROF, _sample)
    signal.setitimer(signal.ITIMER_PROF, 0.002, 0.002)
    import atexit

    def _stop():
        signal.setitimer(signal.ITIMER_PROF, 0, 0)  # a tick during interpreter shutdown would kill it
        _busy[0] = True
        _dump()

    atexit.register(_stop)
'''


def run_with_site(site_code: str, sample: Path, build: Path, env: dict[str, str]) -> None:
    """`openmsd-build text --fetch warc:` of this checkout on a copy of `build`, replaying
    `sample`'s WARCs, with `site_code` as the `sitecustomize` module of every interpreter the
    run starts (the extractor children's fork server among them) and `env` added to the
    environment: how a bench script looks inside the stage's children without changing it."""
    with tempfile.TemporaryDirectory() as tmp:
        site, copy = Path(tmp) / "site", Path(tmp) / "build"
        site.mkdir()
        (site / "sitecustomize.py").write_text(site_code)
        shutil.copytree(build, copy)
        paths = [str(site), str(HERE.parent), os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONWARNINGS": "ignore", **env, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
        subprocess.run([PYTHON, "-m", "openmsd_build.cli", "text", "--out", str(copy), "--fetch",
                        f"warc:{sample}/warc/*.warc.gz"], check=True, env=env, stdout=subprocess.DEVNULL)


def text_code_digest() -> str:
    """A digest of the text stage's code as this checkout has it (`openmsd_build/text` and
    `openmsd_build/core`): what a recording of its children was made with."""
    repo, digest = HERE.parent, hashlib.sha1()
    for path in sorted(p for part in ("text", "core") for p in (repo / "openmsd_build" / part).rglob("*.py")):
        digest.update(path.relative_to(repo).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def recorded_folder(papers: int, name: str, site_code: str, env_name: str, done: str) -> tuple[Path, Path, bool]:
    """(sample, folder, made) of a recording of the stage's children: `bench/data/NAME-PAPERS/`,
    filled by one `run_with_site` run on the bench sample with `site_code` writing into the
    folder named by `env_name`, unless the file `done` (which the caller writes once it has
    read the recording) is already there; `made` says whether the run happened now. A
    recording kept from other code of the stage is used as it is (another checkout's script
    may be compared on it on purpose), with a note naming both codes' digests."""
    from run_all import prepare_text_sample

    sample, build = prepare_text_sample(papers)
    folder = HERE / "data" / f"{name}-{papers}"
    code = text_code_digest()
    if (folder / done).exists():
        stamp = folder / "code"
        made_with = stamp.read_text().strip() if stamp.exists() else "unknown"
        if made_with != code:
            print(f"note: {folder} was recorded with other code of the text stage ({made_with}; this checkout's is "
                  f"{code}); remove the folder to record it again", file=sys.stderr)
        return sample, folder, False
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / "code").write_text(code + "\n")
    run_with_site(site_code, sample, build, {env_name: str(folder)})
    return sample, folder, True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=2_000)
    parser.add_argument("--top", type=int, default=15, help="functions shown per process")
    parser.add_argument("--real", action="store_true", help="the real samples instead of the bench sample")
    parser.add_argument("--copies", type=int, default=1,
                        help="with --real: every document this many times (`text_real_bench.py --copies`)")
    parser.add_argument("--by-role", action="store_true",
                        help="one table per role (worker, extractor children summed), not per process")
    parser.add_argument("--phases", action="store_true",
                        help="the runner's stages with their wall time and cores busy, no profiler")
    args = parser.parse_args()
    if args.copies < 1 or (args.copies != 1 and not args.real):
        parser.error("--copies takes a number of at least 1, and only with --real")
    sys.path.insert(0, str(HERE))
    from run_all import prepare_text_sample

    if args.real:
        from text_real_bench import SAMPLES, data_dir, prepare

        data = data_dir(args.copies)
        papers, args.papers = prepare(SAMPLES, data, args.copies)
        sample, build = data, papers.parent
    else:
        sample, build = prepare_text_sample(args.papers)
    if args.phases:
        _phases(sample, build, args.papers)
        return
    with tempfile.TemporaryDirectory() as out:
        run_with_site(_SITECUSTOMIZE, sample, build, {"OPENMSD_PROFILE_DIR": out})
        profiles = [json.loads(p.read_text()) for p in sorted(Path(out).glob("*.json"))]
    profiles = [p for p in profiles if p["cpu_s"] > 0.5]  # drop helper interpreters that did nothing
    total = sum(p["cpu_s"] for p in profiles)
    print(f"text stage, {args.papers:,} papers: {total:.1f} s of CPU in {len(profiles)} processes")
    if args.by_role:  # the children are recycled (and several): their sum is the cost
        profiles = _by_role(profiles)
    for p in sorted(profiles, key=lambda p: (p["role"], -p["cpu_s"])):
        print(f"\n{p['role']}: {p['cpu_s']:.2f} s of CPU (inclusive, per function)")
        shown = [(k, v) for k, v in p["functions"] if "<frozen" not in k and "runpy" not in k]
        for key, seconds in shown[:args.top]:
            print(f"  {seconds:6.2f} s {100 * seconds / p['cpu_s']:5.1f}%  {key}")


_TIMED_RUN = r'''
import json, os, runpy, sys, time


def main():
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    log = open(os.environ["OPENMSD_PHASES_FILE"], "a")
    execute = fn_runner.FnApiRunner._execute_bundle

    def timed(self, context, manager, inputs):  # one fused stage of the runner, start to end
        start = time.time()
        try:
            return execute(self, context, manager, inputs)
        finally:
            log.write(json.dumps([start, time.time(), manager.stage.name]) + "\n")
            log.flush()

    fn_runner.FnApiRunner._execute_bundle = timed
    sys.argv = ["openmsd-build", *sys.argv[1:]]
    runpy.run_module("openmsd_build.cli", run_name="__main__")


if __name__ == "__main__":  # the extractors' fork server imports this file too
    main()
'''


def _tree_cpu(root: int) -> dict[int, tuple[float, str]]:
    """(CPU seconds (user + system), process name) of process `root` and of every live
    descendant, by pid (the extractor children are the fork server's, the fork server is the
    worker's; the pool names its children "omsd-<role>")."""
    tick, parents, cpu = os.sysconf("SC_CLK_TCK"), {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                head, tail = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)
            except OSError:
                continue  # gone meanwhile
            fields = tail.split()
            parents[int(entry)] = int(fields[1])
            cpu[int(entry)] = ((int(fields[11]) + int(fields[12])) / tick, head.split("(", 1)[1])
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        tree[pid] = cpu.get(pid, (0.0, "?"))
        todo += [child for child, parent in parents.items() if parent == pid]
    return tree


def _roles() -> dict[str, str]:
    """A pool child's process name (`pool.process_name`) -> the role it stands for."""
    from openmsd_build.text.extract.pool import process_name

    return {process_name("extract"): "extractor children (fetch pass and follow-ups)",
            process_name("build"): "document-building children (BuildDocuments)",
            process_name("complete"): "main-text children (CompleteMainText: pages, then their papers)"}


def _phases(sample: Path, build: Path, papers: int) -> None:
    """Run the stage once, sampling its processes' CPU, and print its phases (see the module
    docstring). A recycled child's CPU since the last sample is lost: at most 0.2 s each."""
    import re
    import threading
    import time

    with tempfile.TemporaryDirectory() as tmp:
        script, log, copy = Path(tmp) / "timed_run.py", Path(tmp) / "phases.jsonl", Path(tmp) / "build"
        script.write_text(_TIMED_RUN)
        shutil.copytree(build, copy)
        env = {**os.environ, "OPENMSD_PHASES_FILE": str(log), "PYTHONWARNINGS": "ignore"}
        start = time.time()
        run = subprocess.Popen([PYTHON, str(script), "text", "--out", str(copy), "--fetch",
                                f"warc:{sample}/warc/*.warc.gz"], env=env, stdout=subprocess.DEVNULL)
        samples, seen = [(start, 0.0)], {}

        def watch():  # an exited child's CPU stays in the sum: its last reading
            while run.poll() is None:
                seen.update(_tree_cpu(run.pid))
                samples.append((time.time(), sum(cpu for cpu, _name in seen.values())))
                time.sleep(0.2)
        watcher = threading.Thread(target=watch)
        watcher.start()
        run.wait()
        watcher.join()
        end = time.time()
        stages = [json.loads(line) for line in log.read_text().splitlines()]
    if run.returncode:
        raise SystemExit(f"the stage failed (exit {run.returncode})")

    def cpu_at(when: float) -> float:  # the processes' CPU by `when`
        return max((c for t, c in samples if t <= when), default=0.0)

    rows, cursor = [], start
    for begin, finish, name in stages:
        if begin - cursor > 0.05:  # the worker between stages: imports, the graph, planning
            rows.append((cursor, begin, ["(start-up: imports, graph, planning)" if not rows else "(between stages)"],
                         False))
        steps = re.findall(r"ref_AppliedPTransform_([A-Za-z0-9]+)", name) or re.findall(r"\(?([A-Za-z0-9]+)/", name)[:1]
        if rows and finish - begin < 1 and rows[-1][3] and begin - cursor <= 0.05:
            rows[-1] = (rows[-1][0], finish, rows[-1][2] + steps, True)  # short stages in a row: one line
        else:
            rows.append((begin, finish, steps, finish - begin < 1))
        cursor = finish
    rows.append((cursor, end, ["(after the last stage: stats, shutdown)"], False))
    print(f"text stage, {papers:,} papers: {end - start:.1f} s wall, {cpu_at(end):.1f} s CPU (all processes, "
          "sampled)\n\n   start   wall  cores  phase")
    alone = 0.0
    for begin, finish, steps, _short in rows:
        wall = finish - begin
        cores = (cpu_at(finish) - cpu_at(begin)) / wall if wall > 0 else 0.0
        alone += wall if cores < 1.5 else 0.0
        steps = list(dict.fromkeys(steps))
        print(f"  {begin - start:6.1f} {wall:6.1f} {cores:6.2f}  {', '.join(steps[:5])[:100]}"
              + (f" (+{len(steps) - 5} steps)" if len(steps) > 5 else ""))
    print(f"\n{alone:.1f} s of the wall ran on fewer than 1.5 cores")
    roles: dict[str, list[float]] = {}
    names = _roles()
    for pid, (cpu, name) in seen.items():
        role = "the Beam worker (the command's process)" if pid == run.pid else names.get(
            name, "others (the fork server, multiprocessing's resource tracker)")
        roles.setdefault(role, []).append(cpu)
    print(f"\n{'CPU s':>8} {'share':>6} {'processes':>9}  role")
    for role, cpus in sorted(roles.items(), key=lambda item: -sum(item[1])):
        total = sum(cpus)
        print(f"{total:8.1f} {100 * total / cpu_at(end):5.1f}% {len(cpus):9d}  {role}")


def _by_role(profiles: list[dict]) -> list[dict]:
    """The profiles of each role summed: CPU and each function's inclusive seconds."""
    import collections

    merged: dict[str, dict] = {}
    for p in profiles:
        into = merged.setdefault(p["role"], {"role": p["role"], "cpu_s": 0.0, "costs": collections.Counter()})
        into["cpu_s"] += p["cpu_s"]
        into["costs"].update(dict(p["functions"]))
    for into in merged.values():
        into["functions"] = into.pop("costs").most_common(200)
    return list(merged.values())


if __name__ == "__main__":
    main()
