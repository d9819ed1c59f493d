"""The `citations` stage's Beam graph (wiring only). The flags, input checks and the run
are in `openmsd_build.citations.command`; what the stage decides is described there and in
the rule modules of `openmsd_build.citations`."""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.citations.beam import (
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
from openmsd_build.core import layout
from openmsd_build.core.beam_io import (
    COUNTS_TAG,
    REJECTS_TAG,
    WriteCounts,
    WriteParquetShards,
    WriteRejects,
    read_parts,
    tag,
)
from openmsd_build.core.inputs import expand_input_files
from openmsd_build.schemas import CITATIONS


def build(pipeline, out: str, opencitations: list[str], meta: list[str] | None, shards: int,
          dest: str | None = None):
    """Wire the stage into `pipeline`; returns nothing (sinks only). `documents/` is read
    from `out`; citations/, rejects and stats are written under `dest` (the staging root,
    default `out`)."""
    dest = dest or out
    files = expand_input_files(opencitations, "--opencitations")
    meta_files = expand_input_files(meta, "--meta") if meta else []
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
        layout.citations_dir(dest), CITATIONS, shards, sort_by=("citing_doi", "cited_doi")
    )
    _ = tuple(rejects) | "AllRejects" >> beam.Flatten() | "WriteRejects" >> WriteRejects(
        layout.rejects_dir(dest, STAGE)
    )
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, STAGE), extra={"stage": STAGE})
    )
