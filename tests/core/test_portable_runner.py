"""The demo build gives identical rows on the in-process FnApiRunner and on Beam's
PortableRunner with SDK workers in separate processes (`--environment_type=EXTERNAL`, Beam's
worker pool started here from this interpreter).

Each output table is compared by a sha256 of its sorted rows. Everything is bounded: the
pool must come up within 60 s and each build has a timeout. The worker pool starts its
workers with the command `python` from PATH, so the fixture puts this interpreter's bin
folder first on PATH (otherwise a system python without Beam is started and the job hangs).
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.timeout(600)

BUILD_TIMEOUT = 300
# Columns that record wall-clock time, not content: `fetch.fetched_at` of a URL absent from
# the WARC is the replay time (an archived response keeps its WARC-Date).
VOLATILE = {"fetch": {"fetched_at"}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"worker pool exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"worker pool did not listen on port {port} within {timeout} s")


def _env() -> dict:
    env = os.environ.copy()
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture(scope="module")
def worker_pool():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        _wait_port(port, proc, 60)
        yield f"localhost:{port}"
    finally:
        # the pool and the SDK workers it forked share its session: stop them all
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)


def _build(sample: Path, out: Path, beam_args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "openmsd_build.cli", "run", "--inputs", str(sample), "--out", str(out),
         "--no-report", *beam_args],
        env=_env(), capture_output=True, text=True, timeout=BUILD_TIMEOUT,
    )
    assert proc.returncode == 0, f"build failed ({beam_args}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"


def table_digests(out: Path) -> dict[str, tuple[int, str]]:
    """{table folder: (rows, sha256 of its sorted rows)} for every Parquet folder of a build."""
    folders = sorted({p.parent for p in out.rglob("*.parquet")})
    digests = {}
    for folder in folders:
        name = folder.relative_to(out).as_posix()
        table = pa.concat_tables([pq.read_table(p) for p in sorted(folder.glob("*.parquet"))])
        drop = [c for c in VOLATILE.get(name, ()) if c in table.column_names]
        rows = sorted(repr(sorted(r.items())) for r in table.drop_columns(drop).to_pylist())
        digests[name] = (len(rows), hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest())
    return digests


@pytest.mark.timeout(900)  # two whole runs, one on a worker pool: the suite's longest test (~2.5 min loaded)
def test_fnapi_and_portable_multiprocess_give_identical_rows(tmp_path, worker_pool):
    sample = tmp_path / "sample"
    subprocess.run([sys.executable, "-m", "openmsd_build.cli", "sample", "--out", str(sample), "--papers", "300",
                    "--seed", "11"], env=_env(), check=True, capture_output=True, timeout=120)
    local, portable = tmp_path / "fnapi", tmp_path / "portable"
    _build(sample, local, ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])
    _build(sample, portable, [
        "--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=EXTERNAL",
        f"--environment_config={worker_pool}",
    ])
    a, b = table_digests(local), table_digests(portable)
    for table in ("papers", "documents", "fetch", "citations", "splits", "pairs/dc/split=train"):
        assert a.get(table, (0,))[0] > 0, f"{table} is empty or missing"
    assert a == b
