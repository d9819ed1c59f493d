"""The `citations` stage's Beam graph (wiring only). The flags, input checks and the run
are in `openmsd_build.citations.command`; what the stage decides is described there and in
the rule modules of `openmsd_build.citations`."""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.citations.beam import (
    DOCUMENT_COLUMNS,
    NEEDS_META,
    STAGE,
    DropSelfAndKey,
    FilterShard,
    FinishResolution,
    KeyNeedingSide,
    ParseMeta,
    ReadInputs,
    ResolveSide,
)
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.beam_io import (
    COUNTS_TAG,
    REJECTS_TAG,
    WriteCounts,
    WriteRejects,
    tag,
)
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import expand_input_files
from openmsd_build.schemas import DOCUMENTS


def build(pipeline, out: str, opencitations: list[str], meta: list[str] | None, shards: int,
          dest: str | None = None):
    """Wire the stage into `pipeline`; returns nothing (sinks only). `documents/` is read
    from `out`; citations/, rejects and stats are written under `dest` (the staging root,
    default `out`)."""
    dest = dest or out
    files = expand_input_files(opencitations, "--opencitations")
    meta_files = expand_input_files(meta, "--meta") if meta else []
    documents = parquet_io.list_parts(layout.documents_dir(out))
    if not documents:
        raise UserError(f"no Parquet files under {layout.documents_dir(out)}; run the previous stage first")
    # a truncated or foreign part is one line naming it, before the run, not Arrow's traceback
    # from inside the pipeline
    parquet_io.check_parts(documents, DOCUMENTS, DOCUMENT_COLUMNS, required=DOCUMENT_COLUMNS)
    # Citation files and document parts are read by one DoFn into one PCollection: the
    # citing join then groups a single input (a Flatten of several is a stage of its own
    # on the local runner, copying every batch once more). Its edges leave the parser
    # without self-citations, tagged and cut by citing shard; the documents by DOI shard.
    # Documents first: `ReadInputs` reads them in the background while it parses.
    parsed = (
        pipeline
        | "Inputs" >> beam.Create([("documents", p) for p in documents] + [("citations", f) for f in files],
                                reshuffle=False)  # spread once, below
        | "ReshuffleInputs" >> beam.Reshuffle()
        | "Read" >> beam.ParDo(ReadInputs(bool(meta_files), shards)).with_outputs(
            NEEDS_META, REJECTS_TAG, COUNTS_TAG, main="keyed")
    )
    counts = [parsed[COUNTS_TAG]]
    rejects = [parsed[REJECTS_TAG]]
    keyed = parsed.keyed
    if meta_files:
        meta_parsed = (
            pipeline
            | "MetaFiles" >> beam.Create(meta_files, reshuffle=False)  # spread once, below
            | "ReshuffleMeta" >> beam.Reshuffle()
            | "ParseMeta" >> beam.ParDo(ParseMeta(shards)).with_outputs(REJECTS_TAG, COUNTS_TAG, main="mapping")
        )
        counts.append(meta_parsed[COUNTS_TAG])
        rejects.append(meta_parsed[REJECTS_TAG])
        mapping = meta_parsed.mapping | "TagMeta" >> beam.Map(tag("meta"))
        pending = parsed[NEEDS_META]
        for side in ("citing", "cited"):
            todo = pending | f"Key{side}Omid" >> beam.ParDo(KeyNeedingSide(side, shards)).with_outputs(
                "done", main="todo"
            )
            resolved = (
                (mapping, todo.todo | f"Tag{side}Edges" >> beam.Map(tag("edges")))
                | f"Flatten{side}Omid" >> beam.Flatten()
                | f"Group{side}Omid" >> beam.GroupByKey()
                | f"Resolve{side}" >> beam.ParDo(ResolveSide(side)).with_outputs(COUNTS_TAG, main="edges")
            )
            counts.append(resolved[COUNTS_TAG])
            pending = (todo.done, resolved.edges) | f"Merge{side}" >> beam.Flatten()
        finished = pending | "FinishResolution" >> beam.ParDo(FinishResolution()).with_outputs(COUNTS_TAG, main="edges")
        counts.append(finished[COUNTS_TAG])
        resolved_edges = finished.edges | "DropSelf" >> beam.ParDo(DropSelfAndKey(shards)).with_outputs(
            COUNTS_TAG, main="keyed")
        counts.append(resolved_edges[COUNTS_TAG])
        keyed = (keyed, resolved_edges.keyed) | "AllKeyed" >> beam.Flatten()

    # Both joins take `(shard, (tag, batch))`; the citing join hands its shard's documents
    # on to the cited join with the kept edges, and the cited join writes `citations/`.
    for side in ("citing", "cited"):
        directory = layout.citations_dir(dest) if side == "cited" else None
        joined = (
            keyed
            | f"Group{side}" >> beam.GroupByKey()
            | f"Filter{side}" >> beam.ParDo(FilterShard(side, shards, directory)).with_outputs(COUNTS_TAG, main="keyed")
        )
        counts.append(joined[COUNTS_TAG])
        keyed = joined.keyed
    _ = tuple(rejects) | "AllRejects" >> beam.Flatten() | "WriteRejects" >> WriteRejects(
        layout.rejects_dir(dest, STAGE)
    )
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, STAGE), extra={"stage": STAGE})
    )
