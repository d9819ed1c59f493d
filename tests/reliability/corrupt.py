"""Deterministic corruptions of real input files, shared by the fuzz tests and bench/soak.py.

Each corruption takes the original bytes (as stored, possibly gzip) and a seeded
`random.Random` and returns new bytes. They model what a days-long build meets: a download
cut short, a flipped bit on disk, a producer that wrote Latin-1 or UTF-16, a record with a
giant field, JSON nested thousands deep, a tiny archive that inflates to gigabytes.
"""

from __future__ import annotations

import gzip
import random
import zlib
from collections.abc import Callable

Corruption = Callable[[bytes, random.Random], bytes]


def _plain(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (EOFError, OSError, zlib.error):
            return data
    return data


def truncate(data: bytes, rng: random.Random) -> bytes:
    """Cut the stored bytes (gzip stays gzip: a truncated archive) at a random point."""
    return data[: rng.randrange(1, max(2, len(data)))]


def truncate_plain(data: bytes, rng: random.Random) -> bytes:
    """Cut the decompressed text mid-record and re-gzip it (a producer that died)."""
    plain = _plain(data)
    return gzip.compress(plain[: rng.randrange(1, max(2, len(plain)))], mtime=0)


def bit_flips(data: bytes, rng: random.Random, n: int = 8) -> bytes:
    """Flip `n` random bits of the stored bytes (compressed stream included)."""
    out = bytearray(data)
    for _ in range(n):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def bit_flips_plain(data: bytes, rng: random.Random, n: int = 32) -> bytes:
    """Flip bits in the decompressed text, then re-gzip (valid archive, broken JSON/UTF-8)."""
    return gzip.compress(bit_flips(_plain(data), rng, n), mtime=0)


def latin1(data: bytes, rng: random.Random) -> bytes:
    """Re-encode as Latin-1 (non-ASCII characters become invalid UTF-8 bytes)."""
    text = _plain(data).decode("utf-8", "replace")
    return text.encode("latin-1", "replace")


def utf16(data: bytes, rng: random.Random) -> bytes:
    """Re-encode as UTF-16 with a BOM (valid text, not UTF-8)."""
    return _plain(data).decode("utf-8", "replace").encode("utf-16")


def giant_field(data: bytes, rng: random.Random, size: int = 8 << 20) -> bytes:
    """Insert a line whose one string field is `size` bytes, then the original lines."""
    giant = b'{"doi": "10.1234/giant", "DOI": "10.1234/giant", "title": "' + b"x" * size + b'"}\n'
    return gzip.compress(giant + _plain(data), mtime=0)


def deep_nesting(data: bytes, rng: random.Random, depth: int = 100_000) -> bytes:
    """Prepend a record nested `depth` arrays deep (beyond any JSON parser's recursion)."""
    deep = b'{"doi": "10.1234/deep", "x": ' + b"[" * depth + b"]" * depth + b"}\n"
    return gzip.compress(deep + _plain(data), mtime=0)


def splice_binary(data: bytes, rng: random.Random) -> bytes:
    """Overwrite a random stretch of the decompressed text with random bytes (NULs included)."""
    plain = bytearray(_plain(data))
    if not plain:
        return bytes(plain)
    start = rng.randrange(len(plain))
    n = min(len(plain) - start, rng.randrange(1, 4096))
    plain[start : start + n] = bytes(rng.randrange(256) for _ in range(n))
    return gzip.compress(bytes(plain), mtime=0)


def gzip_bomb(n_bytes: int, newlines: bool) -> bytes:
    """A small gzip that inflates to `n_bytes` of one repeated byte (blank lines when
    `newlines`, else one endless line)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    unit = (b"\n" if newlines else b"a") * (1 << 20)
    out = [c.compress(unit) for _ in range(n_bytes >> 20)]
    out.append(c.flush())
    return b"".join(out)


CORRUPTIONS: dict[str, Corruption] = {
    "truncate": truncate,
    "truncate_plain": truncate_plain,
    "bit_flips": bit_flips,
    "bit_flips_plain": bit_flips_plain,
    "latin1": latin1,
    "utf16": utf16,
    "giant_field": giant_field,
    "deep_nesting": deep_nesting,
    "splice_binary": splice_binary,
}
