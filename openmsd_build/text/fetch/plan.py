"""Which URLs to fetch for a paper, and how to key them so hosts spread over workers.

Unpaywall lists several OA locations per paper, often the same file under trivially
different URLs; fetching all of them wastes the politeness budget of small hosts. A few
well-ranked ones (PDF and landing page interleaved, so a paper still gets text when its
PDF link is dead) are enough. Keys are stable hashes (hashlib via `openmsd_build.core.hashing`)
because Python's `hash()` differs between worker processes.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from urllib.parse import urlsplit, urlunsplit

from openmsd_build.core.hashing import hash64

_DEFAULT_PORTS = {"http": 80, "https": 443}


@functools.lru_cache(maxsize=1 << 16)
def canonical_url(url: str) -> str:
    """Light canonical form used for dedupe, resume and archive lookup: scheme and host
    lower-cased, default port dropped, empty path -> "/", fragment dropped. Path and query
    are kept byte for byte (servers may treat case and order as significant)."""
    url = (url or "").strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host
    if parts.username is not None:
        userinfo = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{userinfo}@{host}"
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{netloc}:{port}"
    path = parts.path or ("/" if netloc else "")
    return urlunsplit((scheme, netloc, path, parts.query, ""))


def host_key(url: str) -> str:
    """The politeness unit: the lower-case host name (without port), "" when unparseable."""
    try:
        return (urlsplit((url or "").strip()).hostname or "").rstrip(".")
    except ValueError:
        return ""


def shard_host(host: str, url: str, shards_per_big_host: int | Mapping[str, int] = 1) -> str:
    """Grouping key `host#k` with k from a stable hash of the URL, so a big host's URLs are
    spread over several keys (workers) instead of one endless queue. An int applies to every
    host; a mapping gives per-host shard counts (hosts absent -> 1). With one shard the
    key is just `host`. Note: where each shard may be fetched by a fetcher of its own, each
    is rate-limited separately: `text.command.key_rate` gives each its share of the host's."""
    shards = shards_per_big_host.get(host, 1) if isinstance(shards_per_big_host, Mapping) else shards_per_big_host
    if shards <= 1:
        return host
    return f"{host}#{hash64(canonical_url(url), 'shard_host') % shards}"


def _is_http(url: str) -> bool:
    """Only http(s) URLs with a host are worth planning."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def plan_urls(urls: list[dict], cap: int = 3) -> list[dict]:
    """Pick at most `cap` locations to fetch from a paper's OA locations (dicts with url,
    kind "pdf"|"landing", host_type, rank, version). Duplicates by canonical URL keep the
    best rank; the result alternates PDF and landing page in rank order, starting with the
    overall best. Each returned dict is a copy with `canonical_url` added."""
    best: dict[str, dict] = {}
    for position, loc in enumerate(urls):
        url = (loc.get("url") or "").strip()
        if not _is_http(url):
            continue
        key = canonical_url(url)
        rank = loc.get("rank")
        sort_key = (rank if isinstance(rank, int | float) else float("inf"), position)
        if key not in best or sort_key < best[key]["_sort"]:
            best[key] = {**loc, "canonical_url": key, "_sort": sort_key}
    ordered = sorted(best.values(), key=lambda d: d["_sort"])
    pdfs = [d for d in ordered if d.get("kind") == "pdf"]
    others = [d for d in ordered if d.get("kind") != "pdf"]
    queues = [pdfs, others] if pdfs and (not others or pdfs[0]["_sort"] <= others[0]["_sort"]) else [others, pdfs]
    picked: list[dict] = []
    i = 0
    while len(picked) < cap and (queues[0] or queues[1]):
        queue = queues[i % 2] or queues[(i + 1) % 2]
        picked.append(queue.pop(0))
        i += 1
    for d in picked:
        d.pop("_sort", None)
    return picked


def should_fetch(url: str, done: Collection[str]) -> bool:
    """False when `url` (raw or canonical) is already in a previous run's `fetch/` output,
    so a resumed run never fetches anything twice."""
    return url not in done and canonical_url(url) not in done
