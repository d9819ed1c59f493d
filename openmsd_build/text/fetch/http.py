"""Live HTTP fetching that is polite (robots.txt, per-host pacing, Retry-After, backoff) and
safe (scheme and address checks on every hop, pinned IPs, byte caps, deadlines).

Built on urllib3 rather than requests because the crawler must choose the IP it connects
to: each hop's host is canonicalised once (`safety.split_authority`), resolved once, every
address is checked, and the connection pool is opened to that checked IP with the canonical
name sent as `Host` (and as TLS SNI / certificate hostname for https). The raw spelling of
the host never reaches urllib3 and a second, unchecked DNS lookup never happens, so neither
parser differentials (`1.2.3.4%2eevil.example`) nor DNS rebinding can redirect a connection
to a private address. Redirects are followed here, one hop at a time, so each `Location`
gets the same checks.

Time is bounded by wall-clock deadlines, not per-read timeouts (a server trickling one
byte per second never trips a read timeout): each attempt has `total_timeout`, covering
DNS, connect, TLS, status line, headers, chunk framing, trailers and the body, enforced by a
watchdog that shuts the attempt's socket down when it expires; and each `fetch(url)` has
`url_timeout`, covering every hop, retry, backoff wait and robots.txt. Decoded and raw body
sizes are capped. A per-host circuit breaker stops paying for a host that keeps failing.

`fetch()` never raises for anything one URL or one response can do: every failure becomes
a `FetchResult` with an error code (unexpected exceptions become `internal:<Type>`).

Limitations: environment proxies are ignored on purpose; only the first allowed address of
a host is tried per attempt (a retry resolves again); a host is refused if ANY of its
addresses is blocked; a system DNS lookup that outlives its deadline keeps running in a
background thread (the fetch does not wait for it).
"""

from __future__ import annotations

import http.client
import math
import random
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import quote, urlsplit

import urllib3
import urllib3.connection
from urllib3 import exceptions as u3exc

from openmsd_build.core.deadlines import CURRENT, WATCHDOG, Attempt, DeadlineHTTPConnection, DeadlineHTTPSConnection
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
    HOST_CIRCUIT_OPEN,
    INTERNAL_PREFIX,
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
    join_location,
    now_iso,
    sniff_content_type,
)
from openmsd_build.text.fetch.safety import CanonicalHost, FetchRefused, check_scheme, resolve_checked, split_authority

_DEFAULT_PORTS = {"http": 80, "https": 443}

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 507, 508, 509, 520, 521, 522, 523, 524})
_RETRY_ERRORS = frozenset({TIMEOUT, CONNECTION_ERROR})
# What counts against a host's circuit breaker: the host is slow, down or pushing back.
_CIRCUIT_ERRORS = frozenset({TIMEOUT, CONNECTION_ERROR})
_CIRCUIT_STATUSES = frozenset({429, 503})
_ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,*/*;q=0.1"
_CHUNK = 64 * 1024
_SNIFF_AT = 512
_ROBOTS_MAX_REDIRECTS = 5
_REQUEST_TARGET_SAFE = "/?&=%:;@!$'()*+,~-._[]|"
_DNS_THREADS = 8


def _error_code(exc: BaseException) -> str:
    """The stable error code of an exception raised by one request attempt. Garbage status
    lines and header floods (http.client's 100-header / 64 KiB-line limits) arrive wrapped
    in urllib3's ProtocolError and count as connection errors."""
    if isinstance(exc, u3exc.SSLError):
        return TLS_ERROR
    if isinstance(exc, u3exc.NewConnectionError):  # subclass of ConnectTimeoutError: test it first
        return CONNECTION_ERROR
    if isinstance(exc, (u3exc.TimeoutError, TimeoutError)):
        return TIMEOUT
    if isinstance(exc, (u3exc.HTTPError, OSError)):
        return CONNECTION_ERROR
    return BAD_URL  # ValueError / HTTPException: e.g. InvalidURL, bad header bytes


def _retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds, or None when absent or not plain ASCII digits / an HTTP
    date. Guarded here because header text is attacker-controlled ('١٢', '²', 1e999)."""
    if not value or not value.isascii():
        return None
    try:
        wait = parse_retry_after(value)
    except Exception:  # noqa: BLE001 - any parse failure just means "no usable hint"
        return None
    if wait is None or not math.isfinite(wait) or wait < 0:
        return None
    return wait


# ----------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class _Target:
    """One hop's URL split into what the connection needs; `host` is canonical."""

    url: str
    scheme: str
    host: CanonicalHost
    port: int
    path: str
    query: str
    request_target: str

    @property
    def host_header(self) -> str:
        """`Host` value: canonical name plus port when the port is not the scheme's default."""
        name = f"[{self.host.name}]" if ":" in self.host.name else self.host.name
        return name if self.port == _DEFAULT_PORTS[self.scheme] else f"{name}:{self.port}"

    @property
    def origin(self) -> str:
        """scheme://host:port — the unit robots.txt applies to."""
        return f"{self.scheme}://{self.host_header}"


def _target(url: str) -> _Target:
    """Parse and vet a URL; raises FetchRefused(bad_scheme / bad_url). The host is
    canonicalised here once; nothing downstream sees the raw spelling."""
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        raise FetchRefused(BAD_URL, str(exc)) from exc
    check_scheme(parts.scheme)
    scheme = parts.scheme.lower()
    host, port = split_authority(parts.netloc)
    raw = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        # spaces and non-ASCII (common in scraped Location headers) are percent-encoded,
        # existing escapes kept; lone surrogates cannot be encoded and are refused
        request_target = quote(raw, safe=_REQUEST_TARGET_SAFE)
    except UnicodeError as exc:
        raise FetchRefused(BAD_URL, f"unencodable path: {exc}") from exc
    return _Target(url, scheme, host, port or _DEFAULT_PORTS[scheme], parts.path, parts.query, request_target)


@dataclass
class _Exchange:
    """What one request attempt returned (before redirect and retry decisions)."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str = ""
    error: str | None = None
    detail: str | None = None


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

    def flush(self, limit: int) -> bytes:
        """Whatever the decoder still buffers at end of stream (all input was consumed, so
        this is at most one window), capped."""
        return self._d.flush()[:limit]


class _CircuitBreaker:
    """Per-host consecutive-failure counter. `threshold` failures in a row open the
    circuit for `cooldown` seconds; after that one attempt may probe again, and a failure
    re-opens it at once while a success closes it. LRU-bounded so a crawl of millions of
    hosts keeps only recent ones."""

    def __init__(self, threshold: int, cooldown: float, max_hosts: int = 10_000) -> None:
        self.threshold = threshold
        self.cooldown = cooldown
        self._max_hosts = max_hosts
        self._state: OrderedDict[str, tuple[int, float]] = OrderedDict()  # host -> (failures, open until)
        self._lock = threading.Lock()

    def is_open(self, host: str) -> bool:
        """True while `host` is cooling down."""
        if self.threshold <= 0:
            return False
        with self._lock:
            state = self._state.get(host)
            return state is not None and state[1] > time.monotonic()

    def record(self, host: str, failed: bool) -> None:
        """Count one attempt's outcome."""
        if self.threshold <= 0:
            return
        with self._lock:
            if not failed:
                self._state.pop(host, None)
                return
            failures = self._state.get(host, (0, 0.0))[0] + 1
            until = time.monotonic() + self.cooldown if failures >= self.threshold else 0.0
            self._state[host] = (failures, until)
            self._state.move_to_end(host)
            while len(self._state) > self._max_hosts:
                self._state.popitem(last=False)


class HttpFetcher:
    """Fetch URLs politely and safely; `fetch(url) -> FetchResult` never raises for anything
    one URL or response can do. Thread-safe: one instance can serve a DoFn's thread pool.
    Only `config` is pickled; pools, caches and locks are rebuilt lazily after unpickling."""

    def __init__(self, config: FetchConfig | None = None) -> None:
        self.config = config or FetchConfig()
        self._init_state()

    def _init_state(self) -> None:
        """Locks, caches and the limiter (cheap; pools themselves are opened on demand)."""
        cfg = self.config
        self._pools: OrderedDict[tuple, urllib3.HTTPConnectionPool] = OrderedDict()
        self._pools_lock = threading.Lock()
        self._limiter = HostLimiter(cfg.per_host_rate, cfg.per_host_concurrency)
        self._breaker = _CircuitBreaker(cfg.circuit_failures, cfg.circuit_cooldown)
        self._robots: OrderedDict[str, tuple[RobotsRules, float, bool]] = OrderedDict()
        self._robots_lock = threading.Lock()
        self._robots_inflight: dict[str, threading.Event] = {}
        self._rng = random.Random()
        self._rng_lock = threading.Lock()
        self._dns: ThreadPoolExecutor | None = None
        self._dns_lock = threading.Lock()

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
        with self._dns_lock:
            dns, self._dns = self._dns, None
        if dns is not None:
            dns.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ public

    def fetch(self, url: str) -> FetchResult:
        """Fetch `url`, following up to `max_redirects` checked redirects, retrying 429/5xx,
        timeouts and connection errors with backoff, and honouring robots.txt, all within
        `url_timeout`. Never raises: an unexpected exception (a bug, or an input nobody
        foresaw) becomes error `internal:<ExceptionType>` so one URL cannot stop a stage."""
        result = FetchResult(url=url, final_url=url)
        try:
            self._fetch(result, time.monotonic() + self.config.url_timeout)
        except Exception as exc:  # noqa: BLE001 - last resort, see docstring
            result.status, result.headers, result.body, result.content_type = None, {}, None, ""
            result.error = f"{INTERNAL_PREFIX}{type(exc).__name__}"
            result.detail = str(exc)[:500]
        return result

    def _fetch(self, result: FetchResult, deadline: float) -> None:
        """The redirect loop. Only what was received for a URL is left on `result`: a hop that
        is refused or fails leaves status None (its predecessor's 3xx is in `redirects`,
        under its own URL), so the WARC writer never files one hop's answer under another."""
        cfg = self.config
        current = result.url
        for _hop in range(cfg.max_redirects + 1):
            result.final_url = current
            result.status, result.headers, result.content_type = None, {}, ""
            try:
                target = _target(current)
                if self._breaker.is_open(target.host.name):
                    raise FetchRefused(HOST_CIRCUIT_OPEN, target.host.name)
                if cfg.respect_robots:
                    self._check_robots(target, deadline)
            except FetchRefused as refused:
                result.error, result.detail = refused.code, refused.detail or None
                return
            exchange = self._with_retries(target, result, deadline)
            result.status = exchange.status
            result.headers = exchange.headers
            result.content_type = exchange.content_type
            result.detail = exchange.detail
            result.fetched_at = now_iso()
            following = follow_redirect(result, current, exchange.status, exchange.headers, exchange.error)
            if following is not None:
                current = following
                continue
            result.error = final_error(exchange.status, exchange.error)
            result.body = exchange.body if result.error is None else None
            return
        # The last redirect was received (it is in `redirects`); its target was not fetched.
        result.final_url = current
        result.status, result.headers, result.content_type = None, {}, ""
        result.error = TOO_MANY_REDIRECTS

    # ------------------------------------------------------------------ retries

    def _attempt(
        self, target: _Target, deadline: float, max_bytes: int, accept: Sequence[str] | None, truncate: bool = False
    ) -> _Exchange:
        """One request under the host's politeness slot, unless the host's circuit opened
        while this thread queued for the slot."""
        host = target.host.name
        if target.host.ip is not None:  # an address refused needs no lookup, so takes no slot
            try:
                resolve_checked(target.host, target.port, self.config.allow_networks)
            except FetchRefused as refused:
                return _Exchange(error=refused.code, detail=refused.detail or None)
        with self._limiter.slot(host):
            if self._breaker.is_open(host):
                return _Exchange(error=HOST_CIRCUIT_OPEN, detail=host)
            return self._exchange(target, deadline, max_bytes, accept, truncate)

    def _record(self, target: _Target, exchange: _Exchange) -> None:
        """Count one hop's final outcome (after its retries) against the host's circuit.
        Per hop rather than per attempt, so N means N URLs that failed, not N retries; a
        refusal made before any connection (address, DNS, URL) says nothing about the host."""
        if exchange.error in (HOST_CIRCUIT_OPEN, BLOCKED_ADDRESS, DNS_ERROR, BAD_URL):
            return
        failed = exchange.error in _CIRCUIT_ERRORS or (exchange.error is None and exchange.status in _CIRCUIT_STATUSES)
        self._breaker.record(target.host.name, failed)

    def _with_retries(self, target: _Target, result: FetchResult, deadline: float) -> _Exchange:
        """`_retries`, with the hop's outcome counted against the host's circuit."""
        exchange = self._retries(target, result, deadline)
        self._record(target, exchange)
        return exchange

    def _retries(self, target: _Target, result: FetchResult, deadline: float) -> _Exchange:
        """One hop with retries. Waiting is done through the host limiter (`defer`) so every
        thread backs off from the host, not only this one. No retry starts, and no wait is
        taken, that the URL's deadline could not cover; an opened circuit ends the retries
        with the failure that opened it."""
        cfg = self.config
        exchange = _Exchange()
        for attempt in range(cfg.max_retries + 1):
            if attempt and self._breaker.is_open(target.host.name):
                return exchange
            latest = self._attempt(target, deadline, cfg.max_bytes, cfg.accepted_content_types)
            if attempt and latest.error == HOST_CIRCUIT_OPEN:
                return exchange
            exchange = latest
            if exchange.error != HOST_CIRCUIT_OPEN:
                result.attempts += 1
            retryable = exchange.error in _RETRY_ERRORS or (
                exchange.error is None and exchange.status in _RETRY_STATUSES
            )
            if not retryable or attempt == cfg.max_retries:
                return exchange
            wait = _retry_after(exchange.headers.get("retry-after")) if exchange.status in (429, 503) else None
            if wait is None:
                with self._rng_lock:
                    wait = backoff_delay(attempt + 1, cfg.backoff_base, cfg.backoff_max, cfg.jitter, self._rng)
            wait = min(wait, cfg.backoff_max)
            if time.monotonic() + wait >= deadline:
                return exchange
            self._limiter.defer(target.host.name, time.monotonic() + wait)
        return exchange

    # ------------------------------------------------------------------ one request

    def _pool(self, scheme: str, ip: str, port: int, host: str) -> urllib3.HTTPConnectionPool:
        """A keep-alive pool to the checked IP (the only address urllib3 ever sees for this
        host); LRU-bounded by `max_pools`."""
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
            pool.ConnectionCls = DeadlineHTTPSConnection if scheme == "https" else DeadlineHTTPConnection
            self._pools[key] = pool
            evicted = []
            while len(self._pools) > cfg.max_pools:
                evicted.append(self._pools.popitem(last=False)[1])
        for old in evicted:
            old.close()
        return pool

    def _resolve(self, target: _Target, deadline: float) -> list[str]:
        """`resolve_checked` bounded by the deadline: a name lookup runs in a small thread
        pool so a hanging resolver costs this URL at most its remaining time."""
        cfg = self.config
        if target.host.ip is not None:
            return resolve_checked(target.host, target.port, cfg.allow_networks, cfg.resolver)
        with self._dns_lock:
            if self._dns is None:
                self._dns = ThreadPoolExecutor(_DNS_THREADS, thread_name_prefix="fetch-dns")
            dns = self._dns
        future = dns.submit(resolve_checked, target.host, target.port, cfg.allow_networks, cfg.resolver)
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout as exc:
            future.cancel()
            raise FetchRefused(TIMEOUT, f"DNS lookup of {target.host.name} outlived the deadline") from exc

    def _exchange(
        self,
        target: _Target,
        deadline: float,
        max_bytes: int,
        accept: Sequence[str] | None,
        truncate: bool = False,
    ) -> _Exchange:
        """Resolve and check the host, send one GET to the checked IP, read a capped body, all
        before min(`deadline`, now + total_timeout). `accept=None` disables the
        content-type check; `truncate` keeps the first `max_bytes` instead of failing
        (robots.txt)."""
        cfg = self.config
        start = time.monotonic()
        deadline = min(deadline, start + cfg.total_timeout)
        if start >= deadline:
            return _Exchange(error=TIMEOUT, detail="URL deadline spent")
        try:
            addresses = self._resolve(target, deadline)
        except FetchRefused as refused:
            return _Exchange(error=refused.code, detail=refused.detail or None)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Exchange(error=TIMEOUT, detail="deadline spent resolving")
        timeout = urllib3.Timeout(connect=min(cfg.connect_timeout, remaining), read=min(cfg.read_timeout, remaining))
        headers = {
            "Host": target.host_header,
            "User-Agent": cfg.full_user_agent,
            "Accept": _ACCEPT,
            "Accept-Encoding": "gzip, deflate",
        }
        pool = self._pool(target.scheme, addresses[0], target.port, target.host.name)
        response = None
        attempt = Attempt(deadline)
        handle = WATCHDOG.schedule(deadline, attempt.fire)
        CURRENT.attempt = attempt
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
            declared = exchange.headers.get("content-length", "").strip()
            if not truncate and declared.isascii() and declared.isdigit() and int(declared) > max_bytes:
                exchange.error = TOO_LARGE
                exchange.content_type = sniff_content_type(None, header_type)
                response.close()
                return exchange
            self._read_body(response, exchange, header_type, attempt, max_bytes, accept, truncate)
            return exchange
        except (u3exc.HTTPError, OSError, ValueError, http.client.HTTPException) as exc:
            # past the deadline, whatever broke was the watchdog cutting a trickling answer
            if attempt.over():
                return _Exchange(error=TIMEOUT, detail=f"deadline of {cfg.total_timeout:g}s per attempt")
            return _Exchange(error=_error_code(exc), detail=f"{type(exc).__name__}: {exc}"[:500])
        finally:
            CURRENT.attempt = None
            WATCHDOG.cancel(handle)
            attempt.finish()
            if response is not None:
                if attempt.expired:
                    response.close()
                response.release_conn()

    @staticmethod
    def _discard(response: urllib3.HTTPResponse) -> None:
        """Drop an unwanted (redirect/error) body. Only an empty one keeps the connection:
        draining a body nobody reads is not worth a trickling server's time."""
        if response.headers.get("content-length", "").strip() == "0":
            try:
                response.drain_conn()
                return
            except (u3exc.HTTPError, OSError, http.client.HTTPException):
                pass
        response.close()

    def _read_body(
        self,
        response: urllib3.HTTPResponse,
        exchange: _Exchange,
        header_type: str | None,
        attempt: Attempt,
        max_bytes: int,
        accept: Sequence[str] | None,
        truncate: bool,
    ) -> None:
        """Stream the body with `read1` (returns as soon as any bytes arrive), decode it with
        a cap, and sniff the type from the first bytes to abort unwanted files early. Chunk
        framing and trailers are read inside `read1`; the attempt's watchdog bounds them.
        Raw (still compressed) bytes are capped too, so a stream of empty gzip members
        cannot run on for the whole deadline."""
        encoding = exchange.headers.get("content-encoding", "").strip().lower()
        inflater: _Inflater | None = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            inflater = _Inflater(encoding)
        elif encoding not in ("", "identity"):
            exchange.error = UNSUPPORTED_ENCODING
            response.close()
            return
        raw_cap = max_bytes + max_bytes // 8 + _CHUNK
        raw_total = 0
        body = bytearray()
        sniffed = False
        complete = False
        try:
            while True:
                if attempt.over():
                    exchange.error = TIMEOUT
                    break
                raw = response.read1(_CHUNK, decode_content=False)
                if not raw:
                    if inflater is not None:
                        body += inflater.flush(max_bytes + 1 - len(body))
                    complete = True
                    break
                raw_total += len(raw)
                room = max_bytes + 1 - len(body)
                body += inflater.feed(raw, room) if inflater is not None else raw[:room]
                if len(body) > max_bytes or (raw_total > raw_cap and not truncate):
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
        if attempt.expired:  # a cut socket can look like a clean end of a close-delimited body
            exchange.error, complete = TIMEOUT, False
        if not complete:
            response.close()
        exchange.content_type = sniff_content_type(bytes(body), header_type)
        if exchange.error is None and accept is not None and exchange.content_type not in accept:
            exchange.error = WRONG_CONTENT_TYPE
        if exchange.error is None:
            exchange.body = bytes(body)

    # ------------------------------------------------------------------ robots.txt

    def _check_robots(self, target: _Target, deadline: float) -> None:
        """Raise FetchRefused when robots.txt forbids the URL (or is temporarily unavailable)
        and apply its Crawl-delay to the host limiter."""
        rules, unavailable = self._robots_rules(target, deadline)
        if unavailable:
            raise FetchRefused(ROBOTS_UNAVAILABLE, target.origin)
        delay = rules.crawl_delay
        if delay and math.isfinite(delay) and delay > 0:
            self._limiter.set_min_interval(target.host.name, min(delay, self.config.max_crawl_delay))
        if not rules.allowed(robots_path(target.path, target.query)):
            raise FetchRefused(ROBOTS_DISALLOWED, target.url)

    def _robots_rules(self, target: _Target, deadline: float) -> tuple[RobotsRules, bool]:
        """Cached rules for the target's origin; one thread downloads, others wait for it
        (never past their own URL's deadline)."""
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
            if not event.wait(max(0.0, deadline - time.monotonic())):
                raise FetchRefused(TIMEOUT, f"waiting for {origin}/robots.txt")
        else:
            owner = False
        try:
            rules, ttl, unavailable = self._download_robots(target, deadline)
            with self._robots_lock:
                self._robots[origin] = (rules, time.monotonic() + ttl, unavailable)
                while len(self._robots) > self.config.robots_cache_size:
                    self._robots.popitem(last=False)
        finally:
            if owner:
                with self._robots_lock:
                    self._robots_inflight.pop(origin).set()
        return rules, unavailable

    def _download_robots(self, target: _Target, deadline: float) -> tuple[RobotsRules, float, bool]:
        """Fetch and parse robots.txt per RFC 9309: 2xx -> parse; 4xx (but 429) or a
        redirect chain that is too long/refused -> allow all; 429, 5xx, timeouts, connection
        and DNS errors -> disallow all for `robots_error_ttl`, then ask again. An open
        circuit is reported as such and not cached."""
        cfg = self.config
        url = f"{target.origin}/robots.txt"
        for hop_number in range(_ROBOTS_MAX_REDIRECTS + 1):
            try:
                hop = _target(url)
            except FetchRefused:
                return ALLOW_ALL, cfg.robots_ttl, False
            exchange = self._attempt(hop, deadline, cfg.robots_max_bytes, None, truncate=True)
            self._record(hop, exchange)
            if exchange.error == HOST_CIRCUIT_OPEN or (
                hop_number == 0 and exchange.error in (BLOCKED_ADDRESS, DNS_ERROR)
            ):
                # The page's own host is refused: report that (uncached) instead of robots.
                raise FetchRefused(exchange.error, target.origin)
            if exchange.error == BLOCKED_ADDRESS:
                return ALLOW_ALL, cfg.robots_ttl, False
            if exchange.error is not None or exchange.status is None:
                return DISALLOW_ALL, cfg.robots_error_ttl, True
            location = exchange.headers.get("location")
            if exchange.status in REDIRECT_STATUSES and location:
                url = join_location(url, location)
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
