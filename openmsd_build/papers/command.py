"""Stage 1, `openmsd-build papers`: Unpaywall + Crossref (+ OpenAlex) joined by DOI.

Flags, input checks and the run; the Beam graph is `pipelines/papers.py`, the work itself
is in `openmsd_build.papers.join` (read, project, merge a shard).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence

import apache_beam as beam

from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least, default_shards, expand_globs, number_from
from openmsd_build.core.notices import DEFAULT_MAX_REJECT_RATE, add_reject_rate_argument
from openmsd_build.core.runner import is_local_runner, pipeline_options
from openmsd_build.core.staging import stage_outputs
from openmsd_build.core.stats import (
    count_total,
    read_stage_counts,
    refuse_all_rejected,
    refuse_unreconciled,
    rows_unlike_counts,
    unequal,
)
from openmsd_build.papers.join import LINE_SPLIT_BYTES
from openmsd_build.papers.parallel import default_parse_workers
from openmsd_build.papers.sources.registry import SOURCE_NAMES, SOURCES, add_source_arguments, source_globs
from openmsd_build.pipelines.papers import build


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of the build (local path or gs://)")
    add_source_arguments(parser)
    parser.add_argument("--split-files-over", type=number_from(0), default=LINE_SPLIT_BYTES / (1 << 20), metavar="MIB",
                        help="JSON Lines files larger than this (compressed MiB) are cut into line chunks parsed by "
                        "every worker (default 256; 0: always)")
    parser.add_argument("--parse-workers", type=at_least(0), default=0, metavar="N",
                        help="processes that parse the snapshot files, and then merge the shards and encode their "
                        "Parquet files, on a local run (default 0: one per core when the inputs are 16 MiB or more, else "
                        "1, i.e. in the Beam worker itself; always 1 on Dataflow, Flink and other distributed runners)")
    parser.add_argument("--shards", type=at_least(0), default=0,
                        help="shuffle shards = output files (default: ~1 per 32 MiB of input)")
    add_reject_rate_argument(parser)


def check_counts(counts: Mapping[str, int]) -> list[str]:
    """The stage's identity; [] when it holds: every record read is written, rejected or
    merged into another of its DOI (`read.*` = `written` + `rejected.*` + `merged_records`).
    `run_papers` refuses a run that breaks it or `check_outputs`."""
    return unequal([("read.* = written + rejected.* + merged_records", count_total(counts, "read."),
                     int(counts.get("written", 0)) + count_total(counts, "rejected.")
                     + int(counts.get("merged_records", 0)))])


def check_outputs(root: str, counts: Mapping[str, int]) -> list[str]:
    """papers/ holds `written` rows, rejects/papers/ the rejected records less those past a
    file's cap, only counted (`rejects_suppressed.*`); [] when both hold."""
    from openmsd_build.core import layout

    return rows_unlike_counts([
        ("papers/", layout.papers_dir(root), int(counts.get("written", 0))),
        ("rejects/papers/", layout.rejects_dir(root, "papers"),
         count_total(counts, "rejected.") - count_total(counts, "rejects_suppressed.")),
    ])


def run(args: argparse.Namespace, beam_args: list[str]) -> dict:
    counts = run_papers(args.out, source_globs(args), beam_args, args.shards,
                        split_over=int(args.split_files_over * (1 << 20)), parse_workers=args.parse_workers,
                        max_reject_rate=getattr(args, "max_reject_rate", DEFAULT_MAX_REJECT_RATE))
    print(summary_line(counts))
    return counts


def run_papers(
    out: str,
    globs: Mapping[str, Sequence[str]],
    beam_args: Sequence[str],
    shards: int = 0,
    split_over: int = LINE_SPLIT_BYTES,
    parse_workers: int = 0,
    max_reject_rate: float | None = DEFAULT_MAX_REJECT_RATE,
) -> dict:
    """Build `papers/` from snapshot globs per source (`{"unpaywall": [...], ...}`, names
    from the source registry); returns the stage's counts. `parse_workers`: processes that
    parse, then merge and encode the shards, on a local run (0: `parallel.default_parse_workers`, one per core locally; a
    distributed runner always parses in its own workers)."""
    options = pipeline_options(beam_args)  # first: the globs below may be gs:// (FileSystems options)
    if parse_workers < 0:  # for callers from Python: the command refuses it when parsing its flags
        raise UserError("papers: --parse-workers must be 0 (one per core) or more")
    unknown = sorted(set(globs) - set(SOURCE_NAMES))
    if unknown:
        raise UserError(f"papers: unknown source(s) {', '.join(unknown)}; sources are {', '.join(SOURCE_NAMES)}")
    inputs = [(s.name, g) for s in SOURCES for g in globs.get(s.name) or ()]
    if not inputs:
        raise UserError("papers: give at least one of " + ", ".join(s.flag for s in SOURCES))
    files: list[tuple[str, str]] = []
    sizes: dict[str, int] = {}
    total_bytes = 0
    for source, pattern in inputs:
        for path, size in expand_globs([pattern], f"--{source}"):
            files.append((source, path))
            sizes[path] = size
            total_bytes += size
    # The snapshot files read, recorded in `_stats/papers.json` (the release's source versions).
    input_files = [{"source": s, "path": f, "bytes": sizes[f]} for s, f in sorted(set(files))]
    num_shards = shards or default_shards(total_bytes)
    parse_workers = (parse_workers or default_parse_workers(options, total_bytes)) if is_local_runner(options) else 1

    started = time.time()
    # written under a temporary root, swapped into OUT only when the whole run succeeded
    with stage_outputs(out, "papers") as dest:
        with beam.Pipeline(options=options) as p:
            build(p, dest, num_shards, input_files, split_over, parse_workers)
        done = read_stage_counts(dest, "papers")
        try:
            refuse_all_rejected(
                "papers", done, sum(v for k, v in done.items() if k.startswith("read.")), done.get("written", 0),
                {k.split(".", 2)[-1]: v for k, v in done.items() if k.startswith("rejected.")}, dest, max_reject_rate)
        except UserError as refused:
            raise UserError(f"{refused}{_json_lines_hint(files)}") from None
        refuse_unreconciled("papers", check_counts(done) + check_outputs(dest, done))
    counts = read_stage_counts(out, "papers")
    counts["seconds"] = round(time.time() - started, 2)
    return counts


def _json_lines_hint(files: Sequence[tuple[str, str]]) -> str:
    """A line for a refused run when an input of a JSON Lines source (`Source.line_based`)
    opens as one JSON document (a first line `[` or `{`, or `[{`): a pretty-printed
    Unpaywall file was rejected line by line as invalid_json, with nothing saying why."""
    from openmsd_build.core.json_records import open_binary
    from openmsd_build.papers.sources.registry import source

    for name, path in files:
        if not source(name).line_based:
            continue
        try:
            with open_binary(path) as stream:
                first = stream.read(4096).lstrip().split(b"\n", 1)[0].strip()
        except (OSError, EOFError):
            continue
        if first in (b"[", b"{") or first.replace(b" ", b"").startswith(b"[{"):
            return (f"\n  {path} is one JSON document, not JSON Lines: --{name.replace('_', '-')} takes one record per "
                    "line (e.g. `jq -c '.[]' FILE > FILE.jsonl` for an array)")
    return ""


def summary_line(counts: dict) -> str:
    """The console's line: records read = rejected + merged into another record's row (a
    join across sources, or the same DOI twice in one source) + written."""
    read = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith("read.")}
    rejected = sum(v for k, v in counts.items() if k.startswith("rejected."))
    duplicates = sum(v for k, v in counts.items() if k.startswith("merged_duplicates."))
    joined = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith("joined.")}
    return (
        f"papers: read {read}, rejected {rejected}, merged into another record {counts.get('merged_records', 0)} "
        f"({duplicates} duplicates within a source), written {counts.get('written', 0)} "
        f"({counts.get('with_abstract', 0)} with abstract); by sources {joined}"
    )
