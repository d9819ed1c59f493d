"""Parsing and merging the papers stage's work on every core of a local run (pools of processes).

Why: Beam's local in-process runner runs the stage on one worker, so one core parses
every snapshot record while the others idle; parsing and projecting is ~80% of the stage,
merging the shards and writing their Parquet files most of the rest. Here the work of
`join` -- whole files, chunks of raw lines of one JSON Lines file, one shard's merge --
runs in `core.ordered_pool` child processes, and the answers are emitted in the order the
work was handed out.

The outputs are the same as `join.read_source_file` / `join.parse_line_chunk` in one
process: the same batches (cut differently, which the merge does not see), the same reject
rows and the same counts. A JSON Lines file read in place is parsed in chunks of lines, so
its per-file reject budget (`rejects.MAX_REJECTS_PER_FILE`) is applied here, in line order,
to the chunks' reject rows; the chunks themselves keep every reject row (at most one per
line). A shard merged in a child (`PooledMerger`) gives the same table and counts as
`join.merge_shard` in the worker, and its Parquet bytes are encoded there with the settings
the parent passes (`parquet_io.write_table`'s), so the part file is the same byte for byte;
the parent writes it. Distributed runners never use this (their workers are already one
per core).

Spilled batches (`spill_dir`, a local folder: the stage's temporary root holds it and goes
with it after the run): the parsing children write each batch to a file there and only its
path goes back to the parent, through Beam's shuffle and on to the merging child, which
reads it. On the local runner a batch that travels as bytes is copied a dozen times
by the parent alone -- pipe in, the shuffle's Flatten (a stage of its own), its grouping
buffer, the grouped read, pipe out -- about a fifth of the stage's time at 300k papers,
on one core while the others wait; and the runner held every batch in memory at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from openmsd_build.core import parquet_io, spill
from openmsd_build.core.ipc import to_ipc
from openmsd_build.core.json_records import Item, iter_raw_lines, parse_raw_line
from openmsd_build.core.ordered_pool import OrderedPool
from openmsd_build.core.rejects import MAX_REJECTS_PER_FILE, RejectBudget
from openmsd_build.core.spares import Shelf
from openmsd_build.papers import join

# Lines per piece of work when a JSON Lines file is parsed in place: ~10-30 MB of raw lines,
# a few hundred ms of parsing, so the parent (which reads and decompresses) stays ahead.
POOL_CHUNK_LINES = 10_000

Outputs = list[tuple[str, Any]]
RawLine = tuple[str, bytes | None, str | None, str | None, bytes | None]


# Below this much (compressed) input a local run parses in the Beam worker itself: starting
# the pool's processes costs ~2 s of CPU each (imports), more than parsing a few MB saves.
POOL_MIN_BYTES = 16 << 20


def default_parse_workers(options: Any, input_bytes: int) -> int:
    """Parsing processes when the user gives none: one per core on the local in-process
    runner (shared by its Beam workers, `--direct_num_workers`) for inputs of at least
    `POOL_MIN_BYTES`; none (1: parse in the worker itself) for smaller inputs and on a
    distributed runner, whose workers already use every core."""
    from openmsd_build.core.runner import cores_per_local_worker

    if input_bytes < POOL_MIN_BYTES:
        return 1
    return cores_per_local_worker(options)


# ----------------------------------------------------------------- the work, run in a child


def _as_ipc(outputs: Iterable[tuple[str, Any]], spill_dir: str | None = None) -> Outputs:
    """`join`'s outputs with each batch table as `core.ipc` bytes: the answer goes back to the
    parent over a pipe and then into Beam's shuffle, and bytes cross both as one copy. With
    `spill_dir`, each batch is written there instead and only its path goes back."""
    if spill_dir is not None:
        return [(tag, (value[0], spill.write_piece(spill_dir, "batch", *value)) if tag == "batch" else value)
                for tag, value in outputs]
    return [(tag, (value[0], to_ipc(value[1])) if tag == "batch" else value) for tag, value in outputs]


def parse_file_task(path: str, source: str, num_shards: int, batch_size: int, spill_dir: str | None = None) -> Outputs:
    """One whole file, as `join.read_source_file` yields it."""
    return _as_ipc(join.read_source_file(path, source, num_shards, batch_size), spill_dir)


def parse_lines_task(source: str, path: str, lines: list[RawLine], num_shards: int, batch_size: int,
                     spill_dir: str | None = None) -> Outputs:
    """Raw lines of one JSON Lines file (`(origin, line, reason, detail, raw)` as
    `records.iter_raw_lines` read them) -> batches, every reject row, and counts without
    `files.<source>` (the reader counts the file once)."""
    items = (Item(origin, reason=reason, detail=detail, raw=raw) if reason is not None
             else parse_raw_line(line, origin) for origin, line, reason, detail, raw in lines)
    return _as_ipc(join._collect(join._parsed(items, source), source, path, num_shards, batch_size,
                                 count_file=False, budget=RejectBudget(limit=len(lines))), spill_dir)


def parse_chunk_task(source: str, path: str, packed: bytes, num_shards: int, batch_size: int,
                     spill_dir: str | None = None) -> Outputs:
    """One chunk of `join.read_line_chunks`, as `join.parse_line_chunk` yields it."""
    return _as_ipc(join.parse_line_chunk(source, path, packed, num_shards, batch_size), spill_dir)


def merge_shard_task(batches: list, write_empty: bool) -> tuple[bytes | None, dict[str, int]]:
    """One shard's batches (IPC bytes, or paths of spilled batches) -> (its Parquet file's
    bytes, the merge counts), as `join.merge_shard` and `parquet_io.write_table` make them;
    None instead of bytes for an empty shard unless `write_empty` (shard 0 is always
    written). Encoded here, written by the parent (`parquet_io.write_bytes`, where Beam's
    filesystems are): a child never imports Beam."""
    table, counts = join.merge_shard([spill.read_piece(b) if isinstance(b, str) else b for b in batches])
    if not (table.num_rows or write_empty):
        return None, counts
    return parquet_io.encode(table), counts


# ----------------------------------------------------------------- the parent's side

# Pools with no work out, lent to the next `PooledReader` or `PooledMerger` of this process
# that needs one: on the local runner the stages run one after the other, so the processes
# that parsed the files, idle by then, merge the shards without a second start-up (~0.7 s
# at the start of the merge, on its critical path, and ~0.7 s of CPU per process), keyed by
# their number of processes. One user at a time; `close_idle_pools` (every user's `close`,
# i.e. the DoFns' teardown at the end of the pipeline) stops them.
_IDLE: Shelf[OrderedPool] = Shelf(close=OrderedPool.close)


def _borrow(workers: int) -> OrderedPool:
    pool = _IDLE.take(workers)
    # one polars thread per process: the processes already share out the cores
    return pool or OrderedPool(workers, preload=(__name__,), env_defaults={"POLARS_MAX_THREADS": "1"})


def close_idle_pools() -> None:
    """Stop the processes of every pool no one holds."""
    _IDLE.close_all()


class _PoolUser:
    """Holds a pool of `workers` processes from its first use (`pool`) until its work is
    drained (`_drain`), then lends it on (`_borrow`)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: OrderedPool | None = None

    @property
    def pool(self) -> OrderedPool:
        if self._pool is None:
            self._pool = _borrow(self.workers)
        return self._pool

    def _drain(self) -> Iterator[tuple[Any, Any]]:
        if self._pool is None:
            return
        yield from self._pool.drain()
        pool, self._pool = self._pool, None
        _IDLE.put(pool.workers, pool)

    def abandon(self) -> None:
        """Forget the work out (a failed bundle); the pool stays held."""
        if self._pool is not None:
            self._pool.abandon()

    def close(self) -> None:
        """Stop the processes of the pool held, and of the idle ones."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        close_idle_pools()


class _FileBudget:
    """The reject budget of one JSON Lines file parsed in chunks: applied by the parent to
    each chunk's reject rows in line order, as `join._collect` does for a whole file."""

    __slots__ = ("source", "budget")

    def __init__(self, source: str, limit: int = MAX_REJECTS_PER_FILE) -> None:
        self.source = source
        self.budget = RejectBudget(limit)

    def apply(self, outputs: Outputs) -> Iterator[tuple[str, Any]]:
        suppressed = 0
        for tag, value in outputs:
            if tag == "reject" and not self.budget.take():
                suppressed += 1
                continue
            yield tag, value
        if suppressed:
            yield "counts", {f"rejects_suppressed.{self.source}": suppressed}


class PooledReader(_PoolUser):
    """`join.read_source_file` and `join.parse_line_chunk` on a pool of `workers` processes.
    With `spill_dir` (a local folder) the batches are written there by the children and only
    their paths come back (`core.spill.write_piece`; see the module).

    `read_file` and `parse_chunk` hand out the work and yield the outputs of the work that
    is already done (in order); `finish` yields the rest (call it when the bundle ends: the
    pool is then lent on); `abandon` drops work out for a failed bundle; `close` stops the
    processes."""

    def __init__(self, workers: int, num_shards: int, batch_size: int = join.DEFAULT_BATCH,
                 chunk_lines: int = POOL_CHUNK_LINES, spill_dir: str | None = None) -> None:
        # the pool is taken (and started) by the first piece of work, not here: a DoFn whose
        # stage gets no input (no file is cut into line chunks) must not pay the start-up
        super().__init__(workers)
        self.num_shards = num_shards
        self.batch_size = batch_size
        self.chunk_lines = chunk_lines
        self.spill_dir = spill_dir

    def read_file(self, path: str, source: str) -> Iterator[tuple[str, Any]]:
        if source not in join.LINE_SOURCES:
            yield from self._submit(None, f"reading {path}", parse_file_task, path, source)
            return
        budget = _FileBudget(source)
        chunk: list[RawLine] = []
        for item in iter_raw_lines(path):
            chunk.append((item.origin, item.obj, item.reason, item.detail, item.raw))
            if len(chunk) >= self.chunk_lines:
                yield from self._submit_lines(budget, source, path, chunk)
                chunk = []
        if chunk:
            yield from self._submit_lines(budget, source, path, chunk)
        yield "counts", {f"files.{source}": 1}

    def parse_chunk(self, source: str, path: str, packed: bytes) -> Iterator[tuple[str, Any]]:
        yield from self._submit(None, f"parsing a chunk of {path}", parse_chunk_task, source, path, packed)

    def finish(self) -> Iterator[tuple[str, Any]]:
        yield from self._emit(self._drain())

    def _submit_lines(self, budget: _FileBudget, source: str, path: str,
                      chunk: list[RawLine]) -> Iterator[tuple[str, Any]]:
        what = f"parsing lines {chunk[0][0].rsplit(':', 1)[-1]}-{chunk[-1][0].rsplit(':', 1)[-1]} of {path}"
        yield from self._submit(budget, what, parse_lines_task, source, path, chunk)

    def _submit(self, budget: _FileBudget | None, what: str, fn, *args: Any) -> Iterator[tuple[str, Any]]:
        yield from self._emit(self.pool.submit(budget, what, fn, *args, self.num_shards, self.batch_size,
                                               self.spill_dir))

    @staticmethod
    def _emit(answers: Iterable[tuple[_FileBudget | None, Outputs]]) -> Iterator[tuple[str, Any]]:
        for budget, outputs in answers:
            yield from (outputs if budget is None else budget.apply(outputs))


class PooledMerger(_PoolUser):
    """`join.merge_shard` and the encoding of the shard's Parquet file on a pool of `workers`
    processes, so that several shards merge at once.

    `merge` hands out one shard and returns `(shard, parquet bytes or None, counts)` of the
    shards already done, in the order they were handed out; `finish` yields the rest;
    `abandon` and `close` as `PooledReader`'s. At most two shards per child are out at once
    (a child that is done takes the next at once, whichever shard is first in line); each
    is a list of paths when the batches were spilled, else their bytes."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        # taken now, not by the first shard (the stage always merges, shard 0 at least): the
        # parsing processes when they are idle, else new ones, whose start-up then overlaps
        # the runner handing over the grouped input
        self.pool.start()

    def merge(self, shard: int, batches: Iterable[Any]) -> list[tuple[int, bytes | None, dict[str, int]]]:
        answers = self.pool.submit(shard, f"merging shard {shard} and encoding its Parquet file", merge_shard_task,
                                   list(batches), shard == 0)
        return list(self._emit(answers))

    def finish(self) -> Iterator[tuple[int, bytes | None, dict[str, int]]]:
        yield from self._emit(self._drain())

    @staticmethod
    def _emit(answers: Iterable[tuple[int, tuple[bytes | None, dict[str, int]]]]):
        for shard, (data, counts) in answers:
            yield shard, data, counts
