"""Shared fixtures: the real public samples beside the repository, and small helpers."""

from __future__ import annotations

import importlib.util
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (`derandomize`, no example database), so
# a clean clone's CI passes or fails on the code, not on the day's random draw. To explore new
# examples (and find the next hostile record), run with OPENMSD_HYPOTHESIS=explore.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
_PROFILE = os.environ.get("OPENMSD_HYPOTHESIS", "repeatable")
if _PROFILE not in ("repeatable", "explore"):
    raise ValueError(f"OPENMSD_HYPOTHESIS={_PROFILE!r}: use 'repeatable' (the default) or 'explore'")
settings.load_profile(_PROFILE)

REPO = Path(__file__).resolve().parents[1]
REAL_SAMPLES = Path(os.environ.get("OPENMSD_REAL_SAMPLES", REPO.parent / "shared" / "real-samples"))
# CI sets CI=true and provides ../shared/real-samples: there a missing sample is a failure,
# not a skip that only shows as a count.
IN_CI = os.environ.get("CI", "").lower() == "true"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal gives it, for this process and every command a test starts: a run
    started in the background (`make test &`, `nohup make test &`) inherits SIGINT ignored,
    every process below keeps it ignored (Python installs its KeyboardInterrupt handler only over
    the default action), and the tests that send a command its Ctrl-C saw nothing arrive (the
    interrupted release ran on and failed its way out, exit 1 for 130). A Python handler here is
    reset to the default action in each program a test executes."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


SOCKET_ROOM = 40
"""The longest temporary folder the tests' files may go under: the extractor pool's fork server
listens on a Unix socket at `<folder>/pymp-XXXXXXXX/listener-XXXXXXXX`, and such a path may hold
at most 104 bytes on macOS, 108 on Linux."""


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_in_one_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every temporary file of the run goes into one folder, not into the system's one run after
    another (a full run left ~100 folders there): Beam's own (a pipeline built and never run keeps
    its `beam-pipeline-temp*` folder; a graph for a remote runner writes its submission
    environment's package list), the stages' spools and those of every command a test starts
    (`TMPDIR` is inherited). The folder is pytest's for the session, which pytest prunes (it
    keeps the last three runs), or where that is too deep for a socket (macOS's), one short
    folder of the system's. Not removed at the end: multiprocessing removes its own folder in
    it as the interpreter exits, after every fixture."""
    folder = str(tmp_path_factory.mktemp("tmp"))
    if len(folder) > SOCKET_ROOM:
        folder = tempfile.mkdtemp(prefix="omsd-tests-")
    saved_env, saved_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = folder, folder
    yield
    tempfile.tempdir = saved_dir
    if saved_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved_env


def missing_input(what: str) -> NoReturn:
    """Skip (with the reason, which `make test` prints) or, in CI, fail: an input the test
    needs is absent."""
    if IN_CI:
        pytest.fail(f"{what} (CI=true: the real samples must be present)", pytrace=False)
    pytest.skip(what)


@pytest.fixture(scope="session")
def real_samples() -> Path:
    """`../shared/real-samples` (or $OPENMSD_REAL_SAMPLES); tests skip when it is absent
    (and fail in CI)."""
    if not REAL_SAMPLES.is_dir():
        missing_input(f"real samples not found at {REAL_SAMPLES} (set OPENMSD_REAL_SAMPLES)")
    return REAL_SAMPLES


@pytest.fixture(scope="session")
def repo_script() -> Callable[[str], ModuleType]:
    """`repo_script("bench/fidelity.py")`: a script of the repository that is not part of the
    package (bench/, deploy/), loaded as a module under its file's stem, so a test can call
    its functions."""

    def load(relative: str) -> ModuleType:
        path = REPO / relative
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    return load


@pytest.fixture
def run_site_module(tmp_path: Path) -> Callable[[str], None]:
    """`run_site_module(code)`: a bench script's `sitecustomize` text run as a module in this
    process, as every interpreter of its recorded stage run starts it (the caller restores
    what it patches, e.g. with monkeypatch)."""

    def run(code: str) -> None:
        site = tmp_path / "sitecustomize.py"
        site.write_text(code)
        spec = importlib.util.spec_from_file_location("recording_site", site)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))  # type: ignore[union-attr]

    return run


@pytest.fixture(scope="session")
def real_sample(real_samples: Path) -> Callable[[str], Path]:
    """`real_sample(name)`: one file of the real samples; a missing one skips the test with
    the reason (fails in CI)."""

    def get(name: str) -> Path:
        path = real_samples / name
        if not path.exists():
            missing_input(f"real sample {name} not found under {real_samples}")
        return path

    return get


@pytest.fixture(scope="session")
def beam_args() -> list[str]:
    """Pass-through Beam arguments for pipeline tests: the in-process FnApiRunner."""
    return ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]


@pytest.fixture()
def serve_http() -> Iterator[Callable[[type[BaseHTTPRequestHandler]], str]]:
    """Starts a threaded HTTP server on 127.0.0.1 for a handler class and answers its base URL
    (`http://127.0.0.1:PORT`); every server the test started is stopped at its end."""
    servers: list[ThreadingHTTPServer] = []

    def start(handler: type[BaseHTTPRequestHandler]) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
