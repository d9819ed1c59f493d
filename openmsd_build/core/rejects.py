"""Reject rows: every failed record of every stage, with a countable reason.

A reject is a plain dict with the columns of `schemas.REJECTS`. Stages emit them on a tagged
output and write them under `rejects/<stage>/`, so counts reconcile:
records in = records out + rejects (+ documented merges).
"""

from __future__ import annotations

RAW_EXCERPT_CHARS = 2000


def make_reject(
    stage: str,
    reason: str,
    key: str | None = None,
    detail: str | None = None,
    source: str | None = None,
    raw: str | bytes | None = None,
) -> dict:
    """One reject row; `raw` is cut to an excerpt so a giant bad record cannot bloat rejects."""
    if isinstance(raw, bytes):
        raw = raw[: RAW_EXCERPT_CHARS * 2].decode("utf-8", errors="replace")
    if raw is not None and len(raw) > RAW_EXCERPT_CHARS:
        raw = raw[:RAW_EXCERPT_CHARS] + "…"
    if detail is not None and len(detail) > RAW_EXCERPT_CHARS:
        detail = detail[:RAW_EXCERPT_CHARS] + "…"
    return {
        "key": key,
        "stage": stage,
        "reason": reason,
        "detail": detail,
        "source": source,
        "raw": raw,
    }


# A bad input can fail every one of its millions of records. Each failure is always counted,
# but only the first `MAX_REJECTS_PER_FILE` of one input file become reject rows: past that,
# rows say nothing new and only cost memory downstream (a worker buffering a file's rejects)
# and storage. The stages count the rest as `rejects_suppressed`, so
# reject rows + rejects_suppressed = rejected, and read = written + rejected + merged holds.
MAX_REJECTS_PER_FILE = 10_000
# Stages that buffer reject rows hand them on at least this often (not once per file).
REJECT_FLUSH_ROWS = 1_000


class RejectBudget:
    """How many reject rows one input file may still produce (see `MAX_REJECTS_PER_FILE`)."""

    __slots__ = ("limit", "kept", "suppressed")

    def __init__(self, limit: int = MAX_REJECTS_PER_FILE) -> None:
        self.limit = limit
        self.kept = 0
        self.suppressed = 0

    def take(self) -> bool:
        """True if one more reject row may be written; else it is only counted as suppressed."""
        if self.kept < self.limit:
            self.kept += 1
            return True
        self.suppressed += 1
        return False
