"""Parsing the papers stage's files on every core of a local run (a pool of processes).

Why: Beam's local in-process runner runs the stage on one worker, so one core parses
every snapshot record while the others idle; parsing and projecting is ~80% of the stage.
Here the work of `join` -- whole files, or chunks of raw lines of one JSON Lines file --
runs in `core.ordered_pool` child processes, and the answers are emitted in the order the
work was handed out.

The outputs are the same as `join.read_source_file` / `join.parse_line_chunk` in one
process: the same batches (cut differently, which the merge does not see), the same reject
rows and the same counts. A JSON Lines file read in place is parsed in chunks of lines, so
its per-file reject budget (`rejects.MAX_REJECTS_PER_FILE`) is applied here, in line order,
to the chunks' reject rows; the chunks themselves keep every reject row (at most one per
line). Distributed runners never use this (their workers are already one per core).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from openmsd_build.core.ipc import to_ipc
from openmsd_build.core.ordered_pool import OrderedPool
from openmsd_build.core.rejects import MAX_REJECTS_PER_FILE, RejectBudget
from openmsd_build.papers import join
from openmsd_build.papers.sources.records import Item, iter_raw_lines, parse_raw_line

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


def _as_ipc(outputs: Iterable[tuple[str, Any]]) -> Outputs:
    """`join`'s outputs with each batch table as `core.ipc` bytes: the answer goes back to the
    parent over a pipe and then into Beam's shuffle, and bytes cross both as one copy."""
    return [(tag, (value[0], to_ipc(value[1])) if tag == "batch" else value) for tag, value in outputs]


def parse_file_task(path: str, source: str, num_shards: int, batch_size: int) -> Outputs:
    """One whole file, as `join.read_source_file` yields it."""
    return _as_ipc(join.read_source_file(path, source, num_shards, batch_size))


def parse_lines_task(source: str, path: str, lines: list[RawLine], num_shards: int, batch_size: int) -> Outputs:
    """Raw lines of one JSON Lines file (`(origin, line, reason, detail, raw)` as
    `records.iter_raw_lines` read them) -> batches, every reject row, and counts without
    `files.<source>` (the reader counts the file once)."""
    items = (Item(origin, reason=reason, detail=detail, raw=raw) if reason is not None
             else parse_raw_line(line, origin) for origin, line, reason, detail, raw in lines)
    return _as_ipc(join._collect(join._parsed(items, source), source, path, num_shards, batch_size,
                                 count_file=False, budget=RejectBudget(limit=len(lines))))


def parse_chunk_task(source: str, path: str, packed: bytes, num_shards: int, batch_size: int) -> Outputs:
    """One chunk of `join.read_line_chunks`, as `join.parse_line_chunk` yields it."""
    return _as_ipc(join.parse_line_chunk(source, path, packed, num_shards, batch_size))


# ----------------------------------------------------------------- the parent's side


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


class PooledReader:
    """`join.read_source_file` and `join.parse_line_chunk` on a pool of `workers` processes.

    `read_file` and `parse_chunk` hand out the work and yield the outputs of the work that
    is already done (in order); `finish` yields the rest (call it when the bundle ends);
    `abandon` drops work out for a failed bundle; `close` stops the processes."""

    def __init__(self, workers: int, num_shards: int, batch_size: int = join.DEFAULT_BATCH,
                 chunk_lines: int = POOL_CHUNK_LINES) -> None:
        # one polars thread per process: the processes already share out the cores
        # started by the first piece of work, not here: a DoFn whose stage gets no input
        # (no file is cut into line chunks) must not pay the processes' start-up
        self.pool = OrderedPool(workers, preload=(__name__,), env_defaults={"POLARS_MAX_THREADS": "1"})
        self.num_shards = num_shards
        self.batch_size = batch_size
        self.chunk_lines = chunk_lines

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
        yield from self._emit(self.pool.drain())

    def abandon(self) -> None:
        self.pool.abandon()

    def close(self) -> None:
        self.pool.close()

    def _submit_lines(self, budget: _FileBudget, source: str, path: str,
                      chunk: list[RawLine]) -> Iterator[tuple[str, Any]]:
        what = f"parsing lines {chunk[0][0].rsplit(':', 1)[-1]}-{chunk[-1][0].rsplit(':', 1)[-1]} of {path}"
        yield from self._submit(budget, what, parse_lines_task, source, path, chunk)

    def _submit(self, budget: _FileBudget | None, what: str, fn, *args: Any) -> Iterator[tuple[str, Any]]:
        yield from self._emit(self.pool.submit(budget, what, fn, *args, self.num_shards, self.batch_size))

    @staticmethod
    def _emit(answers: Iterable[tuple[_FileBudget | None, Outputs]]) -> Iterator[tuple[str, Any]]:
        for budget, outputs in answers:
            yield from (outputs if budget is None else budget.apply(outputs))
