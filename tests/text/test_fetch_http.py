"""Live fetching against a local server: politeness, safety, caps and resumability.

Every test talks only to a ThreadingHTTPServer on 127.0.0.1 (other host names are mapped to
it by an injected resolver); server-side hit logs prove what was and was not requested.
"""

from __future__ import annotations

import gzip
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler

import pytest
import urllib3.util.connection

from openmsd_build.text.fetch import FetchConfig, HttpFetcher, canonical_url, should_fetch
from openmsd_build.text.fetch.politeness import parse_retry_after, parse_robots
from openmsd_build.text.fetch.safety import is_blocked_ip
from openmsd_build.text.fetch.testing import LocalServer, respond

PAGE = b"<!doctype html><html><head><title>t</title></head><body>" + b"x" * 2000 + b"</body></html>"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 2000
PDF_BODY = b"%PDF-1.7\n" + b"1 0 obj\n" * 200


class MapResolver:
    """Maps chosen names to addresses (everything to 127.0.0.1 by default) and logs calls."""

    def __init__(self, mapping: dict[str, str] | None = None, default: str | None = "127.0.0.1") -> None:
        self.mapping = mapping or {}
        self.default = default
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host in self.mapping:
            return [self.mapping[host]]
        if self.default is None:
            raise OSError("unknown host")
        return [self.default]


# ----------------------------------------------------------------------------- routes


def robots(h: BaseHTTPRequestHandler, srv: LocalServer) -> None:
    host = h.headers.get("Host", "").split(":")[0]
    if host == "robots500.test":
        respond(h, 500, b"oops")
    elif host == "robots404.test":
        respond(h, 404, b"none")
    elif host == "crawldelay.test":
        respond(h, 200, b"User-agent: *\nCrawl-delay: 1\n", "text/plain")
    else:
        respond(h, 200, b"User-agent: *\nDisallow: /private\n\nUser-agent: other\nDisallow: /\n", "text/plain")


def page(h, srv):
    respond(h, 200, PAGE)


def host_echo(h, srv):
    respond(h, 200, b"<html><body>host=" + h.headers.get("Host", "").encode() + b"</body></html>")


def ratelimited(h, srv):
    if srv.bump("429") == 1:
        respond(h, 429, b"slow down", headers={"Retry-After": "1"})
    else:
        respond(h, 200, PAGE)


def flaky(h, srv):
    if srv.bump("500") == 1:
        respond(h, 500, b"boom")
    else:
        respond(h, 200, PAGE)


def always500(h, srv):
    respond(h, 500, b"boom")


def trickle(h, srv):
    """Headers at once, then 10 bytes every 0.2 s (bounded: at most 40 chunks)."""
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", "400")
    h.end_headers()
    h.wfile.write(b"<html><body>")
    for _ in range(40):
        time.sleep(0.2)
        h.wfile.write(b"y" * 10)
        h.wfile.flush()


def stall(h, srv):
    """Headers, then silence for 2 s (longer than the read timeout)."""
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", "100")
    h.end_headers()
    h.wfile.flush()
    time.sleep(2.0)
    h.wfile.write(b"z" * 100)


def _stream_big(h, srv, declared: bool) -> None:
    total = 32 * 1024 * 1024
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    if declared:
        h.send_header("Content-Length", str(total))
    else:
        h.send_header("Connection", "close")
        h.close_connection = True
    h.end_headers()
    chunk = b"<html>" + b"a" * (64 * 1024 - 6)
    sent = 0
    try:
        while sent < total:
            h.wfile.write(chunk)
            sent += len(chunk)
    finally:
        srv.data[h.path] = sent


def big_declared(h, srv):
    _stream_big(h, srv, declared=True)


def big_undeclared(h, srv):
    _stream_big(h, srv, declared=False)


def gzipped(h, srv):
    respond(h, 200, gzip.compress(PAGE), headers={"Content-Encoding": "gzip"})


def bomb(h, srv):
    respond(
        h,
        200,
        srv.data.setdefault("bomb", gzip.compress(b"\0" * (64 * 1024 * 1024), 6)),
        headers={"Content-Encoding": "gzip"},
    )


def png(h, srv):
    respond(h, 200, PNG, "image/png")


def pdf(h, srv):
    respond(h, 200, PDF_BODY, "application/octet-stream")


def redirect_to(location: str, status: int = 302):
    def route(h, srv):
        respond(h, status, b"", headers={"Location": location})

    return route


ROUTES = {
    "/robots.txt": robots,
    "/page": page,
    "/private/secret": page,
    "/host-echo": host_echo,
    "/ratelimited": ratelimited,
    "/flaky": flaky,
    "/always500": always500,
    "/trickle": trickle,
    "/stall": stall,
    "/big-declared": big_declared,
    "/big-undeclared": big_undeclared,
    "/gzip": gzipped,
    "/bomb": bomb,
    "/png": png,
    "/pdf": pdf,
    "/loop-a": redirect_to("/loop-b"),
    "/loop-b": redirect_to("/loop-a"),
    "/to-page": redirect_to("/page", 301),
    "/to-metadata": redirect_to("http://169.254.169.254/latest/meta-data/"),
    "/to-private": redirect_to("http://10.0.0.1/admin"),
    "/to-file": redirect_to("file:///etc/passwd"),
    "/to-unparsable": redirect_to("http://[::1/"),
    "/to-private-name": redirect_to("http://internal.test/"),
}


@pytest.fixture(scope="module")
def server():
    with LocalServer(ROUTES) as srv:
        yield srv


@pytest.fixture()
def srv(server):
    server.reset()
    yield server


def make(**overrides) -> HttpFetcher:
    """A fast test configuration: loopback allowed, short timeouts, no pacing unless asked."""
    settings = dict(
        user_agent="openmsd-build/0.1",
        contact="test@example.org",
        connect_timeout=2.0,
        read_timeout=2.0,
        total_timeout=5.0,
        max_bytes=256 * 1024,
        max_redirects=4,
        max_retries=2,
        backoff_base=0.05,
        backoff_max=2.0,
        jitter=0.1,
        per_host_rate=None,
        per_host_concurrency=4,
        allow_networks=["127.0.0.0/8"],
        resolver=MapResolver(),
    )
    settings.update(overrides)
    return HttpFetcher(FetchConfig(**settings))


@pytest.fixture()
def connects(monkeypatch):
    """Record every TCP connection urllib3 opens (and still make it)."""
    seen: list[tuple[str, int]] = []
    real = urllib3.util.connection.create_connection

    def recording(address, *args, **kwargs):
        seen.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", recording)
    return seen


# ----------------------------------------------------------------------------- basics


def test_plain_page_and_user_agent(srv):
    result = make().fetch(srv.url("/page"))
    assert result.ok and result.status == 200 and result.body == PAGE
    assert result.content_type == "text/html" and result.attempts == 1 and result.error is None
    assert result.fetched_at.endswith("Z")


def test_robots_disallow_never_requests_path(srv):
    fetcher = make()
    result = fetcher.fetch(srv.url("/private/secret"))
    assert result.error == "robots_disallowed" and result.body is None
    assert fetcher.fetch(srv.url("/page")).ok
    assert fetcher.fetch(srv.url("/page?again=1")).ok
    assert srv.hits_for("/private") == []
    assert len(srv.hits_for("/robots.txt")) == 1  # cached per host


def test_robots_ignored_when_disabled(srv):
    result = make(respect_robots=False).fetch(srv.url("/private/secret"))
    assert result.ok and srv.hits_for("/robots.txt") == []


def test_robots_5xx_disallows_4xx_allows(srv):
    fetcher = make()
    assert fetcher.fetch(srv.url("/page", host="robots500.test")).error == "robots_unavailable"
    assert fetcher.fetch(srv.url("/page", host="robots404.test")).ok
    assert [h.host.split(":")[0] for h in srv.hits_for("/page")] == ["robots404.test"]


def test_robots_parser_longest_match_and_wildcards():
    rules = parse_robots(
        "User-agent: *\nDisallow: /\nAllow: /oa/\nDisallow: /*.pdf$\n\nUser-agent: openmsd-build\nDisallow: /x\nCrawl-delay: 2",
        "openmsd-build",
    )
    assert rules.crawl_delay == 2.0
    assert not rules.allowed("/x/y") and rules.allowed("/anything")  # our group replaces *
    star = parse_robots("User-agent: *\nDisallow: /\nAllow: /oa/\nDisallow: /*.pdf$\n", "someone")
    assert star.allowed("/oa/paper") and not star.allowed("/other")
    assert not star.allowed("/oa/file.pdf") and star.allowed("/oa/file.pdf?x=1")
    assert parse_robots("User-agent: *\nDisallow:\n", "a").allowed("/all")


def test_crawl_delay_honoured(srv):
    fetcher = make()
    for i in range(3):
        assert fetcher.fetch(srv.url(f"/page?cd={i}", host="crawldelay.test")).ok
    times = [h.t for h in srv.hits_for("/page?cd=")]
    assert times[-1] - times[0] >= 1.8


# ----------------------------------------------------------------------------- retries


def test_429_retry_after_then_success(srv):
    start = time.monotonic()
    result = make().fetch(srv.url("/ratelimited"))
    elapsed = time.monotonic() - start
    assert result.ok and result.attempts == 2
    assert elapsed >= 0.95  # the behaviour: Retry-After: 1 is waited for (a lower bound cannot flake)
    hits = srv.hits_for("/ratelimited")
    assert hits[1].t - hits[0].t >= 0.95


def test_500_then_success_with_backoff(srv):
    result = make().fetch(srv.url("/flaky"))
    assert result.ok and result.attempts == 2


def test_500_gives_up_after_retries(srv):
    result = make(max_retries=2).fetch(srv.url("/always500"))
    assert result.error == "http_500" and result.status == 500 and result.attempts == 3 and result.body is None


def test_404_is_final(srv):
    result = make().fetch(srv.url("/missing"))
    assert result.error == "http_404" and result.attempts == 1


def test_retry_after_parsing():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert 9 <= parse_retry_after("Thu, 01 Jan 1970 00:00:10 GMT", now=0.0) <= 10
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


# ----------------------------------------------------------------------------- caps and timeouts


def test_trickling_body_hits_total_timeout(srv):
    # the trickle delivers its whole body in 8 s, a chunk every 0.2 s (no read timeout): only
    # the total deadline can make this a timeout
    result = make(total_timeout=1.0, read_timeout=1.0, max_retries=0).fetch(srv.url("/trickle"))
    assert result.error == "timeout" and result.body is None


def test_stalled_body_hits_read_timeout(srv):
    # silence for 2 s, then the connection closes (a short body, not a timeout); the total
    # deadline is far away: only the read timeout can make this a timeout
    result = make(read_timeout=0.4, total_timeout=60.0, max_retries=0).fetch(srv.url("/stall"))
    assert result.error == "timeout"


def test_declared_oversized_body_refused_early(srv):
    result = make(max_bytes=256 * 1024).fetch(srv.url("/big-declared"))
    assert result.error == "too_large" and result.body is None
    deadline = time.monotonic() + 3
    while "/big-declared" not in srv.data and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.data["/big-declared"] < 32 * 1024 * 1024


def test_undeclared_oversized_body_capped_while_streaming(srv):
    result = make(max_bytes=256 * 1024).fetch(srv.url("/big-undeclared"))
    assert result.error == "too_large" and result.body is None
    deadline = time.monotonic() + 3
    while "/big-undeclared" not in srv.data and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.data["/big-undeclared"] < 32 * 1024 * 1024


def test_gzip_body_decoded(srv):
    result = make().fetch(srv.url("/gzip"))
    assert result.ok and result.body == PAGE and result.headers["content-encoding"] == "gzip"


def test_gzip_bomb_capped(srv):
    result = make(max_bytes=1024 * 1024).fetch(srv.url("/bomb"))
    assert result.error == "too_large" and result.body is None


def test_wrong_content_type(srv):
    result = make().fetch(srv.url("/png"))
    assert result.error == "wrong_content_type" and result.content_type == "image/png" and result.body is None


def test_pdf_sniffed_despite_octet_stream(srv):
    result = make().fetch(srv.url("/pdf"))
    assert result.ok and result.content_type == "application/pdf" and result.body == PDF_BODY


# ----------------------------------------------------------------------------- redirects and safety


def test_redirect_followed(srv):
    result = make().fetch(srv.url("/to-page"))
    assert result.ok and result.final_url == srv.url("/page")
    assert result.redirects == [{"url": srv.url("/to-page"), "status": 301, "location": srv.url("/page")}]


def test_redirect_loop(srv):
    result = make(max_redirects=4).fetch(srv.url("/loop-a"))
    assert result.error == "too_many_redirects"
    assert len(srv.hits_for("/loop-")) == 5


@pytest.mark.parametrize("path,bad_ip", [("/to-metadata", "169.254.169.254"), ("/to-private", "10.0.0.1")])
def test_redirect_to_private_ip_blocked_without_connecting(srv, connects, path, bad_ip):
    result = make().fetch(srv.url(path))
    assert result.error == "blocked_address"
    assert result.final_url.startswith(f"http://{bad_ip}/")
    assert connects and all(address[0] == "127.0.0.1" for address in connects)


def test_a_refused_address_takes_no_politeness_slot(srv, connects):
    """A URL whose host is an address the fetcher refuses sends no request, yet waited its
    turn at the host's rate: 13 refused URLs of a local server took 50 s at 1 req/s."""
    fetcher = make(allow_networks=[], per_host_rate=0.5)
    slots = []
    take = fetcher._limiter.slot
    fetcher._limiter.slot = lambda host: slots.append(host) or take(host)
    results = [fetcher.fetch(srv.url(f"/page{i}")) for i in range(4)]
    assert [r.error for r in results] == ["blocked_address"] * 4
    assert slots == [] and connects == [] and srv.hits == []


def test_redirect_to_name_resolving_private_blocked(srv, connects):
    resolver = MapResolver({"internal.test": "10.1.2.3"})
    result = make(resolver=resolver).fetch(srv.url("/to-private-name"))
    assert result.error == "blocked_address" and "internal.test" in resolver.calls
    assert all(address[0] == "127.0.0.1" for address in connects)


def test_hostname_resolving_to_loopback_blocked_when_not_allowed(srv, connects):
    resolver = MapResolver()
    result = make(allow_networks=[], resolver=resolver).fetch(srv.url("/page", host="sneaky.test"))
    assert result.error == "blocked_address" and resolver.calls == ["sneaky.test"]
    assert connects == [] and srv.hits == []


def test_system_resolver_monkeypatched_loopback_blocked(srv, monkeypatch, connects):
    import socket

    def fake_getaddrinfo(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    result = make(allow_networks=[], resolver=None).fetch(srv.url("/page", host="rebind.test"))
    assert result.error == "blocked_address" and connects == []


def test_connects_to_checked_ip_with_original_host_header(srv, connects):
    resolver = MapResolver({"pinned.test": "127.0.0.1"})
    result = make(resolver=resolver).fetch(srv.url("/host-echo", host="pinned.test"))
    assert result.ok and f"host=pinned.test:{srv.port}".encode() in result.body
    assert all(address[0] == "127.0.0.1" for address in connects)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.org/x", "gopher://example.org/", "javascript:alert(1)"]
)
def test_bad_scheme(url, connects):
    assert make().fetch(url).error == "bad_scheme"
    assert connects == []


def test_redirect_to_file_scheme(srv):
    assert make().fetch(srv.url("/to-file")).error == "bad_scheme"


def test_redirect_to_a_location_urljoin_cannot_parse(srv):
    """A hostile host's `Location: http://[::1/` raised ValueError out of the fetch."""
    result = make().fetch(srv.url("/to-unparsable"))
    assert result.error == "bad_url" and result.body is None


def test_blocked_ip_table():
    blocked = [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "100.64.0.1",
        "192.0.2.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "2002:a00:1::1",
        "64:ff9b::a9fe:a9fe",
        "not-an-ip",
    ]
    public = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
    assert [a for a in blocked if not is_blocked_ip(a)] == []
    assert [a for a in public if is_blocked_ip(a)] == []
    assert not is_blocked_ip("127.0.0.1", ["127.0.0.0/8"]) and not is_blocked_ip("::ffff:127.0.0.1", ["127.0.0.0/8"])
    assert is_blocked_ip("10.0.0.1", ["127.0.0.0/8"])


# ----------------------------------------------------------------------------- pacing and threads


def test_per_host_rate_limit_respected(srv):
    fetcher = make(per_host_rate=5.0, per_host_concurrency=2)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(fetcher.fetch, [srv.url(f"/page?r={i}") for i in range(10)]))
    assert all(r.ok for r in results)
    times = sorted(h.t for h in srv.hits_for("/page?r="))
    assert len(times) == 10
    assert times[-1] - times[0] >= 1.7  # 9 intervals of 0.2 s, minus scheduling slack
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.1


def test_threads_over_many_hosts(srv):
    fetcher = make(per_host_rate=20.0)
    urls = [srv.url(f"/page?h={i}", host=f"h{i % 5}.test") for i in range(25)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(fetcher.fetch, urls))
    assert all(r.ok for r in results)
    assert len(srv.hits_for("/robots.txt")) == 5  # one robots.txt per host, even under threads


def test_fetcher_pickles_config_only(srv):
    import pickle

    fetcher = make(resolver=None)
    clone = pickle.loads(pickle.dumps(fetcher))
    assert clone.config == fetcher.config
    assert clone.fetch(srv.url("/page")).ok


# ----------------------------------------------------------------------------- resume


def test_resumed_run_fetches_nothing_twice(srv):
    urls = [srv.url(f"/page?doc={i}") for i in range(6)]
    first = make()
    done = {canonical_url(r.url) for r in map(first.fetch, urls[:3]) if r.status is not None}
    second = make()
    lock = threading.Lock()
    fetched: list[str] = []
    for url in urls:
        if should_fetch(url, done):
            second.fetch(url)
            with lock:
                fetched.append(url)
    assert fetched == urls[3:]
    paths = [h.path for h in srv.hits_for("/page?doc=")]
    assert sorted(paths) == sorted(f"/page?doc={i}" for i in range(6))  # each exactly once


# ----------------------------------------------------------------------------- https through a pinned IP


def _self_signed(tmp_path, name: str):
    """A throwaway self-signed certificate for `name` (needs `cryptography`)."""
    import datetime

    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


def test_https_pinned_ip_verifies_certificate_for_the_name(tmp_path, connects):
    import ssl

    cert, key = _self_signed(tmp_path, "secure.test")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with LocalServer({"/robots.txt": robots, "/host-echo": host_echo}, ssl_context=context) as tls:
        good = make(ca_certs=cert).fetch(tls.url("/host-echo", host="secure.test"))
        assert good.ok, good.error
        assert f"host=secure.test:{tls.port}".encode() in good.body
        assert all(address[0] == "127.0.0.1" for address in connects)
        # Same IP, other name: the certificate does not match -> refused.
        wrong = make(ca_certs=cert, respect_robots=False).fetch(tls.url("/host-echo", host="other.test"))
        assert wrong.error == "tls_error"


def test_odd_urls_do_not_raise(srv):
    fetcher = make()
    assert fetcher.fetch(srv.url("/page with space/ü")).error == "http_404"
    assert fetcher.fetch("http://").error == "bad_url"
    assert fetcher.fetch("http://127.0.0.1:99999/").error == "bad_url"
    assert [h.path for h in srv.hits_for("/page%20")] == ["/page%20with%20space/%C3%BC"]
