"""Wall-clock deadlines for HTTP requests made with urllib3.

urllib3's timeouts bound each socket read, not a request: a server sending one byte of its
status line, headers or body every few seconds never trips them and holds the request for as
long as it likes. Here a request attempt has one deadline (`Attempt`); one watchdog thread
(`WATCHDOG`) shuts every socket the attempt uses down when it passes, so a read stuck on a
trickle fails at once. The connection classes put their sockets under the attempt running in
their thread (`CURRENT`), since urllib3 creates and reuses connections deep inside its pools.
Used by the text stage's live fetching and by enrich's calls to a summarizer endpoint.
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import urllib3
import urllib3.connection


class Watchdog:
    """One daemon thread that runs callbacks at monotonic deadlines (cheaper than a Timer
    thread per request). Callbacks must be quick and must not raise."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, list]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def schedule(self, when: float, callback: Callable[[], None]) -> list:
        """Run `callback` at `when`; returns a handle for `cancel`."""
        entry = [callback]
        with self._cond:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()  # a forked worker has no watchdog thread: start one
                self._thread = threading.Thread(target=self._run, name="fetch-watchdog", daemon=True)
                self._thread.start()
            heapq.heappush(self._heap, (when, next(self._seq), entry))
            self._cond.notify()
        return entry

    @staticmethod
    def cancel(handle: list) -> None:
        """Forget a scheduled callback (cheap; the heap entry is dropped when due)."""
        handle[0] = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                when, _, entry = self._heap[0]
                delay = when - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                heapq.heappop(self._heap)
            callback = entry[0]
            if callback is not None:
                try:
                    callback()
                except Exception:  # noqa: BLE001 - the watchdog must survive any callback
                    pass


WATCHDOG = Watchdog()


def _shutdown(sock: socket.socket) -> None:
    """Unblock any read or write on `sock` (it then sees EOF or an error). For TLS sockets
    the underlying TCP socket is shut down, leaving the SSL object alone for its owner."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, ValueError, TypeError):
        pass


class Attempt:
    """The sockets of one request attempt and its deadline: when the watchdog fires, every
    socket the attempt opened or reused is shut down, so a read stuck on a trickling server
    (status line, headers, chunk-size lines, trailers, body) fails at once."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired = False
        self._done = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()

    def attach(self, sock: socket.socket | None) -> None:
        """Put `sock` under this attempt's deadline (shut at once when already expired)."""
        if sock is None:
            return
        with self._lock:
            if self._done:
                return
            if not self.expired:
                self._socks.append(sock)
                return
        _shutdown(sock)

    def fire(self) -> None:
        """Watchdog callback at the deadline."""
        with self._lock:
            if self._done:
                return
            self.expired = True
            socks, self._socks = self._socks, []
        for sock in socks:
            _shutdown(sock)

    def finish(self) -> None:
        """The attempt is over: later firing must not touch a socket back in the pool."""
        with self._lock:
            self._done = True
            self._socks = []

    def over(self) -> bool:
        """Whether the deadline has passed (fired or not yet noticed by the watchdog)."""
        return self.expired or time.monotonic() >= self.deadline


# The attempt running in this thread; urllib3 creates connections deep inside the pool, so
# the connection class looks it up here to attach its sockets.
CURRENT = threading.local()


def attach_current(sock: socket.socket | None) -> None:
    attempt = getattr(CURRENT, "attempt", None)
    if attempt is not None:
        attempt.attach(sock)


class DeadlineMixin:
    """Puts every socket a connection uses under the current attempt's deadline: the raw
    socket as soon as it exists (so a trickled TLS handshake is covered), the TLS socket
    after the handshake, and a reused keep-alive socket when a request starts on it."""

    def _new_conn(self):
        sock = super()._new_conn()
        attach_current(sock)
        return sock

    def connect(self):
        super().connect()
        attach_current(getattr(self, "sock", None))

    def request(self, *args, **kwargs):
        attach_current(getattr(self, "sock", None))
        return super().request(*args, **kwargs)


class DeadlineHTTPConnection(DeadlineMixin, urllib3.connection.HTTPConnection):
    pass


class DeadlineHTTPSConnection(DeadlineMixin, urllib3.connection.HTTPSConnection):
    pass


class DeadlineHTTPConnectionPool(urllib3.HTTPConnectionPool):
    """A pool whose connections are under the current attempt's deadline."""

    ConnectionCls = DeadlineHTTPConnection


class DeadlineHTTPSConnectionPool(urllib3.HTTPSConnectionPool):
    """The same over TLS."""

    ConnectionCls = DeadlineHTTPSConnection


@contextmanager
def attempt_until(deadline: float) -> Iterator[Attempt]:
    """Run one request attempt under `deadline` (a `time.monotonic()` value) in this thread."""
    attempt = Attempt(deadline)
    handle = WATCHDOG.schedule(deadline, attempt.fire)
    CURRENT.attempt = attempt
    try:
        yield attempt
    finally:
        CURRENT.attempt = None
        WATCHDOG.cancel(handle)
        attempt.finish()
