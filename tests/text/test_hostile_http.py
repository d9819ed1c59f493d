"""Slow and endless answers at every point of the HTTP exchange, inputs that used to raise,
the per-host circuit breaker, and archive honesty for refused redirect hops.

Every server is on 127.0.0.1 (raw sockets from `hostile_server`, so a status line or a
chunk-size line can be trickled). Per-read timeouts are set high on purpose: a trickle
never trips them, so only the wall-clock deadlines can end these exchanges — each test
asserts the fetch ended within its deadline plus a small slack.
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
import tracemalloc
import zlib

import pytest
from hostile_server import RawServer, full_backlog_listener

from openmsd_build.text.fetch import FetchConfig, HttpFetcher, WarcBackend, WarcWriter
from openmsd_build.text.fetch.testing import LocalServer, respond

PAGE = b"<!doctype html><html><head><title>t</title></head><body>" + b"x" * 2000 + b"</body></html>"
DEADLINE = 1.0
# Deadline tests: the behaviour is that a deadline fires, so they bound the wall clock, with
# room for a loaded machine yet under what a missing deadline costs (servers trickle for 8 s,
# retries without a shared URL deadline take >= 5 s).
SLACK = 2.0


def no_dns(host: str, port: int) -> list[str]:
    """Injected resolver: these tests use literal addresses; no name may reach real DNS."""
    raise OSError(f"no DNS in tests ({host})")


def make(**kw) -> HttpFetcher:
    """Loopback allowed, generous per-read timeouts, a 1 s attempt deadline, no DNS."""
    settings = dict(
        resolver=no_dns,
        allow_networks=["127.0.0.0/8"],
        respect_robots=False,
        per_host_rate=None,
        connect_timeout=30.0,
        read_timeout=30.0,
        total_timeout=DEADLINE,
        url_timeout=DEADLINE * 1.5,
        max_retries=0,
        backoff_base=0.01,
        backoff_max=0.05,
        max_bytes=1 << 20,
        circuit_failures=0,
    )
    settings.update(kw)
    return HttpFetcher(FetchConfig(**settings))


def timed_fetch(fetcher: HttpFetcher, url: str):
    started = time.monotonic()
    result = fetcher.fetch(url)
    return result, time.monotonic() - started


HEAD_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"


def trickled_status(conn: socket.socket, srv: RawServer) -> None:
    srv.read_head(conn)
    srv.send_slowly(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0.2)


def trickled_headers(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    srv.send_forever(conn, b"X-Slow: a\r\n", delay=0.2)  # 11 bytes per 0.2 s, never ends


def trickled_header_bytes(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    srv.send_slowly(conn, b"X-Slow: " + b"a" * 1000 + b"\r\n\r\n", 0.05)


def endless_headers(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    srv.send_forever(conn, b"X-Flood: " + b"b" * 1000 + b"\r\n")


def endless_header_line(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Long: ")
    srv.send_forever(conn, b"c" * 4096)


def trickled_chunk_size(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(HEAD_CHUNKED + b"200\r\n" + b"<html>" + b"d" * 506 + b"\r\n")
    srv.send_slowly(conn, b"0" * 60000 + b"10\r\n", 0.05)  # a chunk-size line of 60 000 zeros


def trickled_chunk_extension(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(HEAD_CHUNKED)
    srv.send_forever(conn, b";", delay=0.05)  # chunk extension that never ends, slowly


def endless_trailers(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(HEAD_CHUNKED + b"200\r\n" + b"<html>" + b"e" * 506 + b"\r\n0\r\n")
    srv.send_forever(conn, b"X-Trailer: f\r\n" * 64)  # fast, unlimited trailer lines


def trickled_trailers(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(HEAD_CHUNKED + b"200\r\n" + b"<html>" + b"e" * 506 + b"\r\n0\r\n")
    srv.send_forever(conn, b"X-Trailer: f\r\n", delay=0.1)


def endless_body(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html>")
    srv.send_forever(conn, b"g" * 65536)


def trickled_body_close_delimited(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html>" + b"h" * 600)
    srv.send_forever(conn, b"h", delay=0.05)


EMPTY_GZIP_MEMBER = gzip.compress(b"")


def endless_empty_gzip_members(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n")
    srv.send_forever(conn, EMPTY_GZIP_MEMBER * 4096)


def _bomb(mebibytes: int = 256) -> bytes:
    """A gzip stream that inflates to `mebibytes` MiB (~1/1000 of that on the wire),
    compressed piecewise so building it costs no memory."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    return packer.compress(b"<html>") + b"".join(packer.compress(zeros) for _ in range(mebibytes)) + packer.flush()


BOMB = _bomb()


def gzip_bomb(conn, srv) -> None:
    srv.read_head(conn)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
        + f"Content-Length: {len(BOMB)}\r\n\r\n".encode()
        + BOMB
    )


def tls_trickle(conn, srv) -> None:
    """Looks like the start of a TLS record, then trickles its body forever."""
    conn.recv(4096)
    conn.sendall(b"\x16\x03\x03\x40\x00")
    srv.send_forever(conn, b"\x00", delay=0.05)


SLOW_CASES = {
    "trickled status line": (trickled_status, {"timeout"}),
    "trickled header lines": (trickled_headers, {"timeout"}),
    "trickled header bytes": (trickled_header_bytes, {"timeout"}),
    "endless headers": (endless_headers, {"connection_error", "bad_url", "timeout"}),
    "endless header line": (endless_header_line, {"connection_error", "bad_url", "timeout"}),
    "trickled chunk-size line": (trickled_chunk_size, {"timeout"}),
    "trickled chunk extension": (trickled_chunk_extension, {"timeout"}),
    "endless trailers": (endless_trailers, {"timeout"}),
    "trickled trailers": (trickled_trailers, {"timeout"}),
    "endless body": (endless_body, {"too_large"}),
    "trickled close-delimited body": (trickled_body_close_delimited, {"timeout"}),
    # raw-size cap or, on a slow (loaded) machine, the deadline: both end the fetch bounded
    "endless empty gzip members": (endless_empty_gzip_members, {"too_large", "timeout"}),
    "gzip bomb": (gzip_bomb, {"too_large"}),
}


@pytest.mark.parametrize("case", sorted(SLOW_CASES))
def test_every_point_of_the_exchange_is_bounded(case):
    """The fetch ends with the expected error within the deadline, with no body, and with
    bounded memory (tracemalloc peak, which sees every Python buffer the fetch allocates)."""
    behaviour, errors = SLOW_CASES[case]
    with RawServer(behaviour) as srv:
        fetcher = make()
        tracemalloc.start()
        try:
            result, elapsed = timed_fetch(fetcher, srv.url("/x"))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        fetcher.close()
    assert result.error in errors, (case, result.error, result.detail)
    assert result.body is None
    assert elapsed < DEADLINE + SLACK, (case, elapsed)
    assert peak < 16 << 20, (case, peak)


def test_trickled_tls_handshake_is_bounded():
    with RawServer(tls_trickle) as srv:
        result, elapsed = timed_fetch(make(), srv.url("/x", scheme="https"))
    assert result.error in ("timeout", "tls_error"), result.error
    assert elapsed < DEADLINE + SLACK, elapsed


def test_slow_connect_is_bounded_by_the_url_deadline():
    """SYNs dropped (full accept queue): connect hangs. Retries must not multiply the cost:
    the whole fetch stays within url_timeout."""
    with full_backlog_listener() as port:
        fetcher = make(max_retries=5, url_timeout=2.0, total_timeout=1.0, backoff_base=0.01)
        result, elapsed = timed_fetch(fetcher, f"http://127.0.0.1:{port}/x")
    assert result.error == "timeout", result.error
    assert elapsed < 2.0 + SLACK, elapsed


def test_retries_and_redirects_share_one_url_deadline():
    """A server that stalls each attempt for the per-attempt deadline, behind redirects and
    with retries allowed: the URL still ends within url_timeout."""

    def stall_after_redirect(h, srv):
        if h.path.startswith("/hop"):
            n = int(h.path[4:])
            respond(h, 302, b"", headers={"Location": f"/hop{n + 1}" if n < 3 else "/stall"})
        else:
            time.sleep(3)

    with LocalServer(default=stall_after_redirect) as srv:
        fetcher = make(max_retries=4, max_redirects=5, url_timeout=2.5, total_timeout=1.0)
        result, elapsed = timed_fetch(fetcher, srv.url("/hop0"))
    assert result.error == "timeout" and result.status is None
    assert elapsed < 2.5 + SLACK, elapsed


# ----------------------------------------------------------------------------- inputs that raised


@pytest.mark.parametrize("value", [b"\xb2", b"\xb9\xb2", b"1e999", b"99999999999999999999999", b"\xff\xfe"])
def test_odd_retry_after_does_not_escape_fetch(value):
    def busy(conn, srv):
        srv.read_head(conn)
        conn.sendall(
            b"HTTP/1.1 503 Busy\r\nRetry-After: " + value + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )

    with RawServer(busy) as srv:
        result, elapsed = timed_fetch(make(max_retries=1, url_timeout=3.0), srv.url("/x"))
    assert result.error == "http_503" and result.attempts == 2
    assert elapsed < 2.5  # the behaviour: a junk Retry-After is not waited for (url_timeout, 3 s, would end it)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/",
        "http://exa mple.org/",
        "http://example.org:0/",
        "http://example.org:8٠/",
        "http://example.org/\udcff",
        "http://\ud800.org/",
        "http://xn--.org/",
        "http://" + "a" * 300 + ".org/",
        "http:///path",
        "http://user@/",
        "",
        "http://%00/",
    ],
)
def test_unparseable_hosts_become_results(url):
    result = make().fetch(url)
    assert result.error in ("bad_url", "bad_scheme"), (url, result.error)


def test_unexpected_exception_becomes_internal_error():
    """Last resort: whatever escapes (here a resolver bug) is one URL's error, counted."""

    def broken_resolver(host: str, port: int):
        raise KeyError(host)

    result = make(resolver=broken_resolver).fetch("http://name.test/")
    assert result.error == "internal:KeyError" and "name.test" in (result.detail or "")


# ----------------------------------------------------------------------------- circuit breaker


def test_circuit_opens_after_consecutive_failures_and_recovers():
    def route(h, srv):
        if h.path.startswith("/stall"):
            time.sleep(2)
        elif h.path.startswith("/busy"):
            respond(h, 503, b"busy")
        else:
            respond(h, 200, PAGE)

    names = {"bad.test": ["127.0.0.1"], "busy.test": ["127.0.0.1"], "good.test": ["127.0.0.1"]}
    with LocalServer(default=route) as srv:
        fetcher = make(
            circuit_failures=3,
            circuit_cooldown=0.8,
            total_timeout=0.3,
            url_timeout=0.5,
            resolver=lambda host, port: names[host],
        )
        stalled = [fetcher.fetch(srv.url(f"/stall{i}", host="bad.test")) for i in range(10)]
        assert [r.error for r in stalled] == ["timeout"] * 3 + ["host_circuit_open"] * 7
        assert len(srv.hits_for("/stall")) == 3  # the circuit opened after three timeouts
        assert fetcher.fetch(srv.url("/page", host="good.test")).ok  # other hosts unaffected
        busy = [fetcher.fetch(srv.url(f"/busy{i}", host="busy.test")).error for i in range(5)]
        assert busy == ["http_503"] * 3 + ["host_circuit_open"] * 2
        time.sleep(0.9)  # cool-down over: one probe; a success closes the circuit
        assert fetcher.fetch(srv.url("/page", host="bad.test")).ok
        assert fetcher.fetch(srv.url("/stall-again", host="bad.test")).error == "timeout"
        assert fetcher.fetch(srv.url("/page", host="bad.test")).ok


def test_circuit_defaults_are_sane():
    cfg = FetchConfig()
    assert cfg.circuit_failures == 5 and cfg.circuit_cooldown == 300.0
    assert cfg.url_timeout >= cfg.total_timeout


# ----------------------------------------------------------------------------- archive honesty


def _routes(two_port: int):
    def route(h, srv):
        path = h.path
        if path == "/robots.txt":
            respond(h, 200, b"User-agent: *\nDisallow: /private\n", "text/plain")
        elif path == "/to-forbidden":
            respond(h, 302, b"", headers={"Location": "http://10.0.0.1/admin"})
        elif path == "/to-disallowed":
            respond(h, 301, b"", headers={"Location": "/private/x"})
        elif path == "/to-ftp":
            respond(h, 302, b"", headers={"Location": "ftp://example.org/x"})
        elif path.startswith("/loop"):
            respond(h, 302, b"", headers={"Location": f"/loop{int(path[5:] or 0) + 1}"})
        elif path == "/to-page":
            respond(h, 302, b"", headers={"Location": "/page"})
        else:
            respond(h, 200, PAGE)

    return route


def test_refused_redirect_hop_is_not_archived_and_resume_equals_uninterrupted(tmp_path):
    """Only what was received is archived (each redirect under its own URL); a resumed
    build, served from the archive where it can be and fetched again where it cannot,
    gives exactly the uninterrupted results."""
    with LocalServer(default=_routes(0)) as srv:
        urls = [srv.url(p) for p in ("/to-forbidden", "/to-disallowed", "/to-ftp", "/loop0", "/to-page", "/page")]
        fetcher = make(respect_robots=True, max_redirects=2, url_timeout=5.0, allow_networks=["127.0.0.1/32"])
        first = [fetcher.fetch(url) for url in urls]
        assert [r.error for r in first] == [
            "blocked_address",
            "robots_disallowed",
            "bad_scheme",
            "too_many_redirects",
            None,
            None,
        ]
        for refused in first[:4]:
            assert refused.status is None and refused.headers == {} and refused.body is None
        archive = str(tmp_path / "a.warc.gz")
        with WarcWriter(archive) as writer:
            for r in first:
                writer.write(r)
        backend = WarcBackend([archive])
        archived = set(backend.index)
        refused_targets = {"http://10.0.0.1/admin", srv.url("/private/x"), "ftp://example.org/x", srv.url("/loop3")}
        assert not archived & refused_targets
        assert srv.url("/to-forbidden") in archived and srv.url("/loop2") in archived  # received redirects kept
        for hop in backend.fetch(srv.url("/loop0")).redirects:  # each redirect archived as itself
            assert hop["status"] == 302
        # resume: serve from the archive where it answers fully, else fetch again
        again = make(respect_robots=True, max_redirects=2, url_timeout=5.0, allow_networks=["127.0.0.1/32"])
        resumed = [backend.fetch(u) if u in backend else again.fetch(u) for u in urls]
        assert [u in backend for u in urls] == [False, False, False, False, True, True]
        key = [(r.error, r.status, r.final_url, r.sha1) for r in first]
        assert [(r.error, r.status, r.final_url, r.sha1) for r in resumed] == key


def test_concurrent_fetches_do_not_cross_deadlines():
    """Watchdog entries belong to one attempt: a fast fetch on a reused keep-alive socket
    after a slow one is not cut by the slow one's deadline."""
    with LocalServer({"/page": lambda h, s: respond(h, 200, PAGE)}) as srv:
        fetcher = make(total_timeout=0.5)
        results: list = []

        def worker():
            for _ in range(20):
                results.append(fetcher.fetch(srv.url("/page")))
                time.sleep(0.03)

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(r.ok for r in results) and len(results) == 60
