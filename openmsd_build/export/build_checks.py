"""What `export` (plain or `--recipe`) checks before it writes anything: where it may write
(`check_dest`, `prepare_dest`) and whether the build has pairs to export (`refuse_empty`)."""

from __future__ import annotations

import os

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.parquet_io import join_path, match_paths

EXPORT_ENTRIES = ("retrieval", "beir", "trainer", "large_pool", "README.md", "export.json")
"""What a plain export writes at the top of its folder (`export_build`); a recipe export writes
`recipes/<name>/` beside them."""
MARKERS = ("export.json", "recipes")
"""A folder holding one of these holds an earlier export (plain or recipe)."""


def check_dest(out: str, dest: str | None) -> None:
    """A `UserError` when `--dest` is the build itself or one of its folders other than
    `OUT/export/`: the export writes its own README.md (the build's card is OUT/README.md),
    retrieval/, trainer/ and recipes/ there, and would overwrite the build's."""
    from openmsd_build.core.paths import inside

    if dest is None or not inside(out, dest) or inside(join_path(out, "export"), dest):
        return
    raise UserError(f"--dest {dest} is the build {out} or a folder of it: give a folder outside it, or leave "
                    f"--dest out for {join_path(out, 'export')}")


def refuse_empty(out: str, what: str = "export",
                 lacking: str = "there is no retrieval task or trainer table to export") -> None:
    """A `UserError` when the pairs stage wrote no pair at all, with the build's own
    warnings as the reason (`core.notices`): e.g. citations kept no edge because the
    OpenCitations rows are about other papers than the metadata. `what` is refused, and
    `lacking` says what the missing pairs leave it without."""
    from openmsd_build.core.notices import build_warnings
    from openmsd_build.core.stats import read_stage_counts

    counts = read_stage_counts(out, "pairs")
    if not counts and not FileSystems.exists(layout.stats_path(out, "pairs")):
        return  # not built: the readers below say what is missing
    if any(v for k, v in counts.items() if k.startswith(("dc_kept.", "cc_pairs.", "bc_pairs."))):
        return
    why = [f"{stage}: {line}" for stage, lines in build_warnings(out).items() for line in lines]
    raise UserError(f"{what} refused: the build has no related pairs, so {lacking}"
                    + "".join(f"\n  {line}" for line in why or ["(no stage recorded a warning)"]))


def prepare_dest(out: str, dest: str, plain: bool) -> None:
    """Make `dest` ready for an export of build `out`: a folder outside `OUT/export/` that
    holds files but no earlier export (`MARKERS`) is refused, as `release --to` refuses one
    without its manifest (the export writes README.md and export.json there: a typo in --dest
    must not overwrite someone's files); for a plain export, the entries an earlier one wrote (`EXPORT_ENTRIES`) are
    removed first, so a narrower export (fewer splits or relations) leaves no table of the
    last one for a loader that globs the folder. Recipes and other files are kept."""
    from openmsd_build.core.paths import inside

    held = [] if inside(join_path(out, "export"), dest) else [
        p for p in match_paths(join_path(dest, "**")) if not p.endswith("/")]
    if held and not any(FileSystems.exists(join_path(dest, marker)) for marker in MARKERS):
        raise UserError(f"--dest {dest} holds files but no earlier export ({' or '.join(MARKERS)}): not writing "
                        "into it (choose a new or empty folder)")
    if not plain:
        return
    for entry in EXPORT_ENTRIES:
        path = join_path(dest, entry)
        if "://" not in path and os.path.islink(path):
            os.unlink(path)  # a link is removed, never what it points to
        elif FileSystems.exists(path):
            FileSystems.delete([path])
