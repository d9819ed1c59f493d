"""Thin Beam DoFns of the papers stage: route `paper_join` outputs to tagged outputs."""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.core import parquet_io
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, bump
from openmsd_build.papers import join as paper_join

LINES_TAG = "lines"


def _route(outputs):
    """`join`'s tagged outputs -> Beam outputs (batches on the main output)."""
    for tag, value in outputs:
        if tag == "batch":
            yield value
        elif tag == "chunk":
            yield beam.pvalue.TaggedOutput(LINES_TAG, value)
        elif tag == "reject":
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, value)
        else:
            bump(paper_join.STAGE, value)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, value)


class ReadSourceFile(beam.DoFn):
    """`(source, path, bytes)` -> `(shard, records)` batches; rejects and counts tagged. A JSON
    Lines file is only cut into chunks of raw lines (tagged LINES) for `ParseLineChunk`, so
    one huge file is parsed by every worker after a reshuffle; files up to
    `join.LINE_SPLIT_BYTES` are parsed in place (moving their raw lines through a shuffle
    would only add cost where one worker reads them in seconds)."""

    def __init__(self, num_shards: int, batch_size: int = paper_join.DEFAULT_BATCH,
                 split_over: int = paper_join.LINE_SPLIT_BYTES):
        self.num_shards = num_shards
        self.batch_size = batch_size
        self.split_over = split_over

    def process(self, element):
        source, path, size = element  # the size the command matched the file with
        if source in paper_join.LINE_SOURCES and size > self.split_over:
            yield from _route(paper_join.read_line_chunks(path, source))
        else:
            yield from _route(paper_join.read_source_file(path, source, self.num_shards, self.batch_size))


class ParseLineChunk(beam.DoFn):
    """`(source, path, packed raw lines)` (`join.read_line_chunks`) -> `(shard, records)` batches;
    rejects and counts tagged."""

    def __init__(self, num_shards: int, batch_size: int = paper_join.DEFAULT_BATCH):
        self.num_shards = num_shards
        self.batch_size = batch_size

    def process(self, element):
        source, path, chunk = element
        yield from _route(paper_join.parse_line_chunk(source, path, chunk, self.num_shards, self.batch_size))


class MergeAndWriteShard(beam.DoFn):
    """`(shard, [batch, ...])` -> merged papers rows written as one sorted Parquet file."""

    def __init__(self, directory: str, num_shards: int):
        self.directory = directory
        self.num_shards = num_shards

    def process(self, element):
        shard, batches = element
        table, counts = paper_join.merge_shard(batches)
        if table.num_rows or shard == 0:
            parquet_io.write_table(table, parquet_io.part_path(self.directory, shard, self.num_shards))
        bump(paper_join.STAGE, counts)
        yield counts
