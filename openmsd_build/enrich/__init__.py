"""Optional stage `enrich`: English summaries for non-English papers (see `command`).

Kept import-light: `evaluate` and `export` import `enriched_dir` and `check_current` from here."""

from __future__ import annotations

STAGE = "enrich"
FOLDER = "enriched"


def enriched_dir(out: str) -> str:
    """`OUT/enriched/`: one row per enriched paper (schema ENRICHED)."""
    from openmsd_build.core.parquet_io import join_path

    return join_path(out, FOLDER)


def text_fingerprint(out: str) -> dict[str, str]:
    """`{"text": fingerprint}` of the text stage whose documents enrich reads (its `built_from`)."""
    from openmsd_build.core.stages import fingerprint, read_stage_stats

    stats = read_stage_stats(out, "text")
    return {"text": fingerprint(stats)} if stats is not None else {}


def check_current(out: str) -> None:
    """A `UserError` when `OUT/enriched/` was made from another text stage than the build's
    (text was rebuilt after enrich ran): its summaries are of other documents, and none is of
    the new ones. A run recorded before `built_from` existed is not judged."""
    from openmsd_build.core.errors import UserError
    from openmsd_build.core.stages import read_stage_stats

    recorded = (read_stage_stats(out, STAGE) or {}).get("built_from")
    if recorded is not None and recorded != text_fingerprint(out):
        raise UserError(f"{enriched_dir(out)} is stale: the text stage was rebuilt after enrich ran; re-run "
                        "`openmsd-build enrich`, or use --text raw")
