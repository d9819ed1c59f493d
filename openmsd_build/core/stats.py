"""Reading the per-stage count files (`_stats/<stage>.json`) that every stage writes."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import TypeVar

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError, damaged, shorten

MAX_JSON_BYTES = 32 << 20
"""Largest `_stats/*.json` (or evaluation result) read. A stage's stats are a few KB; a file of
hundreds of MB is damaged or planted, and reading it whole cost the report 29 s and 1.8 GB."""

T = TypeVar("T")

STATS_OBJECTS = ("counts", "built_from", "resources")
"""Fields of `_stats/<stage>.json` that are objects when present: readers call `.get` on them."""


def read_json(path: str, limit: int | None = None) -> dict:
    """A JSON object file, at most `limit` bytes. A file that is too large, not UTF-8, not JSON
    (or nested past Python's recursion limit) or not an object is a `UserError` naming it, so
    every command reading a build's JSON stops with one line and not a traceback.
    `limit` defaults to `MAX_JSON_BYTES`."""
    limit = MAX_JSON_BYTES if limit is None else limit
    try:
        with FileSystems.open(path) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise damaged(path, "cannot be read", exc) from None
    if len(data) > limit:
        raise damaged(path, f"is larger than {limit >> 20} MB: not a file this tool wrote (damaged?)")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise damaged(path, "is not a JSON file (damaged?)", exc) from None
    if not isinstance(doc, dict):
        raise damaged(path, f"holds a JSON {type(doc).__name__}, not an object (damaged?)")
    return doc


def read_stats(path: str) -> dict:
    """A stage's `_stats/<stage>.json` (`read_json`), its object fields (`STATS_OBJECTS`)
    checked: a list or number there made every reader's `.get` raise deep inside a command."""
    stats = read_json(path)
    for key in STATS_OBJECTS:
        if key in stats and not isinstance(stats[key], dict):
            raise damaged(path, f"its {key!r} is a JSON {type(stats[key]).__name__}, not an object (damaged?)")
    return stats


def read_optional_json(path: str, convert: Callable[[dict], T], what: str = "result") -> T | None:
    """`convert(doc)` of a JSON object a command shows if it can (an evaluation result, a
    recipe export's stats). None, and a warning naming the file, when the file is damaged
    (`read_json`) or `convert` raises on it: a file with the right top-level keys but a list
    where an object belongs failed deep inside the report's renderer, so `convert` runs the
    renderer on the file alone. Such a file is skipped, not fatal: the build's own tables are
    still worth reporting."""
    from openmsd_build.core.notices import warn

    try:
        return convert(read_json(path))
    except Exception as exc:  # noqa: BLE001 - whatever the renderer met, the file is what is wrong
        if isinstance(exc, UserError):
            detail = str(exc)
        else:
            detail = f"{shorten(path)}: not a {what} this tool can show ({type(exc).__name__}: {shorten(exc, 160)})"
        warn([f"{detail}; skipped"])
        return None


def read_stage_counts(out: str, stage: str) -> dict[str, int]:
    """The summed counts a stage wrote; {} when the stage has not run."""
    path = layout.stats_path(out, stage)
    if not FileSystems.exists(path):
        return {}
    return read_stats(path).get("counts", {})


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
        raise UserError(f"{stage}: the inputs held no records (empty files, or not the {stage} stage's input format?); "
                        "the previous outputs were kept")
    if sum(failures.values()) >= read:
        reasons = ", ".join(f"{k} {v:,}" for v, k in top) or "unknown"
        examples = first_rejects(dest, stage) if dest else []
        shown = "".join(f"\n  {line}" for line in examples)
        raise UserError(f"{stage}: all {read:,} records read were rejected ({reasons}); the previous outputs "
                        f"were kept{'. First rejects:' if shown else ''}{shown}")


def refuse_emptying(stage: str, folder: str, kept: int, what: str, why: str = "") -> None:
    """A `UserError` (the previous outputs are kept) when this run of `stage` kept no row
    (`kept`, e.g. 0 documents) where `folder`, which it replaces, holds some: a run that finds
    nothing (papers whose metadata gives no URL in the archive, another slice's OpenCitations
    file, an endpoint down) is far more often a mistake to undo than a result. `what`: the
    rows' name; `why`: the stage's own explanation. The message names the way through when
    the empty result is meant (a new slice into the same OUT): remove the folder first."""
    if kept:
        return
    previous = parquet_io.footer_rows(parquet_io.list_parts(folder))
    if previous:
        raise UserError(f"{stage}: this run kept 0 {what} where {folder} holds {previous:,}; the previous outputs "
                        f"were kept{why}\n  (if an empty {stage} output is what you mean, remove {folder} and run "
                        "again)")


def count_total(counts: Mapping[str, int], prefix: str) -> int:
    """The sum of every counter whose name starts with `prefix` (`rejected.` for all reasons)."""
    return sum(int(v) for k, v in counts.items() if k.startswith(prefix))


def unequal(identities: list[tuple[str, int, int]]) -> list[str]:
    """`what: left != right` for each identity `(what, left, right)` that does not hold."""
    return [f"{what}: {left:,} != {right:,}" for what, left, right in identities if left != right]


def rows_unlike_counts(expected: list[tuple[str, str, int]]) -> list[str]:
    """For each `(name, folder, rows counted)`: a problem when the Parquet parts of `folder`
    (their footers: no data is read) hold another number of rows."""
    problems = []
    for name, folder, want in expected:
        rows = parquet_io.footer_rows(parquet_io.list_parts(folder))
        if rows != want:
            problems.append(f"{name} holds {rows:,} rows where the counts say {want:,}")
    return problems


def refuse_unreconciled(stage: str, problems: list[str]) -> None:
    """A `UserError` (the previous outputs are kept) when a run's own counts do not add up
    (`problems`, from the stage's checks): records went missing, or came twice, between the
    stage's steps without a count or a reject (a runner that loses elements, or a bug), and a
    build quietly missing some papers must not replace a complete one. The checks catch such a
    loss; they cannot prove there was none (a lost count could offset a lost record)."""
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise UserError(f"{stage}: this run's counts do not reconcile ({shown}): records were lost or duplicated "
                        "between its steps, so nothing was replaced (a runner that loses elements, or a bug to "
                        "report with this line)")


def first_rejects(root: str, stage: str, n: int = 3, reasons: Collection[str] = ()) -> list[str]:
    """Up to `n` rejects of `stage` under `root` as `reason: detail (key)` lines, for a message;
    with `reasons`, only rejects of those reasons (the ones a warning beside them names)."""
    import pyarrow.parquet as pq

    from openmsd_build.core import parquet_io

    rows: list[dict] = []
    try:
        for part in parquet_io.list_parts(layout.rejects_dir(root, stage)):
            with FileSystems.open(part) as fh:
                for batch in pq.ParquetFile(fh).iter_batches(batch_size=max(n, 1000) if reasons else n):
                    rows += [r for r in batch.to_pylist() if not reasons or r.get("reason") in reasons]
                    if len(rows) >= n or not reasons:
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
    stats = read_stats(path)
    stats.update(fields)
    # renamed into place, as the stage wrote it (`beam_io._WriteJson`)
    parquet_io.write_bytes(json.dumps(stats, indent=2, sort_keys=True).encode("utf-8"), path)
    return True

