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

The protocol is a Unix stream socket pair carrying length-prefixed JSON messages (`_Channel`;
file descriptors ride along with SCM_RIGHTS, each message saying how many it carries):

* the caller makes the child's two pipes itself and sends ``["fork", seq, max_memory_mb]``
  with the child's ends attached, so it can write the first request at once, before the
  server has even finished importing;
* the server forks; the child serves its pipes (`isolate._serve_requests`); the server
  answers ``["forked", seq, pid]`` with a pidfd of the child attached where the platform has
  them (Linux 5.3+), so the caller signals exactly that process, never a later one that
  reused its pid; without pidfds the caller asks the server (``["kill", seq]``), which
  knows whether it has reaped the child yet;
* the server reaps its children and reports ``["exit", seq, code]`` (`Popen.returncode`'s
  convention: minus the signal for a killed child). Reports wait in the server's outbox
  until the socket takes them, so the server never blocks on a caller that is not reading;
  the caller's requests are small and the server reads them between any two steps.

Lifetime: when the caller closes the server (`close`, which sends ``["close"]``: the end of a
run, a DoFn's teardown) or its end of the socket, the server makes no more children and
exits once the last one has gone; the children it made
keep serving the pools that hold them. When the caller dies, the server notices that it was
re-parented, kills its children and exits; a server that dies takes its children with it
(their watchdog sees the same re-parenting). A fork that fails (no memory, a process limit)
costs that child only: its caller hears why on its answer pipe.
"""

from __future__ import annotations

import array
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from multiprocessing.connection import wait
from typing import Any

from openmsd_build.core.children import child_env

SERVER_TICK_S = 0.1
"""How often an idle server checks its parent."""
RESOLVE_S = 5.0
"""How long the caller waits for the server's report of a child it needs the pid of."""
_HEADER = struct.Struct("!I")
_FD_SIZE = array.array("i").itemsize
_MAX_FDS = 4


def _rights(fds: list[int]) -> list[tuple[int, int, array.array]]:
    """The ancillary data that passes `fds` (SCM_RIGHTS), or none."""
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []


class _Channel:
    """Length-prefixed JSON messages with file descriptors over a stream socket. `send`
    writes whole messages (blocking, or into an outbox when `queue`), `receive` returns the
    complete messages that have arrived, each with the descriptors it carried."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""
        self._fds: list[int] = []  # received, not yet handed out (in order)
        self._outbox: list[tuple[bytes, list[int]]] = []  # (bytes left, descriptors still to attach)
        self.closed = False  # the other end is gone (end of file)

    @staticmethod
    def _frame(message: list[Any], fds: list[int]) -> bytes:
        body = json.dumps([message, len(fds)]).encode()
        return _HEADER.pack(len(body)) + body

    def send(self, message: list[Any], fds: list[int] | None = None) -> None:
        """One message, whole, now (the server reads its socket all the time)."""
        fds = fds or []
        data = self._frame(message, fds)
        if self.closed:
            raise BrokenPipeError("the channel is closed")
        try:
            sent = self.sock.sendmsg([data], _rights(fds))
            if sent < len(data):
                self.sock.sendall(data[sent:])
        except BaseException:
            # part of a message may be out (an interrupt, an error mid-way): every later one
            # would be misread, so the channel ends here, as if the other side had closed it
            self.closed = True
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            raise

    def queue(self, message: list[Any], fds: list[int] | None = None) -> None:
        """One message into the outbox (sent by `flush` as the socket takes it); the
        descriptors are closed here once sent."""
        self._outbox.append((self._frame(message, fds or []), list(fds or [])))

    @property
    def pending(self) -> bool:
        return bool(self._outbox)

    def held_fds(self) -> list[int]:
        """Descriptors this side holds for the channel: the socket, those waiting in the
        outbox and those received for messages not yet complete (a forked child closes its
        copies)."""
        return [self.sock.fileno(), *(fd for _data, fds in self._outbox for fd in fds), *self._fds]

    def flush(self) -> None:
        """Send what the socket takes now without blocking; the rest stays queued."""
        while self._outbox:
            data, fds = self._outbox[0]
            try:
                sent = self.sock.sendmsg([data], _rights(fds), socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if not isinstance(exc, (BrokenPipeError, ConnectionResetError)):
                    return  # a passing shortage (no buffers): the outbox waits for the next try
                # the caller is gone: nobody reads reports any more
                for _data, queued in self._outbox:
                    for fd in queued:
                        os.close(fd)
                self._outbox.clear()
                return
            for fd in fds:  # attached to the first byte sent
                os.close(fd)
            if sent < len(data):
                self._outbox[0] = (data[sent:], [])
                return
            self._outbox.pop(0)

    def receive(self) -> list[tuple[list[Any], list[int]]]:
        """The complete messages readable now (call when the socket is readable; reads once)."""
        flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        try:
            data, ancillary, msg_flags, _addr = self.sock.recvmsg(65536, socket.CMSG_SPACE(_MAX_FDS * _FD_SIZE), flags)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            data, ancillary, msg_flags = b"", [], 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(payload[: len(payload) - len(payload) % _FD_SIZE])
                for fd in fds:
                    os.set_inheritable(fd, False)
                self._fds.extend(fds)
        if not data or msg_flags & getattr(socket, "MSG_CTRUNC", 0):
            # the end, or descriptors lost on the way (fds and messages would no longer match)
            self.closed = True
            return []
        self._buffer += data
        messages = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if len(self._buffer) < _HEADER.size + size:
                break
            try:
                message, n_fds = json.loads(self._buffer[_HEADER.size : _HEADER.size + size])
            except ValueError:  # not our framing: the channel cannot be trusted further
                self.closed = True
                break
            self._buffer = self._buffer[_HEADER.size + size :]
            fds, self._fds = self._fds[:n_fds], self._fds[n_fds:]
            messages.append((message, fds))
        return messages


class ForkServer:
    """The caller's side of one server: `fork` asks for a child serving two pipes and returns
    its handle at once (`ForkedChild`, which learns the pid when the server reports it).
    Thread-safe: the DoFns of one process share the server of their configuration."""

    def __init__(self, extractors: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        config = json.dumps({"extractors": extractors, "parent": os.getpid()})
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "openmsd_build.text.extract.forkserver", str(theirs.fileno()), config],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                env=child_env(),
                close_fds=True,
                process_group=0,  # out of the terminal's group: Ctrl-C is the caller's to handle
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._channel: _Channel | None = _Channel(ours)
        self._lock = threading.RLock()
        self._seq = 0
        self._waiting: dict[int, ForkedChild] = {}  # asked for, not reported yet
        self._exits: dict[int, int] = {}  # seq -> exit code, reported and not yet taken
        self._closing = False
        self._children: weakref.WeakValueDictionary[int, ForkedChild] = weakref.WeakValueDictionary()  # by seq

    @property
    def accepting(self) -> bool:
        """The server runs and takes requests (not closed by the caller, not dead)."""
        return (self._channel is not None and not self._channel.closed and not self._closing
                and self.process.poll() is None)

    def fork(self, request_fd: int, answer_fd: int, max_memory_mb: int | None) -> ForkedChild:
        """Ask for a child reading requests from `request_fd` and writing answers to
        `answer_fd` (the caller closes its copies after this); its handle."""
        with self._lock:
            self._seq += 1
            child = ForkedChild(self, self._seq)
            self._children[self._seq] = child
            try:
                if self._channel is None or self._closing:
                    raise BrokenPipeError("the fork server is closed")
                self._channel.send(["fork", self._seq, max_memory_mb], [request_fd, answer_fd])
                self._waiting[self._seq] = child
            except OSError:  # a dead server: the child never exists (its pipes say so)
                child._set(None, None)
            return child

    def kill(self, seq: int) -> None:
        """Ask the server to SIGKILL child `seq` if it has not reaped it (where there are no
        pidfds: only the server knows whether the pid is still its child's)."""
        with self._lock:
            if self._channel is not None and not self._channel.closed:
                try:
                    self._channel.send(["kill", seq])
                except OSError:
                    pass

    def pump(self, timeout: float) -> None:
        """Read the server's reports, waiting at most `timeout` seconds for the first."""
        with self._lock:
            channel = self._channel
            if channel is None:
                return
            if not wait([channel.sock], max(0.0, timeout)):
                return
            while True:
                for message, fds in channel.receive():
                    self._report(message, fds)
                if channel.closed:  # the server is gone: what it never forked never will be
                    self._lost()
                    return
                if not wait([channel.sock], 0):
                    return

    def _report(self, report: list[Any], fds: list[int]) -> None:
        if report[0] == "forked":
            child = self._waiting.pop(report[1], None)
            pidfd = fds[0] if fds else None
            if child is None:
                if pidfd is not None:
                    os.close(pidfd)
                return
            child._set(report[2], pidfd)
        elif report[0] == "exit" and report[1] in self._children:  # nobody asks for a dropped handle's
            self._exits[report[1]] = report[2]

    def _lost(self) -> None:
        """The server has exited (or the channel broke): children not reported are taken as
        never started (one forked just before the server died ends with it: its watchdog),
        and those without a pidfd as ended."""
        if self._channel is not None:
            self._channel.sock.close()
            self._channel = None
        waiting, self._waiting = self._waiting, {}
        for child in waiting.values():
            child._set(None, None)
        for child in list(self._children.values()):
            if child._pidfd is None and child.returncode is None and child._known:
                self._exits.setdefault(child._seq, -1)

    def exit_code(self, seq: int) -> int | None:
        """Child `seq`'s exit code if the server reported it (taken once)."""
        with self._lock:
            return self._exits.pop(seq, None)

    def close(self) -> None:
        """No more children from this server; it exits when the ones it made are gone. The
        requests it has already been sent are still answered, and it still kills on
        request (`kill`) and reports exits until then."""
        with self._lock:
            if self._channel is not None and not self._closing:
                self._closing = True
                try:
                    self._channel.send(["close"])
                except OSError:
                    pass

    def reap(self, timeout: float) -> bool:
        """If every child this process had from the server has ended, wait up to `timeout`
        seconds for the (closed) server to exit, so it is reaped here and its CPU and
        memory, and its children's, are counted with the run's (`time`, `getrusage`).
        True when it has exited."""
        if self.process.poll() is not None:
            return True
        if not self._closing or any(child.poll() is None for child in list(self._children.values())):
            return False
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True


class ForkedChild:
    """A child of a `ForkServer`, with the part of `subprocess.Popen` that `isolate` uses:
    `pid`, `poll`, `wait`, `kill`, `returncode`. A child that was never forked (its server
    died first, or the fork failed) has no pid and counts as exited."""

    def __init__(self, server: ForkServer, seq: int) -> None:
        self._server = server
        self._seq = seq
        self._known = False  # the server said what became of the request
        self._pid: int | None = None
        self._pidfd: int | None = None
        self._kill_when_known = False
        self.returncode: int | None = None

    def _set(self, pid: int | None, pidfd: int | None) -> None:
        self._known, self._pid, self._pidfd = True, pid, pidfd
        if pid is None:
            self.returncode = 1  # never ran
        elif self._kill_when_known:
            self._kill()

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
        """The child's pid, waiting a few seconds at most for the server's report; None if
        it has not come (a server still importing) or the child never ran."""
        self._resolve(RESOLVE_S)
        return self._pid

    def _gone(self) -> bool:
        """The process has ended (its pidfd is readable, or the server reported its exit)."""
        if self._pidfd is not None:
            return bool(wait([self._pidfd], 0))
        code = self._server.exit_code(self._seq)
        if code is not None:
            self.returncode = code
            return True
        return False

    def poll(self) -> int | None:
        """None while the child runs (or is still being forked); its exit code once it has
        ended (as the server reports it; -1 if the report does not come within ~0.2 s).
        Under the server's lock: the DoFns of a process share it, and a pidfd is closed once."""
        with self._server._lock:
            return self._poll()

    def _poll(self) -> int | None:
        if self.returncode is None:
            self._server.pump(0)
        if self.returncode is not None:  # ended, or never forked
            return self.returncode
        if not self._known or not self._gone() or self.returncode is not None:
            return self.returncode
        code = self._server.exit_code(self._seq)
        for _ in range(10):  # the server reaps it at once (its pidfd wakes it)
            if code is not None:
                break
            self._server.pump(0.02)
            code = self._server.exit_code(self._seq)
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
            with self._server._lock:
                pidfd = self._pidfd
            if pidfd is None:
                self._server.pump(min(remaining, SERVER_TICK_S))
                continue
            try:
                wait([pidfd], min(remaining, SERVER_TICK_S))
            except (OSError, ValueError):  # closed meanwhile by `poll` in another thread
                pass

    @property
    def started(self) -> bool:
        """The server has reported this child forked (so it can be signalled and waited for)."""
        self._server.pump(0)
        return self._known and self._pid is not None

    def kill(self) -> None:
        """SIGKILL the child without waiting for it. One not forked yet is killed when the
        server reports it (and, with its caller's pipes closed, it would exit by itself)."""
        with self._server._lock:
            self._kill()

    def _kill(self) -> None:
        if self.returncode is not None:
            return
        if not self._known:
            self._kill_when_known = True
            return
        if self._pid is None:
            return
        if self._pidfd is not None:
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except OSError:  # ended already
                pass
        else:
            self._server.kill(self._seq)

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


def _fork_child(fds: list[int], max_memory_mb: int | None, functions: dict[str, Any], inherited: list[int]) -> int:
    """Fork one child serving the pipes `fds` (request, answer); its pid, in the server.
    The child first closes the server's descriptors it inherited (`inherited`)."""
    from openmsd_build.text.extract.isolate import _child_serves

    server = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the server's loop
        code = 0
        try:
            for fd in inherited:
                os.close(fd)
            code = _child_serves(fds[0], fds[1], functions, max_memory_mb, server)
        except BaseException:  # noqa: BLE001 - a child must not fall back into the server's loop
            code = 70
        finally:
            os._exit(code)
    return pid


def _refuse_child(fds: list[int], why: str) -> None:
    """Tell a child's caller, on the child's answer pipe, why there is no child; close its pipes."""
    from multiprocessing.connection import Connection

    if len(fds) == 2:
        answers = Connection(fds.pop(), readable=False)
        try:
            answers.send(("fatal", why))
        except OSError:
            pass
        answers.close()
    for fd in fds:
        os.close(fd)


class _Server:
    """The server's state: its channel, the extractors (or why they cannot load), its
    children by request number (pid, pidfd or None)."""

    def __init__(self, sock: socket.socket, extractors: dict[str, str]) -> None:
        self.channel = _Channel(sock)
        self.forking = True  # until the caller says "close" or closes its end
        self.killed = False  # a child was just killed on request: reap it soon
        self.children: dict[int, tuple[int, int | None]] = {}
        self.functions: dict[str, Any] = {}
        self.fatal: str | None = None
        from openmsd_build.text.extract.isolate import load_extractors

        try:
            self.functions = load_extractors(extractors)
        except ImportError as exc:  # say what is missing instead of dying: each child's caller hears it
            self.fatal = f"cannot import {exc.name or exc}: {exc}"
        except Exception as exc:  # noqa: BLE001 - the same for any failure while loading
            self.fatal = f"cannot load the extractors: {type(exc).__name__}: {exc}"[:500]

    def handle(self, message: list[Any], fds: list[int], later_fds: Sequence[int] = ()) -> None:
        """One request: ``["fork", seq, max_memory_mb]``, ``["kill", seq]`` or ``["close"]``;
        `later_fds`: descriptors of the requests received after it (not for this child)."""
        if message[0] == "close":
            self.forking = False
            return
        if message[0] == "kill":
            pid = self.children.get(message[1], (None, None))[0]
            if pid is not None:  # not reaped yet: still this child
                try:
                    os.kill(pid, signal.SIGKILL)
                    self.killed = True
                except ProcessLookupError:
                    pass
            for fd in fds:
                os.close(fd)
            return
        _op, seq, max_memory_mb = message
        if self.fatal is not None or len(fds) != 2 or not self.forking:
            _refuse_child(fds, self.fatal or ("the fork server is closed" if not self.forking
                                              else "the fork request came without its pipes"))
            self.channel.queue(["forked", seq, None])
            return
        inherited = [*self.channel.held_fds(), *(fd for _pid, fd in self.children.values() if fd is not None),
                     *later_fds]
        try:
            pid = _fork_child(fds, max_memory_mb, self.functions, inherited)
        except OSError as exc:  # no memory, a process limit: this child only
            _refuse_child(fds, f"cannot fork an extractor child: {exc}")
            self.channel.queue(["forked", seq, None])
            return
        for fd in fds:
            os.close(fd)
        pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(pid)  # not reaped yet: it is this child, dead or alive
            except OSError:
                pidfd = None
        self.children[seq] = (pid, pidfd)
        sent = None
        if pidfd is not None:
            try:
                sent = [os.dup(pidfd)]
            except OSError:  # out of descriptors: the caller kills through the server instead
                sent = None
        self.channel.queue(["forked", seq, pid], sent)

    def reap(self) -> None:
        """Reap the children that have ended and report their exit codes."""
        by_pid = {pid: seq for seq, (pid, _fd) in self.children.items()}
        while by_pid:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            seq = by_pid.pop(pid, None)
            if seq is None:
                continue
            _pid, pidfd = self.children.pop(seq)
            if pidfd is not None:
                os.close(pidfd)
            self.channel.queue(["exit", seq, os.waitstatus_to_exitcode(status)])

    def kill_all(self) -> None:
        """SIGKILL and reap every child (the caller has died)."""
        for pid, _fd in self.children.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid, _fd in self.children.values():
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _serve(sock: socket.socket, extractors: dict[str, str], parent: int) -> None:
    """The server's loop: load and warm the extractors, then fork a child per request, reap
    them, and watch the caller (module docstring). Ends when it may fork no more (the
    caller said "close" or closed its end) and its children are gone -- or at once, killing
    its children, when the caller has died (the server was re-parented)."""
    from openmsd_build.core.collector import paused_collector

    # what is loaded now is shared by every child: no collections while loading, and then
    # the collector kept off it (`paused_collector` ends in `quiet_collector`)
    with paused_collector():
        server = _Server(sock, extractors)
    # poll(2), not epoll: the loop registers its descriptors afresh each turn, and an epoll
    # registration outlives the closing of a descriptor whose file another process still
    # holds (a reaped child's pidfd, whose copy went to the caller): the stale entry, always
    # readable, then filled epoll's one-event answer and hid the socket
    selector = selectors.PollSelector() if hasattr(selectors, "PollSelector") else selectors.SelectSelector()
    while server.forking or server.children:
        if os.getppid() != parent:
            server.kill_all()
            return
        for key in list(selector.get_map().values()):
            selector.unregister(key.fileobj)
        events = (0 if server.channel.closed else selectors.EVENT_READ) | (
            selectors.EVENT_WRITE if server.channel.pending else 0)
        if events:
            selector.register(sock, events)
        for _pid, pidfd in server.children.values():
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ)
        tick = SERVER_TICK_S / 20 if server.killed else SERVER_TICK_S  # no pidfd: the killed child soon
        server.killed = False
        for key, mask in selector.select(tick):
            if key.fileobj is sock and mask & selectors.EVENT_READ:
                batch = server.channel.receive()
                for k, (message, fds) in enumerate(batch):
                    later = [fd for _m, more in batch[k + 1 :] for fd in more]
                    try:
                        server.handle(message, fds, later)
                    except Exception:  # noqa: BLE001 - a malformed request: no more requests
                        server.channel.closed = True
                if server.channel.closed:  # the caller closed its end: no more requests
                    server.forking = False
        server.reap()
        server.channel.flush()
    deadline = time.monotonic() + 1.0  # the last exit codes, while the caller may still read them
    while server.channel.pending and time.monotonic() < deadline and os.getppid() == parent:
        time.sleep(SERVER_TICK_S / 10)
        server.channel.flush()


def _server_entry(argv: list[str]) -> None:
    """`python -m openmsd_build.text.extract.forkserver SOCKET_FD CONFIG_JSON` (started by
    `ForkServer`, not by hand)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's; children inherit this
    config = json.loads(argv[1])
    if os.getppid() != config["parent"]:  # the caller died while this interpreter started
        return
    sock = socket.socket(fileno=int(argv[0]))
    _serve(sock, config["extractors"], config["parent"])


if __name__ == "__main__":
    _server_entry(sys.argv[1:])
