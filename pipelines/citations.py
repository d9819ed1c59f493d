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

The Beam helpers at the bottom (`ReadParquetFrames`, `tag`, `untag`) are shared with the
split and pairs stages.
"""

from __future__ import annotations

import argparse
import io
import os
from collections.abc import Iterable, Sequence

import apache_beam as beam
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from openmsd_build import citation_graph as cg
from openmsd_build import layout, parquet_io
from openmsd_build.errors import UserError
from openmsd_build.opencitations import EDGE_BATCH_SCHEMA, META_SCHEMA, parse_citation_file, parse_meta_file
from openmsd_build.runner import pipeline_options
from openmsd_build.schemas import CITATIONS
from openmsd_build.transforms import WriteCounts, WriteParquetShards, WriteRejects, bump

STAGE = "citations"
DEFAULT_SHARDS = 16
COUNTS = "counts"
REJECTS = "rejects"
NEEDS_META = "needs_meta"
EDGE_SCHEMA = pa.schema([("citing_doi", pa.string()), ("cited_doi", pa.string())])
DOC_KEYS = pa.schema([("doi", pa.string()), ("has_abstract", pa.bool_()), ("paper_id", pa.int64())])


# ---------------------------------------------------------------- shared Beam helpers


def expand_inputs(patterns: Sequence[str]) -> list[str]:
    """Files, globs or local folders -> sorted file list; a pattern matching nothing is a UserError."""
    files: list[str] = []
    for pattern in patterns:
        if "://" not in pattern and os.path.isdir(pattern):
            matched = [os.path.join(pattern, f) for f in os.listdir(pattern) if os.path.isfile(os.path.join(pattern, f))]
        else:
            try:
                matched = [m.path for m in FileSystems.match([pattern])[0].metadata_list]
            except Exception:  # noqa: BLE001 - Beam raises BeamIOError for "no match"
                matched = []
        if not matched:
            raise UserError(f"no input files match {pattern}")
        files.extend(matched)
    return sorted(set(files))


def tag(name: str):
    """`(shard, table)` -> `(shard, (name, table))` so two inputs can share one GroupByKey."""
    return lambda kv: (kv[0], (name, kv[1]))


def untag(values: Iterable, *names: str) -> dict[str, list]:
    """The grouped values of a shard, split by tag (tables not yet concatenated)."""
    out: dict[str, list] = {n: [] for n in names}
    for name, table in values:
        out[name].append(table)
    return out


class ReadParquetFrames(beam.DoFn):
    """A Parquet file path -> Arrow tables of `columns`, one per row group batch.

    Reading by batches keeps a worker's memory bounded by `batch_rows`, whatever the size
    of the upstream part files.
    """

    def __init__(self, columns: Sequence[str], batch_rows: int = 250_000):
        self.columns = list(columns)
        self.batch_rows = batch_rows

    def process(self, path: str):
        with FileSystems.open(path) as f:
            pf = pq.ParquetFile(io.BytesIO(f.read()))
            for batch in pf.iter_batches(batch_size=self.batch_rows, columns=self.columns):
                yield pa.Table.from_batches([batch])


def read_parts(pipeline, directory: str, columns: Sequence[str], label: str):
    """A PCollection of Arrow tables with `columns` from a stage folder's part files."""
    parts = parquet_io.list_parts(directory)
    if not parts:
        raise UserError(f"no Parquet files under {directory}; run the previous stage first")
    return (
        pipeline
        | f"{label}Files" >> beam.Create(parts)
        | f"{label}Reshuffle" >> beam.Reshuffle()
        | f"{label}Read" >> beam.ParDo(ReadParquetFrames(columns))
    )


# ---------------------------------------------------------------- stage DoFns


class _ParseFile(beam.DoFn):
    def __init__(self, have_meta: bool):
        self.have_meta = have_meta

    def process(self, path: str):
        for table, rejects, counts in parse_citation_file(path):
            counts = dict(counts)
            df = pl.from_arrow(table)
            needs = df.filter(pl.col("citing_doi").is_null() | pl.col("cited_doi").is_null())
            ready = df.filter(pl.col("citing_doi").is_not_null() & pl.col("cited_doi").is_not_null())
            if needs.height:
                if self.have_meta:
                    yield beam.pvalue.TaggedOutput(NEEDS_META, needs.to_arrow())
                else:
                    counts["no_doi"] = counts.get("no_doi", 0) + needs.height
            if ready.height:
                yield ready.select("citing_doi", "cited_doi").to_arrow()
            if rejects:
                yield beam.pvalue.TaggedOutput(REJECTS, rejects)
            bump(STAGE, counts)
            yield beam.pvalue.TaggedOutput(COUNTS, counts)


class _ParseMeta(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, path: str):
        for table, rejects, counts in parse_meta_file(path):
            if rejects:
                yield beam.pvalue.TaggedOutput(REJECTS, rejects)
            yield beam.pvalue.TaggedOutput(COUNTS, counts)
            df = pl.from_arrow(table)
            yield from cg.split_by_shard(df, cg.shard_strings(df["omid"], self.shards))


class _KeyNeedingSide(beam.DoFn):
    """Edges with an unresolved `side` -> (shard of that OMID, table); others pass through
    on the `done` output untouched."""

    def __init__(self, side: str, shards: int):
        self.side = side
        self.shards = shards

    def process(self, table: pa.Table):
        df = pl.from_arrow(table)
        todo = df.filter(pl.col(f"{self.side}_doi").is_null())
        done = df.filter(pl.col(f"{self.side}_doi").is_not_null())
        if done.height:
            yield beam.pvalue.TaggedOutput("done", done.to_arrow())
        yield from cg.split_by_shard(todo, cg.shard_strings(todo[f"{self.side}_omid"], self.shards))


class _ResolveSide(beam.DoFn):
    def __init__(self, side: str):
        self.side = side

    def process(self, element):
        _, values = element
        parts = untag(values, "meta", "edges")
        edges = cg.to_frame(parts["edges"], EDGE_BATCH_SCHEMA)
        if not edges.height:
            return
        meta = cg.to_frame(parts["meta"], META_SCHEMA)
        resolved = cg.resolve_omids(edges, meta, self.side)
        n = int(resolved[f"{self.side}_doi"].is_not_null().sum())
        yield beam.pvalue.TaggedOutput(COUNTS, {"omid_resolved": n})
        yield resolved.to_arrow()


class _FinishResolution(beam.DoFn):
    def process(self, table: pa.Table):
        edges, counts = cg.finish_resolution(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS, counts)
        if edges.height:
            yield edges.to_arrow()


class _DropSelfAndKey(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        edges, counts = cg.drop_self_citations(pl.from_arrow(table))
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS, counts)
        yield from cg.split_by_shard(edges, cg.shard_strings(edges["citing_doi"], self.shards))


class _KeyDocs(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        keys = cg.document_keys(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS, {"documents_read": table.num_rows})
        yield from cg.split_by_shard(keys, cg.shard_strings(keys["doi"], self.shards))


class _FilterShard(beam.DoFn):
    """One shard's edges joined with the same shard's documents; `side` says which end."""

    def __init__(self, side: str, shards: int):
        self.side = side
        self.shards = shards

    def process(self, element):
        shard, values = element
        parts = untag(values, "docs", "edges")
        edges = cg.to_frame(parts["edges"], EDGE_SCHEMA if self.side == "citing" else CITATIONS)
        if not edges.height:
            return
        docs = cg.to_frame(parts["docs"], DOC_KEYS)
        if docs.height:
            docs = docs.group_by("doi").agg(pl.col("has_abstract").any(), pl.col("paper_id").max())
        counts: dict[str, int] = {}
        if self.side == "citing":
            edges, counts = cg.dedup_edges(edges)
        edges, c = cg.filter_side(edges, docs, self.side)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
        if self.side == "cited":
            counts["edges_kept"] = edges.height
            bump(STAGE, counts)
            yield beam.pvalue.TaggedOutput(COUNTS, counts)
            if edges.height:
                yield shard, edges.select(CITATIONS.names).to_arrow()
            return
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS, counts)
        yield from cg.split_by_shard(edges, cg.shard_strings(edges["cited_doi"], self.shards))


# ---------------------------------------------------------------- pipeline


def build(pipeline, out: str, opencitations: list[str], meta: list[str] | None, shards: int):
    """Wire the stage into `pipeline`; returns nothing (sinks only)."""
    files = expand_inputs(opencitations)
    meta_files = expand_inputs(meta) if meta else []
    parsed = (
        pipeline
        | "CsvFiles" >> beam.Create(files)
        | "ReshuffleFiles" >> beam.Reshuffle()
        | "Parse" >> beam.ParDo(_ParseFile(bool(meta_files))).with_outputs(NEEDS_META, REJECTS, COUNTS, main="edges")
    )
    counts = [parsed[COUNTS]]
    rejects = [parsed[REJECTS]]
    edges = parsed.edges
    if meta_files:
        meta_parsed = (
            pipeline
            | "MetaFiles" >> beam.Create(meta_files)
            | "ReshuffleMeta" >> beam.Reshuffle()
            | "ParseMeta" >> beam.ParDo(_ParseMeta(shards)).with_outputs(REJECTS, COUNTS, main="mapping")
        )
        counts.append(meta_parsed[COUNTS])
        rejects.append(meta_parsed[REJECTS])
        mapping = meta_parsed.mapping | "TagMeta" >> beam.Map(tag("meta"))
        pending = parsed[NEEDS_META]
        for side in ("citing", "cited"):
            keyed = pending | f"Key{side}Omid" >> beam.ParDo(_KeyNeedingSide(side, shards)).with_outputs(
                "done", main="todo"
            )
            resolved = (
                (mapping, keyed.todo | f"Tag{side}Edges" >> beam.Map(tag("edges")))
                | f"Flatten{side}Omid" >> beam.Flatten()
                | f"Group{side}Omid" >> beam.GroupByKey()
                | f"Resolve{side}" >> beam.ParDo(_ResolveSide(side)).with_outputs(COUNTS, main="edges")
            )
            counts.append(resolved[COUNTS])
            pending = (keyed.done, resolved.edges) | f"Merge{side}" >> beam.Flatten()
        finished = pending | "FinishResolution" >> beam.ParDo(_FinishResolution()).with_outputs(COUNTS, main="edges")
        counts.append(finished[COUNTS])
        edges = (edges, finished.edges) | "AllEdges" >> beam.Flatten()

    keyed_edges = edges | "DropSelf" >> beam.ParDo(_DropSelfAndKey(shards)).with_outputs(COUNTS, main="keyed")
    counts.append(keyed_edges[COUNTS])
    docs = (
        read_parts(pipeline, layout.documents_dir(out), ["doi", "abstract"], "Docs")
        | "KeyDocs" >> beam.ParDo(_KeyDocs(shards)).with_outputs(COUNTS, main="keys")
    )
    counts.append(docs[COUNTS])
    tagged_docs = docs.keys | "TagDocs" >> beam.Map(tag("docs"))
    current = keyed_edges.keyed
    for side in ("citing", "cited"):
        joined = (
            (tagged_docs, current | f"Tag{side}" >> beam.Map(tag("edges")))
            | f"Flatten{side}" >> beam.Flatten()
            | f"Group{side}" >> beam.GroupByKey()
            | f"Filter{side}" >> beam.ParDo(_FilterShard(side, shards)).with_outputs(COUNTS, main="edges")
        )
        counts.append(joined[COUNTS])
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


def read_counts(out: str, stage: str) -> dict[str, int]:
    """The summed counts a stage wrote to `_stats/<stage>.json`."""
    import json

    with FileSystems.open(layout.stats_path(out, stage)) as f:
        return json.loads(f.read().decode("utf-8"))["counts"]


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
    return read_counts(out, STAGE)


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
    return run_citations(
        args.out, list(args.opencitations), list(args.meta) if getattr(args, "meta", None) else None, beam_args,
        getattr(args, "shards", DEFAULT_SHARDS),
    )
