"""Servers that misbehave at the socket level, for the hostile-fetch tests.

`RawServer` hands each accepted connection to a plain function that writes whatever bytes
it likes, as slowly as it likes (the stdlib HTTP server cannot trickle a status line or a
chunk-size line). `BoundServer` is `LocalServer` bound to another loopback address
(127.0.0.2), so a test can prove that a forbidden address would really have answered.
`full_backlog_listener` gives an address whose TCP connect hangs (SYNs dropped), the way a
saturated or firewalled host behaves. Everything binds loopback only; handlers stop when
the server stops, so no test leaves a thread writing forever.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from openmsd_build.text.fetch.testing import LocalServer, _Handler, _Server


class BoundServer(LocalServer):
    """`LocalServer` listening on `bind` (e.g. 127.0.0.2) instead of 127.0.0.1."""

    def __init__(self, *args, bind: str = "127.0.0.2", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.bind = bind

    def start(self) -> BoundServer:
        """Bind `bind`:0 and serve in a daemon thread."""
        self._server = _Server((self.bind, 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self


Behaviour = Callable[[socket.socket, "RawServer"], None]


class RawServer:
    """Accepts TCP connections on `bind`:0 and runs `behaviour(conn, server)` for each in a
    daemon thread. `requests` records each request head read with `read_head`."""

    def __init__(self, behaviour: Behaviour, bind: str = "127.0.0.1") -> None:
        self.behaviour = behaviour
        self.bind = bind
        self.stopping = threading.Event()
        self.requests: list[bytes] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        assert self._sock is not None
        return self._sock.getsockname()[1]

    def url(self, path: str = "/", host: str | None = None, scheme: str = "http") -> str:
        """Absolute URL on this server, optionally under another host spelling."""
        return f"{scheme}://{host or self.bind}:{self.port}{path}"

    def read_head(self, conn: socket.socket, limit: float = 2.0) -> bytes:
        """Read one request head (up to the blank line) and record it."""
        conn.settimeout(limit)
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < 65536:
                piece = conn.recv(4096)
                if not piece:
                    break
                data += piece
        except OSError:
            pass
        with self._lock:
            self.requests.append(data)
        return data

    def send_slowly(self, conn: socket.socket, data: bytes, delay: float, limit: float = 8.0) -> None:
        """Write `data` one byte per `delay` seconds until done, stopped, `limit` seconds
        passed or the client hung up."""
        end = time.monotonic() + limit
        for i in range(len(data)):
            if self.stopping.is_set() or time.monotonic() > end:
                return
            conn.sendall(data[i : i + 1])
            time.sleep(delay)

    def send_forever(self, conn: socket.socket, piece: bytes, delay: float = 0.0, limit: float = 8.0) -> int:
        """Write `piece` again and again (endless headers, trailers, bodies) until stopped,
        `limit` seconds passed or the client hung up; returns the bytes written."""
        end = time.monotonic() + limit
        sent = 0
        while not self.stopping.is_set() and time.monotonic() < end:
            conn.sendall(piece)
            sent += len(piece)
            if delay:
                time.sleep(delay)
        return sent

    def _run(self, conn: socket.socket) -> None:
        try:
            self.behaviour(conn, self)
        except OSError:
            pass  # the client hung up: expected, that is the fetcher enforcing a bound
        finally:
            conn.close()

    def __enter__(self) -> RawServer:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((self.bind, 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self.stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            with self._lock:
                self.connections += 1
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._sock is not None:
            self._sock.close()


@contextmanager
def full_backlog_listener(bind: str = "127.0.0.1") -> Iterator[int]:
    """A port whose accept queue is full and never drained: new SYNs are dropped, so a
    client's connect() hangs until its own timeout. Yields the port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((bind, 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):  # Linux queues backlog+1 connections; extra ones stay in SYN_SENT
            filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            filler.setblocking(False)
            try:
                filler.connect((bind, port))
            except BlockingIOError:
                pass
            fillers.append(filler)
        time.sleep(0.1)
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
