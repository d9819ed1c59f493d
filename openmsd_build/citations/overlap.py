"""Overlapping the citations stage's batch work on the second core, in the same order.

Why: the stage's DoFns run one element at a time on the runner's thread, while most of
their time is spent in polars, numpy and pyarrow, which release the GIL. Parsing the next
block of a CSV while the previous batch is hashed, cut by shard and encoded, or joining one
shard while the next is prepared, uses the second core without changing what is computed
or the order in which results are handed on (bench/citations_bench.py measures it).

Both helpers bound what is held ahead (`depth` items), so memory stays a few batches.
Beam metrics must be updated on the runner's thread: the helpers only move values, and
callers update counters when they hand a value on.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_DONE = object()


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def read_ahead(make: Callable[[], Iterator[T]], depth: int = 2) -> Iterator[T]:
    """The items of `make()`, produced by a helper thread up to `depth` items ahead.

    Items come in the producer's order; an exception raised by the producer is raised here
    at the point where it occurred in the sequence. Closing this generator early stops the
    producer at its next item.
    """
    ahead = ReadAhead(make, depth)
    try:
        yield from ahead
    finally:
        ahead.close()


class ReadAhead(Generic[T]):
    """`make()` run on a helper thread (started at once), its items held up to `depth`
    ahead: iterate to take them all in order (blocking), or `ready()` to take only those
    already produced (for a DoFn that interleaves them with other work)."""

    def __init__(self, make: Callable[[], Iterator[T]], depth: int = 2) -> None:
        self._items: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._produce, args=(make,), name="citations-read-ahead", daemon=True)
        self._thread.start()

    def _put(self, value) -> bool:
        while not self._stop.is_set():
            try:
                self._items.put(value, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, make: Callable[[], Iterator[T]]) -> None:
        try:
            for item in make():
                if not self._put(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, re-raised there
            self._put(_Failed(exc))
            return
        self._put(_DONE)

    def _take(self, item) -> bool:
        """True for an item to hand on; False at the end; raises the producer's error."""
        if item is _DONE:
            self._done = True
            return False
        if isinstance(item, _Failed):
            self._done = True
            raise item.error
        return True

    @property
    def done(self) -> bool:
        """Every item has been taken."""
        return self._done

    def ready(self) -> Iterator[T]:
        """The items produced so far, without waiting for more."""
        while not self._done:
            try:
                item = self._items.get_nowait()
            except queue.Empty:
                return
            if self._take(item):
                yield item

    def __iter__(self) -> Iterator[T]:
        while not self._done:
            item = self._items.get()
            if self._take(item):
                yield item

    def close(self) -> None:
        """Stop the producer at its next item and wait for its thread."""
        self._stop.set()
        self._thread.join()


class InOrderPool(Generic[R]):
    """Run calls on a small thread pool; hand results back in submission order, at most
    `depth` calls in flight (so a bundle's results are never all held at once)."""

    def __init__(self, workers: int = 2, depth: int = 2) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="citations-shard")
        self._pending: deque[Future[R]] = deque()
        self._depth = depth

    def submit(self, fn: Callable[..., R], *args) -> Iterator[R]:
        """Start `fn(*args)`; yields the results of earlier calls that must be taken now to
        keep at most `depth` in flight (oldest first)."""
        self._pending.append(self._pool.submit(fn, *args))
        while len(self._pending) > self._depth:
            yield self._pending.popleft().result()

    def drain(self) -> Iterator[R]:
        """The results of every call still in flight, oldest first."""
        while self._pending:
            yield self._pending.popleft().result()

    def close(self) -> None:
        """Cancel what has not started and wait for the rest (after a failure, say)."""
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True)
