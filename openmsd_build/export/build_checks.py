"""What `export` (plain or `--recipe`) checks before it writes anything: where it may write
(`check_dest`, `check_dest_folder`) and whether the build has pairs to export (`refuse_empty`);
and how a killed export's swap is finished (`recover_export`; the swap itself is
`staging.write_then_replace` of `EXPORT_ENTRIES`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from fnmatch import fnmatchcase

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError, shorten
from openmsd_build.core.parquet_io import join_path, match_paths
from openmsd_build.core.staging import path_exists, recover_entries

EXPORT_ENTRIES = ("retrieval", "beir", "trainer", "large_pool", "README.md", "export.json")
"""What a plain export writes at the top of its folder (`export_build`); a recipe export writes
`recipes/<name>/` beside them."""
EXPORT_FILES = (
    "retrieval/*/corpus.parquet", "retrieval/*/*/queries.parquet", "retrieval/*/*/qrels.parquet",
    "beir/*/*/corpus.jsonl", "beir/*/*/queries.jsonl", "beir/*/*/qrels/test.tsv",
    "trainer/*/pairs_*.parquet", "trainer/*/triplets.parquet", "trainer/*/title_abstract.parquet",
    "large_pool/README.md", "large_pool/pools/**", "large_pool/benchmark/**")
"""Every file a plain export writes inside its folders (`export_build`; `**`: anything below,
copied from `evaluate-pools`), with any option: `refuse_foreign_files` tells a user's file
there from the export's own."""
RECIPE_FILES = ("README.md", "recipe.json", "stats.json", "data/*/shard-*.parquet")
"""Every file a recipe export writes in `recipes/<name>/` (`recipe_export.export_recipe`)."""
PARTIAL = ".export-partial"
"""Where a plain export is written before it replaces the earlier one (`export_build`)."""
MARKERS = ("export.json", "recipes/<name>/recipe.json", "recipes/<name>/data/<split>/shard-*.parquet")
"""What an earlier export leaves in its folder (plain or recipe); `_holds_export` reads them."""


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


def check_dest_folder(out: str, dest: str) -> None:
    """A folder outside `OUT/export/` that holds files but no earlier export (`MARKERS`) is
    refused, as `release --to` refuses one without its manifest: the export writes README.md
    and export.json there, and a typo in --dest must not overwrite someone's files."""
    from openmsd_build.core.paths import inside

    held = [] if inside(join_path(out, "export"), dest) else [
        p for p in match_paths(join_path(dest, "**")) if not p.endswith("/") and f"/{PARTIAL}/" not in p]
    if held and not _holds_export(dest):
        raise UserError(f"--dest {dest} holds files but no earlier export ({' or '.join(MARKERS)}): not writing "
                        "into it (choose a new or empty folder)")


def refuse_foreign_files(folder: str, owned: Sequence[str]) -> None:
    """A `UserError` naming the first file under `folder` that is in one of the folders an
    export replaces whole (the first parts of `owned`) but matches none of `owned` (paths under
    `folder`, `*` one name, a last `**` anything below). A second export replaced `trainer/`
    and `recipes/<name>/` with their own files only, and a file the user had put there was
    deleted; it is refused before anything is written, and the user moves it out."""
    tops = {pattern.split("/")[0] for pattern in owned}
    base = join_path(folder, "**")[:-2]
    for path in match_paths(join_path(folder, "**")):
        rel = path[len(base):].split("/")
        if rel[-1].startswith("."):  # a file manager's litter (.DS_Store), replaced with its folder
            continue
        if rel[0] in tops and not any(_matches(rel, pattern.split("/")) for pattern in owned):
            raise UserError(f"{shorten(path)} was not written by export, which replaces "
                            f"{shorten(join_path(folder, rel[0]))} whole: move the file out of it first "
                            "(nothing was written)")


def _matches(parts: list[str], pattern: list[str]) -> bool:
    """Whether a path's parts match a pattern's (`refuse_foreign_files`)."""
    if pattern[-1] == "**":
        pattern = pattern[:-1]
        parts = parts[:len(pattern)] if len(parts) > len(pattern) else []
    return len(parts) == len(pattern) and all(fnmatchcase(p, w) for p, w in zip(parts, pattern, strict=True))


def _holds_export(dest: str) -> bool:
    """Whether `dest` holds an earlier export: an `export.json` that is this command's summary
    (a JSON object naming its build and configs), or a recipe export's `recipe.json` or
    shards (`data/<split>/shard-NNNNN.parquet`). A file or folder of one of those names alone
    is no proof: a project folder with a `recipes/` of
    its own lost its files to the export."""
    path = join_path(dest, "export.json")
    if path_exists(path):
        try:
            with FileSystems.open(path, compression_type="uncompressed") as fh:
                summary = json.loads(fh.read(1 << 24).decode("utf-8"))
        except (OSError, ValueError):
            summary = None
        if isinstance(summary, dict) and {"out", "configs"} <= set(summary):
            return True
    # a recipe export's card, or its shards (one killed before its card: locally under
    # recipes/NAME.partial/, on gs:// in place), so that its own retry is not refused
    return any(match_paths(join_path(dest, "recipes", *pattern)) for pattern in (
        ("*", "recipe.json"), ("*", "data", "*", "shard-*.parquet")))


def recover_export(dest: str, partial: str) -> None:
    """Before an export checks or writes DEST: the swap of an export killed inside it is
    finished, and a partial folder of an export that never finished writing is removed
    (`staging.recover_entries`)."""
    recover_entries(dest, partial, EXPORT_ENTRIES)
