"""Stable hashes: shard assignment, compact paper ids and seeded split draws.

Python's `hash()` is salted per process and polars' hashes may change between releases, so
anything that must agree across workers, runners and re-runs goes through blake2b here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

_MASK63 = (1 << 63) - 1


def hash64(text: str, seed: str = "") -> int:
    """A non-negative 63-bit integer from blake2b(seed, text); fits Arrow int64."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8, key=seed.encode("utf-8")[:64]).digest()
    return int.from_bytes(digest, "big") & _MASK63


def paper_id(doi: str) -> int:
    """The int64 key of a paper: `hash64` of its normalized DOI. Citations, split and pairs
    all compute it here, so their joins on ids agree."""
    return hash64(doi)


def paper_ids(dois: Iterable[str | None]) -> list[int | None]:
    """`paper_id` of every DOI (None stays None).

    The same values as `hash64(doi)` (an empty blake2b key is no key), without its seed
    handling and call per DOI: stages compute this for every document (~0.8 µs instead of
    ~2.5 µs a DOI)."""
    blake2b, from_bytes, mask = hashlib.blake2b, int.from_bytes, _MASK63
    return [None if d is None else from_bytes(blake2b(d.encode("utf-8"), digest_size=8).digest(), "big") & mask
            for d in dois]


def shard_of(key: str, num_shards: int) -> int:
    """The shard (0 .. num_shards-1) that owns `key` in a partitioned shuffle."""
    return hash64(key) % num_shards


def unit_interval(key: str, seed: str) -> float:
    """A deterministic draw in [0, 1) for `key` under `seed` (used for split assignment)."""
    return hash64(key, seed) / float(1 << 63)
