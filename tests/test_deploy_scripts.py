"""The deploy scripts run every stage of the build: Dataflow's `launch.sh`, Flink's `run.sh`
and the flex template's command list follow the stage registry (`core.stages`), so a new
stage cannot be left out of the "full build" they document (contexts once was)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openmsd_build.cli import build_parser
from openmsd_build.core.stages import STAGE_NAMES

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
SCRIPTS = [DEPLOY / "dataflow" / "launch.sh", DEPLOY / "flink" / "run.sh"]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_run_every_stage_in_order(script: Path) -> None:
    text = script.read_text()
    stages = re.search(r"^STAGES=\(([^)]*)\)", text, re.MULTILINE)
    assert stages is not None, f"{script}: no STAGES=(...) list"
    assert stages.group(1).split() == [*STAGE_NAMES, "release"]
    for stage in (*STAGE_NAMES, "release"):  # each has its command line in the loop
        assert re.search(rf"^\s+{stage}\)\s+\S*(?:run_stage|OPENMSD)\S*\s+{stage}\b", text, re.MULTILINE), stage


def test_flex_template_accepts_every_stage() -> None:
    metadata = json.loads((DEPLOY / "dataflow" / "metadata.json").read_text())
    command = next(p for p in metadata["parameters"] if p["name"] == "command")
    pattern = re.compile(command["regexes"][0])
    for name in (*STAGE_NAMES, "release", "reconstruct"):
        assert pattern.match(name) and name in command["helpText"], name
    order = re.search(r"in order: ([a-z, ]+)\.", metadata["description"])
    assert order is not None and order.group(1).split(", ") == [*STAGE_NAMES, "release"]


def test_flex_template_turns_parameters_into_the_stage_command(repo_script) -> None:
    """`--command=contexts --build_root=gs://…` becomes `contexts --out gs://…`, with a glob
    parameter holding several globs split into repeated flags, and the CLI parses it."""
    flex_main = repo_script("deploy/dataflow/flex_main.py")
    argv = flex_main.translate(["--command=contexts", "--build_root=gs://b/build",
                                "--crossref=gs://s/crossref/a*.json.gz;gs://s/crossref/b*.json.gz"])
    assert argv == ["contexts", "--out", "gs://b/build", "--crossref=gs://s/crossref/a*.json.gz",
                    "--crossref=gs://s/crossref/b*.json.gz"]
    args = build_parser("contexts").parse_args(argv)
    assert args.out == "gs://b/build"
    assert args.crossref == ["gs://s/crossref/a*.json.gz", "gs://s/crossref/b*.json.gz"]
