"""Thin Beam transforms shared by the stages: sharded Parquet sinks, rejects and counters.

The heavy stages move *batches* (lists of row dicts or Arrow tables) through Beam, never
single records, because Beam's per-element cost is tens of microseconds of Python
(bench/README.md measures it). Shuffles are `(shard, batch)` pairs grouped by
shard, and every shard is written as one deterministic, sorted Parquet file, so two runs of
the same inputs give byte-identical part files on any runner.
"""

from __future__ import annotations

import functools
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from openmsd_build.core import parquet_io, progress
from openmsd_build.core.errors import UserError
from openmsd_build.core.hashing import shard_of
from openmsd_build.schemas import REJECTS

COUNTS_TAG = "counts"
REJECTS_TAG = "rejects"


def bump(namespace: str, counts: Mapping[str, int]) -> None:
    """Mirror a batch's counts into Beam Metrics counters (live in the runner's UI), and into
    the stage's progress (`core.progress`: the launcher's progress line; on a distributed
    runner the `progress.done` / `progress.planned` / `progress.errors` counters)."""
    for name, value in counts.items():
        if value:
            _counter(namespace, name).inc(value)
    for name, value in progress.add(namespace, counts).items():
        _counter(namespace, f"progress.{name}").inc(value)


class Bumps:
    """`bump` for a DoFn that counts per element: the counts are summed and bumped every
    `every` calls and at `flush` (the DoFn's `finish_bundle`). A bump costs ~15 us (a Beam
    counter and the progress tally per name); per element it was ~1 s of the text stage's
    worker at 20,000 papers, and every 64 elements the progress line still moves several
    times a second. Counts of a bundle that fails before its end are not bumped (Beam drops
    a failed bundle's metrics anyway)."""

    def __init__(self, namespace: str, every: int = 64) -> None:
        self.namespace = namespace
        self.every = every
        self.pending: Counter = Counter()
        self.calls = 0

    def __call__(self, counts: Mapping[str, int]) -> None:
        self.pending.update(counts)
        self.calls += 1
        if self.calls >= self.every:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            bump(self.namespace, self.pending)
        self.pending, self.calls = Counter(), 0


@functools.lru_cache(maxsize=4096)
def _counter(namespace: str, name: str) -> Any:
    """One Beam counter object per name, made once: it finds the running bundle's metrics
    container at each `inc`, so it can be kept, and making one (a `MetricName` and an updater)
    cost a stage's worker ~2 s of CPU a 20,000-paper run when done per element."""
    return Metrics.counter(namespace, name)


def as_table(batch: pa.Table | Sequence[dict], schema: pa.Schema) -> pa.Table:
    if isinstance(batch, pa.Table):
        return batch
    return parquet_io.table_from_rows(batch, schema)


class _WriteShard(beam.DoFn):
    def __init__(self, directory: str, schema: pa.Schema, num_shards: int, sort_by: Sequence[str]):
        self.directory = directory
        self.schema = schema
        self.num_shards = num_shards
        self.sort_by = list(sort_by)

    def process(self, element):
        shard, batches = element
        table = parquet_io.concat((as_table(b, self.schema) for b in batches), self.schema)
        if self.sort_by and table.num_rows:
            table = table.sort_by([(c, "ascending") for c in self.sort_by])
        path = parquet_io.part_path(self.directory, shard, self.num_shards)
        yield path, parquet_io.write_table(table, path)


class WriteParquetShards(beam.PTransform):
    """`(shard, batch)` pairs -> one sorted zstd Parquet file per shard under `directory`.

    Shard 0 is always written (possibly empty) so the next stage always finds a file.
    Returns a PCollection of `(path, rows)`.
    """

    def __init__(self, directory: str, schema: pa.Schema, num_shards: int, sort_by: Sequence[str] = ()):
        super().__init__()
        self.directory = directory
        self.schema = schema
        self.num_shards = num_shards
        self.sort_by = sort_by

    def expand(self, pcoll):
        return (
            pcoll
            | "GroupShards" >> GroupShards()
            | "WriteShard" >> beam.ParDo(_WriteShard(self.directory, self.schema, self.num_shards, self.sort_by))
        )


class ShardRows(beam.DoFn):
    """A batch of row dicts -> `(shard, rows)` pairs by a stable hash of one column."""

    def __init__(self, key_column: str, num_shards: int):
        self.key_column = key_column
        self.num_shards = num_shards

    def process(self, rows):
        by_shard: dict[int, list[dict]] = {}
        for row in rows:
            by_shard.setdefault(shard_of(row.get(self.key_column) or "", self.num_shards), []).append(row)
        yield from by_shard.items()


class WriteRejects(beam.PTransform):
    """Reject dicts (single or in lists), of one PCollection or a tuple of them ->
    `rejects/<stage>/` Parquet, sorted and sharded."""

    def __init__(self, directory: str, num_shards: int = 4):
        super().__init__()
        self.directory = directory
        self.num_shards = num_shards

    def expand(self, pcoll):
        # several PCollections are sharded each where it is made and meet as batches in
        # `GroupShards` (a Flatten of single rejects would be one more materialized step)
        pcolls = (pcoll,) if isinstance(pcoll, beam.PCollection) else tuple(pcoll)
        sharded = tuple(
            pc
            | f"AsLists{k or ''}" >> beam.Map(lambda r: r if isinstance(r, list) else [r])
            | f"ShardRejects{k or ''}" >> beam.ParDo(ShardRows("key", self.num_shards))
            for k, pc in enumerate(pcolls)
        )
        return sharded | "WriteRejects" >> WriteParquetShards(
            self.directory, REJECTS, self.num_shards, sort_by=("reason", "key", "source", "raw"))


def merge_counts(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: Counter = Counter()
    for c in counts:
        total.update(c)
    return dict(sorted(total.items()))


class _WriteJson(beam.DoFn):
    def __init__(self, path: str, extra: Mapping | None):
        self.path = path
        self.extra = dict(extra or {})

    def process(self, counts):
        payload = {**self.extra, "counts": counts}
        # put in place by rename: every later command refuses a damaged `_stats` file, so a
        # write cut short (a full disk, a killed worker) must leave the old file, not half a new one
        parquet_io.write_bytes(json.dumps(payload, indent=2, sort_keys=True).encode("utf-8"), self.path)
        yield counts


class WriteCounts(beam.PTransform):
    """Count dicts -> one summed JSON file (`<out>/_stats/<stage>.json`).

    The file is what the report and the reconciliation tests read; it does not depend on
    the runner's metrics API, which differs between FnApiRunner, Dataflow and Flink.
    """

    def __init__(self, path: str, extra: Mapping | None = None):
        super().__init__()
        self.path = path
        self.extra = extra

    def expand(self, pcoll):
        return (
            pcoll
            | "SumCounts" >> beam.CombineGlobally(merge_counts)
            | "WriteCountsJson" >> beam.ParDo(_WriteJson(self.path, self.extra))
        )


SHARD_BATCH = tuple[int, Any]
"""The element type of a sharded shuffle: `(shard, batch)`."""


def _same(kv):
    return kv


class GroupShards(beam.PTransform):
    """`(shard, batch)` pairs, from one PCollection or a tuple of them, grouped by shard, with
    shard 0 always present (possibly with no batches), so every sharded output has at least
    one file for the next stage.

    Every input, the seed and the Flatten carry the one type `SHARD_BATCH`, so they share one
    coder: untyped, the local FnApiRunner transcodes the flattened batches in two extra stages
    that move every batch through the runner and a worker twice more (job server CPU for the
    papers stage on 1M Unpaywall lines, 2 workers: 34 s -> 19 s, bench/papers_parallel.py)."""

    def expand(self, pcolls):
        if isinstance(pcolls, beam.PCollection):
            pcolls = (pcolls,)
        typed = [pc | f"Type{k}" >> beam.Map(_same).with_output_types(SHARD_BATCH) for k, pc in enumerate(pcolls)]
        seed = pcolls[0].pipeline | "EnsureShard0" >> beam.Create([(0, [])]).with_output_types(SHARD_BATCH)
        return (
            (*typed, seed)
            | "WithShard0" >> beam.Flatten().with_output_types(SHARD_BATCH)
            | "GroupByShard" >> beam.GroupByKey()
        )


# ---------------------------------------------------------------- tagged shuffles and Parquet parts


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
        from openmsd_build.core.stages import writer_of

        writer = writer_of(directory)  # "the previous stage" misled: contexts reads what split writes
        raise UserError(f"no Parquet files under {directory}; run the {writer or 'previous'} stage first")
    parquet_io.check_parts(parts)  # a damaged or empty part is one line naming it, not a worker's traceback
    return (
        pipeline
        | f"{label}Files" >> beam.Create(parts, reshuffle=False)  # spread once, below
        | f"{label}Reshuffle" >> beam.Reshuffle()
        | f"{label}Read" >> beam.ParDo(ReadParquetFrames(columns))
    )


def in_global_window(outputs):
    """Outputs of a `finish_bundle` (values, or `TaggedOutput`s of values) with the window
    Beam requires there: the global one, as every element of our stages has. Used by the DoFns
    that hand work to child processes and emit the answers still out when the bundle ends."""
    from apache_beam.transforms.window import GlobalWindows

    for out in outputs:
        if isinstance(out, beam.pvalue.TaggedOutput):
            yield beam.pvalue.TaggedOutput(out.tag, GlobalWindows.windowed_value(out.value))
        else:
            yield GlobalWindows.windowed_value(out)


class UntypedDoFn(beam.DoFn):
    """A DoFn whose outputs Beam need not infer. For a DoFn without output hints Beam reads
    the bytecode of `process` and of everything it calls (`trivial_inference`) each time
    the DoFn is applied, only to conclude "Any" (or a Union with `TaggedOutput`) for ours,
    which pick the same coders; the text stage applies its join DoFn a dozen times and spent
    ~0.8 s of every run's start-up there. Declaring Any skips it."""

    def infer_output_type(self, input_type):
        from apache_beam.typehints import Any

        return Any
