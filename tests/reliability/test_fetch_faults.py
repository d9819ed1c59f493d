"""Fault injection and security checks for the live fetcher (127.0.0.1 only).

Faults: a server that drops the connection (before headers, mid-body), trickles the status
line / headers / body byte by byte, stalls, sends a Content-Length that is too short or too
long, garbage instead of HTTP, or a gzip bomb. Property: `fetch()` returns a FetchResult
with an error code (or the correct body), never raises, never runs past its deadline, and
the next request to the same host still gets the right answer.

Security: only http(s); no private, loopback or link-local targets — by IP literal, by a DNS
name resolving to one, or by a redirect to one; redirects capped; decompressed size capped.
"""

from __future__ import annotations

import socket
import time
import zlib

import pytest

from openmsd_build.text.fetch import FetchConfig, HttpFetcher
from openmsd_build.text.fetch.testing import LocalServer, respond

PAGE = b"<!doctype html><html><head><title>ok</title></head><body>" + b"y" * 3000 + b"</body></html>"


def _raw(h, data: bytes) -> None:
    h.wfile.write(data)
    h.wfile.flush()


def drop_before_headers(h, srv):
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def drop_mid_body(h, srv):
    _raw(h, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n" + PAGE[:600])
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def short_length(h, srv):  # declares fewer bytes than it sends: the rest pollutes keep-alive
    _raw(h, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 700\r\n\r\n" + PAGE
         + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!")


def long_length(h, srv):  # declares more bytes than it sends, then keeps the socket open
    _raw(h, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 9000\r\n\r\n" + PAGE[:1000])
    time.sleep(3)


def _trickle(h, data: bytes, delay: float, limit: float = 6.0) -> None:
    end = time.monotonic() + limit
    for i in range(len(data)):
        if time.monotonic() > end:
            return
        _raw(h, data[i : i + 1])
        time.sleep(delay)


def trickle_status(h, srv):
    _trickle(h, b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 400 + b"\r\n\r\n", 0.05)


def trickle_body(h, srv):
    _raw(h, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 3000\r\n\r\n")
    _trickle(h, PAGE[:3000], 0.05)


def stall(h, srv):
    time.sleep(3)


def garbage(h, srv):
    _raw(h, b"\x00\xffNOT HTTP AT ALL\r\n\r\n" * 50)
    h.close_connection = True


def bad_status(h, srv):
    _raw(h, b"HTTP/1.1 9999999999 WHAT\r\nContent-Length: 0\r\n\r\n")


def _bomb() -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join(c.compress(b"<html>" + b"\0" * (1 << 20)) for _ in range(64)) + c.flush()


BOMB = _bomb()  # 64 MiB inflated, ~64 KiB on the wire


def bomb(h, srv):
    respond(h, 200, BOMB, headers={"Content-Encoding": "gzip"})


def page(h, srv):
    respond(h, 200, PAGE)


def redirect_chain(h, srv):
    n = int(h.path.rsplit("/", 1)[1])
    respond(h, 302, b"", headers={"Location": f"/chain/{n + 1}"})


def redirect_to(target):
    return lambda h, srv: respond(h, 302, b"", headers={"Location": target})


ROUTES = {
    "/drop": drop_before_headers, "/drop-mid-body": drop_mid_body, "/short-length": short_length,
    "/long-length": long_length, "/trickle-status": trickle_status, "/trickle-body": trickle_body,
    "/stall": stall, "/garbage": garbage, "/bad-status": bad_status, "/bomb": bomb, "/page": page,
    "/robots.txt": lambda h, s: respond(h, 404, b""),
    "/to-metadata": redirect_to("http://169.254.169.254/latest/meta-data/"),
    "/to-loopback-v6": redirect_to("http://[::1]/x"), "/to-private": redirect_to("http://10.0.0.7/x"),
    "/to-mapped": redirect_to("http://[::ffff:10.0.0.1]/x"), "/to-name": redirect_to("http://intranet.test/x"),
    "/to-file": redirect_to("file:///etc/passwd"), "/to-decimal": redirect_to("http://167772161/x"),
}


@pytest.fixture(scope="module")
def srv():
    server = LocalServer(ROUTES, default=redirect_chain)
    with server:
        yield server


def make(**kw) -> HttpFetcher:
    base = dict(allow_networks=["127.0.0.0/8"], per_host_rate=None, respect_robots=False, connect_timeout=1.0,
                read_timeout=0.5, total_timeout=1.5, max_retries=1, backoff_base=0.01, backoff_max=0.05,
                max_bytes=1 << 20)
    base.update(kw)
    return HttpFetcher(FetchConfig(**base))


FAULTS = {
    "/drop": {"connection_error"},
    "/drop-mid-body": {"connection_error", "timeout"},
    "/long-length": {"connection_error", "timeout"},
    "/trickle-status": {"timeout"},
    "/trickle-body": {"timeout"},
    "/stall": {"timeout"},
    "/garbage": {"connection_error", "bad_url"},
    "/bad-status": {"connection_error", "bad_url", "http_9999999999"},
    "/bomb": {"too_large"},
}


@pytest.mark.parametrize("path", sorted(FAULTS))
def test_fault_gives_error_code_within_deadline(srv, path):
    fetcher = make()
    cfg = fetcher.config
    budget = (cfg.max_retries + 1) * (cfg.total_timeout + cfg.read_timeout + cfg.connect_timeout) + 1.0
    started = time.monotonic()
    result = fetcher.fetch(srv.url(path))
    elapsed = time.monotonic() - started
    assert result.error in FAULTS[path], (path, result.error, result.status)
    assert result.body is None and not result.ok
    assert elapsed < budget, (path, elapsed)  # the behaviour: the fetch deadlines fire (budget: all of them + 1 s)
    # the same fetcher (same pooled host) still works afterwards
    ok = fetcher.fetch(srv.url("/page"))
    assert ok.ok and ok.body == PAGE, (path, ok.error)


def test_short_content_length_does_not_poison_the_next_response(srv):
    """A server that sends more than it declared must not make the next request on the
    keep-alive connection read the leftovers (e.g. a smuggled "EVIL!" response)."""
    fetcher = make()
    first = fetcher.fetch(srv.url("/short-length"))
    assert first.error is not None or first.body == PAGE[:700]
    for _ in range(3):
        nxt = fetcher.fetch(srv.url("/page"))
        assert nxt.ok and nxt.body == PAGE, (nxt.error, nxt.body[:50] if nxt.body else None)


def test_fetch_inside_a_stage_survives_every_fault(srv, tmp_path):
    """The text stage's DoFn over a host whose URLs all misbehave: every URL gets a fetch
    row with an error code, nothing raises, and the stage's counts reconcile."""
    from reconcile import check_text

    from openmsd_build.core import layout, parquet_io
    from openmsd_build.schemas import PAPERS
    from openmsd_build.text.command import run_text

    rows = []
    for i, path in enumerate([*sorted(FAULTS), "/page", "/short-length"]):
        rows.append({"doi": f"10.1234/f{i}", "sources": ["unpaywall"], "n_records": 1, "categories": [],
                     "relations": [], "urls": [{"url": srv.url(path), "kind": "landing", "host_type": None,
                                                "license": None, "version": None, "source": "unpaywall", "rank": 0}]})
    out = tmp_path / "out"
    parquet_io.write_table(parquet_io.table_from_rows(rows, PAPERS), parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))
    cfg = make().config
    counts = run_text(str(out), "http", [], cfg, extract_timeout=20, host_shards=1, follow=False)
    assert counts["papers"] == len(rows)
    assert check_text(out) == []
    fetch = parquet_io.read_table(layout.fetch_dir(str(out)))
    assert fetch.num_rows == len(rows)
    assert sum(e is None for e in fetch.column("error").to_pylist()) >= 1


# ----------------------------------------------------------------------------- security


class Resolver:
    """Picklable resolver mapping names to fixed addresses."""

    def __init__(self, mapping):
        self.mapping = mapping

    def __call__(self, host, port):
        from openmsd_build.text.fetch.safety import system_resolver

        return [self.mapping[host]] if host in self.mapping else list(system_resolver(host, port))


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://x.org/a", "gopher://x.org/", "data:text/html,hi",
                                 "javascript:alert(1)", "jar:http://x/!/", "dict://x:11211/", "//x.org/a", "x.org/a",
                                 "http:///nohost", "http://[::1", "HTTP://127.0.0.1:0/"])
def test_only_http_schemes_and_valid_urls(url):
    result = make(allow_networks=[]).fetch(url)
    assert result.error in {"bad_scheme", "bad_url", "blocked_address"}, (url, result.error)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                                  "[::1]", "[fe80::1]", "[fc00::1]", "[::ffff:10.0.0.1]", "0.0.0.0", "100.64.0.1",
                                  "[64:ff9b::a00:1]", "224.0.0.1", "2130706433", "0x7f.1"])
def test_private_targets_refused_without_connecting(srv, host):
    result = make(allow_networks=[]).fetch(f"http://{host}:{srv.port}/page")
    assert result.error in {"blocked_address", "bad_url", "dns_error"}, (host, result.error)
    assert not result.ok


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fd00::1", "192.168.0.1"])
def test_dns_names_resolving_private_refused(srv, address):
    hits = len(srv.hits)
    result = make(allow_networks=[], resolver=Resolver({"evil.test": address})).fetch(
        f"http://evil.test:{srv.port}/page")
    assert result.error == "blocked_address"
    assert len(srv.hits) == hits  # never connected


@pytest.mark.parametrize("path", ["/to-metadata", "/to-loopback-v6", "/to-private", "/to-mapped", "/to-name",
                                  "/to-decimal"])
def test_redirects_to_private_targets_refused(srv, path):
    # the first hop (127.0.0.1) is allowed; only 127.0.0.0/8 is, so the redirect target is not
    resolver = Resolver({"intranet.test": "10.9.9.9"})
    result = make(resolver=resolver).fetch(srv.url(path))
    assert result.error in {"blocked_address", "bad_url"}, (path, result.error)
    assert not result.ok


def test_redirect_to_file_scheme_refused(srv):
    assert make().fetch(srv.url("/to-file")).error == "bad_scheme"


def test_redirect_cap(srv):
    result = make(max_redirects=3).fetch(srv.url("/chain/0"))
    assert result.error == "too_many_redirects" and len(result.redirects) == 4


def test_decompressed_size_cap(srv):
    result = make(max_bytes=256 << 10).fetch(srv.url("/bomb"))
    assert result.error == "too_large" and result.body is None
