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
    if not seed:
        return _unkeyed64(text)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8, key=seed.encode("utf-8")[:64]).digest()
    return int.from_bytes(digest, "big") & _MASK63


def _unkeyed64(text: str, _blake2b=hashlib.blake2b, _from_bytes=int.from_bytes) -> int:
    """`hash64` without a seed: blake2b with an empty key is unkeyed blake2b, so the key's
    encoding is skipped on the hot paths (sharding every record, a paper id per document)."""
    return _from_bytes(_blake2b(text.encode("utf-8"), digest_size=8).digest(), "big") & _MASK63


def paper_id(doi: str) -> int:
    """The int64 key of a paper: `hash64` of its normalized DOI. Citations, split and pairs
    all compute it here, so their joins on ids agree."""
    return _unkeyed64(doi)


def paper_ids(dois: Iterable[str | None]) -> list[int | None]:
    """`paper_id` of every DOI (None stays None)."""
    return [None if d is None else _unkeyed64(d) for d in dois]


def shard_of(key: str, num_shards: int) -> int:
    """The shard (0 .. num_shards-1) that owns `key` in a partitioned shuffle."""
    return _unkeyed64(key) % num_shards


def unit_interval(key: str, seed: str) -> float:
    """A deterministic draw in [0, 1) for `key` under `seed` (used for split assignment)."""
    return hash64(key, seed) / float(1 << 63)
