"""A warm parent for the extractor children: one fresh interpreter imports and warms the
extractors once, then forks every child of `IsolatedExtractor` from itself.

Why: a child started as its own interpreter paid the extractors' imports (~0.3 s of CPU) and
their first-use costs (trafilatura builds the union of jusText's 100 stoplists at its first
fallback, ~0.2 s) before its first useful document; the text stage's three children paid
them three times, and a child killed after a timeout or a crash paid them again. A fork of a
warm process shares all of that (copy-on-write, after `gc.freeze`) and is ready in a few
milliseconds.

Why not fork the caller: the caller is a Beam worker running gRPC threads, and forking a
threaded process can leave the child holding a lock no thread will release. The server is a
fresh interpreter started with `subprocess` (`python -m openmsd_build.text.extract.forkserver`)
that never starts a thread, so forking it is safe. It runs in its own process group and
ignores SIGINT, like the children it makes (a terminal's Ctrl-C is the caller's to handle).

The protocol is a Unix `SOCK_SEQPACKET` socket pair, one message per request or report:

* the caller makes the child's two pipes itself and sends ``["fork", seq, max_memory_mb]``
  with the child's ends attached (`SCM_RIGHTS`), so it can write the first request at once,
  before the server has even finished importing;
* the server forks; the child serves its pipes (`isolate._serve_requests`, the same loop a
  spawned child ran); the server answers ``["forked", seq, pid]`` with a pidfd of the child
  attached where the platform has them (Linux), so the caller can signal exactly that
  process and never a later one that reused its pid;
* the server reaps its children and reports ``["exit", pid, code]`` (`Popen.returncode`'s
  convention: minus the signal for a killed child), so a crash is reported with its code.

Lifetime: when the caller closes its end (`close`: the end of a run, a DoFn's teardown), the
server makes no more children and exits once the last one has gone; the children it made
keep serving the pools that hold them. When the caller dies, the server notices that it was
re-parented, kills its children and exits; a server that dies takes its children with it
(their watchdog sees the same re-parenting).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from typing import Any

SERVER_TICK_S = 0.1
"""How often an idle server reaps children and checks its parent."""
KILL_RESOLVE_S = 5.0
_MESSAGE_BYTES = 4096


def _config_env() -> dict[str, str]:
    """The server's environment: whatever the caller can import (tests, a Beam staging
    directory), the server and its children can import."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).strip(os.pathsep)
    return env


class ForkServer:
    """The caller's side of one server: `fork` asks for a child serving two pipes and returns
    its handle at once (`ForkedChild`, which learns the pid when the server reports it).
    Thread-safe: the DoFns of one process share the server of their configuration."""

    def __init__(self, extractors: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        config = json.dumps({"extractors": extractors})
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "openmsd_build.text.extract.forkserver", str(theirs.fileno()), config],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                env=_config_env(),
                close_fds=True,
                process_group=0,  # out of the terminal's group: Ctrl-C is the caller's to handle
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._sock: socket.socket | None = ours
        self._lock = threading.RLock()
        self._seq = 0
        self._waiting: dict[int, ForkedChild] = {}  # asked for, pid not reported yet
        self._exits: dict[int, int] = {}  # pid -> exit code, as reported
        self._closing = False
        self._children: weakref.WeakSet[ForkedChild] = weakref.WeakSet()  # every handle made

    @property
    def accepting(self) -> bool:
        """The server runs and takes requests (not closed by the caller, not dead)."""
        return self._sock is not None and not self._closing and self.process.poll() is None

    def fork(self, request_fd: int, answer_fd: int, max_memory_mb: int | None) -> ForkedChild:
        """Ask for a child reading requests from `request_fd` and writing answers to
        `answer_fd` (the caller closes its copies after this); its handle."""
        with self._lock:
            self._seq += 1
            child = ForkedChild(self, self._seq)
            self._children.add(child)
            message = json.dumps(["fork", self._seq, max_memory_mb]).encode()
            try:
                if self._sock is None or self._closing:
                    raise BrokenPipeError("the fork server is closed")
                socket.send_fds(self._sock, [message], [request_fd, answer_fd])
                self._waiting[self._seq] = child
            except OSError:  # a dead server: the child never exists (its pipes say so)
                child._set(None, None)
            return child

    def pump(self, timeout: float) -> None:
        """Read the server's reports, waiting at most `timeout` seconds for the first one."""
        with self._lock:
            sock = self._sock
            if sock is None:
                return
            try:
                ready, _, _ = select.select([sock], [], [], max(0.0, timeout))
            except (OSError, ValueError):
                ready = []
            while ready:
                try:
                    message, fds, _flags, _addr = socket.recv_fds(sock, _MESSAGE_BYTES, 1)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    message, fds = b"", []
                if not message:  # the server is gone: what it never forked never will be
                    self._lost()
                    break
                self._report(json.loads(message), fds)
                ready, _, _ = select.select([sock], [], [], 0)

    def _report(self, report: list[Any], fds: list[int]) -> None:
        if report[0] == "forked":
            child = self._waiting.pop(report[1], None)
            pidfd = fds[0] if fds else None
            if child is None:
                if pidfd is not None:
                    os.close(pidfd)
                return
            child._set(report[2], pidfd)
        elif report[0] == "exit":
            self._exits[report[1]] = report[2]

    def _lost(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        waiting, self._waiting = self._waiting, {}
        for child in waiting.values():
            child._set(None, None)

    def exit_code(self, pid: int) -> int | None:
        """`pid`'s exit code if the server reported it."""
        with self._lock:
            return self._exits.get(pid)

    def close(self, wait: float = 2.0) -> None:
        """No more children from this server; it exits when the ones it made are gone. The
        requests it has already been sent are still answered (their children's reports and
        exit codes are read as before, until the server exits). When every child this
        process had from it has ended (the end of a run), wait up to `wait` seconds for the
        server to exit, so it is reaped here and its CPU and memory are counted with the
        run's (`time`, `getrusage`)."""
        with self._lock:
            if self._sock is not None and not self._closing:
                self._closing = True
                try:
                    self._sock.shutdown(socket.SHUT_WR)  # the server reads the end of its requests
                except OSError:
                    pass
            children = list(self._children)
        if all(child.poll() is not None for child in children):
            try:
                self.process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass


class ForkedChild:
    """A child of a `ForkServer`, with the part of `subprocess.Popen` that `isolate` uses:
    `pid`, `poll`, `wait`, `kill`, `returncode`. A child that was never forked (its server
    died first) has no pid and counts as exited."""

    def __init__(self, server: ForkServer, seq: int) -> None:
        self._server = server
        self._seq = seq
        self._known = False  # the server said what became of the request
        self._pid: int | None = None
        self._pidfd: int | None = None
        self.returncode: int | None = None

    def _set(self, pid: int | None, pidfd: int | None) -> None:
        self._known, self._pid, self._pidfd = True, pid, pidfd
        if pid is None:
            self.returncode = 1  # never ran

    def _resolve(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self._known:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._server.pump(min(remaining, SERVER_TICK_S))
        return True

    @property
    def pid(self) -> int | None:
        """The child's pid, waiting for the server's report if it has not come yet."""
        from openmsd_build.text.extract.isolate import STARTUP_TIMEOUT_S

        self._resolve(STARTUP_TIMEOUT_S)
        return self._pid

    def _gone(self) -> bool:
        """The process has ended (checked through its pidfd, or the server's report)."""
        if self._pidfd is not None:
            try:
                ready, _, _ = select.select([self._pidfd], [], [], 0)
            except (OSError, ValueError):
                return True
            return bool(ready)
        self._server.pump(0)
        return self._server.exit_code(self._pid) is not None  # type: ignore[arg-type]

    def poll(self) -> int | None:
        """None while the child runs (or is still being forked); its exit code once it has
        ended (as the server reports it; -1 if no report comes within a few ticks)."""
        if self.returncode is None:
            self._server.pump(0)
        if self.returncode is not None:  # ended, or never forked (its server died first)
            return self.returncode
        if not self._known:
            return None
        if not self._gone():
            return None
        code = None
        for _ in range(5):  # the server reaps within a tick
            code = self._server.exit_code(self._pid)  # type: ignore[arg-type]
            if code is not None:
                break
            self._server.pump(SERVER_TICK_S)
        self.returncode = -1 if code is None else code
        self._close_pidfd()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to end; `subprocess.TimeoutExpired` after `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            code = self.poll()
            if code is not None:
                return code
            remaining = SERVER_TICK_S if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(f"extractor child {self._pid}", timeout or 0.0)
            if self._pidfd is not None:
                select.select([self._pidfd], [], [], min(remaining, SERVER_TICK_S))
            else:
                self._server.pump(min(remaining, SERVER_TICK_S))

    def kill(self) -> None:
        """SIGKILL the child. One not forked yet is waited for a few seconds (a server still
        importing); past that it is left to exit by itself on its closed pipes once forked."""
        if self.returncode is not None or not self._resolve(KILL_RESOLVE_S) or self._pid is None:
            return
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            elif self._server.exit_code(self._pid) is None:
                os.kill(self._pid, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def __del__(self) -> None:
        try:
            self._close_pidfd()
        except OSError:
            pass


# --- the server process -------------------------------------------------------------------


def _send(sock: socket.socket, report: list[Any], fds: list[int] | None = None, wait: bool = True) -> None:
    """One report to the caller; `wait=False` drops it rather than block when the caller
    has stopped reading (an exit code nobody asks for)."""
    try:
        socket.send_fds(sock, [json.dumps(report).encode()], fds or [], 0 if wait else socket.MSG_DONTWAIT)
    except OSError:  # the caller closed its end, or does not read: it no longer listens
        pass


def _fork_child(sock: socket.socket, fds: list[int], max_memory_mb: int | None, functions: dict[str, Any],
                siblings: list[int]) -> int:
    """Fork one child serving the pipes `fds` (request, answer); its pid, in the server.
    The child closes the server's socket and its pidfds of the `siblings`."""
    from openmsd_build.text.extract.isolate import _child_serves

    pid = os.fork()
    if pid == 0:  # the child: never returns into the server's loop
        code = 0
        try:
            sock.close()
            for fd in siblings:
                os.close(fd)
            code = _child_serves(fds[0], fds[1], functions, max_memory_mb)
        except BaseException:  # noqa: BLE001 - a child must not fall back into the server's loop
            code = 70
        finally:
            os._exit(code)
    return pid


def _serve(sock: socket.socket, extractors: dict[str, str]) -> None:
    """The server's loop: load and warm the extractors, then fork a child per request, reap
    them, and watch the caller (module docstring)."""
    from multiprocessing.connection import Connection

    from openmsd_build.core.ordered_pool import quiet_collector
    from openmsd_build.text.extract.isolate import load_extractors

    parent = os.getppid()
    functions: dict[str, Any] = {}
    fatal = None
    try:
        functions = load_extractors(extractors)
    except ImportError as exc:  # say what is missing instead of dying: each child's caller hears it
        fatal = f"cannot import {exc.name or exc}: {exc}"
    quiet_collector()  # what is loaded now is shared by every child: keep the collector off it
    children: dict[int, int | None] = {}  # pid -> pidfd (wakes the loop when it exits), if any
    accepting = True
    while accepting or children:
        if os.getppid() != parent:  # the caller died: its children's documents have no reader
            for pid in children:  # not reaped yet (this loop reaps): each pid is still this child
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            return
        waitable = [fd for fd in children.values() if fd is not None] + ([sock] if accepting else [])
        ready, _, _ = select.select(waitable, [], [], SERVER_TICK_S)
        if sock in ready:
            try:
                message, fds, _flags, _addr = socket.recv_fds(sock, _MESSAGE_BYTES, 2)
            except OSError:
                message, fds = b"", []
            if not message:  # the caller closed: no more requests (it may still read reports)
                accepting = False
                for fd in fds:
                    os.close(fd)
            else:
                _op, seq, max_memory_mb = json.loads(message)
                if fatal is not None or len(fds) != 2:
                    if len(fds) == 2:  # the caller's `_await_ready` reads why there is no child
                        answers = Connection(fds.pop(), readable=False)
                        try:
                            answers.send(("fatal", fatal))
                        except OSError:
                            pass
                        answers.close()
                    for fd in fds:
                        os.close(fd)
                    _send(sock, ["forked", seq, None])
                else:
                    siblings = [fd for fd in children.values() if fd is not None]
                    pid = _fork_child(sock, fds, max_memory_mb, functions, siblings)
                    for fd in fds:
                        os.close(fd)
                    pidfd = None
                    if hasattr(os, "pidfd_open"):
                        try:
                            pidfd = os.pidfd_open(pid)  # not reaped yet: it is this child, dead or alive
                        except OSError:
                            pidfd = None
                    children[pid] = pidfd
                    _send(sock, ["forked", seq, pid], [pidfd] if pidfd is not None else None)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                for pidfd in children.values():
                    if pidfd is not None:
                        os.close(pidfd)
                children.clear()
                break
            if pid == 0:
                break
            pidfd = children.pop(pid, None)
            if pidfd is not None:
                os.close(pidfd)
            _send(sock, ["exit", pid, os.waitstatus_to_exitcode(status)], wait=False)


def _server_entry(argv: list[str]) -> None:
    """`python -m openmsd_build.text.extract.forkserver SOCKET_FD CONFIG_JSON` (started by
    `ForkServer`, not by hand)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's; children inherit this
    sock = socket.socket(fileno=int(argv[0]))
    _serve(sock, json.loads(argv[1])["extractors"])


if __name__ == "__main__":
    _server_entry(sys.argv[1:])
