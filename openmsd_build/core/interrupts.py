"""A Ctrl-C that something caught on the way is still a Ctrl-C.

Why: Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be, and
not every place lets it through. Beam re-raises one from inside a DoFn as a RuntimeError
(`runners.common._reraise_augmented`), and where Beam closes its workers at the end of a
pipeline (a DoFn's teardown: the papers stage's pool waiting for its children) it logs that
error with its traceback and carries on, so the pipeline "succeeded", the stage swapped its
new outputs in and the command exited 0 after a Ctrl-C. While `remembered()` is in force every
SIGINT is also counted (`count`), so the command and the stage's swap (`core.staging`) can ask
whether one came, whatever became of its exception.

And Python itself cannot raise the KeyboardInterrupt everywhere: where the signal is handled
inside a weakref callback, a `__del__` or the garbage collector, the exception has nowhere to
go; Python printed "Exception ignored in: ..." with its traceback, and the Ctrl-C was lost (the
command ran on). While `remembered()` is in force such a KeyboardInterrupt is not printed but
sent again, to be raised where the main thread is next (`_unraisable`).

Nor does every library let a KeyboardInterrupt through: one raised while a module is imported
can reach an import guard as another error (Python wraps what a class body's `__set_name__`
raises in a RuntimeError) and be taken for a missing optional dependency; Beam logs one that
a DoFn's teardown raises and carries on. The count stops such a command at its end, but that
was the whole run later (1 in ~200 Ctrl-Cs of pairs and of run, in their first second: the
pipeline ran to its end, 6-16 s, and only then said "interrupted"). So each SIGINT is watched
(`_watch`): if half a second later the command has not stopped for it (`acknowledge`) and the
main thread is not handling it either (unwinding through `except` / `finally` clauses), it
was swallowed, and it is sent again.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_count = 0
_acknowledged = 0  # `_count` when the command last stopped for its Ctrl-Cs (`acknowledge`)
SWALLOWED_AFTER_S = 0.5  # a Ctrl-C nobody is handling this long after it came was swallowed
_deferring = False  # in `_unraisable`, which sends the Ctrl-C again: one handled there waits too


def count() -> int:
    """How many SIGINTs arrived while `remembered()` was in force (in this process)."""
    return _count


def acknowledge() -> None:
    """The command is stopping for every Ctrl-C so far (it says so): none is sent again."""
    global _acknowledged
    _acknowledged = _count


def _counted_default_int_handler(signum: int, frame: object) -> None:
    global _count
    _count += 1
    _thread.start_new_thread(_watch, (_count,))
    if _deferring:  # raised here it would be lost like the one being sent again
        _thread.start_new_thread(_send_again, ())
        return
    signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt, as without us


def _watch(seen: int) -> None:
    """In a helper thread, after SIGINT number `seen`: if the command has not stopped for it
    (nor for a later one, which has a watch of its own) and the main thread is not handling
    it, something swallowed it: sent again."""
    main = threading.main_thread().ident
    time.sleep(SWALLOWED_AFTER_S)
    while _acknowledged < seen == _count:
        handled = sys._current_exceptions().get(main)
        if isinstance(handled, tuple):  # Python 3.11: an exc_info tuple; 3.12: the exception
            handled = handled[1]
        if not was_interrupted(handled):
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.1)  # still unwinding (`finally`, `except` clauses): its cleanup runs


def _send_again() -> None:
    """SIGINT to this process from a helper thread, a moment later: Python then raises the
    KeyboardInterrupt wherever the main thread is next."""
    time.sleep(0.005)
    os.kill(os.getpid(), signal.SIGINT)


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
    previous_hook = sys.unraisablehook

    def _unraisable(unraisable) -> None:  # noqa: ANN001 - sys.UnraisableHookArgs
        global _deferring
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # a Ctrl-C handled inside a weakref callback, `__del__` or the GC: sent again, to
            # be raised where the main thread is next (raised in this hook, it is lost too).
            # A bare thread: `threading.Thread.start` waits for it, and would be interrupted.
            _deferring = True
            _thread.start_new_thread(_send_again, ())
            _deferring = False
            return
        previous_hook(unraisable)

    sys.unraisablehook = _unraisable
    try:
        yield
    finally:
        if sys.unraisablehook is _unraisable:
            sys.unraisablehook = previous_hook
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
