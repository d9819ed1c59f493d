"""A small pool of worker processes whose answers come back in submission order.

Why: the local in-process Beam runner runs every bundle on one worker, i.e. one core. A
DoFn whose per-element work is pure CPU (parsing a snapshot file) can hand that work to a
few child processes and emit each answer when it is ready, so every core of a laptop works
while the stage and its outputs stay the same. Answers are returned in the order the work
was submitted, so what a DoFn emits does not depend on which child finished first.

Each child is a fresh `python -m openmsd_build.core.ordered_pool` talking over two private
pipes (`(function, args)` in, the answer out, as `multiprocessing` connection messages: the
same mechanism as the text stage's isolated extractors; nothing else writes to them). Not `multiprocessing`: its `spawn`
re-imports the launcher's main script in every child (a script without an
`if __name__ == "__main__"` guard would start a second pipeline), and `fork` copies a
process that runs gRPC and Beam threads, which can deadlock. Work is handed only to an idle
child, at most `max_pending` pieces are out at once, and a child that dies (killed, out of
memory, a crash in native code) raises `WorkerCrashed` naming the work it was doing, instead
of a wait forever. A child exits by itself when its parent is gone. Each child runs in a
process group of its own, so a terminal's Ctrl-C reaches only the parent, which stops the run
and closes the pool (a child reached while its interpreter started printed a traceback).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, NoReturn

from openmsd_build.core.children import child_env, exit_with_parent
from openmsd_build.core.collector import paused_collector


class WorkerCrashed(RuntimeError):
    """A pool process died while doing the named work."""


class _Child:
    """One worker process and its two pipes; `job` is the sequence number it is working on."""

    def __init__(self, preload: Sequence[str], env_defaults: Mapping[str, str]) -> None:
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        env = child_env(env_defaults)
        try:
            # in a process group of its own: a terminal's Ctrl-C (sent to the foreground group)
            # is the parent's to handle, and reached a starting child before it could ignore
            # it, which printed a KeyboardInterrupt traceback from its imports
            self.process = subprocess.Popen(
                [sys.executable, "-m", "openmsd_build.core.ordered_pool", str(request_r), str(answer_w),
                 str(os.getpid()), ",".join(preload)],
                pass_fds=(request_r, answer_w), stdin=subprocess.DEVNULL, env=env, process_group=0)
        finally:
            os.close(request_r)
            os.close(answer_w)
        self.requests = Connection(request_w, readable=False)
        self.answers = Connection(answer_r, writable=False)
        self.job: int | None = None

    def close(self) -> None:
        for conn in (self.requests, self.answers):
            try:
                conn.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)  # its request pipe is closed: it exits at once when idle
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class OrderedPool:
    """`workers` child processes; `submit` work, get answers back in submission order.

    `submit` first hands back the answers that must be taken before more work may go out
    (at most `max_pending` pieces are out at once, so memory is bounded whatever the input
    size), then any already finished. `ready()` returns the finished answers at the head of
    the queue without waiting, `drain()` waits for all. Each answer is `(tag, result)`, with
    the `tag` given to `submit`; an exception raised by the work is raised again here, with
    notes naming the work (`what`) and giving the child's traceback.
    Children are started on first use (or by `start`) and re-started after `close`;
    `preload` modules are imported as they start, `env_defaults` are environment variables
    they get unless this process has them set.
    """

    def __init__(self, workers: int, max_pending: int | None = None, preload: Sequence[str] = (),
                 env_defaults: Mapping[str, str] | None = None) -> None:
        if workers < 1:
            raise ValueError("OrderedPool needs at least one worker")
        self.workers = workers
        self.max_pending = max(workers, max_pending or 2 * workers)
        self.preload = tuple(preload)
        self.env_defaults = dict(env_defaults or {})
        self._children: list[_Child] = []
        self._next = 0
        self._pending: deque[tuple[int, Any, str]] = deque()  # (job, tag, what) in submission order
        self._queued: deque[tuple[int, tuple[Callable[..., Any], tuple]]] = deque()  # not yet handed to a child
        self._answers: dict[int, tuple[bool, Any]] = {}

    def start(self) -> None:
        """Start every child now (e.g. while the pipeline is still being set up): a child's
        imports take a second or two."""
        while len(self._children) < self.workers:
            self._children.append(_Child(self.preload, self.env_defaults))

    @property
    def pending(self) -> int:
        return len(self._pending)

    def submit(self, tag: Any, what: str, fn: Callable[..., Any], *args: Any) -> list[tuple[Any, Any]]:
        """Queue `fn(*args)` for a child (`what` names the work in errors); `fn` must be a
        module-level function. Returns the answers ready to be taken (see the class)."""
        done: list[tuple[Any, Any]] = []
        while len(self._pending) >= self.max_pending:
            done.append(self._take_head())
        self.start()
        job = self._next
        self._next += 1
        self._queued.append((job, (fn, args)))
        self._pending.append((job, tag, what))
        self._pump(block=False)
        done.extend(self.ready())
        return done

    def ready(self) -> list[tuple[Any, Any]]:
        """The answers finished at the head of the queue (never waits)."""
        self._pump(block=False)
        done: list[tuple[Any, Any]] = []
        while self._pending and self._pending[0][0] in self._answers:
            done.append(self._take_head())
        return done

    def drain(self) -> Iterator[tuple[Any, Any]]:
        """Every answer still out, in submission order (waits for each)."""
        while self._pending:
            yield self._take_head()

    def _take_head(self) -> tuple[Any, Any]:
        job, tag, _what = self._pending[0]
        while job not in self._answers:
            self._pump(block=True)
        self._pending.popleft()
        ok, value = self._answers.pop(job)
        if not ok:
            value.add_note(f"raised in a pool worker process while {_what}")
            raise value
        return tag, value

    def _what(self, job: int) -> str:
        return next((what for j, _tag, what in self._pending if j == job), f"job {job}")

    def _pump(self, block: bool) -> None:
        """Hand queued work to idle children, then collect the answers that are in (waiting
        for at least one when `block`)."""
        for child in self._children:
            if child.job is None and self._queued:
                job, work = self._queued.popleft()
                child.job = job
                try:
                    child.requests.send(work)
                except OSError:
                    self._crashed(child)
        busy = {child.answers: child for child in self._children if child.job is not None}
        if not busy:
            return
        for conn in wait(list(busy), timeout=None if block else 0):
            child = busy[conn]
            try:
                ok, value = conn.recv()
            except (EOFError, OSError):
                self._crashed(child)
            assert child.job is not None
            self._answers[child.job] = (ok, value)
            child.job = None

    def _crashed(self, child: _Child) -> NoReturn:
        what = self._what(child.job) if child.job is not None else "its work"
        code = child.process.poll()
        if code is None:
            try:
                code = child.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        self.close()
        raise WorkerCrashed(
            f"a worker process (exit status {code}) died while {what}: killed, out of memory, or a crash in native "
            "code; the run stops here rather than lose that work")

    def abandon(self) -> None:
        """Forget the work still out (a failed bundle): its answers are never returned. A
        child still busy with such work is stopped and replaced on the next submit."""
        busy = [c for c in self._children if c.job is not None]
        for child in busy:
            child.process.kill()
            child.close()
        self._children = [c for c in self._children if c.job is None]
        self._pending.clear()
        self._queued.clear()
        self._answers.clear()

    def close(self) -> None:
        """Stop the children (also after a crash: the next submit starts fresh ones)."""
        self.abandon()
        children, self._children = self._children, []
        for child in children:
            child.close()

    def __enter__(self) -> OrderedPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- the child


def _answer(answers: Connection, work: tuple[Callable[..., Any], tuple]) -> None:
    fn, args = work
    try:
        answer: tuple[bool, Any] = (True, fn(*args))
    except Exception as exc:  # noqa: BLE001 - the parent raises it where the work was submitted
        # the parent's traceback ends where it re-raises: keep the child's, where it failed
        exc.add_note("pool worker traceback:\n" + "".join(traceback.format_tb(exc.__traceback__)).rstrip())
        answer = (False, exc)
    try:
        answers.send(answer)  # pickled before a byte is written: a failure here sends nothing
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        answers.send((False, RuntimeError(f"pool worker: cannot send the answer back: {exc!r}")))


def _child_main(argv: list[str]) -> None:
    """`python -m openmsd_build.core.ordered_pool REQUEST_FD ANSWER_FD PARENT_PID PRELOAD`
    (started by `OrderedPool`, not by hand)."""
    # Ctrl-C is the parent's to handle: it stops the run and closes the pool. (A terminal's
    # does not reach this process, started in a group of its own; a SIGINT sent to it does.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    request_fd, answer_fd, parent = int(argv[0]), int(argv[1]), int(argv[2])
    exit_with_parent(parent)
    with paused_collector():
        for module in filter(None, argv[3].split(",")):
            __import__(module)
    requests = Connection(request_fd, writable=False)
    answers = Connection(answer_fd, readable=False)
    while True:
        try:
            work = requests.recv()
        except (EOFError, OSError):
            return  # the pool was closed
        _answer(answers, work)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
