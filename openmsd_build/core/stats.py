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


def refuse_all_rejected(stage: str, counts: dict, read: int, written: int, failures: dict[str, int]) -> None:
    """A `UserError` when a stage read its inputs but wrote nothing because every record
    failed (a folder or the wrong source type given, an empty or corrupt file): such a run
    must not replace good outputs with empty ones, nor exit 0. `failures` are the
    reject reasons' counts; the message names the largest."""
    from openmsd_build.core.errors import UserError

    if written > 0:
        return
    top = sorted(((v, k) for k, v in failures.items() if v), reverse=True)[:5]
    if read == 0:
        raise UserError(f"{stage}: the inputs held no records (empty files, or not {stage}'s input format?); "
                        "the previous outputs were kept")
    if sum(failures.values()) >= read:
        reasons = ", ".join(f"{k} {v:,}" for v, k in top) or "unknown"
        raise UserError(f"{stage}: all {read:,} records read were rejected ({reasons}); see the rejects of this "
                        f"run's message above or `_stats/{stage}.json` of a run that succeeded; the previous outputs "
                        "were kept")


def update_stage_stats(out: str, stage: str, fields: dict) -> bool:
    """Add `fields` to `_stats/<stage>.json` after the stage ran (one read, one write);
    False, and nothing written, when the stage wrote no stats."""
    path = layout.stats_path(out, stage)
    if not FileSystems.exists(path):
        return False
    stats = read_json(path)
    stats.update(fields)
    with FileSystems.create(path) as f:
        f.write(json.dumps(stats, indent=2, sort_keys=True).encode("utf-8"))
    return True

