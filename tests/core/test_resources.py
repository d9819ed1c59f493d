"""Per-stage wall time, CPU time and peak memory land in `_stats/<stage>.json`."""

from __future__ import annotations

import json

from openmsd_build.core import layout, resources


def test_measured_and_recorded(tmp_path) -> None:
    out = str(tmp_path)
    stats = layout.stats_path(out, "split")
    (tmp_path / "_stats").mkdir()
    (tmp_path / "_stats" / "split.json").write_text(json.dumps({"counts": {"train": 3}}))
    with resources.measured() as figures:
        sum(i * i for i in range(200_000))
    assert figures["wall_s"] >= 0 and figures["cpu_s"] > 0 and figures["peak_rss_mb"] > 10
    resources.record(out, "split", figures)
    saved = json.loads(open(stats).read())
    assert saved["counts"] == {"train": 3} and saved["resources"] == figures
    resources.record(out, "pairs", figures)  # no stats file: nothing written
    assert not (tmp_path / "_stats" / "pairs.json").exists()
    table = resources.timing_table({"split": figures})
    assert table.splitlines()[1].startswith("split")
