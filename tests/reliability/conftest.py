"""Fixtures of the reliability suite: one small sample (written by `openmsd-build sample`)
and two full clean builds of it (`openmsd-build run`), run side by side in subprocesses.

`tests/reliability` is on sys.path (pytest's rootdir-relative import of test modules with no
`__init__.py`), so tests import the helpers here directly: `reconcile`, `corrupt`,
`harness`, `faults`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE_PAPERS = int(os.environ.get("OPENMSD_RELIABILITY_PAPERS", "120"))
SAMPLE_SEED = 5
CLI = [sys.executable, "-m", "openmsd_build.cli"]


@pytest.fixture(scope="session")
def sample_inputs(tmp_path_factory) -> Path:
    """A sample written by `openmsd-build sample` (Unpaywall, Crossref, COCI, WARC)."""
    out = tmp_path_factory.mktemp("sample") / "inputs"
    subprocess.run([*CLI, "sample", "--out", str(out), "--papers", str(SAMPLE_PAPERS), "--seed", str(SAMPLE_SEED)],
                   check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="session")
def clean_builds(sample_inputs, tmp_path_factory) -> tuple[Path, Path]:
    """Two uninterrupted `openmsd-build run` builds of the sample into separate roots,
    started concurrently (one process each)."""
    root = tmp_path_factory.mktemp("builds")
    outs = (root / "a", root / "b")
    procs = [subprocess.Popen([*CLI, "run", "--inputs", str(sample_inputs), "--out", str(o), "--no-report"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for o in outs]
    for proc in procs:
        output, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, output.decode("utf-8", "replace")[-4000:]
    return outs


# The demo's sample and flags (Makefile: DEMO_PAPERS, DEMO_SEED, DEMO_TOP_K).
DEMO_PAPERS, DEMO_SEED, DEMO_TOP_K = 2000, 7, 10


@pytest.fixture(scope="session")
def demo_build(tmp_path_factory) -> tuple[Path, Path]:
    """(inputs, build) of the demo: `openmsd-build sample` of 2,000 papers and `openmsd-build
    run` through every stage with the demo's flags, built once per session (~1 min of stages
    on 2 cores) for the checks against the generator's truth and the schemas."""
    root = tmp_path_factory.mktemp("demo")
    inputs, out = root / "inputs", root / "build"
    subprocess.run([*CLI, "sample", "--out", str(inputs), "--papers", str(DEMO_PAPERS), "--seed", str(DEMO_SEED)],
                   check=True, capture_output=True, timeout=600)
    done = subprocess.run([*CLI, "run", "--inputs", str(inputs), "--out", str(out), "--seed", str(DEMO_SEED),
                           "--top-k", str(DEMO_TOP_K)], capture_output=True, timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr).decode("utf-8", "replace")[-4000:]
    return inputs, out
