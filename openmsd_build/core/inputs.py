"""Resolving the user's input globs (local or `gs://`) into files, with clear errors."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core.errors import UserError
from openmsd_build.core.folders import folder_files, is_documentation, regular_file_size


def expand_globs(globs: Iterable[str], what: str) -> list[tuple[str, int]]:
    """Every file matched by `globs` as `(path, size_in_bytes)`, sorted; a glob that
    matches nothing is an error (a typo must not silently build an empty dataset). A
    folder (local, or remote ending in `/`) stands for every file under it, recursively,
    for every source alike, notes and checksum lists left out (`folder_files`); a local file whose name holds glob characters
    (`a[1].json.gz`) is read as named."""
    files: dict[str, int] = {}
    for pattern in globs:
        if _is_local_folder(pattern):
            left_out: list[str] = []
            found = folder_files(pattern, left_out, what)
            if not found:
                notes = f" but notes or checksums ({', '.join(os.path.basename(p) for p in left_out[:3])}: name a " \
                        "file on its own to read it)" if left_out else ""
                raise UserError(f"{what} input {pattern!r} is a folder with no data file in it{notes} (folders are "
                                "read recursively)")
            files.update(found)
            continue
        local = pattern.removeprefix("file://")
        if "://" not in local and any(c in local for c in _GLOB_CHARS) and os.path.isfile(local):
            files[local] = regular_file_size(local, what)  # a file whose name holds `[`, `*` or `?` is itself
            continue
        folder = "://" in pattern and pattern.endswith("/")
        if folder:
            pattern += "**"  # a remote folder: everything under it, as a local one
        try:
            matches = FileSystems.match([pattern])[0].metadata_list
        except Exception as exc:  # noqa: BLE001 - Beam wraps filesystem errors in BeamIOError
            raise UserError(f"cannot list {what} input {pattern!r}: {exc}") from exc
        matched = [m for m in matches if not m.path.endswith("/")
                   and not (folder and is_documentation(m.path.rsplit("/", 1)[-1]))]
        if not matched:
            raise UserError(f"{what} input {pattern!r} matches no file")
        for m in matched:
            local_match = m.path.removeprefix("file://")
            # a FIFO or a device matches like a file (size 0) and would hang the stage
            files[m.path] = m.size_in_bytes if "://" in local_match else regular_file_size(local_match, what)
    return _once_each(sorted(files.items()), what)


def _once_each(files: list[tuple[str, int]], what: str) -> list[tuple[str, int]]:
    """`files` with each local file once, however it was spelled (`a.csv` and `./a.csv`, a
    folder and a glob inside it, a link to it): read twice, its records were all counted as
    duplicates of themselves. Said on the log, since the user named it twice."""
    import logging

    kept: dict[str, tuple[str, int]] = {}
    for path, size in files:
        local = path.removeprefix("file://")
        key = path if "://" in local else os.path.realpath(local)
        if key in kept:
            logging.getLogger(__name__).warning("%s input %s is %s again: read once", what, path, kept[key][0])
            continue
        kept[key] = (path, size)
    return list(kept.values())


def _is_local_folder(pattern: str) -> bool:
    return ("://" not in pattern or pattern.startswith("file://")) and os.path.isdir(pattern.removeprefix("file://"))


def default_shards(total_bytes: int, bytes_per_shard: int = 32 << 20, minimum: int = 4, maximum: int = 8192) -> int:
    """Shard count from the input size: ~32 MiB of (compressed) input per shard keeps each
    shard's merge in memory small on any worker, and is deterministic for given inputs."""
    return max(minimum, min(maximum, math.ceil(total_bytes / bytes_per_shard)))



def expand_input_files(patterns: Sequence[str], what: str = "input") -> list[str]:
    """Files, globs or folders (recursively) -> sorted file list; a pattern matching
    nothing is a `UserError` (see `expand_globs`)."""
    return [path for path, _ in expand_globs(patterns, what)]


def absolute_path(path: str) -> str:
    """A local path made absolute (what a stage records of its inputs, so a later command run
    from another folder still finds them), a remote URI as it is."""
    return path if "://" in path else os.path.abspath(path)


def at_least(minimum: int):
    """An argparse `type` for a count flag: an int of at least `minimum` (a negative `--shards`
    named files `part--0001-of--0002.parquet`). A count out of range is a usage error when the
    command line is parsed (exit 2, one line naming the flag), before any input is read or
    any output touched: never a check inside a command's run."""
    import argparse

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, not {number}")
        return number

    return parse


def counts_at_least(minimum: int):
    """An argparse `type` for a comma-separated list of counts (`--pool-sizes 10000,50000`):
    at least one, each a whole number of at least `minimum` (as `at_least`), as a list; blank
    items (`10,`) are skipped."""
    import argparse

    def parse(value: str) -> list[int]:
        items = [item.strip() for item in value.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{value!r} holds no number (comma-separated whole numbers)")
        numbers = []
        for item in items:
            try:
                number = int(item)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{item!r} is not a whole number (comma-separated whole "
                                                 "numbers)") from None
            if number < minimum:
                raise argparse.ArgumentTypeError(f"each must be {minimum} or more, not {number}")
            numbers.append(number)
        return numbers

    return parse


def number_from(minimum: float, inclusive: bool = True, maximum: float | None = None,
                maximum_inclusive: bool = True):
    """An argparse `type` for a finite number of at least `minimum` (above it when not
    `inclusive`) and, with `maximum`, at most `maximum` (below it when not
    `maximum_inclusive`): `enrich --rate -1` meant no limit, `inspect --timeout 0` every
    extraction a timeout, and nan passes any comparison. Refused when parsed, as `at_least`."""
    import argparse
    import math

    if maximum is not None and inclusive and maximum_inclusive:
        bounds = f"from {minimum:g} to {maximum:g}"
    else:
        bounds = f"{minimum:g} or more" if inclusive else f"above {minimum:g}"
        if maximum is not None:
            bounds += f" and {maximum:g} or less" if maximum_inclusive else f" and below {maximum:g}"

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        too_low = number < minimum or (number == minimum and not inclusive)
        too_high = maximum is not None and (number > maximum or (number == maximum and not maximum_inclusive))
        if not math.isfinite(number) or too_low or too_high:
            raise argparse.ArgumentTypeError(f"must be {bounds}, not {value}")
        return number

    return parse


def add_out_argument(parser, help_text: str) -> None:
    """`OUT` as a positional or as `--out OUT` (every command takes `--out`; the positional
    form stays for commands that always had it). `resolve_out` merges the two."""
    parser.add_argument("out_positional", nargs="?", metavar="OUT", help=help_text)
    parser.add_argument("--out", dest="out", default=None, help=help_text)


def resolve_out(args) -> None:
    """Set `args.out` from `--out` or the positional OUT; a `UserError` when neither or two
    different roots are given."""
    from openmsd_build.core.errors import UserError

    positional = getattr(args, "out_positional", None)
    if args.out and positional and args.out != positional:
        raise UserError(f"two output roots given: {positional} and --out {args.out}")
    args.out = args.out or positional
    if not args.out:
        raise UserError("the output root is required (OUT or --out OUT)")


_FETCH_SCHEMES = ("warc:", "cc-index:", "local:")
_GLOB_CHARS = "*?["


def refuse_inputs_in_outputs(out: str, stages: Sequence[str], values: Iterable[object],
                             prefixes: Iterable[str] = ()) -> None:
    """A `UserError` when an input path or glob among `values` (the commands' flag values)
    lies in a path of OUT that `stages` replace (`staging.owned_paths`: their outputs,
    `rejects/<stage>/`, `_stats/<stage>.json`):
    the swap would delete the input with the old outputs, before or while it is read. A
    glob's folder part is what counts (`OUT/papers/*.jsonl.gz` is in `OUT/papers/`); a
    `--fetch` value's globs, folder and manifest count each (`_input_paths`). Also when a
    folder read whole holds OUT; not a folder only some of whose files are read: `prefixes`
    (`--warc-prefix`) and a `local:FOLDER@MANIFEST` (the manifest's files)."""
    from openmsd_build.core.parquet_io import join_path
    from openmsd_build.core.paths import inside
    from openmsd_build.core.stages import stage as stage_entry
    from openmsd_build.core.staging import owned_paths

    # what the staging swap replaces, as it defines it
    replaced = [join_path(out, path) for name in stages for path in owned_paths(name, stage_entry(name).outputs)]
    for text, path, whole in _input_paths(values, prefixes):
        cut = min((i for i in (path.find(c) for c in _GLOB_CHARS) if i >= 0), default=len(path))
        fixed = path[:cut] if cut == len(path) else os.path.dirname(path[:cut])
        if not fixed:
            continue
        hit = next((folder for folder in replaced if inside(folder, fixed)), None)
        if hit is not None:
            raise UserError(f"input {text!r} is inside {hit}, which this run replaces (and would delete with "
                            "its old outputs): move the input out of the build's folders")
        if whole and fixed == path and inside(fixed, out) and os.path.isdir(fixed.removeprefix("file://")):
            # a folder is read whole: the build's own outputs would be read as input, and
            # inputs kept in its replaced folders deleted with them
            raise UserError(f"input folder {text!r} holds the build {out}: its outputs would be read as input "
                            "(and any input kept in them deleted): give the input files or a folder beside "
                            "the build")


def _input_paths(values: Iterable[object], prefixes: Iterable[str]) -> Iterator[tuple[str, str, bool]]:
    """`(flag value, path or glob, read whole?)` of every path among the flag values: a value
    as given, or its text when it is a parsed value that prints as the flag (the text stage's
    `--fetch`); a `--fetch` value's globs one by one after its `warc:` / `cc-index:` prefix, and
    a `local:FOLDER@MANIFEST`'s folder (only some of its files are read) and manifest; the
    `prefixes` (`--warc-prefix`: only the files an index names are read)."""
    for value in values:
        for item in value if isinstance(value, list | tuple) else [value]:
            text = item if isinstance(item, str) else _flag_text(item)
            if text is None or not ("/" in text or any(c in text for c in _GLOB_CHARS)):
                continue  # a path names a folder or a glob (a stage name, "none", a number is none)
            scheme = next((s for s in _FETCH_SCHEMES if text.startswith(s)), None)
            if scheme == "local:":
                folder, manifest = split_local_spec(text[len(scheme):])
                yield text, folder, not manifest
                if manifest:
                    yield text, manifest, False
            elif scheme is not None:
                yield from ((text, glob, True) for glob in text[len(scheme):].split(",") if glob)
            else:
                yield text, text, True
    for text in prefixes:
        yield text, text, False


def split_local_spec(rest: str) -> tuple[str, str]:
    """`FOLDER[@MANIFEST]` (what follows `local:`) -> (folder, manifest or ""). A folder whose
    name holds `@` (`data@2024`) is the folder when it is one: the split is at the first `@`
    before which an existing folder stands. The text stage and the input guard read it so."""
    cuts = [i for i, c in enumerate(rest) if c == "@"]
    if os.path.isdir(rest) or not cuts:
        return rest, ""
    at = next((i for i in cuts if os.path.isdir(rest[:i])), cuts[0])
    return rest[:at], rest[at + 1:]


def _flag_text(value: object) -> str | None:
    """A parsed flag value's own spelling, when its type defines one (`__str__`); None for
    numbers, flags and objects that only have a representation."""
    if value is None or isinstance(value, bool | int | float) or type(value).__str__ is object.__str__:
        return None
    return str(value)


def refuse_foreign_folders(out: str, names: Iterable[str]) -> None:
    """A `UserError` when OUT is not a build yet (no `_stats/`: no stage has finished there) but
    already holds one of `names` (paths relative to OUT that the run replaces or deletes, such
    as `report/` or `export/`): they are someone else's folders, not an earlier run's outputs,
    and `run` would delete them before its first stage, a stage's swap when it ends."""
    from openmsd_build.core.parquet_io import join_path, match_paths
    from openmsd_build.core.staging import holds_stage_roots, path_exists

    if match_paths(join_path(out, "_stats", "*.json")):  # a stage finished here (a gs:// folder is no object)
        return
    if holds_stage_roots(out):  # a stage ran here: a first run killed inside its swap
        return
    found = [name for name in names if path_exists(join_path(out, name))]
    if found:
        raise UserError(f"--out {out} is not a build (no _stats/) but holds {', '.join(found)}, which this run would "
                        "replace: move them away or choose a new folder")
