"""Live HTTP fetching that is polite (robots.txt, per-host pacing, Retry-After, backoff) and
safe (scheme and address checks on every hop, pinned IPs, byte caps, deadlines).

Built on urllib3 rather than requests because the crawler must choose the IP it connects
to: each hop's host is resolved once, every address is checked (`safety.py`), and the
connection pool is opened to that checked IP with the original name sent as `Host` (and as
TLS SNI / certificate hostname for https). A second, unchecked DNS lookup never happens, so
DNS rebinding cannot redirect a connection to a private address. Redirects are followed
here, one hop at a time, so each `Location` gets the same checks.

For https the pool connects to the pinned IP but sends the name as SNI and verifies the
certificate against it (`server_hostname`/`assert_hostname`; tested with a self-signed
local certificate). Limitations: environment proxies are ignored on purpose; only the first
allowed address of a host is tried per attempt (a retry resolves again); a host is refused
if ANY of its addresses is blocked.
"""

from __future__ import annotations

import http.client
import random
import socket
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import quote, urljoin, urlsplit

import urllib3
import urllib3.connection
from urllib3 import exceptions as u3exc

from openmsd_build.text.fetch.config import FetchConfig
from openmsd_build.text.fetch.politeness import (
    ALLOW_ALL,
    DISALLOW_ALL,
    HostLimiter,
    RobotsRules,
    backoff_delay,
    parse_retry_after,
    parse_robots,
    robots_path,
)
from openmsd_build.text.fetch.result import (
    BAD_URL,
    BLOCKED_ADDRESS,
    CONNECTION_ERROR,
    DECODE_ERROR,
    DNS_ERROR,
    REDIRECT_STATUSES,
    ROBOTS_DISALLOWED,
    ROBOTS_UNAVAILABLE,
    TIMEOUT,
    TLS_ERROR,
    TOO_LARGE,
    TOO_MANY_REDIRECTS,
    UNSUPPORTED_ENCODING,
    WRONG_CONTENT_TYPE,
    FetchResult,
    final_error,
    follow_redirect,
    now_iso,
    sniff_content_type,
)
from openmsd_build.text.fetch.safety import FetchRefused, check_scheme, resolve_checked

_DEFAULT_PORTS = {"http": 80, "https": 443}

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 507, 508, 509, 520, 521, 522, 523, 524})
_RETRY_ERRORS = frozenset({TIMEOUT, CONNECTION_ERROR})
_ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,*/*;q=0.1"
_CHUNK = 64 * 1024
_SNIFF_AT = 512
_ROBOTS_MAX_REDIRECTS = 5


# The wall-clock deadline of the request attempt running in this thread (see `_exchange`).
_DEADLINE = threading.local()


def _shutdown(sock) -> None:
    """Watchdog action: unblock a read stuck on a trickling server (the read then fails)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _DeadlineMixin:
    """Enforces the attempt's total deadline while the status line and headers are read.

    urllib3's timeouts are per socket read, so a server that trickles one header byte per
    second could hold a worker for hours (http.client accepts 100 header lines of 64 KiB).
    A timer shuts the socket down at the deadline; the read fails and `_exchange` reports
    a timeout. The body has its own deadline check in `_read_body`."""

    def getresponse(self, *args, **kwargs):
        deadline = getattr(_DEADLINE, "value", None)
        sock = getattr(self, "sock", None)
        timer = None
        if deadline is not None and sock is not None:
            timer = threading.Timer(max(0.0, deadline - time.monotonic()), _shutdown, (sock,))
            timer.daemon = True
            timer.start()
        try:
            return super().getresponse(*args, **kwargs)
        finally:
            if timer is not None:
                timer.cancel()


class _DeadlineHTTPConnection(_DeadlineMixin, urllib3.connection.HTTPConnection):
    pass


class _DeadlineHTTPSConnection(_DeadlineMixin, urllib3.connection.HTTPSConnection):
    pass


def _error_code(exc: BaseException) -> str:
    """The stable error code of an exception raised by one request attempt."""
    if isinstance(exc, u3exc.SSLError):
        return TLS_ERROR
    if isinstance(exc, u3exc.NewConnectionError):  # subclass of ConnectTimeoutError: test it first
        return CONNECTION_ERROR
    if isinstance(exc, (u3exc.TimeoutError, TimeoutError)):
        return TIMEOUT
    if isinstance(exc, (u3exc.HTTPError, OSError)):
        return CONNECTION_ERROR
    return BAD_URL  # ValueError / HTTPException: e.g. InvalidURL, bad header bytes


@dataclass(frozen=True)
class _Target:
    """One hop's URL split into what the connection needs."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    query: str

    @property
    def request_target(self) -> str:
        """Path plus query as sent on the request line; spaces and non-ASCII (common in
        scraped Location headers) are percent-encoded, existing escapes kept."""
        raw = (self.path or "/") + (f"?{self.query}" if self.query else "")
        return quote(raw, safe="/?&=%:;@!$'()*+,~-._[]|")

    @property
    def host_header(self) -> str:
        """`Host` value: name plus port when the port is not the scheme's default."""
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == _DEFAULT_PORTS[self.scheme] else f"{name}:{self.port}"

    @property
    def origin(self) -> str:
        """scheme://host:port — the unit robots.txt applies to."""
        return f"{self.scheme}://{self.host_header}"


def _target(url: str) -> _Target:
    """Parse and vet a URL; raises FetchRefused(bad_scheme / bad_url)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise FetchRefused(BAD_URL, str(exc)) from exc
    check_scheme(parts.scheme)
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise FetchRefused(BAD_URL, "no host")
    scheme = parts.scheme.lower()
    return _Target(url, scheme, host, port or _DEFAULT_PORTS[scheme], parts.path, parts.query)


@dataclass
class _Exchange:
    """What one request attempt returned (before redirect and retry decisions)."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str = ""
    error: str | None = None


class _Inflater:
    """Incremental gzip/deflate decoder whose output per call is capped, so a small
    compressed body cannot expand into gigabytes in memory (gzip bomb)."""

    def __init__(self, encoding: str) -> None:
        self._wbits = 47 if encoding in ("gzip", "x-gzip") else 15  # 47 = gzip or zlib header
        self._raw_fallback = encoding == "deflate"
        self._d = zlib.decompressobj(self._wbits)
        self._produced = False

    def feed(self, data: bytes, limit: int) -> bytes:
        """Decode `data`, returning at most `limit` bytes (the caller treats reaching the
        limit as too large)."""
        out = bytearray()
        while data and len(out) < limit:
            try:
                piece = self._d.decompress(data, limit - len(out))
            except zlib.error:
                if self._raw_fallback and not self._produced:  # some servers send raw deflate
                    self._raw_fallback = False
                    self._d = zlib.decompressobj(-15)
                    continue
                raise
            self._produced = self._produced or bool(piece)
            out += piece
            if self._d.eof and self._d.unused_data:  # concatenated gzip members
                data = self._d.unused_data
                self._d = zlib.decompressobj(self._wbits)
            else:
                data = self._d.unconsumed_tail
        return bytes(out)

    def flush(self) -> bytes:
        """Whatever the decoder still buffers at end of stream."""
        return self._d.flush()


class HttpFetcher:
    """Fetch URLs politely and safely; `fetch(url) -> FetchResult` never raises for network
    trouble. Thread-safe: one instance can serve a DoFn's thread pool. Only `config` is
    pickled; pools, caches and locks are rebuilt lazily after unpickling."""

    def __init__(self, config: FetchConfig | None = None) -> None:
        self.config = config or FetchConfig()
        self._init_state()

    def _init_state(self) -> None:
        """Locks, caches and the limiter (cheap; pools themselves are opened on demand)."""
        cfg = self.config
        self._pools: OrderedDict[tuple, urllib3.HTTPConnectionPool] = OrderedDict()
        self._pools_lock = threading.Lock()
        self._limiter = HostLimiter(cfg.per_host_rate, cfg.per_host_concurrency)
        self._robots: OrderedDict[str, tuple[RobotsRules, float, bool]] = OrderedDict()
        self._robots_lock = threading.Lock()
        self._robots_inflight: dict[str, threading.Event] = {}
        self._rng = random.Random()
        self._rng_lock = threading.Lock()

    def __getstate__(self) -> dict:
        """Pickle only the config (pools and locks do not pickle and must not be shared)."""
        return {"config": self.config}

    def __setstate__(self, state: dict) -> None:
        """Rebuild the lazy state on the worker."""
        self.config = state["config"]
        self._init_state()

    def close(self) -> None:
        """Close every pooled connection (DoFn.teardown)."""
        with self._pools_lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()

    # ------------------------------------------------------------------ public

    def fetch(self, url: str) -> FetchResult:
        """Fetch `url`, following up to `max_redirects` checked redirects, retrying 429/5xx,
        timeouts and connection errors with backoff, and honouring robots.txt."""
        cfg = self.config
        result = FetchResult(url=url, final_url=url)
        current = url
        for _hop in range(cfg.max_redirects + 1):
            result.final_url = current
            try:
                target = _target(current)
                if cfg.respect_robots:
                    self._check_robots(target)
            except FetchRefused as refused:
                result.error = refused.code
                return result
            exchange = self._with_retries(target, result)
            result.status = exchange.status
            result.headers = exchange.headers
            result.content_type = exchange.content_type
            target = follow_redirect(result, current, exchange.status, exchange.headers, exchange.error)
            if target is not None:
                current = target
                continue
            result.error = final_error(exchange.status, exchange.error)
            result.body = exchange.body if result.error is None else None
            result.fetched_at = now_iso()
            return result
        result.error = TOO_MANY_REDIRECTS
        result.fetched_at = now_iso()
        return result

    # ------------------------------------------------------------------ retries

    def _with_retries(self, target: _Target, result: FetchResult) -> _Exchange:
        """One hop with retries. Waiting is done through the host limiter (`defer`) so every
        thread backs off from the host, not only this one."""
        cfg = self.config
        exchange = _Exchange()
        for attempt in range(cfg.max_retries + 1):
            with self._limiter.slot(target.host):
                exchange = self._exchange(target, cfg.max_bytes, cfg.accepted_content_types)
            result.attempts += 1
            retryable = exchange.error in _RETRY_ERRORS or (
                exchange.error is None and exchange.status in _RETRY_STATUSES
            )
            if not retryable or attempt == cfg.max_retries:
                return exchange
            wait = None
            if exchange.status in (429, 503):
                wait = parse_retry_after(exchange.headers.get("retry-after"))
            if wait is None:
                with self._rng_lock:
                    wait = backoff_delay(attempt + 1, cfg.backoff_base, cfg.backoff_max, cfg.jitter, self._rng)
            self._limiter.defer(target.host, time.monotonic() + min(wait, cfg.backoff_max))
        return exchange

    # ------------------------------------------------------------------ one request

    def _pool(self, scheme: str, ip: str, port: int, host: str) -> urllib3.HTTPConnectionPool:
        """A keep-alive pool to the checked IP; LRU-bounded by `max_pools`."""
        cfg = self.config
        key = (scheme, ip, port, host)
        with self._pools_lock:
            pool = self._pools.get(key)
            if pool is not None:
                self._pools.move_to_end(key)
                return pool
            common = {"maxsize": cfg.per_host_concurrency, "block": False, "retries": False}
            if scheme == "https":
                ca_certs = cfg.ca_certs
                if ca_certs is None:
                    try:
                        import certifi

                        ca_certs = certifi.where()
                    except ImportError:  # fall back to the system store
                        pass
                pool = urllib3.HTTPSConnectionPool(
                    ip,
                    port,
                    server_hostname=host,
                    assert_hostname=host if cfg.verify_tls else False,
                    cert_reqs="CERT_REQUIRED" if cfg.verify_tls else "CERT_NONE",
                    ca_certs=ca_certs,
                    **common,
                )
            else:
                pool = urllib3.HTTPConnectionPool(ip, port, **common)
            pool.ConnectionCls = _DeadlineHTTPSConnection if scheme == "https" else _DeadlineHTTPConnection
            self._pools[key] = pool
            evicted = []
            while len(self._pools) > cfg.max_pools:
                evicted.append(self._pools.popitem(last=False)[1])
        for old in evicted:
            old.close()
        return pool

    def _exchange(
        self, target: _Target, max_bytes: int, accept: Sequence[str] | None, truncate: bool = False
    ) -> _Exchange:
        """Resolve and check the host, send one GET to the checked IP, read a capped body.
        `accept=None` disables the content-type check; `truncate` keeps the first
        `max_bytes` instead of failing (robots.txt)."""
        cfg = self.config
        try:
            addresses = resolve_checked(target.host, target.port, cfg.allow_networks, cfg.resolver)
        except FetchRefused as refused:
            return _Exchange(error=refused.code)
        start = time.monotonic()
        deadline = start + cfg.total_timeout
        timeout = urllib3.Timeout(
            connect=min(cfg.connect_timeout, cfg.total_timeout), read=min(cfg.read_timeout, cfg.total_timeout)
        )
        headers = {
            "Host": target.host_header,
            "User-Agent": cfg.full_user_agent,
            "Accept": _ACCEPT,
            "Accept-Encoding": "gzip, deflate",
        }
        pool = self._pool(target.scheme, addresses[0], target.port, target.host)
        response = None
        _DEADLINE.value = deadline
        try:
            response = pool.urlopen(
                "GET",
                target.request_target,
                headers=headers,
                redirect=False,
                retries=False,
                preload_content=False,
                decode_content=False,
                timeout=timeout,
                assert_same_host=False,
                release_conn=False,
            )
            exchange = _Exchange(status=response.status)
            exchange.headers = {k.lower(): response.headers[k] for k in response.headers}
            header_type = exchange.headers.get("content-type")
            if not 200 <= response.status < 300:
                exchange.content_type = sniff_content_type(None, header_type)
                self._discard(response)
                return exchange
            declared = exchange.headers.get("content-length", "")
            if not truncate and declared.isdigit() and int(declared) > max_bytes:
                exchange.error = TOO_LARGE
                exchange.content_type = sniff_content_type(None, header_type)
                response.close()
                return exchange
            self._read_body(response, exchange, header_type, deadline, max_bytes, accept, truncate)
            return exchange
        except (u3exc.HTTPError, OSError, ValueError, http.client.HTTPException) as exc:
            # past the deadline, whatever broke was the watchdog cutting a trickling answer
            return _Exchange(error=TIMEOUT if time.monotonic() >= deadline else _error_code(exc))
        finally:
            _DEADLINE.value = None
            if response is not None:
                response.release_conn()

    @staticmethod
    def _discard(response: urllib3.HTTPResponse) -> None:
        """Drop an unwanted (redirect/error) body. Only an empty one keeps the connection:
        draining has no deadline, and a trickling server must not hold a thread."""
        if response.headers.get("content-length", "").strip() == "0":
            try:
                response.drain_conn()
                return
            except (u3exc.HTTPError, OSError):
                pass
        response.close()

    def _read_body(
        self,
        response: urllib3.HTTPResponse,
        exchange: _Exchange,
        header_type: str | None,
        deadline: float,
        max_bytes: int,
        accept: Sequence[str] | None,
        truncate: bool,
    ) -> None:
        """Stream the body with `read1` (returns as soon as any bytes arrive, so the total
        deadline is checked between chunks even for a trickling server), decode it with a
        cap, and sniff the type from the first bytes to abort unwanted files early."""
        encoding = exchange.headers.get("content-encoding", "").strip().lower()
        inflater: _Inflater | None = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            inflater = _Inflater(encoding)
        elif encoding not in ("", "identity"):
            exchange.error = UNSUPPORTED_ENCODING
            response.close()
            return
        body = bytearray()
        sniffed = False
        complete = False
        try:
            while True:
                if time.monotonic() > deadline:
                    exchange.error = TIMEOUT
                    break
                raw = response.read1(_CHUNK, decode_content=False)
                if not raw:
                    if inflater is not None:
                        body += inflater.flush()[: max_bytes + 1 - len(body)]
                    complete = True
                    break
                room = max_bytes + 1 - len(body)
                body += inflater.feed(raw, room) if inflater is not None else raw[:room]
                if len(body) > max_bytes:
                    if truncate:
                        del body[max_bytes:]
                    else:
                        exchange.error = TOO_LARGE
                    break
                if not sniffed and accept is not None and len(body) >= _SNIFF_AT:
                    sniffed = True
                    if sniff_content_type(bytes(body), header_type) not in accept:
                        break
        except zlib.error:
            exchange.error = DECODE_ERROR
        if not complete:
            response.close()
        exchange.content_type = sniff_content_type(bytes(body), header_type)
        if exchange.error is None and accept is not None and exchange.content_type not in accept:
            exchange.error = WRONG_CONTENT_TYPE
        if exchange.error is None:
            exchange.body = bytes(body)

    # ------------------------------------------------------------------ robots.txt

    def _check_robots(self, target: _Target) -> None:
        """Raise FetchRefused when robots.txt forbids the URL (or is temporarily unavailable)
        and apply its Crawl-delay to the host limiter."""
        rules, unavailable = self._robots_rules(target)
        if unavailable:
            raise FetchRefused(ROBOTS_UNAVAILABLE, target.origin)
        if rules.crawl_delay:
            self._limiter.set_min_interval(target.host, min(rules.crawl_delay, self.config.max_crawl_delay))
        if not rules.allowed(robots_path(target.path, target.query)):
            raise FetchRefused(ROBOTS_DISALLOWED, target.url)

    def _robots_rules(self, target: _Target) -> tuple[RobotsRules, bool]:
        """Cached rules for the target's origin; one thread downloads, others wait for it."""
        origin = target.origin
        for _ in range(2):
            with self._robots_lock:
                entry = self._robots.get(origin)
                if entry is not None and entry[1] > time.monotonic():
                    self._robots.move_to_end(origin)
                    return entry[0], entry[2]
                event = self._robots_inflight.get(origin)
                owner = event is None
                if owner:
                    event = threading.Event()
                    self._robots_inflight[origin] = event
            if owner:
                break
            event.wait(self.config.total_timeout * (_ROBOTS_MAX_REDIRECTS + 1))
        else:
            owner = False
        try:
            rules, ttl, unavailable = self._download_robots(target)
            with self._robots_lock:
                self._robots[origin] = (rules, time.monotonic() + ttl, unavailable)
                while len(self._robots) > self.config.robots_cache_size:
                    self._robots.popitem(last=False)
        finally:
            if owner:
                with self._robots_lock:
                    self._robots_inflight.pop(origin).set()
        return rules, unavailable

    def _download_robots(self, target: _Target) -> tuple[RobotsRules, float, bool]:
        """Fetch and parse robots.txt per RFC 9309: 2xx -> parse; 4xx (but 429) or a
        redirect chain that is too long/refused -> allow all; 429, 5xx, timeouts, connection
        and DNS errors -> disallow all for `robots_error_ttl`, then ask again."""
        cfg = self.config
        url = f"{target.origin}/robots.txt"
        for hop_number in range(_ROBOTS_MAX_REDIRECTS + 1):
            try:
                hop = _target(url)
            except FetchRefused:
                return ALLOW_ALL, cfg.robots_ttl, False
            with self._limiter.slot(hop.host):
                exchange = self._exchange(hop, cfg.robots_max_bytes, None, truncate=True)
            if hop_number == 0 and exchange.error in (BLOCKED_ADDRESS, DNS_ERROR):
                # The page's own host is refused: report that (uncached) instead of robots.
                raise FetchRefused(exchange.error, target.origin)
            if exchange.error == BLOCKED_ADDRESS:
                return ALLOW_ALL, cfg.robots_ttl, False
            if exchange.error is not None or exchange.status is None:
                return DISALLOW_ALL, cfg.robots_error_ttl, True
            location = exchange.headers.get("location")
            if exchange.status in REDIRECT_STATUSES and location:
                url = urljoin(url, location.strip())
                continue
            if 200 <= exchange.status < 300:
                text = (exchange.body or b"").decode("utf-8", errors="replace")
                return parse_robots(text, cfg.robots_agent), cfg.robots_ttl, False
            if exchange.status == 429 or exchange.status >= 500:
                return DISALLOW_ALL, cfg.robots_error_ttl, True
            return ALLOW_ALL, cfg.robots_ttl, False
        return ALLOW_ALL, cfg.robots_ttl, False


def reason_phrase(status: int | None) -> str:
    """Standard reason phrase for a status (used when archiving)."""
    try:
        return HTTPStatus(status).phrase if status is not None else ""
    except ValueError:
        return ""
