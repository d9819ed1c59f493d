"""Reading the per-stage count files (`_stats/<stage>.json`) that every stage writes."""

from __future__ import annotations

import json

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout


def read_json(path: str) -> dict:
    with FileSystems.open(path) as f:
        return json.loads(f.read().decode("utf-8"))


def read_stage_counts(out: str, stage: str) -> dict[str, int]:
    """The summed counts a stage wrote; {} when the stage has not run."""
    path = layout.stats_path(out, stage)
    if not FileSystems.exists(path):
        return {}
    return read_json(path).get("counts", {})
