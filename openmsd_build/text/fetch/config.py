"""Plain, picklable settings for the fetchers.

Beam pickles DoFns and their arguments; the fetchers therefore take only this frozen
dataclass and build their connection pools, locks and caches lazily on first use.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from openmsd_build.core.stages import stage_default
from openmsd_build.text.fetch.result import DEFAULT_ACCEPTED_TYPES, MAX_BODY_BYTES

# A resolver maps (host, port) to IP address strings. Must be picklable (a module-level
# function or an instance of a module-level class) when the config crosses a Beam boundary.
Resolver = Callable[[str, int], Sequence[str]]

DEFAULT_USER_AGENT = "openmsd-build/0.1 (+https://github.com/openmsd-build)"


@dataclass(frozen=True)
class FetchConfig:
    """Timeouts, caps and politeness knobs. Defaults suit a polite production crawl; tests
    shrink the times. Sequences given as lists are stored as tuples (hashable, immutable)."""

    # Sent on every request; include a contact so site operators can reach the crawler.
    user_agent: str = DEFAULT_USER_AGENT
    # Optional contact appended to the UA as "+mailto:..." when the UA has none.
    contact: str | None = None
    connect_timeout: float = 10.0
    # Per socket read (each chunk), not per body.
    read_timeout: float = 30.0
    # Wall-clock deadline for one request attempt: DNS, connect, TLS, status line, headers,
    # chunk framing, trailers, body and decoding (enforced by a watchdog, not per read).
    total_timeout: float = 60.0
    # Wall-clock deadline for one whole `fetch(url)`: every hop, retry, backoff wait and the
    # robots.txt lookup; bounds what one URL can cost however its server misbehaves.
    url_timeout: float = 300.0
    # Cap on the decoded body; also bounds decompression (gzip bombs).
    max_bytes: int = MAX_BODY_BYTES
    max_redirects: int = 5
    # Extra attempts after the first for 429, 5xx, timeouts and connection errors.
    max_retries: int = 2
    backoff_base: float = 1.0
    backoff_max: float = 60.0
    # Relative jitter: a delay d becomes d * uniform(1 - jitter, 1 + jitter).
    jitter: float = 0.25
    # Requests per second per host; None or <= 0 disables the interval.
    per_host_rate: float | None = float(stage_default("text", "rate_per_host"))  # type: ignore[arg-type]
    per_host_concurrency: int = 2
    respect_robots: bool = True
    # Successful robots.txt answers are reused this long (RFC 9309 suggests <= 24 h).
    robots_ttl: float = 24 * 3600.0
    # After a 5xx/429/timeout on robots.txt the host is treated as disallowed this long.
    robots_error_ttl: float = 600.0
    robots_max_bytes: int = 512 * 1024
    robots_cache_size: int = 10_000
    # Crawl-delay from robots.txt is honoured up to this many seconds.
    max_crawl_delay: float = 60.0
    # CIDRs that may be fetched although private/loopback (tests: ["127.0.0.0/8"]).
    allow_networks: Sequence[str] = ()
    accepted_content_types: Sequence[str] = DEFAULT_ACCEPTED_TYPES
    # None -> socket.getaddrinfo. Injected in tests to map names to 127.0.0.1.
    resolver: Resolver | None = field(default=None, compare=False)
    # Upper bound on cached connection pools (one per host+IP+port).
    max_pools: int = 256
    verify_tls: bool = True
    # CA bundle for TLS verification; None -> certifi's bundle (or the system store).
    ca_certs: str | None = None
    # Per-host circuit breaker: after this many consecutive failed attempts (timeouts,
    # connection errors, 429/503) the host's URLs fail fast with `host_circuit_open` for
    # `circuit_cooldown` seconds, so one broken host cannot eat a worker's time. 0 disables.
    circuit_failures: int = 5
    circuit_cooldown: float = 300.0

    def __post_init__(self) -> None:
        """Freeze list arguments into tuples and validate the few values that matter."""
        object.__setattr__(self, "allow_networks", tuple(self.allow_networks))
        object.__setattr__(self, "accepted_content_types", tuple(t.lower() for t in self.accepted_content_types))
        if self.max_bytes <= 0 or self.per_host_concurrency <= 0 or self.max_redirects < 0 or self.max_retries < 0:
            raise ValueError("max_bytes and per_host_concurrency must be > 0; max_redirects, max_retries >= 0")
        if self.total_timeout <= 0 or self.url_timeout <= 0 or self.circuit_failures < 0 or self.circuit_cooldown < 0:
            raise ValueError("total_timeout and url_timeout must be > 0; circuit settings >= 0")
        # a bad CIDR must fail here, once, not inside every fetch
        for cidr in self.allow_networks:
            ipaddress.ip_network(cidr, strict=False)

    @property
    def full_user_agent(self) -> str:
        """The UA actually sent: `user_agent` plus `(+mailto:contact)` when a contact is set."""
        if self.contact and self.contact not in self.user_agent:
            contact = self.contact if ":" in self.contact else f"mailto:{self.contact}"
            return f"{self.user_agent} (+{contact})"
        return self.user_agent

    @property
    def robots_agent(self) -> str:
        """The product token matched against robots.txt `User-agent` lines ("openmsd-build")."""
        return self.user_agent.split("/", 1)[0].split()[0].strip().lower() or "*"
