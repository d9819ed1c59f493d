"""The `papers` stage's Beam graph (wiring only).

files -> ReadSourceFile (parse, project, shard by DOI; JSON Lines files are cut into raw line
chunks, reshuffled and parsed by ParseLineChunk on every worker) -> GroupShards -> MergeAndWriteShard
-> `papers/part-*.parquet`; rejects -> `rejects/papers/`; counts -> `_stats/papers.json`.
Flags and input checks are in `openmsd_build.papers.command`.
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam

from openmsd_build.core import layout
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, WriteCounts, WriteRejects
from openmsd_build.papers.beam import LINES_TAG, MergeAndWriteShard, ParseLineChunk, ReadSourceFile
from openmsd_build.papers.join import LINE_SPLIT_BYTES

# `(shard, batch)`. Every input of the batches' Flatten and the Flatten itself carry this one
# type, so they share one coder. Untyped (as `core.beam_io.GroupShards` is), the local
# FnApiRunner transcodes the flattened batches in two extra stages that move every batch
# through the runner and a worker twice more; typed, one pass-through stage is left (job
# server CPU for 1M Unpaywall lines, 2 workers: 34 s -> 19 s, bench/papers_parallel.py).
SHARD_BATCH = tuple[int, Any]


def _same(kv):
    return kv


def build(p, out: str, files: list[tuple[str, str]], num_shards: int, input_files: list[dict],
          split_over: int = LINE_SPLIT_BYTES) -> None:
    """Add the stage to pipeline `p`: `files` are `(source, path)`; `input_files` is recorded
    in `_stats/papers.json`. The stage reads nothing from the build, so `out` is only where
    it writes: the command passes its staging root (`core.staging`), swapped in on success."""
    papers_dir = layout.papers_dir(out)
    read = (
        p
        | "InputFiles" >> beam.Create(files)
        | "SpreadFiles" >> beam.Reshuffle()
        | "ReadSourceFiles"
        >> beam.ParDo(ReadSourceFile(num_shards, split_over=split_over)).with_outputs(
            LINES_TAG, COUNTS_TAG, REJECTS_TAG, main="batches")
    )
    # JSON Lines files arrive as chunks of raw lines: spread them, then parse on every worker
    lines = (
        read[LINES_TAG]
        | "SpreadLineChunks" >> beam.Reshuffle()
        | "ParseLineChunks"
        >> beam.ParDo(ParseLineChunk(num_shards)).with_outputs(COUNTS_TAG, REJECTS_TAG, main="batches")
    )
    # as `core.beam_io.GroupShards`, typed: shard 0 always present, so papers/ has a part 0
    batches = (
        read.batches | "TypeReadBatches" >> beam.Map(_same).with_output_types(SHARD_BATCH),
        lines.batches | "TypeLineBatches" >> beam.Map(_same).with_output_types(SHARD_BATCH),
        p | "EnsureShard0" >> beam.Create([(0, [])]).with_output_types(SHARD_BATCH),
    )
    merged = (
        batches
        | "AllBatches" >> beam.Flatten().with_output_types(SHARD_BATCH)
        | "GroupByShard" >> beam.GroupByKey()
        | "MergeAndWrite" >> beam.ParDo(MergeAndWriteShard(papers_dir, num_shards))
    )
    _ = ((read[REJECTS_TAG], lines[REJECTS_TAG]) | "AllRejects" >> beam.Flatten()
         | "WriteRejects" >> WriteRejects(layout.rejects_dir(out, "papers")))
    _ = (
        (read[COUNTS_TAG], lines[COUNTS_TAG], merged)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(
            layout.stats_path(out, "papers"), {"stage": "papers", "shards": num_shards, "inputs": input_files})
    )
