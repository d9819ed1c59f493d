"""Optional stage `enrich`: English summaries for non-English papers (see `command`).

Kept import-light: `evaluate` and `export` import `enriched_dir` from here."""

from __future__ import annotations

STAGE = "enrich"
FOLDER = "enriched"


def enriched_dir(out: str) -> str:
    """`OUT/enriched/`: one row per enriched paper (schema ENRICHED)."""
    from openmsd_build.core.parquet_io import join_path

    return join_path(out, FOLDER)
