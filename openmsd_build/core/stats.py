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


def refuse_all_rejected(stage: str, counts: dict, read: int, written: int, failures: dict[str, int],
                        dest: str | None = None, max_reject_rate: float | None = None) -> None:
    """A `UserError` when a stage read its inputs but wrote nothing because every record
    failed (a folder or the wrong source type given, an empty or corrupt file): such a run
    must not replace good outputs with empty ones, nor exit 0. `failures` are the
    reject reasons' counts; the message names the largest and quotes the first rejects
    (read from the staging root `dest`, which is dropped with the failed run). Also when
    more than `max_reject_rate` of the records read were rejected (`core.notices`)."""
    from openmsd_build.core.errors import UserError
    from openmsd_build.core.notices import check_reject_rate

    if written > 0:
        check_reject_rate(stage, counts, max_reject_rate)
        return
    top = sorted(((v, k) for k, v in failures.items() if v), reverse=True)[:5]
    if read == 0:
        raise UserError(f"{stage}: the inputs held no records (empty files, or not {stage}'s input format?); "
                        "the previous outputs were kept")
    if sum(failures.values()) >= read:
        reasons = ", ".join(f"{k} {v:,}" for v, k in top) or "unknown"
        examples = first_rejects(dest, stage) if dest else []
        shown = "".join(f"\n  {line}" for line in examples)
        raise UserError(f"{stage}: all {read:,} records read were rejected ({reasons}); the previous outputs "
                        f"were kept{'. First rejects:' if shown else ''}{shown}")


def first_rejects(root: str, stage: str, n: int = 3) -> list[str]:
    """Up to `n` rejects of `stage` under `root` as `reason: detail (key)` lines, for a message."""
    import pyarrow.parquet as pq

    from openmsd_build.core import parquet_io

    rows: list[dict] = []
    try:
        for part in parquet_io.list_parts(layout.rejects_dir(root, stage)):
            with FileSystems.open(part) as fh:
                for batch in pq.ParquetFile(fh).iter_batches(batch_size=n):
                    rows += batch.to_pylist()
                    break
            if len(rows) >= n:
                break
    except Exception:  # noqa: BLE001 - examples only; the counts already say what failed
        return []
    return [f"{r.get('reason')}: {str(r.get('detail') or '')[:160]} ({r.get('key') or r.get('source') or ''})"
            for r in rows[:n]]


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

