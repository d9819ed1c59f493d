"""Stage 3, `citations`: OpenCitations rows -> DOI-to-DOI edges between kept documents.

Wiring only; the work is in `openmsd_build.opencitations` (parsing) and
`openmsd_build.citation_graph` (vectorized filters). Elements are batches: one input file
per element, Arrow tables of up to 200k edges after parsing, and `(shard, table)` pairs in
the shuffles:

1. parse every CSV (plain, .gz, .zip members) -> edge batches + rejects + counts;
2. with `--meta`: OMID-only ends are resolved by two partitioned joins with the Meta
   mapping (by citing OMID, then by cited OMID); without it they count as `no_doi`;
3. self-citations dropped per batch;
4. partitioned join by citing DOI with the documents' (doi, has_abstract): duplicates are
   removed there (all copies of an edge share the citing shard) and the citing end checked;
5. re-shard by cited DOI, join again, check the cited end; write `citations/`.

The documents' keys carry `paper_id = hash64(doi)` (computed once per document), so both
joins also attach `citing_id` / `cited_id`: the pairs stage then works on integers only.

Counts in `_stats/citations.json` reconcile:
`rows_read = rows_unrecognized_file + malformed_row + bad_doi + no_doi + self_citation +
duplicate_edge + citing_missing + cited_missing + no_abstract + edges_kept`.
Informational: `files_read`, `files_unrecognized`, `rows_parsed`, `rows_needing_meta`,
`omid_resolved`, `meta_*`, `documents_read`.

The DoFns are in `openmsd_build.citations_transforms`; the shared Beam helpers
(`read_parts`, `tag`, `untag`) in `openmsd_build.transforms`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import apache_beam as beam

from openmsd_build import layout, parquet_io
from openmsd_build.citations_transforms import (
    DEFAULT_SHARDS,
    NEEDS_META,
    STAGE,
    DropSelfAndKey,
    FilterShard,
    FinishResolution,
    KeyDocs,
    KeyNeedingSide,
    ParseFile,
    ParseMeta,
    ResolveSide,
)
from openmsd_build.errors import UserError
from openmsd_build.inputs import expand_input_files
from openmsd_build.runner import pipeline_options
from openmsd_build.schemas import CITATIONS
from openmsd_build.stats import read_stage_counts
from openmsd_build.transforms import (
    COUNTS_TAG,
    REJECTS_TAG,
    WriteCounts,
    WriteParquetShards,
    WriteRejects,
    read_parts,
    tag,
)


def build(pipeline, out: str, opencitations: list[str], meta: list[str] | None, shards: int):
    """Wire the stage into `pipeline`; returns nothing (sinks only)."""
    files = expand_input_files(opencitations)
    meta_files = expand_input_files(meta) if meta else []
    parsed = (
        pipeline
        | "CsvFiles" >> beam.Create(files)
        | "ReshuffleFiles" >> beam.Reshuffle()
        | "Parse" >> beam.ParDo(ParseFile(bool(meta_files))).with_outputs(NEEDS_META, REJECTS_TAG, COUNTS_TAG, main="edges")
    )
    counts = [parsed[COUNTS_TAG]]
    rejects = [parsed[REJECTS_TAG]]
    edges = parsed.edges
    if meta_files:
        meta_parsed = (
            pipeline
            | "MetaFiles" >> beam.Create(meta_files)
            | "ReshuffleMeta" >> beam.Reshuffle()
            | "ParseMeta" >> beam.ParDo(ParseMeta(shards)).with_outputs(REJECTS_TAG, COUNTS_TAG, main="mapping")
        )
        counts.append(meta_parsed[COUNTS_TAG])
        rejects.append(meta_parsed[REJECTS_TAG])
        mapping = meta_parsed.mapping | "TagMeta" >> beam.Map(tag("meta"))
        pending = parsed[NEEDS_META]
        for side in ("citing", "cited"):
            keyed = pending | f"Key{side}Omid" >> beam.ParDo(KeyNeedingSide(side, shards)).with_outputs(
                "done", main="todo"
            )
            resolved = (
                (mapping, keyed.todo | f"Tag{side}Edges" >> beam.Map(tag("edges")))
                | f"Flatten{side}Omid" >> beam.Flatten()
                | f"Group{side}Omid" >> beam.GroupByKey()
                | f"Resolve{side}" >> beam.ParDo(ResolveSide(side)).with_outputs(COUNTS_TAG, main="edges")
            )
            counts.append(resolved[COUNTS_TAG])
            pending = (keyed.done, resolved.edges) | f"Merge{side}" >> beam.Flatten()
        finished = pending | "FinishResolution" >> beam.ParDo(FinishResolution()).with_outputs(COUNTS_TAG, main="edges")
        counts.append(finished[COUNTS_TAG])
        edges = (edges, finished.edges) | "AllEdges" >> beam.Flatten()

    keyed_edges = edges | "DropSelf" >> beam.ParDo(DropSelfAndKey(shards)).with_outputs(COUNTS_TAG, main="keyed")
    counts.append(keyed_edges[COUNTS_TAG])
    docs = (
        read_parts(pipeline, layout.documents_dir(out), ["doi", "abstract"], "Docs")
        | "KeyDocs" >> beam.ParDo(KeyDocs(shards)).with_outputs(COUNTS_TAG, main="keys")
    )
    counts.append(docs[COUNTS_TAG])
    tagged_docs = docs.keys | "TagDocs" >> beam.Map(tag("docs"))
    current = keyed_edges.keyed
    for side in ("citing", "cited"):
        joined = (
            (tagged_docs, current | f"Tag{side}" >> beam.Map(tag("edges")))
            | f"Flatten{side}" >> beam.Flatten()
            | f"Group{side}" >> beam.GroupByKey()
            | f"Filter{side}" >> beam.ParDo(FilterShard(side, shards)).with_outputs(COUNTS_TAG, main="edges")
        )
        counts.append(joined[COUNTS_TAG])
        current = joined.edges
    _ = current | "WriteCitations" >> WriteParquetShards(
        layout.citations_dir(out), CITATIONS, shards, sort_by=("citing_doi", "cited_doi")
    )
    _ = tuple(rejects) | "AllRejects" >> beam.Flatten() | "WriteRejects" >> WriteRejects(
        layout.rejects_dir(out, STAGE)
    )
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(out, STAGE), extra={"stage": STAGE})
    )



def run_citations(
    out: str,
    opencitations: list[str],
    meta: list[str] | None = None,
    beam_args: Sequence[str] = (),
    shards: int = DEFAULT_SHARDS,
) -> dict[str, int]:
    """Run the stage and return its counts (also in `_stats/citations.json`)."""
    if shards < 1:
        raise UserError("--shards must be >= 1")
    parquet_io.clear_directory(layout.citations_dir(out))
    parquet_io.clear_directory(layout.rejects_dir(out, STAGE))
    with beam.Pipeline(options=pipeline_options(beam_args)) as pipeline:
        build(pipeline, out, opencitations, meta, shards)
    return read_stage_counts(out, STAGE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the build's output root (reads documents/, writes citations/)")
    parser.add_argument(
        "--opencitations",
        nargs="+",
        required=True,
        metavar="PATH",
        help="OpenCitations CSV files, globs or folders (.csv, .csv.gz, .zip of CSVs): COCI, Index or OMID-only",
    )
    parser.add_argument(
        "--meta",
        nargs="+",
        metavar="PATH",
        help="OpenCitations Meta CSV files/globs (id column with omid: and doi:) to resolve OMID-only rows",
    )
    parser.add_argument("--shards", type=int, default=DEFAULT_SHARDS, help="partitions of the shuffles and output files")


def run(args: argparse.Namespace, beam_args: Sequence[str]) -> dict[str, int]:
    counts = run_citations(
        args.out, list(args.opencitations), list(args.meta) if getattr(args, "meta", None) else None, beam_args,
        getattr(args, "shards", DEFAULT_SHARDS),
    )
    print(summary_line(counts))
    return counts


_DROPS = ("rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "self_citation", "duplicate_edge",
          "citing_missing", "cited_missing", "no_abstract")


def summary_line(counts: dict) -> str:
    drops = {k: counts[k] for k in _DROPS if counts.get(k)}
    return f"citations: read {counts.get('rows_read', 0)} rows, kept {counts.get('edges_kept', 0)} edges; dropped {drops}"
