"""A Ctrl-C that something caught on the way is still a Ctrl-C.

Why: Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be, and
not every place lets it through. Beam re-raises one from inside a DoFn as a RuntimeError
(`runners.common._reraise_augmented`), and where Beam closes its workers at the end of a
pipeline (a DoFn's teardown: the papers stage's pool waiting for its children) it logs that
error with its traceback and carries on, so the pipeline "succeeded", the stage swapped its
new outputs in and the command exited 0 after a Ctrl-C. While `remembered()` is in force every
SIGINT is also counted (`count`), so the command and the stage's swap (`core.staging`) can ask
whether one came, whatever became of its exception.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_count = 0


def count() -> int:
    """How many SIGINTs arrived while `remembered()` was in force (in this process)."""
    return _count


def _counted_default_int_handler(signum: int, frame: object) -> None:
    global _count
    _count += 1
    signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt, as without us


@contextmanager
def remembered() -> Iterator[None]:
    """Count every SIGINT while the block runs; Python's own behaviour is unchanged (each
    still raises KeyboardInterrupt). Only from the main thread, where handlers are set, and
    only over Python's default handler: one set by someone else (a test runner, an
    application embedding the command) is left alone."""
    if threading.current_thread() is not threading.main_thread() or (
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    signal.signal(signal.SIGINT, _counted_default_int_handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is _counted_default_int_handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def stop_if_seen_since(mark: int) -> None:
    """Raise KeyboardInterrupt if a SIGINT came since `count()` was `mark`: what was made since
    must not replace a command's previous outputs."""
    if _count != mark:
        raise KeyboardInterrupt("a Ctrl-C was caught on the way")


def was_interrupted(exc: BaseException | None) -> bool:
    """Whether `exc` is a KeyboardInterrupt or was caused by one: Beam re-raises a
    KeyboardInterrupt from inside a DoFn as a RuntimeError whose message starts with
    `KeyboardInterrupt` (runners.common._reraise_augmented)."""
    seen: set[int] = set()
    current = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, KeyboardInterrupt) or str(current).startswith("KeyboardInterrupt"):
            return True
        current = current.__cause__ or current.__context__
    return False
