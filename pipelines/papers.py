"""Stage 1, `openmsd-build papers`: Unpaywall + Crossref (+ OpenAlex) joined by DOI.

Wiring only: files -> ReadSourceFile (parse, project, shard by DOI) -> GroupShards ->
MergeAndWriteShard -> `papers/part-*.parquet`; rejects -> `rejects/papers/`; counts ->
`_stats/papers.json`. The work itself is in `openmsd_build.paper_join`.
"""

from __future__ import annotations

import argparse
import time

import apache_beam as beam

from openmsd_build import layout, parquet_io
from openmsd_build.errors import UserError
from openmsd_build.inputs import default_shards, expand_globs
from openmsd_build.papers_transforms import MergeAndWriteShard, ReadSourceFile
from openmsd_build.runner import pipeline_options
from openmsd_build.stats import read_stage_counts
from openmsd_build.transforms import COUNTS_TAG, REJECTS_TAG, GroupShards, WriteCounts, WriteRejects


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of the build (local path or gs://)")
    parser.add_argument("--unpaywall", action="append", default=[], metavar="GLOB",
                        help="Unpaywall snapshot JSON Lines (gzip or plain); repeatable")
    parser.add_argument("--crossref", action="append", default=[], metavar="GLOB",
                        help="Crossref public data file (*.json.gz with {items:[...]}), JSON Lines or REST exports")
    parser.add_argument("--openalex", action="append", default=[], metavar="GLOB",
                        help="optional OpenAlex works snapshot (JSON Lines); repeatable")
    parser.add_argument("--shards", type=int, default=0,
                        help="shuffle shards = output files (default: ~1 per 32 MiB of input)")


def run(args: argparse.Namespace, beam_args: list[str]) -> dict:
    counts = run_papers(args.out, args.unpaywall, args.crossref, args.openalex, beam_args, args.shards)
    print(summary_line(counts))
    return counts


def run_papers(
    out: str,
    unpaywall: list[str],
    crossref: list[str],
    openalex: list[str] | None,
    beam_args: list[str],
    shards: int = 0,
) -> dict:
    """Build `papers/` from the given snapshot globs; returns the stage's counts."""
    options = pipeline_options(beam_args)  # first: the globs below may be gs:// (FileSystems options)
    inputs = [("unpaywall", g) for g in unpaywall] + [("crossref", g) for g in crossref]
    inputs += [("openalex", g) for g in openalex or []]
    if not inputs:
        raise UserError("papers: give at least one of --unpaywall, --crossref, --openalex")
    files: list[tuple[str, str]] = []
    sizes: dict[str, int] = {}
    total_bytes = 0
    for source, pattern in inputs:
        for path, size in expand_globs([pattern], source):
            files.append((source, path))
            sizes[path] = size
            total_bytes += size
    # The snapshot files read, recorded in `_stats/papers.json` (the release's source versions).
    input_files = [{"source": s, "path": f, "bytes": sizes[f]} for s, f in sorted(set(files))]
    num_shards = shards or default_shards(total_bytes)
    papers_dir = layout.papers_dir(out)
    parquet_io.clear_directory(papers_dir)
    parquet_io.clear_directory(layout.rejects_dir(out, "papers"))

    started = time.time()
    with beam.Pipeline(options=options) as p:
        parsed = (
            p
            | "InputFiles" >> beam.Create(sorted(set(files)))
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadSourceFiles"
            >> beam.ParDo(ReadSourceFile(num_shards)).with_outputs(COUNTS_TAG, REJECTS_TAG, main="batches")
        )
        merged = (
            parsed.batches
            | "GroupShards" >> GroupShards()
            | "MergeAndWrite" >> beam.ParDo(MergeAndWriteShard(papers_dir, num_shards))
        )
        _ = parsed[REJECTS_TAG] | "WriteRejects" >> WriteRejects(layout.rejects_dir(out, "papers"))
        _ = (
            (parsed[COUNTS_TAG], merged)
            | "AllCounts" >> beam.Flatten()
            | "WriteCounts" >> WriteCounts(
                layout.stats_path(out, "papers"), {"stage": "papers", "shards": num_shards, "inputs": input_files})
        )
    counts = read_stage_counts(out, "papers")
    counts["seconds"] = round(time.time() - started, 2)
    return counts


def summary_line(counts: dict) -> str:
    read = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith("read.")}
    rejected = sum(v for k, v in counts.items() if k.startswith("rejected."))
    merged = sum(v for k, v in counts.items() if k.startswith("merged_duplicates."))
    joined = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith("joined.")}
    return (
        f"papers: read {read}, rejected {rejected}, merged duplicates {merged}, "
        f"written {counts.get('written', 0)} ({counts.get('with_abstract', 0)} with abstract); by sources {joined}"
    )
