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
