"""Being a good guest: robots.txt rules, a per-host rate limiter, Retry-After and backoff.

Repository and publisher sites are small servers run by libraries; a crawl of 130M URLs
that ignores robots.txt or hammers one host gets the whole project blocked. Everything here
is pure or guarded by a lock so a DoFn can share one instance across a thread pool.

robots.txt is parsed with our own small RFC 9309 parser rather than `urllib.robotparser`,
because the standard one applies the first matching rule instead of the longest one and
does not understand `*` / `$` patterns, so "Disallow: /  Allow: /oa/" would block /oa/.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# --------------------------------------------------------------------------- robots.txt


# Caps that bound the cost of one robots.txt and of one `allowed()` call, whatever the
# server sends. 500 KiB is the limit Google documents (RFC 9309 §2.5 asks crawlers to parse at
# least 500 KiB); real files are a few KB. Content beyond the cap is ignored, as Google does.
MAX_ROBOTS_CHARS = 512 * 1024
# Rules kept per agent group set; a real robots.txt has tens, the biggest known a few thousand.
MAX_ROBOTS_RULES = 5_000
# A longer pattern is not a path anyone writes; such rules are dropped rather than matched.
MAX_PATTERN_CHARS = 2_048
# Paths longer than this are not matched at all: they are disallowed whenever the site has
# rules (polite default; no real article URL has an 8 KiB path).
MAX_ROBOTS_PATH_CHARS = 8_192


class RobotsPattern:
    """One RFC 9309 path pattern (`*` = any run of characters, trailing `$` = end of path),
    matched in linear time.

    Why not a regex: `/*a*a*a*a*b` compiles to `.*a.*a.*a.*a.*b`, whose backtracking costs
    O(len(path)**k) on a long path of 'a's (minutes of CPU for one URL). A `*`-only pattern
    never needs backtracking: with the pattern split at `*` into literal segments, placing each
    middle segment at its leftmost occurrence after the previous one is optimal (any later
    placement leaves less room for the rest), so one left-to-right pass of `str.find` decides
    the match: O(len(path) + len(pattern)) per segment scan, O(len(path) * segments) at worst.
    """

    __slots__ = ("raw", "_first", "_middle", "_last", "_anchored")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._anchored = raw.endswith("$")
        body = raw[:-1] if self._anchored else raw
        parts = body.split("*")
        self._first = parts[0]
        # Empty segments (from `**`) constrain nothing; the last one is kept apart because
        # with `$` it must sit at the end of the path.
        self._middle = tuple(p for p in parts[1:-1] if p)
        self._last: str | None = parts[-1] if len(parts) > 1 else None

    def match(self, path: str) -> bool:
        """True when the pattern matches a prefix of `path` (or all of it with `$`)."""
        first, last = self._first, self._last
        if last is None:  # no `*`: a literal prefix, or the whole path with `$`
            return path == first if self._anchored else path.startswith(first)
        if not path.startswith(first):
            return False
        pos = len(first)
        for segment in self._middle:
            found = path.find(segment, pos)
            if found < 0:
                return False
            pos = found + len(segment)
        if self._anchored:
            return len(path) - len(last) >= pos and path.endswith(last)
        return not last or path.find(last, pos) >= 0


@dataclass
class RobotsRules:
    """The rules of the group that applies to our agent (RFC 9309 §2.2)."""

    rules: list[tuple[bool, str, RobotsPattern]] = field(default_factory=list)  # (allow, raw, pattern)
    crawl_delay: float | None = None

    def allowed(self, path: str) -> bool:
        """Longest matching pattern wins; on a tie, allow wins; no match means allowed.

        Cost is bounded by the caps: at most `MAX_ROBOTS_RULES` linear-time matches against a
        path of at most `MAX_ROBOTS_PATH_CHARS` (longer paths are refused when rules exist)."""
        if path.startswith("/robots.txt"):
            return True
        if not self.rules:
            return True
        if len(path) > MAX_ROBOTS_PATH_CHARS:
            return False
        best_len = -1
        best_allow = True
        for allow, raw, pattern in self.rules:
            if (len(raw) > best_len or (len(raw) == best_len and allow)) and pattern.match(path):
                best_len, best_allow = len(raw), allow
        return best_allow


ALLOW_ALL = RobotsRules()
DISALLOW_ALL = RobotsRules(rules=[(False, "/", RobotsPattern("/"))])


def _pattern(raw: str) -> RobotsPattern:
    """A robots path pattern as a linear-time matcher (see `RobotsPattern`)."""
    return RobotsPattern(raw)


def _normalise_escapes(path: str) -> str:
    """Upper-case percent escapes so `%2f` and `%2F` compare equal."""
    return re.sub(r"%[0-9a-fA-F]{2}", lambda m: m.group(0).upper(), path)


def parse_robots(text: str, agent: str) -> RobotsRules:
    """Rules for product token `agent` from a robots.txt body: groups naming the agent (all
    merged) if any, else the `*` groups, else allow everything."""
    agent = agent.lower()
    if len(text) > MAX_ROBOTS_CHARS:  # cut at a line end: half a rule is a different rule
        text = text[: text.rfind("\n", 0, MAX_ROBOTS_CHARS) + 1]
    groups: list[tuple[list[str], list[tuple[str, str]]]] = []
    current: tuple[list[str], list[tuple[str, str]]] | None = None
    for raw_line in text.splitlines():
        line = raw_line.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        key, value = (part.strip() for part in line.split(":", 1))
        key = key.lower()
        if key in ("user-agent", "useragent"):
            if current is None or current[1]:
                current = ([], [])
                groups.append(current)
            current[0].append(value.lower())
        elif current is not None and key in ("allow", "disallow", "crawl-delay"):
            current[1].append((key, value))
    specific = [g for g in groups if any(a != "*" and (agent == a or agent.startswith(a)) for a in g[0])]
    chosen = specific or [g for g in groups if "*" in g[0]]
    rules = RobotsRules()
    for _, lines in chosen:
        for key, value in lines:
            if key == "crawl-delay":
                try:
                    rules.crawl_delay = max(rules.crawl_delay or 0.0, float(value))
                except ValueError:
                    pass
            elif value and len(value) <= MAX_PATTERN_CHARS and len(rules.rules) < MAX_ROBOTS_RULES:
                # An empty Disallow means "nothing is disallowed"; over-long patterns and rules
                # past the cap are ignored so one file cannot make every match expensive.
                value = _normalise_escapes(value if value.startswith(("/", "*")) else "/" + value)
                rules.rules.append((key == "allow", value, _pattern(value)))
    return rules


def robots_path(path: str, query: str) -> str:
    """The string robots patterns are matched against: path plus `?query`."""
    path = _normalise_escapes(path or "/")
    return f"{path}?{query}" if query else path


# --------------------------------------------------------------------------- rate limits


class HostLimiter:
    """Per-host spacing and concurrency, shared by all threads of one fetcher.

    `slot(host)` waits until fewer than `concurrency` requests to the host are in flight,
    reserves the next start time (previous start + interval), releases the lock and sleeps
    until that time. Reserving under the lock makes the spacing exact across threads; the
    interval is max(1/rate, crawl-delay), and `defer()` pushes a host's next start out
    (Retry-After) for every thread, not only the one that got the 429.
    """

    def __init__(self, rate: float | None, concurrency: int, max_idle_hosts: int = 10_000) -> None:
        self._interval = 1.0 / rate if rate and rate > 0 else 0.0
        self._concurrency = concurrency
        self._max_idle_hosts = max_idle_hosts
        self._cond = threading.Condition()
        self._next: dict[str, float] = {}
        self._in_flight: dict[str, int] = {}
        self._extra_interval: dict[str, float] = {}

    def set_min_interval(self, host: str, seconds: float) -> None:
        """Raise this host's spacing (robots Crawl-delay); never lowers the configured one."""
        with self._cond:
            if seconds > self._interval:
                self._extra_interval[host] = seconds
            else:
                self._extra_interval.pop(host, None)

    def defer(self, host: str, until: float) -> None:
        """No new request to `host` before monotonic time `until`."""
        with self._cond:
            self._next[host] = max(self._next.get(host, 0.0), until)

    @contextmanager
    def slot(self, host: str) -> Iterator[None]:
        """Hold one of the host's concurrency slots, starting no earlier than its spacing allows."""
        with self._cond:
            while self._in_flight.get(host, 0) >= self._concurrency:
                self._cond.wait()
            self._in_flight[host] = self._in_flight.get(host, 0) + 1
            now = time.monotonic()
            start = max(now, self._next.get(host, 0.0))
            self._next[host] = start + max(self._interval, self._extra_interval.get(host, 0.0))
            self._prune(now)
        try:
            delay = start - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            yield
        finally:
            with self._cond:
                left = self._in_flight.get(host, 1) - 1
                if left:
                    self._in_flight[host] = left
                else:
                    self._in_flight.pop(host, None)
                self._cond.notify_all()

    def _prune(self, now: float) -> None:
        """Forget idle hosts whose spacing has elapsed, so a long crawl does not grow forever."""
        if len(self._next) <= self._max_idle_hosts:
            return
        for host in [h for h, t in self._next.items() if t < now and h not in self._in_flight]:
            del self._next[host]
            self._extra_interval.pop(host, None)


# --------------------------------------------------------------------------- retries


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or HTTP-date); None if
    absent or unparseable; never negative."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_delay(retry: int, base: float, cap: float, jitter: float, rng: random.Random) -> float:
    """Exponential backoff for the `retry`-th retry (1-based): base * 2**(retry-1), capped,
    times a uniform jitter factor so many workers do not retry in lock-step."""
    delay = min(cap, base * (2 ** max(0, retry - 1)))
    if jitter > 0:
        delay *= rng.uniform(max(0.0, 1.0 - jitter), 1.0 + jitter)
    return max(0.0, min(cap, delay))
