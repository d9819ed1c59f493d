"""Run untrusted-document extractors in a disposable worker process with hard limits.

HTML and PDF parsers are native code fed with bytes from the open web: trafilatura can hang on
a huge page (its own timeout works only on its command line) and PDFium can crash or spin on a
malformed file. In a Beam worker either would cost the whole bundle or the whole job. So each
document is extracted in a small reusable child process:

* the parent checks the size first (`too_large`, nothing is sent);
* the child gets the bytes over a pipe and answers with the result or an exception;
* the parent waits at most `timeout` seconds of wall time; on timeout the child is killed
  (`timeout`), and if the child dies (segfault, `os._exit`, out of memory) the answer is
  `crashed`; either way the next call starts a fresh child, so one bad document costs one
  document;
* an address-space limit (`max_memory_mb`, RLIMIT_AS) in the child turns a memory bomb into a
  `MemoryError` (`out_of_memory`) instead of the machine's OOM killer taking the Beam worker.

The child is a fork of a warm fork server (`forkserver.py`: a fresh interpreter that imports
the extractors and does their first-use work once, then forks a child per request, talking to
it over two pipes with multiprocessing's `Connection` framing), not a fork of the caller:
forking a Beam worker that runs threads (gRPC) can deadlock the child, and multiprocessing's
own "spawn" re-imports the parent's `__main__`, which breaks any caller script without an
`if __name__ == "__main__"` guard. Start-up (the server's imports) is done before the first
document and is not counted against a document's time limit; a child killed after a timeout
or a crash is replaced by a new fork in milliseconds, not a new interpreter.

Stopping (Ctrl-C): the server and its children run in their own process group
(`process_group=0`) and ignore SIGINT, so a terminal's Ctrl-C, which goes to the whole
foreground group, reaches only the parent. The parent then stops at once: an interrupt (or
any error) while it waits for an answer kills the child, so the next request never reads a
stale answer and the shutdown does not wait for the document to finish. The child exits by itself when the parent is
gone: at once on the closed pipe when idle; when busy in a long document, the server,
noticing it was re-parented, kills its children within a tick (and a child whose server is
gone exits within a second through a watchdog thread that notices the same).

`ExtractorPool` runs several such children at once for a caller that hands over work one
piece at a time (the text stage's fetching DoFn; `BuildDocuments` uses it for its own job):
`submit` hands a document to an idle child and returns whatever answers are in, `drain`
waits for the rest. Each child keeps its own size and memory limits and its own deadline;
the deadline is enforced whenever the caller submits, drains or calls `collect_ready`
(the fetching DoFn does so before every live fetch), so a child past it is killed then and
answers `timeout`. What the pool adds is that reading the next record and extracting the
last one overlap, and that a local run's one worker uses every core (`bench/README.md`).

Children are started once per local run, not once per pool: `prewarm` starts them before the
pipeline (the server imports on one core while Beam plans), and a pool whose bundle is done
hands its idle children back (`ExtractorPool.release`) to the next pool of this process with the same jobs
and memory limit (the follow-up pass, document building, the next bundle). The limits that
live in the parent (time limit, size cap) are the adopting pool's. A child is only ever
handed over idle, never with a document or an unread answer in it -- with one exception:
a child `prewarm` set working ahead (`ahead=`, the text stage's archives extracted while the
worker starts: `text/extract/ahead.py`) is handed over on that job. The adopter asks it to
stop, gives it its own time limit to finish the document it is in, and files its answers
(`take_ahead`) when they come, as it would take a document's.

`IsolatedExtractor` holds only its configuration until first use, so it can be constructed in
a DoFn's `__init__` and pickled; create the process in `setup()` (or let the first `extract`
do it) and call `close()` in `teardown()`.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import subprocess
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from openmsd_build.core.children import exit_with_parent
from openmsd_build.core.spares import Shelf
from openmsd_build.text.extract.forkserver import ForkedChild, ForkServer

LOG = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
"""50 MB: beyond the largest ordinary paper PDF; bigger files are scans or datasets."""
DEFAULT_MAX_MEMORY_MB = 3072
STARTUP_TIMEOUT_S = 120.0
AHEAD_WAIT_S = 1.0
"""At most this long, once per pool, a document waits for an adopted head start's answer
(`ExtractorPool._await_head_starts`)."""

# Reasons reported next to a None result.
TOO_LARGE = "too_large"
TIMEOUT = "timeout"
CRASHED = "crashed"
PARSE_ERROR = "parse_error"
OUT_OF_MEMORY = "out_of_memory"
UNKNOWN_KIND = "unknown_kind"

# Sent to a child working ahead (`prewarm(ahead=...)`): finish the document you are in and
# answer. A child whose job had already ended reads it later and ignores it.
AHEAD_STOP = ("stop ahead",)

# kind -> "module:function"; functions take the document bytes and return a dict.
EXTRACTORS: dict[str, str] = {
    "html": "openmsd_build.text.extract.landing:extract_landing",
    "pdf": "openmsd_build.text.extract.pdf:extract_pdf",
}
# What the fork server does for each kind before it forks any child: the heavy modules its
# extractor imports lazily ("module"), and first-use work ("module:function", no arguments).
WARM: dict[str, tuple[str, ...]] = {
    "html": ("lxml.html", "trafilatura", "openmsd_build.text.language", "openmsd_build.text.extract.landing:warm_up"),
    "pdf": ("pypdfium2",),
}
# Misbehaving extractors for tests and for checking a deployment's limits; enabled only with
# `debug_kinds=True`. Their input bytes are an ASCII number (seconds to sleep, MB to allocate).
DEBUG_EXTRACTORS: dict[str, str] = {
    "debug_sleep": "openmsd_build.text.extract.isolate:_debug_sleep",
    "debug_exit": "openmsd_build.text.extract.isolate:_debug_exit",
    "debug_abort": "openmsd_build.text.extract.isolate:_debug_abort",
    "debug_raise": "openmsd_build.text.extract.isolate:_debug_raise",
    "debug_allocate": "openmsd_build.text.extract.isolate:_debug_allocate",
    "debug_echo": "openmsd_build.text.extract.isolate:_debug_echo",
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
    block = bytearray(int(data) * 1024 * 1024)
    return {"allocated": len(block)}


def _debug_echo(data: bytes) -> dict[str, Any]:
    return {"pid": os.getpid(), "n_bytes": len(data)}


def _load(spec: str) -> Any:
    module_name, _, function_name = spec.partition(":")
    return getattr(importlib.import_module(module_name), function_name)


def load_extractors(extractors: dict[str, str]) -> dict[str, Any]:
    """The extractor functions of `extractors` (kind -> "module:function"), with `WARM` done
    for their kinds, so a document's time limit pays for neither imports nor first-use work.
    Raises ImportError for a missing module; a warm-up that fails is only logged (it is an
    optimisation). The fork server (`forkserver.py`) calls it once; every child it forks
    shares the result."""
    functions = {kind: _load(spec) for kind, spec in extractors.items()}
    for kind, steps in WARM.items():
        if kind not in functions:
            continue
        for step in steps:
            if ":" not in step:
                importlib.import_module(step)
                continue
            try:
                _load(step)()
            except Exception as exc:  # noqa: BLE001 - the extractor does this work itself at first use
                LOG.warning("warm-up %s failed (%s: %s); the first document does it instead", step,
                            type(exc).__name__, exc)
    return functions


def _child_serves(request_fd: int, answer_fd: int, functions: dict[str, Any], max_memory_mb: int | None,
                  server: int) -> int:
    """A forked child's life (`forkserver._fork_child`): watch its parent, the fork server
    (pid `server`, read before the fork), and serve its pipes until the caller is done; the
    exit code."""
    exit_with_parent(server)  # a server that dies (with its caller) takes its children along
    _serve_requests(Connection(request_fd, writable=False), Connection(answer_fd, readable=False), functions,
                    max_memory_mb)
    return 0


def _serve_requests(conn_in: Connection, conn: Connection, functions: dict[str, Any], max_memory_mb: int | None) -> None:
    """Child loop: set the memory limit, say "ready", then answer one request at a time.
    Runs until the parent sends None or closes the pipe."""
    if max_memory_mb:
        try:
            import resource

            limit = max_memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):  # not on this platform / not allowed
            pass
    # the collector is as the fork server left it before forking: its imports frozen, young
    # collections rarer (`core.collector.paused_collector`)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            request = conn_in.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        if request == AHEAD_STOP:
            continue
        kind, data, kwargs = request
        try:
            function = functions[kind]
            if getattr(function, "runs_ahead", False):  # works until the parent asks for the answer
                result = function(data, stop=conn_in.poll, jobs=functions, **kwargs)
            else:
                result = function(data, **kwargs)
            conn.send(("ok", result))
        except MemoryError:
            conn.send(("error", OUT_OF_MEMORY, "MemoryError"))
        except Exception as exc:  # noqa: BLE001 - every parser failure is one document's failure
            detail = f"{type(exc).__name__}: {exc}"[:500]
            LOG.debug("extractor %s failed: %s", kind, traceback.format_exc())
            conn.send(("error", PARSE_ERROR, detail))


class IsolatedExtractor:
    """Extract documents in a child process with a wall-time, size and memory limit.

    `extract(kind, data)` returns `(result, None)` or `(None, reason)`, reason one of
    `too_large`, `timeout`, `crashed`, `parse_error`, `out_of_memory`, `unknown_kind`;
    `last_error` holds the detail of the last failure. `extract` takes a lock, so callers
    that share an instance are serialized; the non-blocking `begin` / `finish` (and
    `ExtractorPool`) are for one thread, as a Beam DoFn instance is.
    """

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_memory_mb: int | None = DEFAULT_MAX_MEMORY_MB,
        extractors: dict[str, str] | None = None,
        debug_kinds: bool = False,
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_memory_mb = max_memory_mb
        self.extractors = dict(EXTRACTORS if extractors is None else extractors)
        if debug_kinds:
            self.extractors.update(DEBUG_EXTRACTORS)
        self.last_error: str | None = None
        self.stats: dict[str, int] = {"started": 0, "killed": 0, "crashed": 0, "documents": 0}
        self._process: ForkedChild | None = None
        self._conn: Connection | None = None  # parent -> child
        self._answers: Connection | None = None  # child -> parent
        self._lock = threading.Lock()
        self._deadline: float | None = None  # monotonic deadline of the pending document
        self._starting = False  # asked for, "ready" not yet read
        self._ahead = False  # the pending job is a head start (`prewarm(ahead=...)`), not a document
        self._send_error: str | None = None

    # pickling (a DoFn attribute): configuration only, never the process or the pipe
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_process=None, _conn=None, _answers=None, _lock=None, _deadline=None, _send_error=None,
                     _starting=False, _ahead=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __enter__(self) -> IsolatedExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The current child's pid (None before the first document or after a kill); waits
        a few seconds at most for its server's report (`forkserver.RESOLVE_S`)."""
        return self._process.pid if self._alive() else None

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the child now and wait until it is ready (e.g. in `DoFn.setup()`; the first
        child of a configuration waits for its fork server's imports), so the first document
        does not; `extract` also starts it when needed."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> None:
        if self._ahead and not self._alive():  # its head start crashed: settle it (nothing filed)
            self._settle_ahead()
        if self._alive():
            if self._starting:
                self._await_ready()
            return
        if not self._adopt_spare():
            self._spawn()
        if self._starting:  # an adopted spare may be ready already
            self._await_ready()

    def _adopt_spare(self) -> bool:
        """Take over a spare child of the same configuration (`prewarm`, `ExtractorPool.release`)
        instead of spawning one; False when there is none."""
        spare = _take_spare(self.extractors, self.max_memory_mb)
        if spare is None:
            return False
        self._discard()
        self._process, self._conn, self._answers, self._starting, ahead = spare
        self.stats["started"] += 1
        if ahead:
            # a child working ahead: ask for its answer now and give it this extractor's time
            # limit (and its start-up's, if it has not said "ready" yet) to finish the
            # document it is in; it is busy until `_settle_ahead` takes the answer
            self._ahead = True
            self._deadline = time.monotonic() + self.timeout + (STARTUP_TIMEOUT_S if self._starting else 0.0)
            try:
                self._conn.send(AHEAD_STOP)
            except (BrokenPipeError, EOFError, OSError) as exc:
                self._send_error = f"{type(exc).__name__} while stopping the head start"
        return True

    def _give_spare(self, ahead: bool = False) -> bool:
        """Hand an idle, live child to the spares of this process (see `ExtractorPool.release`);
        `ahead`: it was just given a head start (`prewarm`)."""
        if self.busy or not self._alive():
            return False
        _put_spare(self.extractors, self.max_memory_mb,
                   (self._process, self._conn, self._answers, self._starting, ahead))
        self._process = self._conn = self._answers = None
        self._starting = False
        return True

    def _settle_ahead(self) -> None:
        """Take the answer of the head start this child was on (waiting at most until its
        deadline) and file its extractions for `take_ahead`; the child is then idle (or,
        past its deadline, killed like any child that overran)."""
        self._ahead = False
        result, reason, detail = self.finish()
        _file_ahead(result, reason, detail)

    def spawn(self) -> None:
        """Ask for the child without waiting for it to be ready (a pool asks for all its
        children at once); the first `begin` / `extract` waits for it."""
        if self._ahead:  # adopted on its head start: alive, and busy until its answer
            if self._alive():
                return
            self._settle_ahead()
        if self.busy:
            raise RuntimeError("spawn() while a document is pending: call finish() or abandon() first")
        if not self._alive() and not self._adopt_spare():
            self._spawn()

    def _spawn(self) -> None:
        """Ask this configuration's fork server for a child (`forkserver.py`): the child's
        pipes are made here, so the first request can be written at once."""
        self._discard()
        request_r, request_w = os.pipe()
        answer_r, answer_w = os.pipe()
        try:
            process = _fork(self.extractors, request_r, answer_w, self.max_memory_mb)
        except BaseException:
            os.close(request_w)
            os.close(answer_r)
            raise
        finally:
            os.close(request_r)
            os.close(answer_w)
        self._process = process
        self._conn = Connection(request_w, readable=False)
        self._answers = Connection(answer_r, writable=False)
        self.stats["started"] += 1
        self._starting = True

    def _await_ready(self) -> None:
        assert self._answers is not None
        try:
            ready = self._answers.poll(STARTUP_TIMEOUT_S)
        except BaseException:
            # interrupted before "ready" was read: that message must never be taken for the
            # answer to a document, so the child goes
            self._discard()
            raise
        if not ready:
            self._discard()
            raise RuntimeError("extraction worker did not start in time")
        try:
            message = self._answers.recv()
        except (EOFError, OSError) as exc:
            self._discard()
            raise RuntimeError("extraction worker died while starting") from exc
        except BaseException:
            self._discard()
            raise
        self._starting = False
        if message[0] == "fatal":
            self._discard()
            raise RuntimeError(
                f"the extraction worker cannot start: {message[1]} (install the package's dependencies: "
                "pip install openmsd-build, or `make test` for a development checkout)")
        if message[0] != "ready":
            self._discard()
            raise RuntimeError(f"extraction worker sent {message!r} instead of ready")
        if self._ahead:  # its head start's time limit runs from now, as a document's would
            self._deadline = time.monotonic() + self.timeout

    def _discard(self) -> None:
        """Kill and forget the child (after a timeout or crash, or on close)."""
        process, conns = self._process, (self._conn, self._answers)
        self._process = self._conn = self._answers = None
        self._starting = self._ahead = False
        _kill(process, conns)

    def _refuse(self, kind: str, data: bytes) -> tuple[None, str, str] | None:
        """The answer to a document that is never sent (unknown kind, too large), or None."""
        if kind not in self.extractors:
            return None, UNKNOWN_KIND, f"unknown extractor kind {kind!r}"
        if len(data) > self.max_bytes:
            return None, TOO_LARGE, f"{len(data)} bytes > {self.max_bytes}"
        return None

    @property
    def busy(self) -> bool:
        """A document was sent (`begin`) and its answer not yet taken (`finish`)."""
        return self._deadline is not None

    def begin(self, kind: str, data: bytes, **kwargs: Any) -> tuple[None, str, str] | None:
        """Send one document and return at once, so the caller can read or fetch the next one
        while this child works; `finish()` takes the answer. Returns `(None, reason, detail)`
        when the document is refused without being sent (then nothing is pending)."""
        if self._ahead:  # an adopted child still on its head start: its answer first
            self._settle_ahead()
        if self.busy:
            raise RuntimeError("begin() while a document is pending: call finish() first")
        refused = self._refuse(kind, data)
        if refused is not None:
            return refused
        self._ensure_started()
        while self._ahead:  # `_ensure_started` adopted a child on its head start
            self._settle_ahead()
            self._ensure_started()
        assert self._conn is not None
        self.stats["documents"] += 1
        self._deadline = time.monotonic() + self.timeout
        try:
            self._conn.send((kind, data, kwargs))
        except (BrokenPipeError, EOFError, OSError) as exc:
            self._send_error = f"{type(exc).__name__} while sending"
        except BaseException:
            self._deadline = None
            self._discard()
            raise
        return None

    def finish(self) -> tuple[dict[str, Any] | None, str | None, str | None]:
        """The pending document's `(result, None, None)` or `(None, reason, detail)`, waiting
        at most until its deadline (then the child is killed: `timeout`)."""
        if not self.busy:
            raise RuntimeError("finish() without a pending document")
        deadline, self._deadline = self._deadline, None
        send_error, self._send_error = self._send_error, None
        if send_error:
            return (*self._crashed(send_error), self.last_error)
        assert self._answers is not None
        try:
            try:
                ready = self._answers.poll(max(0.0, deadline - time.monotonic()))
            except (EOFError, OSError) as exc:
                return (*self._crashed(f"{type(exc).__name__} while waiting"), self.last_error)
            if not ready:
                self.stats["killed"] += 1
                self._discard()
                return None, TIMEOUT, f"no answer within {self.timeout:g} s; worker killed"
            try:
                message = self._answers.recv()
            except (EOFError, OSError) as exc:
                return (*self._crashed(f"{type(exc).__name__} while receiving"), self.last_error)
        except BaseException:
            # KeyboardInterrupt (or anything else) mid-request: the child may still answer
            # this document later, so it cannot serve the next one; kill it now rather
            # than let the caller's shutdown wait for the document.
            self._discard()
            raise
        if message[0] == "ok":
            return message[1], None, None
        return None, message[1], message[2]

    def abandon(self, keep_ahead: bool = False) -> None:
        """Forget a pending document (the caller is stopping): the child is killed. With
        `keep_ahead`, a head start is kept (a new bundle clearing what a failed one left: the
        head start is no bundle's document, and its answer is still to be taken)."""
        if self.busy and not (keep_ahead and self._ahead):
            self._deadline = self._send_error = None
            self._discard()

    def extract(self, kind: str, data: bytes, **kwargs: Any) -> tuple[dict[str, Any] | None, str | None]:
        """Extract one document: `(result, None)` on success, `(None, reason)` otherwise.
        Keyword arguments go to the extractor (e.g. `url=` for `html`, to absolutize links)."""
        with self._lock:
            refused = self.begin(kind, data, **kwargs)
            result, reason, detail = refused if refused is not None else self.finish()
        self.last_error = detail
        return result, reason

    def _crashed(self, detail: str) -> tuple[None, str]:
        exitcode = None
        if self._process is not None:
            try:
                exitcode = self._process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        self.stats["crashed"] += 1
        self.last_error = f"worker died ({detail}, exit code {exitcode})"
        self._discard()
        return None, CRASHED

    def close(self) -> None:
        """Stop the child politely, then by force (call from `DoFn.teardown()`); a pending
        document is dropped."""
        with self._lock:
            self._deadline = self._send_error = None
            if self._conn is not None and self._process is not None and self._alive() and self._process.started:
                try:
                    self._conn.send(None)
                    self._process.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self._discard()


def _answered(workers: list[IsolatedExtractor], timeout: float) -> list[IsolatedExtractor]:
    """The `workers` with an answer (or end of file) waiting on their pipe, waiting up to
    `timeout` seconds for the first."""
    from multiprocessing.connection import wait

    by_pipe = {id(w._answers): w for w in workers if w._answers is not None}
    if not by_pipe:
        return []
    return [by_pipe[id(pipe)] for pipe in wait([w._answers for w in by_pipe.values()], timeout)]


class ExtractorPool:
    """`size` isolated extractors working at once, for a caller that reads or fetches
    documents one at a time: `submit()` hands a document to an idle child and returns the
    answers that are already in, waiting only when every child is busy; `drain()` waits for
    the rest. Answers come back as `(tag, result, reason, detail)` in the order the
    children finish, not the order of submission. Each child keeps its own deadline,
    size and memory limits (`IsolatedExtractor`).

    Why: extraction is the stage's CPU, and with one child the worker process only waits
    while it works, and the child waits while the worker reads the next record; with one
    child per core both the cores and the two sides overlap. Like `IsolatedExtractor` it
    holds only configuration until first use, so it pickles as a DoFn attribute.
    """

    def __init__(self, size: int = 1, **extractor_options: Any) -> None:
        self.size = max(1, int(size))
        self.workers = [IsolatedExtractor(**extractor_options) for _ in range(self.size)]
        self._tags: dict[int, Any] = {}
        self._carried: list[tuple[Any, dict[str, Any] | None, str | None, str | None]] = []
        self._ahead_wait_left = AHEAD_WAIT_S  # `_await_head_starts`

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_tags": {}, "_carried": []}

    def start(self) -> None:
        """Start every child now and wait until all are ready (e.g. in `DoFn.setup()`)."""
        for worker in self.workers:
            worker.spawn()
        for worker in self.workers:
            worker.start()

    @property
    def pending(self) -> int:
        """Documents submitted whose answer has not been returned yet."""
        return sum(worker.busy for worker in self.workers)

    @property
    def head_start(self) -> bool:
        """Extractions worked out ahead are filed in this process, or still to come from a
        child this pool adopted on its head start (`prewarm(ahead=...)`)."""
        return bool(_AHEAD_RESULTS) or any(worker._ahead for worker in self.workers)

    def submit(self, tag: Any, kind: str, data: bytes, ahead_key: Any = None,
               **kwargs: Any) -> list[tuple[Any, dict[str, Any] | None, str | None, str | None]]:
        """Queue one document under `tag`; returns every answer ready by now (possibly this
        document's own, when it is refused without being sent, or was extracted ahead under
        `ahead_key`: `take_ahead`). If sending fails (a child that cannot start, an
        interrupt), the answers already taken are kept for the next `submit` / `drain` /
        `collect_ready` and the error is raised."""
        refused = self.workers[0]._refuse(kind, data)  # every child has the same limits
        if refused is not None:
            return [(tag, *refused)] + self.collect_ready()
        if ahead_key is not None:
            extraction = take_ahead(ahead_key)
            # a head start still in its last document may hold this one too; it is waited for
            # only by a document that would wait for a free child anyway: idle children are
            # not kept idle for it (and the fetching DoFn sends the archives' documents from
            # their far end, `text.beam.FetchAndExtract`, so its first ones are rarely the
            # head start's)
            if extraction is None and self.pending == self.size and self._await_head_starts(ahead_key):
                extraction = take_ahead(ahead_key)
            if extraction is not None:
                return [(tag, extraction, None, None)] + self.collect_ready()
        done, self._carried = self._carried, []
        try:
            idle = [k for k, worker in enumerate(self.workers) if not worker.busy]
            while not idle:
                done += self._collect(block=True)
                idle = [k for k, worker in enumerate(self.workers) if not worker.busy]
            k = idle[0]
            self.workers[k].begin(kind, data, **kwargs)
            self._tags[k] = tag
            done += self._collect(block=False)
        except BaseException:
            self._carried = done
            raise
        return done

    def _await_head_starts(self, key: Any) -> bool:
        """Wait for the answers of the head starts this pool adopted (children it asked to
        stop working ahead, `IsolatedExtractor._adopt_spare`), filing each, until one files
        `key`; True if it did.

        Why: a child working ahead answers only when it has finished the document it is in,
        and until then every document it has already extracted looks missing (on the real
        samples, 5-8 of ~50 were once extracted twice). So a document that is not filed and
        finds no free child (`submit`) waits for them rather than for a free child -- once
        per pool, at most `AHEAD_WAIT_S` in all, so a head start stuck in a hanging document
        costs that wait, not its time limit."""
        while self._ahead_wait_left > 0:
            ahead = [w for w in self.workers if w._ahead and not w._starting and w._answers is not None]
            if not ahead:
                return False
            began = time.monotonic()
            try:
                answered = _answered(ahead, self._ahead_wait_left)
            finally:
                self._ahead_wait_left -= time.monotonic() - began
            for worker in answered:
                worker._settle_ahead()
            if answered and key in _AHEAD_RESULTS:
                return True
        return False

    def collect_ready(self) -> list[tuple[Any, dict[str, Any] | None, str | None, str | None]]:
        """The answers that are in now, without waiting (and children past their deadline
        killed): a caller busy elsewhere, e.g. fetching, calls it between its own steps."""
        done, self._carried = self._carried, []
        return done + self._collect(block=False)

    def drain(self) -> list[tuple[Any, dict[str, Any] | None, str | None, str | None]]:
        """Wait for every pending document; their answers. If waiting is interrupted, the
        pending documents are dropped with their children (`abandon`) and the error raised."""
        done, self._carried = self._carried, []
        try:
            while self.pending:
                done += self._collect(block=True)
        except BaseException:
            self.abandon()
            raise
        return done

    def _collect(self, block: bool) -> list[tuple[Any, dict[str, Any] | None, str | None, str | None]]:
        """Answers of the children that have one (or whose deadline passed), waiting, when
        `block`, until the first answer or the earliest deadline."""
        busy = [k for k, worker in enumerate(self.workers) if worker.busy]
        if not busy:
            return []
        now = time.monotonic()
        timeout = max(0.0, min(self.workers[k]._deadline for k in busy) - now) if block else 0.0  # type: ignore[type-var]
        try:
            ready = set(map(id, _answered([self.workers[k] for k in busy], timeout)))
        except BaseException:
            self.abandon()
            raise
        now = time.monotonic()
        done = []
        for k in busy:
            worker = self.workers[k]
            if worker._answers is None or id(worker) in ready or worker._deadline <= now or worker._send_error:  # type: ignore[operator]
                if worker._ahead:
                    worker._settle_ahead()
                else:
                    done.append((self._tags.pop(k), *worker.finish()))
        return done

    def abandon(self, keep_ahead: bool = False) -> None:
        """Drop every pending document (the caller is stopping): their children are killed;
        a child on its head start too, unless `keep_ahead` (`IsolatedExtractor.abandon`)."""
        for k, worker in enumerate(self.workers):
            worker.abandon(keep_ahead)
            self._tags.pop(k, None)
        self._carried = []

    def release(self) -> None:
        """Hand the idle children to this process's spares (nothing may be pending: `drain`
        first), so the next pool with the same configuration here -- the next bundle, the
        follow-up pass, document building -- starts at once instead of asking the fork
        server again. `start` takes them back (or asks for new ones)."""
        if self.pending:
            raise RuntimeError("release() with documents pending: drain() first")
        for worker in self.workers:
            worker._give_spare()

    @property
    def stats(self) -> dict[str, int]:
        """The children's counters, summed."""
        total: dict[str, int] = {}
        for worker in self.workers:
            for key, value in worker.stats.items():
                total[key] = total.get(key, 0) + value
        return total

    def close(self) -> None:
        """Stop every child (call from `DoFn.teardown()`)."""
        self.abandon()
        for worker in self.workers:
            worker.close()


# Idle children by configuration (extractors, memory limit): started ahead of the first pool
# (`prewarm`) or handed back by a pool between bundles (`ExtractorPool.release`). A child's
# limits that live in the parent (time limit, size cap) belong to whichever pool adopts it.
# The last flag: the child is working ahead (`prewarm(ahead=...)`); whoever adopts it stops it.
_Spare = tuple[ForkedChild, Connection, Connection, bool, bool]


def _extractors_key(extractors: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(extractors.items()))


def _spare_key(extractors: dict[str, str], max_memory_mb: int | None) -> tuple[tuple[tuple[str, str], ...], int | None]:
    return _extractors_key(extractors), max_memory_mb


def _take_spare(extractors: dict[str, str], max_memory_mb: int | None) -> _Spare | None:
    return _SPARES.take(_spare_key(extractors, max_memory_mb))


def _put_spare(extractors: dict[str, str], max_memory_mb: int | None, spare: _Spare) -> None:
    _SPARES.put(_spare_key(extractors, max_memory_mb), spare)


def _close_spare(spare: _Spare) -> None:
    process, conn, answers, _starting, _ahead = spare
    _kill(process, (conn, answers))


def _kill(process: ForkedChild | None, conns: tuple[Connection | None, ...]) -> None:
    """Close a child's pipes and kill it, waiting for it to end (a discarded child, a spare
    no one took); its server reaps it. A child the server has not forked yet is not waited
    for: it is killed when reported, and with its pipes closed it would end anyway."""
    for conn in conns:
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass
    if process is not None:
        if process.poll() is None:
            process.kill()
        if not process.started:
            return
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # unkillable (D state): leave it to the OS
            LOG.warning("extraction worker %s did not exit after kill", process.pid)


def prewarm(count: int, spare_cores: int = 1, ahead: tuple[str, dict[str, Any]] | None = None,
            **extractor_options: Any) -> None:
    """Start `count` children now, without waiting, for the pools this process will create
    with the same extractors and memory limit: a local run calls it before the pipeline
    starts, so the fork server imports (on one core) while Beam plans and reads, and the
    children are forked as soon as it is warm.

    `ahead` (a job of the extractors marked `runs_ahead`, and its keyword arguments): the
    last `spare_cores` children -- one per core the caller leaves them while it starts --
    run it as soon as they are ready, as lane `lane` of `lanes`, until a pool adopts them and
    asks for their answer (`text/extract/ahead.py`: the archives' documents extracted while
    the worker starts)."""
    lanes = min(max(1, spare_cores), count) if ahead is not None else 0
    for k in range(count):
        worker = IsolatedExtractor(**extractor_options)
        worker._spawn()
        lane = k - (count - lanes)
        sent = False
        if ahead is not None and lane >= 0 and worker._conn is not None:
            kind, kwargs = ahead  # small: sent before the child reads its pipe
            try:
                worker._conn.send((kind, b"", {**kwargs, "lane": lane, "lanes": lanes}))
                sent = True
            except OSError:  # a child that died at once: the pool's adoption finds it dead
                pass
        worker._give_spare(ahead=sent)


_SPARES: Shelf[_Spare] = Shelf(close=_close_spare, alive=lambda spare: spare[0].poll() is None)


def close_spares() -> None:
    """Stop every spare child of this process (the end of a run, a DoFn's teardown), close
    the fork servers (they exit once the children in use are gone) and drop the
    extractions worked out ahead that no one took."""
    _SPARES.close_all()
    close_fork_servers()
    if _AHEAD["filed"]:
        LOG.info("head start: %d documents extracted ahead, %d of them used", _AHEAD["filed"], _AHEAD["used"])
    _AHEAD_RESULTS.clear()
    _AHEAD.update(filed=0, used=0)


atexit.register(close_spares)  # after the shelf's own handler, so it runs first: spares, then servers


# The fork server of each set of extractors (`forkserver.py`), started at the first child;
# closed servers wait in `_CLOSED` until they can be reaped (`close_spares`).
_SERVERS: dict[tuple[tuple[str, str], ...], ForkServer] = {}
_CLOSED: list[ForkServer] = []
_SERVERS_LOCK = threading.Lock()


def _retire(server: ForkServer) -> None:
    """Close `server` and keep it for reaping (`close_fork_servers`); under `_SERVERS_LOCK`."""
    server.close()
    _CLOSED.append(server)


def _fork(extractors: dict[str, str], request_fd: int, answer_fd: int, max_memory_mb: int | None) -> ForkedChild:
    """A child for `extractors` from this process's fork server (started now if there is
    none running), under the lock that `close_fork_servers` takes, so a server is never
    closed between being chosen and being asked."""
    with _SERVERS_LOCK:
        return _running_server(extractors).fork(request_fd, answer_fd, max_memory_mb)


def _running_server(extractors: dict[str, str]) -> ForkServer:
    """This process's accepting fork server for `extractors`, started now if there is none
    (a closed or dead one is retired); under `_SERVERS_LOCK`."""
    key = _extractors_key(extractors)
    server = _SERVERS.get(key)
    if server is None or not server.accepting:
        if server is not None:
            _retire(server)
            del _SERVERS[key]
        server = _SERVERS[key] = ForkServer(extractors)
    return server


def start_fork_server(extractors: dict[str, str]) -> None:
    """Start the fork server for `extractors` now, without waiting for it: its interpreter
    imports and warms the extractors (~0.35 s) while the caller works out what to ask of
    its first children (`text.command.start_children`)."""
    with _SERVERS_LOCK:
        _running_server(extractors)


def running_fork_server(extractors: dict[str, str]) -> ForkServer | None:
    """The fork server this process would ask for a child of `extractors` now (tests, diagnostics)."""
    with _SERVERS_LOCK:
        return _SERVERS.get(_extractors_key(extractors))


def close_fork_servers(reap_s: float = 2.0) -> None:
    """Close this process's fork servers: no new children from them (the next child starts
    a new server); each exits once the children it made are gone. Closed servers whose
    children have all ended are reaped (waiting up to `reap_s` each), so their CPU is
    counted with this process's children."""
    with _SERVERS_LOCK:
        for server in _SERVERS.values():
            _retire(server)
        _SERVERS.clear()
        closed = list(_CLOSED)
    for server in closed:
        if server.reap(reap_s):
            with _SERVERS_LOCK:
                if server in _CLOSED:
                    _CLOSED.remove(server)


# Extractions a child worked out ahead (`prewarm(ahead=...)`), by the key its job filed them
# under; a pool's `submit` takes one instead of sending the document (`take_ahead`).
_AHEAD_RESULTS: dict[Any, dict[str, Any]] = {}
_AHEAD = {"filed": 0, "used": 0}


def _file_ahead(answer: dict[str, Any] | None, reason: str | None, detail: str | None) -> None:
    """File a head start's answer (`{"results": {key: extraction}, ...}`); a head start
    that failed (killed past its deadline, crashed) only costs what it had done."""
    if answer is None:
        LOG.info("head start lost (%s: %s); its documents are extracted as they come", reason, detail)
        return
    results = answer.get("results") or {}
    _AHEAD_RESULTS.update(results)
    _AHEAD["filed"] += len(results)
    LOG.info("head start: %d documents extracted ahead from %d records in %.2f s",
             len(results), answer.get("records", 0), answer.get("seconds", 0.0))


def take_ahead(key: Any) -> dict[str, Any] | None:
    """The extraction worked out ahead under `key`, once (None if there is none)."""
    extraction = _AHEAD_RESULTS.pop(key, None)
    if extraction is not None:
        _AHEAD["used"] += 1
    return extraction
