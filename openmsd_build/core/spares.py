"""Idle worker processes kept for the next user in the same process, by configuration.

Why: a pool of helper processes (the papers stage's parsing pool, `papers.parallel`) costs
an interpreter start and its imports (~0.7 s of CPU a process) before it does any work. On the
local runner one process runs one DoFn after another (parsing the snapshots, then merging
them), and each would start its own children. Instead a user that has finished with its
children puts them on a shelf under a key saying what they can do, and the next user with the
same key takes them. Whatever nobody took is stopped at the end of the run, at a DoFn's
teardown, or at the latest when the process exits. (The text stage's extractors are forks of
a warm fork server, which cost milliseconds: `text.extract.pool`.)
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Shelf(Generic[T]):
    """Idle items (a child process and its pipes, a pool) by key; `take` returns the most
    recently put one still `alive`, stopping (`close`) the dead ones it passes."""

    def __init__(self, close: Callable[[T], None], alive: Callable[[T], bool] = lambda _item: True) -> None:
        self._close, self._alive = close, alive
        self._items: dict[Hashable, list[T]] = {}
        self._lock = threading.Lock()
        atexit.register(self.close_all)

    def put(self, key: Hashable, item: T) -> None:
        with self._lock:
            self._items.setdefault(key, []).append(item)

    def take(self, key: Hashable) -> T | None:
        dead: list[T] = []
        found = None
        with self._lock:
            items = self._items.get(key, [])
            while items:
                item = items.pop()
                if self._alive(item):
                    found = item
                    break
                dead.append(item)
        for item in dead:
            self._close(item)
        return found

    def held(self) -> list[T]:
        """Every item on the shelf now (for tests and diagnostics)."""
        with self._lock:
            return [item for group in self._items.values() for item in group]

    def close_all(self) -> None:
        """Stop every item on the shelf (outside the lock: stopping a process can wait)."""
        with self._lock:
            items = [item for group in self._items.values() for item in group]
            self._items.clear()
        for item in items:
            self._close(item)
