"""The `papers` stage's Beam graph (wiring only).

files -> ReadSourceFile (parse, project, shard by DOI; JSON Lines files are cut into raw line
chunks, reshuffled and parsed by ParseLineChunk on every worker) -> GroupShards -> MergeAndWriteShard
-> `papers/part-*.parquet`; rejects -> `rejects/papers/`; counts -> `_stats/papers.json`.
Flags and input checks are in `openmsd_build.papers.command`.
"""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.core import layout
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, GroupShards, WriteCounts, WriteRejects
from openmsd_build.core.inputs import absolute_path
from openmsd_build.core.spill import spill_root
from openmsd_build.papers.beam import LINES_TAG, MergeAndWriteShard, ParseLineChunk, ReadSourceFile
from openmsd_build.papers.join import LINE_SPLIT_BYTES


def build(p, out: str, num_shards: int, input_files: list[dict], split_over: int = LINE_SPLIT_BYTES,
          parse_workers: int = 1) -> None:
    """Add the stage to pipeline `p`: `input_files` (`{"source", "path", "bytes"}` of each
    file, as the command matched them) are read, and recorded in `_stats/papers.json` (local paths made
    absolute, so `run --from-stage` elsewhere finds the Crossref files). The
    stage reads nothing from the build, so `out` is only where it writes: the command passes
    its staging root (`core.staging`), swapped in on success. `parse_workers` > 1: files and
    line chunks are parsed, and shards merged and encoded as Parquet, in that many local
    processes (`papers.parallel`; local runs only), and when `out` is a local folder the
    batches go from the parsing processes to the merging ones through files under it
    (`spill_root`), only their paths through Beam's shuffle."""
    papers_dir = layout.papers_dir(out)
    spill_dir = spill_root(out, "papers") if parse_workers > 1 and "://" not in out else None
    files = [(f["source"], f["path"], f["bytes"]) for f in input_files]
    read = (
        p
        | "InputFiles" >> beam.Create(files, reshuffle=False)  # spread once, below
        | "SpreadFiles" >> beam.Reshuffle()
        | "ReadSourceFiles"
        >> beam.ParDo(ReadSourceFile(num_shards, split_over=split_over, workers=parse_workers,
                                    spill_dir=spill_dir)).with_outputs(
            LINES_TAG, COUNTS_TAG, REJECTS_TAG, main="batches")
    )
    # JSON Lines files arrive as chunks of raw lines: spread them, then parse on every worker
    lines = (
        read[LINES_TAG]
        | "SpreadLineChunks" >> beam.Reshuffle()
        | "ParseLineChunks"
        >> beam.ParDo(ParseLineChunk(num_shards, workers=parse_workers, spill_dir=spill_dir)).with_outputs(
            COUNTS_TAG, REJECTS_TAG, main="batches")
    )
    merged = (
        (read.batches, lines.batches)
        | "GroupShards" >> GroupShards()
        | "MergeAndWrite" >> beam.ParDo(MergeAndWriteShard(papers_dir, num_shards, workers=parse_workers))
    )
    _ = ((read[REJECTS_TAG], lines[REJECTS_TAG]) | "AllRejects" >> beam.Flatten()
         | "WriteRejects" >> WriteRejects(layout.rejects_dir(out, "papers")))
    _ = (
        (read[COUNTS_TAG], lines[COUNTS_TAG], merged)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(out, "papers"), {
            "stage": "papers", "shards": num_shards,
            "inputs": [dict(f, path=absolute_path(f["path"])) for f in input_files]})
    )
