"""A stage whose upstream was rebuilt after it ran is reported stale, and release / export
refuse a build with stale stages (before, the new report showed the old numbers)."""

from __future__ import annotations

import json

import pytest

from openmsd_build.core import stages
from openmsd_build.core.errors import UserError


def _write(tmp_path, stage: str, counts: dict) -> None:
    (tmp_path / "_stats").mkdir(exist_ok=True)
    (tmp_path / "_stats" / f"{stage}.json").write_text(json.dumps({"stage": stage, "counts": counts}))


def test_rebuilt_upstream_makes_downstream_stale(tmp_path) -> None:
    out = str(tmp_path)
    for stage in stages.STAGE_NAMES:
        _write(tmp_path, stage, {"written": 1})
        stages.record_provenance(out, stage)
    assert stages.stale_stages(out) == {}
    stages.require_fresh(out, "release")
    _write(tmp_path, "text", {"written": 2})  # text re-run on other inputs
    stages.record_provenance(out, "text")
    stale = stages.stale_stages(out)
    assert set(stale) == {"citations", "split", "pairs", "contexts"}
    assert "text was rebuilt" in stale["citations"] and "stale" in stale["pairs"]
    assert "text was rebuilt" in stale["contexts"]
    with pytest.raises(UserError, match="release refused: stale stages"):
        stages.require_fresh(out, "release")
    # re-running the dependents in order makes the build fresh again
    for stage in ("citations", "split", "pairs", "contexts"):
        stages.record_provenance(out, stage)
    assert stages.stale_stages(out) == {}


def test_timing_figures_do_not_change_the_fingerprint(tmp_path) -> None:
    a = {"counts": {"x": 1}, "resources": {"wall_s": 1.0}}
    b = {"counts": {"x": 1}, "resources": {"wall_s": 9.0}}
    assert stages.fingerprint(a) == stages.fingerprint(b)
    assert stages.fingerprint(a) != stages.fingerprint({"counts": {"x": 2}})


def test_downstream_is_transitive() -> None:
    assert stages.downstream("papers") == ("text", "citations", "split", "pairs", "contexts")
    assert stages.downstream("split") == ("pairs", "contexts")
    assert stages.downstream("pairs") == ()  # contexts owns pairs/ccs/ and reads no pairs


def test_an_upstream_table_without_stats_then_and_now_is_not_stale(tmp_path) -> None:
    """A papers/ table written by other means (a user's own, a bench script's) has no stats:
    text built from it was called stale ("upstream papers has no outputs") on every run; only
    stats that were there when the stage ran and are gone now make it stale."""
    out = str(tmp_path)
    _write(tmp_path, "text", {"written": 1})
    stages.record_provenance(out, "text")  # papers had no stats
    assert stages.stale_stages(out) == {}
    _write(tmp_path, "papers", {"written": 1})
    stages.record_provenance(out, "text")
    (tmp_path / "_stats" / "papers.json").unlink()
    assert stages.stale_stages(out) == {"text": "upstream papers was removed after text ran (no _stats/papers.json)"}


def test_a_ctrl_c_right_after_the_swap_leaves_the_stage_its_provenance(tmp_path, monkeypatch, capsys) -> None:
    """`built_from` was written into `_stats/<stage>.json` after the swap: a Ctrl-C in between
    (2 of ~60 Ctrl-Cs of papers and citations) left a stage without it, which staleness never
    judges again, so a later rebuild of its upstream went unnoticed. The swap puts it in."""
    from openmsd_build import cli
    from openmsd_build.core import staging

    inputs, out = tmp_path / "inputs", tmp_path / "build"
    assert cli.main(["sample", "--out", str(inputs), "--papers", "20", "--seed", "3"]) == 0
    assert cli.main(["run", "--inputs", str(inputs), "--out", str(out), "--fetch", "none", "--to-stage", "citations",
                     "--no-report"]) == 0
    swap = staging.swap_in

    def swap_then_ctrl_c(*args, **kwargs):
        swap(*args, **kwargs)
        raise KeyboardInterrupt  # the moment the new outputs are in

    monkeypatch.setattr(staging, "swap_in", swap_then_ctrl_c)
    assert cli.main(["citations", "--out", str(out), "--opencitations", str(inputs / "opencitations")]) == 130
    stats = json.loads((out / "_stats" / "citations.json").read_text())
    assert stats["built_from"] == {"text": stages.fingerprint(stages.read_stage_stats(str(out), "text"))}
