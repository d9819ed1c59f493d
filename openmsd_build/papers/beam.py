"""Thin Beam DoFns of the papers stage: route `paper_join` outputs to tagged outputs."""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.core import parquet_io
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, bump, in_global_window
from openmsd_build.core.ipc import to_ipc
from openmsd_build.papers import join as paper_join

LINES_TAG = "lines"


def _route(outputs):
    """`join`'s tagged outputs -> Beam outputs (batches on the main output, as Arrow IPC
    bytes: `core.ipc` says why; or as the path of a batch a pool's child spilled)."""
    for tag, value in outputs:
        if tag == "batch":
            shard, batch = value
            yield shard, (batch if isinstance(batch, (bytes, str)) else to_ipc(batch))
        elif tag == "chunk":
            yield beam.pvalue.TaggedOutput(LINES_TAG, value)
        elif tag == "reject":
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, value)
        else:
            bump(paper_join.STAGE, value)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, value)


class _PooledDoFn(beam.DoFn):
    """A DoFn that may parse in a pool of `workers` local processes (`papers.parallel`;
    `workers` 1: in the DoFn itself, as on a distributed runner), which spill their batches
    to `spill_dir` when given. Work still in the pool when a bundle ends is emitted by
    `finish_bundle`; a failed bundle's is dropped."""

    def __init__(self, num_shards: int, batch_size: int, workers: int, spill_dir: str | None = None):
        self.num_shards = num_shards
        self.batch_size = batch_size
        self.workers = workers
        self.spill_dir = spill_dir
        self.reader = None

    def setup(self):
        if self.workers > 1:
            from openmsd_build.papers.parallel import PooledReader

            self.reader = PooledReader(self.workers, self.num_shards, self.batch_size, spill_dir=self.spill_dir)

    def start_bundle(self):
        if self.reader is not None:
            self.reader.abandon()  # answers of a failed earlier bundle are never emitted

    def finish_bundle(self):
        if self.reader is not None:
            yield from in_global_window(list(_route(self.reader.finish())))

    def teardown(self):
        if self.reader is not None:
            self.reader.close()


class ReadSourceFile(_PooledDoFn):
    """`(source, path, bytes)` -> `(shard, records)` batches; rejects and counts tagged. A JSON
    Lines file is only cut into chunks of raw lines (tagged LINES) for `ParseLineChunk`, so
    one huge file is parsed by every worker after a reshuffle; files up to
    `join.LINE_SPLIT_BYTES` are parsed in place (moving their raw lines through a shuffle
    would only add cost where one worker reads them in seconds) -- by the pool's processes
    when there is one."""

    def __init__(self, num_shards: int, batch_size: int = paper_join.DEFAULT_BATCH,
                 split_over: int = paper_join.LINE_SPLIT_BYTES, workers: int = 1, spill_dir: str | None = None):
        super().__init__(num_shards, batch_size, workers, spill_dir)
        self.split_over = split_over

    def process(self, element):
        source, path, size = element  # the size the command matched the file with
        if source in paper_join.LINE_SOURCES and size > self.split_over:
            yield from _route(paper_join.read_line_chunks(path, source))
        elif self.reader is not None:
            yield from _route(self.reader.read_file(path, source))
        else:
            yield from _route(paper_join.read_source_file(path, source, self.num_shards, self.batch_size))


class ParseLineChunk(_PooledDoFn):
    """`(source, path, packed raw lines)` (`join.read_line_chunks`) -> `(shard, records)` batches;
    rejects and counts tagged."""

    def __init__(self, num_shards: int, batch_size: int = paper_join.DEFAULT_BATCH, workers: int = 1,
                 spill_dir: str | None = None):
        super().__init__(num_shards, batch_size, workers, spill_dir)

    def process(self, element):
        source, path, chunk = element
        if self.reader is not None:
            yield from _route(self.reader.parse_chunk(source, path, chunk))
        else:
            yield from _route(paper_join.parse_line_chunk(source, path, chunk, self.num_shards, self.batch_size))


class MergeAndWriteShard(beam.DoFn):
    """`(shard, [batch, ...])` -> merged papers rows written as one sorted Parquet file; yields
    the merge counts. `workers` > 1 (a local run, as for parsing): shards are merged and their
    Parquet bytes encoded in a pool of that many processes (`parallel.PooledMerger`), several
    shards at once, and written here as each comes back, in the order the shards came; the
    same files and counts; only there may a batch be the path of a spilled one
    (`core.spill.write_piece`). Shards still out when a bundle ends are finished by
    `finish_bundle`; a failed bundle's are dropped (the retry writes them again)."""

    def __init__(self, directory: str, num_shards: int, workers: int = 1):
        self.directory = directory
        self.num_shards = num_shards
        self.workers = workers
        self.merger = None

    def setup(self):
        if self.workers > 1:
            from openmsd_build.papers.parallel import PooledMerger

            self.merger = PooledMerger(self.workers)

    def start_bundle(self):
        if self.merger is not None:
            self.merger.abandon()  # shards of a failed earlier bundle are never written

    def process(self, element):
        shard, batches = element
        if self.merger is not None:
            yield from self._written(self.merger.merge(shard, batches))
            return
        table, counts = paper_join.merge_shard(batches)
        if table.num_rows or shard == 0:
            parquet_io.write_table(table, parquet_io.part_path(self.directory, shard, self.num_shards))
        bump(paper_join.STAGE, counts)
        yield counts

    def finish_bundle(self):
        if self.merger is not None:
            yield from in_global_window(list(self._written(self.merger.finish())))

    def teardown(self):
        if self.merger is not None:
            self.merger.close()

    def _written(self, merged):
        """The pool's `(shard, Parquet bytes or None, counts)` -> part files written, counts."""
        for shard, data, counts in merged:
            if data is not None:
                parquet_io.write_bytes(data, parquet_io.part_path(self.directory, shard, self.num_shards))
            bump(paper_join.STAGE, counts)
            yield counts

