"""What `export` (plain or `--recipe`) checks on a build before it writes anything: where it
may write (`check_dest`) and whether the build has pairs to export (`refuse_empty`)."""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.parquet_io import join_path


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
