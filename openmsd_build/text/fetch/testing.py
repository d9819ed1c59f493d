"""A tiny local HTTP server for the fetch tests and benchmark (127.0.0.1 only).

Routes are plain functions, so each test states exactly how the "hostile web" behaves
(429s, trickling bodies, gzip bombs, redirect loops) and the server records every request
with a timestamp, which is how tests prove what was and was NOT requested.
"""

from __future__ import annotations

import ssl
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import NamedTuple
from urllib.parse import urlsplit


class Hit(NamedTuple):
    """One request as the server saw it."""

    t: float
    path: str
    host: str


Route = Callable[[BaseHTTPRequestHandler, "LocalServer"], None]


def respond(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: bytes = b"",
    content_type: str | None = "text/html; charset=utf-8",
    headers: dict[str, str] | None = None,
) -> None:
    """Send a complete response with a Content-Length (keeps HTTP/1.1 connections usable)."""
    handler.send_response(status)
    if content_type:
        handler.send_header("Content-Type", content_type)
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if body:
        handler.wfile.write(body)


class _Handler(BaseHTTPRequestHandler):
    """Dispatch GETs to the server's routes and record them."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms ACK stalls
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        owner = self.server.owner
        path = urlsplit(self.path).path
        owner._record(Hit(time.monotonic(), self.path, self.headers.get("Host", "")))
        route = owner.routes.get(path) or owner.default
        try:
            if route is None:
                respond(self, 404, b"not found")
            else:
                route(self, owner)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Silence per-request logging."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalServer

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that hang up on purpose (caps, timeouts) are expected, not errors."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class LocalServer:
    """`with LocalServer(routes) as srv: srv.url("/page")` — a threaded server on a random
    127.0.0.1 port in a daemon thread, shut down on exit."""

    def __init__(
        self,
        routes: dict[str, Route] | None = None,
        default: Route | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.ssl_context = ssl_context
        self.routes: dict[str, Route] = dict(routes or {})
        self.default = default
        self.hits: list[Hit] = []
        self.counters: dict[str, int] = {}
        self.data: dict[str, object] = {}
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def _record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def bump(self, key: str) -> int:
        """Increment and return a named counter (routes use it to fail N times, then succeed)."""
        with self._lock:
            self.counters[key] = self.counters.get(key, 0) + 1
            return self.counters[key]

    def reset(self) -> None:
        """Forget hits, counters and scratch data between tests."""
        with self._lock:
            self.hits.clear()
            self.counters.clear()
            self.data.clear()

    def hits_for(self, prefix: str) -> list[Hit]:
        """Requests whose path starts with `prefix`."""
        with self._lock:
            return [h for h in self.hits if h.path.startswith(prefix)]

    @property
    def port(self) -> int:
        """The bound port."""
        assert self._server is not None
        return self._server.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """Absolute URL on this server, optionally under another host name."""
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{host}:{self.port}{path}"

    def start(self) -> LocalServer:
        """Bind 127.0.0.1:0 and serve in a daemon thread."""
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        if self.ssl_context is not None:
            self._server.socket = self.ssl_context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
