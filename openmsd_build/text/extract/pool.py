"""Untrusted pages and PDFs parsed in child processes with hard limits: `ExtractorPool`.

HTML and PDF parsers are native code fed with bytes from the open web: trafilatura can hang
on a huge page and PDFium can crash or spin on a malformed file. In a Beam worker either would
cost the whole bundle or the whole job. So every document is extracted in a child process:

* the parent checks the size first (`too_large`, nothing is sent);
* the parent waits at most `timeout` seconds of wall time per document; past it the child is
  killed (`timeout`); a child that dies (segfault, `os._exit`, the OOM killer) answers
  `crashed`; either way the child is replaced, so one bad document costs one document;
* an address-space limit (RLIMIT_AS, `max_memory_mb`) turns a memory bomb into a
  `MemoryError` in the child (`out_of_memory`), after which that child is replaced too
  (its heap may be fragmented or half-freed), and so is a child that has served
  `recycle_after` documents (a slow leak in a parser never grows without bound).

The children come from the standard library's `forkserver` context: one server process per
parent, started at the first child, imports the extractors once (`PRELOAD`, including their
first-use work in `preload.py`) and forks every child from that warm state, so replacing a
child costs milliseconds. Forking the Beam worker itself is unsafe (it runs gRPC threads), and
a fresh interpreter per child would import trafilatura each time. The children ignore
SIGINT: a terminal's Ctrl-C reaches the parent, which kills the busy children as it stops
(`abandon`). A child whose caller is gone, even killed, exits at once.

One pool per DoFn instance, from `setup` to `teardown` (`start`, `close`). `submit` hands a
document to an idle child at once, or queues it behind the one a busy child is extracting
(one at most, and only a document small enough to wait in the pipe: see below); only when no
child has room does it wait, and then it returns every answer that is in, so reading the next
record overlaps with extracting the last and the children's pipes are polled once per
document, not after every hand-off; `drain` waits for the rest. Answers are `(tag, result,
reason, detail)`, in the order the children finish. Deadlines are enforced whenever the
caller waits on a full pool, drains or calls `collect_ready`. The pool holds only its
configuration until `start`, so it pickles as a DoFn attribute.

Why a second document per child: with one, a child that has answered sleeps until the
worker, busy reading the next record or passing answers on, hands it the next document; at
20,000 small papers the two cores idled 9-10 % of the replay (1-3 % with the queue). The
queued document is read by the child as soon as it answers. It waits in the pipe's buffer
(widened at start, `_widen`), so it is queued only when it fits in a quarter of it: the write
waits at most for the child to finish reading the document before it, never for one being
extracted, and the pool never waits on a child that waits on the pool. Its deadline runs from
the moment the child answered the one before it (sent with the answer). When a child is
killed or dies, the document it was extracting is the one that failed; the one queued behind
it is sent to a child started for it.

The hand-off is paid per document, so it is lean: a request is two messages, `(kind,
kwargs)` pickled and then the document's bytes as they are (a pickle would copy a PDF once
more), answers are pickled by `pickle` itself (`Connection.send` builds a `ForkingPickler`
per message, whose copy of the reducer table cost ~15 us a document), and the pool keeps one
`select.poll` of its children's pipes (`multiprocessing.connection.wait` builds a selector
per call). A pipe that ends while its child is idle (killed between documents) retires it.
"""

from __future__ import annotations

import importlib
import logging
import math
import multiprocessing
import os
import pickle
import select
import signal
import socket
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

LOG = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
"""50 MB: beyond the largest ordinary paper PDF; bigger files are scans or datasets."""
DEFAULT_MAX_MEMORY_MB = 3072
DEFAULT_RECYCLE_AFTER = 2000
PIPE_BUFFER_BYTES = 1 << 20
"""What each direction of a child's pipe is asked to hold (Linux caps it at `wmem_max` and
reports twice the request): answers up to about this size are written without the child
waiting for the pool, and a document up to a quarter of what it holds can be queued."""
STARTUP_TIMEOUT_S = 120.0

# Reasons reported next to a None result.
TOO_LARGE = "too_large"
TIMEOUT = "timeout"
CRASHED = "crashed"
PARSE_ERROR = "parse_error"
OUT_OF_MEMORY = "out_of_memory"
UNKNOWN_KIND = "unknown_kind"

# kind -> "module:function"; functions take the document bytes (and keyword arguments) and
# return a picklable dict.
EXTRACTORS: dict[str, str] = {
    "html": "openmsd_build.text.extract.landing:extract_landing",
    "pdf": "openmsd_build.text.extract.pdf:extract_pdf",
}
# What the fork server imports before it forks any child (`preload.py` imports the
# extractors and does their first-use work); `__main__` as the standard library does.
PRELOAD = ["__main__", "openmsd_build.text.extract.preload"]
# Misbehaving extractors for tests and for checking a deployment's limits; enabled only with
# `debug_kinds=True`. Their input bytes are an ASCII number (seconds to sleep, MB to allocate).
DEBUG_EXTRACTORS: dict[str, str] = {
    name: f"openmsd_build.text.extract.pool:_{name}"
    for name in ("debug_sleep", "debug_exit", "debug_abort", "debug_raise", "debug_allocate", "debug_echo")
}


def _debug_sleep(data: bytes) -> dict[str, Any]:
    time.sleep(float(data or b"3600"))
    return {"slept": float(data or b"3600")}


def _debug_exit(data: bytes, **_ignored: Any) -> dict[str, Any]:
    os._exit(int(data or b"3"))


def _debug_abort(data: bytes) -> dict[str, Any]:
    os.abort()


def _debug_raise(data: bytes) -> dict[str, Any]:
    raise ValueError(data.decode("utf-8", "replace") or "debug error")


def _debug_allocate(data: bytes) -> dict[str, Any]:
    return {"allocated": len(bytearray(int(data) * 1024 * 1024))}


def _debug_echo(data: bytes) -> dict[str, Any]:
    return {"pid": os.getpid(), "n_bytes": len(data)}


def _load(spec: str) -> Any:
    module_name, _, function_name = spec.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def _put(conn: Connection, message: Any) -> None:
    """One message as `Connection.send` frames it (the other end reads it with `recv`),
    pickled by `pickle` itself: `send` makes a `ForkingPickler` per message, whose copy of
    the reducer table cost the children ~15 us a document."""
    conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))


def process_name(role: str) -> str:
    """The name a child of a pool with `role` gives itself ("omsd-extract"): at most 15 bytes,
    what Linux keeps of a process's name."""
    return f"omsd-{role}"[:15]


def _name_process(name: str) -> None:
    """`name` as this process's name in `top`, `ps -o comm` and /proc/PID/comm on Linux, so a
    worker's children show what they do (`bench/profile_text.py --phases` sums their CPU by
    it); elsewhere the name stays as it was."""
    try:
        with open("/proc/self/comm", "w") as comm:
            comm.write(name)
    except OSError:
        pass


def _serve(conn: Connection, jobs: dict[str, str], max_memory_mb: int | None, role: str) -> None:
    """A child's life: limits, then "ready" (or why it cannot start), then one answer per
    request until the parent sends None or is gone. A request is two messages: `(kind,
    kwargs)`, then the document's bytes as they are (never copied into a pickle). A pool
    that closed its end while the child was starting or working (a Ctrl-C) is gone, not an
    error: the child ends without a traceback under the command's one-line message."""
    try:
        _serve_requests(conn, jobs, max_memory_mb, role)
    except (BrokenPipeError, ConnectionResetError):
        return


def _serve_requests(conn: Connection, jobs: dict[str, str], max_memory_mb: int | None, role: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _name_process(process_name(role))
    caller = multiprocessing.parent_process()  # the pool's process (the fork server is our parent)
    if caller is not None:  # gone (even killed) while we work: stop, nobody enforces the deadline
        threading.Thread(target=lambda: (caller.join(), os._exit(0)), daemon=True).start()
    try:
        functions = {kind: _load(spec) for kind, spec in jobs.items()}
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        _put(conn, ("fatal", f"{type(exc).__name__}: {exc}"))
        return
    if max_memory_mb:
        import resource

        limit = max_memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _put(conn, ("ready", os.getpid()))
    while True:
        try:
            request = conn.recv()
            if request is None:
                return
            kind, kwargs = request
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        # every answer ends with the child's `time.monotonic()` as it is done (Linux's monotonic
        # clock is the same in every process): the document queued behind starts then, and its
        # deadline runs from then (`_answer`)
        try:
            result = functions[kind](data, **kwargs)
            answer = pickle.dumps(("ok", result, time.monotonic()), pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            _put(conn, ("error", OUT_OF_MEMORY, "MemoryError", time.monotonic()))
            return  # replaced by the parent
        except Exception as exc:  # noqa: BLE001 - every parser failure is one document's failure
            answer = pickle.dumps(("error", PARSE_ERROR, f"{type(exc).__name__}: {exc}"[:500], time.monotonic()),
                                  pickle.HIGHEST_PROTOCOL)
        conn.send_bytes(answer)


def _context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # read when the server starts (once per process)
    _start_server_deaf_to_ctrl_c()
    return context


def _start_server_deaf_to_ctrl_c() -> None:
    """Start the fork server (if it is not running) with SIGINT ignored from its first
    instruction. Why: a terminal's Ctrl-C reaches the whole process group, and the standard
    library's server ignores SIGINT only once it has imported `PRELOAD`; a Ctrl-C in the
    second that takes printed a KeyboardInterrupt traceback from inside trafilatura (or
    "Fatal Python error: init_import_site") under the command's own one-line message. An
    ignored signal stays ignored across exec, and Python then leaves it so; blocking it
    would not do (the mask is reset for the new process). The caller is deaf to Ctrl-C only
    while the server is forked and exec'd (milliseconds), and only from the main thread,
    where Python handles signals and where a terminal's Ctrl-C is aimed."""
    from multiprocessing import forkserver

    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    if previous is None:  # not the main thread, or a handler set outside Python: leave it be
        forkserver.ensure_running()
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, previous)


def stop_fork_server() -> None:
    """Close every pool of this process, then stop its fork server and wait for it (it exits
    once no child holds its pipe), so the CPU time of every child counts in this process's
    `RUSAGE_CHILDREN` (a stage's figures). A run's end calls it: a runner need not tear down
    every DoFn. The resource tracker that multiprocessing started with the server is stopped
    and waited for too: left running, it outlives the command by a moment, a process that
    nobody waits for. The next child starts both again."""
    from multiprocessing import resource_tracker

    for pool in list(_POOLS):
        pool.close()
    _stop_server()
    resource_tracker._resource_tracker._stop()


SERVER_EXIT_S = 10.0
"""How long a stopped fork server may take to exit: it exits once every child it forked has
closed its pipe; a child nobody knows of (a Ctrl-C while it was forked) must not hold the
command's exit forever, so past this it is killed."""


def _stop_server(grace: float = SERVER_EXIT_S) -> None:
    """`multiprocessing.forkserver`'s own stop (close the server's pipe, wait for it), with the
    wait bounded by `grace` seconds: the standard library waits without end."""
    from multiprocessing import forkserver, util

    server = forkserver._forkserver
    with server._lock:
        pid = server._forkserver_pid
        if pid is None:
            return
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = None
        deadline = time.monotonic() + grace
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        server._forkserver_pid = None
        if not util.is_abstract_socket_namespace(server._forkserver_address):
            os.unlink(server._forkserver_address)
        server._forkserver_address = None


_POOLS: weakref.WeakSet[ExtractorPool] = weakref.WeakSet()
"""The pools of this process that have started children (`stop_fork_server`)."""


def _widen(conn: Connection) -> int:
    """Ask the socket behind `conn` to buffer `PIPE_BUFFER_BYTES`; the bytes it will hold (0
    when it is not a socket whose buffer can be read: then nothing is queued)."""
    try:
        sock = socket.fromfd(conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)  # a duplicate descriptor
    except OSError:
        return 0
    try:
        # blocking again, as `multiprocessing.Pipe` leaves it: a socket object made while a default
        # timeout is set (`socket.setdefaulttimeout`, which cloud clients call) turns the shared
        # descriptor non-blocking, and a child's read would then fail at once
        sock.setblocking(True)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, PIPE_BUFFER_BYTES)
        except OSError:
            pass  # the system's default buffer, then
        return sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    except OSError:
        return 0
    finally:
        sock.close()


@dataclass
class _Request:
    tag: Any
    head: bytes | None  # `(kind, kwargs)`, pickled } kept only while queued behind another
    data: bytes | None  # the document             } (resent if that one fails)


@dataclass
class _Child:
    process: Any
    conn: Connection
    fd: int  # the pipe's descriptor, as the pool's poll object knows it
    documents: int = 0
    queue: deque[_Request] = field(default_factory=deque)  # sent, unanswered; the first is being extracted
    deadline: float | None = None  # monotonic deadline of the first in `queue` (busy: a non-empty queue)


Answer = tuple[Any, "dict[str, Any] | None", "str | None", "str | None"]


class ExtractorPool:
    """`size` isolated children extracting at once (see the module docstring)."""

    def __init__(self, size: int = 1, timeout: float = DEFAULT_TIMEOUT_S, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_memory_mb: int | None = DEFAULT_MAX_MEMORY_MB, extractors: dict[str, str] | None = None,
                 debug_kinds: bool = False, recycle_after: int = DEFAULT_RECYCLE_AFTER, role: str = "extract") -> None:
        self.size = max(1, int(size))
        self.role = role  # the children's process name: `process_name(role)`
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_memory_mb = max_memory_mb
        self.recycle_after = recycle_after
        self.extractors = dict(EXTRACTORS if extractors is None else extractors)
        if debug_kinds:
            self.extractors.update(DEBUG_EXTRACTORS)
        self.children: list[_Child] = []
        self._poll: Any = None  # one select.poll of every child's pipe, made at `start`
        self._queue_bytes = 0  # the largest request queued behind another (`_widen`), set at the first spawn
        self.stats = {"started": 0, "killed": 0, "crashed": 0, "recycled": 0, "documents": 0}
        self.last_error: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "children": [], "_poll": None}  # configuration only, never processes

    def __enter__(self) -> ExtractorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pending(self) -> int:
        """Documents submitted whose answer has not been returned yet."""
        return sum(len(child.queue) for child in self.children)

    @property
    def pids(self) -> list[int]:
        """The live children's pids (tests, diagnostics)."""
        return [child.process.pid for child in self.children]

    def start(self) -> None:
        """Start the missing children and wait until each is ready (`DoFn.setup`)."""
        _POOLS.add(self)
        if self._poll is None:
            self._poll = select.poll()
        while len(self.children) < self.size:
            self.children.append(self._spawn())

    def _spawn(self) -> _Child:
        context = _context()
        conn, child_end = context.Pipe()
        self._queue_bytes = _widen(conn) // 4
        _widen(child_end)
        process = context.Process(target=_serve, args=(child_end, self.extractors, self.max_memory_mb, self.role),
                                  name="extractor", daemon=True)
        try:
            process.start()
        except BaseException:
            # A Ctrl-C while the fork server forks the child (before its pid is read back) left
            # a child we do not know, waiting on `conn`, which this frame kept open for as long
            # as the interrupt unwound: it held the fork server's pipe, so stopping the server
            # waited forever. Closed now, the child reads EOF and exits.
            conn.close()
            child_end.close()
            raise
        child_end.close()
        child = _Child(process, conn, conn.fileno())
        self.stats["started"] += 1
        try:
            if not conn.poll(STARTUP_TIMEOUT_S):
                raise RuntimeError("extraction worker did not start in time")
            message = conn.recv()
        except BaseException:
            self._stop(child, kill=True)
            raise
        if message[0] != "ready":
            self._stop(child, kill=True)
            raise RuntimeError(f"the extraction worker cannot start: {message[1]} (install the package's "
                               "dependencies: pip install openmsd-build, or `make test` for a development checkout)")
        self._poll.register(child.fd, select.POLLIN)
        return child

    def _refuse(self, kind: str, data: bytes) -> tuple[None, str, str] | None:
        if kind not in self.extractors:
            return None, UNKNOWN_KIND, f"unknown extractor kind {kind!r}"
        if len(data) > self.max_bytes:
            return None, TOO_LARGE, f"{len(data)} bytes > {self.max_bytes}"
        return None

    def submit(self, tag: Any, kind: str, data: bytes, **kwargs: Any) -> list[Answer]:
        """Hand one document (`kwargs` go to its extractor) to an idle child, or queue it
        behind a busy child's (`_room`), waiting only while no child has room; returns the
        answers collected while waiting (this document's own when it is refused without being
        sent). An interrupt drops the pending documents with their children (`abandon`)."""
        refused = self._refuse(kind, data)
        if refused is not None:
            return [(tag, *refused), *self._collect(block=False)]
        try:
            # answers are looked for only when no child has room: then the wait returns all
            # that are in (or kills the child past its deadline); room is used at once
            request = _Request(tag, pickle.dumps((kind, kwargs), pickle.HIGHEST_PROTOCOL), data)
            done: list[Answer] = []
            while (child := self._room(request)) is None:
                done += self._collect(block=True)
            self._send(child, request)
            return done
        except BaseException:
            self.abandon()
            raise

    def _room(self, request: _Request) -> _Child | None:
        """An idle child (started if missing), else a child extracting one document that can
        take `request` behind it (small enough to wait in the pipe, not due to be recycled)."""
        self.start()
        idle = next((c for c in self.children if not c.queue), None)
        if idle is not None or len(request.head or b"") + len(request.data or b"") > self._queue_bytes:
            return idle
        return next((c for c in self.children if len(c.queue) == 1 and c.documents < self.recycle_after), None)

    def _send(self, child: _Child, request: _Request) -> None:
        if not child.queue:
            child.deadline = time.monotonic() + self.timeout
        child.queue.append(request)
        child.documents += 1
        self.stats["documents"] += 1
        head, data = request.head, request.data or b""
        if len(child.queue) == 1:
            request.head = request.data = None  # being extracted: never sent again
        try:
            child.conn.send_bytes(head)
            child.conn.send_bytes(data)  # the bytes as they are: no pickle copies them
        except (BrokenPipeError, EOFError, OSError):
            pass  # the child is dead: `_collect` sees its end of file and answers `crashed`

    def collect_ready(self) -> list[Answer]:
        """The answers that are in now, without waiting (children past their deadline are
        killed): for a caller busy elsewhere, e.g. fetching."""
        return self._collect(block=False)

    def drain(self) -> list[Answer]:
        """Wait for every pending document; their answers."""
        done: list[Answer] = []
        try:
            while self.pending:
                done += self._collect(block=True)
        except BaseException:
            self.abandon()
            raise
        return done

    def extract(self, kind: str, data: bytes, **kwargs: Any) -> tuple[dict[str, Any] | None, str | None]:
        """One document, waited for: `(result, None)` or `(None, reason)`; the detail of a
        failure in `last_error`. For callers with one document at a time (`inspect`)."""
        answers = self.submit(None, kind, data, **kwargs) + self.drain()
        _tag, result, reason, self.last_error = answers[-1]
        return result, reason

    def _collect(self, block: bool) -> list[Answer]:
        """Answers of the busy children that have one (or died, or overran their deadline),
        waiting, when `block`, until the first answer or the earliest deadline."""
        busy = [c for c in self.children if c.queue]
        if not busy:
            return []
        timeout_ms = 0
        if block:  # whole milliseconds, rounded up: a wait cut short would spin until the deadline
            first = min(c.deadline for c in busy)  # type: ignore[type-var]
            timeout_ms = max(0, math.ceil((first - time.monotonic()) * 1000))
        done = []
        by_fd = {c.fd: c for c in self.children}  # each fd comes once a poll: only its own event retires a child
        for fd, _event in self._poll.poll(timeout_ms):
            child = by_fd[fd]
            if child.queue:
                done.append(self._answer(child))
            else:  # an idle child's pipe ended (killed between documents): replaced
                self._retire(child, kill=True)
        now = time.monotonic()
        for child in [c for c in self.children if c.queue and c.deadline <= now]:  # type: ignore[operator]
            if child.conn.poll(0):  # answered in time and read late (a queued document's clock
                done.append(self._answer(child))  # ran from its start, not from this read)
                continue
            self.stats["killed"] += 1
            tag = child.queue.popleft().tag
            self._retire(child, kill=True, resend=True)
            done.append((tag, None, TIMEOUT, f"no answer within {self.timeout:g} s; worker killed"))
        return done

    def _answer(self, child: _Child) -> Answer:
        """The answer to the first document in `child`'s queue; the next one's deadline starts."""
        tag = child.queue.popleft().tag
        try:
            message = child.conn.recv()
        except (EOFError, OSError) as exc:
            self.stats["crashed"] += 1
            self._retire(child, kill=True, resend=True)
            return tag, None, CRASHED, f"worker died ({type(exc).__name__}, exit code {child.process.exitcode})"
        if message[0] != "ok" and message[1] == OUT_OF_MEMORY:
            self._retire(child, resend=True)  # the child exits after a MemoryError, reading nothing more
            return tag, None, message[1], message[2]
        if child.queue:  # the child took the queued document as it answered
            child.deadline = message[-1] + self.timeout  # when the child was done with the one before
            child.queue[0].head = child.queue[0].data = None
        else:
            child.deadline = None
        if message[0] != "ok":
            return tag, None, message[1], message[2]
        if child.documents >= self.recycle_after and not child.queue:
            self.stats["recycled"] += 1
            self._retire(child)
        return tag, message[1], None, None

    def _retire(self, child: _Child, kill: bool = False, resend: bool = False) -> None:
        """Stop `child` and take it out of the pool (the next `submit` starts a new one). With
        `resend`, what was queued behind the document it failed on goes to a child started
        here for it (so `drain` and `collect_ready` may start one, and raise if it cannot)."""
        self.children.remove(child)
        self._poll.unregister(child.fd)
        self._stop(child, kill)
        queued, child.queue = child.queue, deque()
        if resend and queued:  # at most one: the document it failed on is answered already
            replacement = self._spawn()
            self.children.append(replacement)
            for request in queued:
                self.stats["documents"] -= 1  # counted when it was first sent
                self._send(replacement, request)

    @staticmethod
    def _stop(child: _Child, kill: bool) -> None:
        if not kill:
            try:
                _put(child.conn, None)
            except OSError:
                kill = True
        child.conn.close()
        if kill:
            child.process.kill()
        child.process.join(2.0 if not kill else None)
        if child.process.exitcode is None:
            child.process.kill()
            child.process.join()

    def abandon(self) -> None:
        """Drop every pending document (the caller is stopping): their children are killed."""
        for child in [c for c in self.children if c.queue]:
            self._retire(child, kill=True)

    def close(self) -> None:
        """Stop every child (`DoFn.teardown`); pending documents are dropped."""
        self.abandon()
        for child in list(self.children):
            self._retire(child)
