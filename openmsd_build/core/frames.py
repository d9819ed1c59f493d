"""Stable, vectorized hashing and sharding of whole Arrow / polars frames: the partition
hashes of the graph stages' partitioned shuffles (citations, split, pairs), the cut of a
frame into per-shard pieces, and back to one frame.

Why here (core): every stage that partitions by DOI or paper id must agree on every worker
and in every re-run, so they share one implementation; polars' `hash` is documented as
unstable across releases and Python's `hash()` is salted. Moved from `citations.graph`,
unchanged.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from openmsd_build.core.ipc import from_ipc, to_ipc

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_P = np.uint64(0x100000001B3)  # FNV prime, used as the polynomial base
_POW = np.cumprod(np.full(512, _P, dtype=np.uint64), dtype=np.uint64)
_POW = np.concatenate([np.ones(1, dtype=np.uint64), _POW])


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer: a stable, well-spread uint64 image of integer keys."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64, copy=False) + _M1  # a new array: the steps below work in place
        z ^= z >> np.uint64(30)
        z *= _M2
        z ^= z >> np.uint64(27)
        z *= _M3
        z ^= z >> np.uint64(31)
        return z


def _powers(n: int) -> np.ndarray:
    global _POW
    if n >= len(_POW):
        more = np.cumprod(np.full(n + 1 - len(_POW), _P, dtype=np.uint64), dtype=np.uint64)
        with np.errstate(over="ignore"):
            _POW = np.concatenate([_POW, more * _POW[-1]])
    return _POW


def hash_strings(values: pa.Array | pa.ChunkedArray | pl.Series) -> np.ndarray:
    """Stable uint64 hash of each string (null -> a fixed value), computed on Arrow buffers.

    A polynomial hash of the UTF-8 bytes modulo 2**64 (`sum(b[i] * P**(len-1-i))`), finished
    with splitmix64 of the hash and the length. It exists to partition DOIs without a Python
    call per row; it is not `hashing.hash64` and is never stored, only used to pick shards
    (and by the split stage as its duplicate-text key), so its values must never change.

    Most strings (ASCII, at most `_PADDED_MAX` bytes) go through `_padded_sums`; the rest
    through `_cumsum_sums`, the original formulation, which gives the same sums.
    """
    series = values if isinstance(values, pl.Series) else pl.Series("s", values)
    series = series.cast(pl.String)
    n = len(series)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    nulls = series.is_null()
    filled = series.fill_null("")
    lengths = filled.str.len_bytes().to_numpy().astype(np.int64)
    ascii_ok = filled.str.len_chars().to_numpy() == lengths
    fast = ascii_ok & (lengths <= _PADDED_MAX)
    sums = np.zeros(n, dtype=np.uint64)
    _padded_sums(filled, lengths, np.flatnonzero(fast), sums)
    slow = np.flatnonzero(~fast)
    if len(slow):
        sums[slow] = _cumsum_sums(filled.gather(slow).to_arrow())
    with np.errstate(over="ignore"):
        h = mix64(sums ^ mix64(lengths.astype(np.uint64)))
    if nulls.any():
        h[nulls.to_numpy()] = np.uint64(0)
    return h


# Strings up to this many bytes are hashed from a zero-padded matrix (`_padded_sums`).
_PADDED_MAX = 256
# Rows per padded matrix: bounds its memory (rows x widest string) and keeps it in cache.
_PADDED_ROWS = 1 << 15


def _padded_sums(strings: pl.Series, lengths: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """The polynomial sums of `strings[rows]` (ASCII) into `out[rows]`, by Horner's rule
    over the columns of a matrix whose rows are the strings right-aligned behind NUL bytes.

    Why this equals the byte-wise sum: leading zeros add nothing under Horner's rule, so a
    string padded on the left to any width has the same sum. Each block of `_PADDED_ROWS`
    rows is padded only to its own longest string; when that would waste much work (DOIs of
    very different lengths mixed) rows are first taken shortest first (`_padded_order`).
    One multiply-add per byte on contiguous columns, instead of the cumulative sums' many
    passes over an 8-byte-per-byte array.
    """
    if not len(rows):
        return
    order = _padded_order(lengths, rows)
    ordered = strings if len(order) == len(strings) and order is rows and _is_identity(rows) else strings.gather(order)
    for lo in range(0, len(order), _PADDED_ROWS):
        block = order[lo:lo + _PADDED_ROWS]
        width = int(lengths[block].max())
        if width == 0:
            continue  # all empty: the sum is 0
        arr = ordered.slice(lo, len(block)).str.pad_start(width, "\x00").to_arrow()
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = arr.cast(pa.large_string())
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + len(block) + 1]
        start = int(offsets[0])
        matrix = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[start:start + len(block) * width]
        matrix = matrix.reshape(len(block), width)
        h = np.zeros(len(block), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(width):
                h *= _P
                h += matrix[:, j]
        out[block] = h


def _padded_order(lengths: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`rows` as they are when padding each block to its longest string costs at most a
    quarter more than the strings' bytes (DOIs of similar lengths), else shortest first."""
    taken = lengths[rows]
    starts = np.arange(0, len(rows), _PADDED_ROWS)
    block_max = np.maximum.reduceat(taken, starts)
    block_rows = np.diff(np.append(starts, len(rows)))
    if int((block_max * block_rows).sum()) <= 1.25 * int(taken.sum()) + len(rows):
        return rows
    return rows[np.argsort(taken, kind="stable")]


def _is_identity(rows: np.ndarray) -> bool:
    return len(rows) == 0 or (int(rows[0]) == 0 and int(rows[-1]) == len(rows) - 1)


def _cumsum_sums(arr: pa.Array) -> np.ndarray:
    """The polynomial sums of a string array (no nulls) by cumulative sums over all bytes
    (any length, any UTF-8); the reference for `_padded_sums`."""
    arr = arr.cast(pa.large_string())
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    start, end = int(offsets[0]), int(offsets[-1])
    lengths = np.diff(offsets)
    if end <= start:
        return np.zeros(n, dtype=np.uint64)
    body = data[start:end].astype(np.uint64)
    ends_rep = np.repeat(offsets[1:], lengths)
    rev = ends_rep - 1 - np.arange(start, end, dtype=np.int64)
    pows = _powers(int(lengths.max()))
    with np.errstate(over="ignore"):
        csum = np.concatenate([np.zeros(1, np.uint64), np.cumsum(body * pows[rev], dtype=np.uint64)])
        return csum[offsets[1:] - start] - csum[offsets[:-1] - start]


def shard_strings(values, num_shards: int) -> np.ndarray:
    """The shard (int64) of every string for a partitioned shuffle."""
    return (hash_strings(values) % np.uint64(num_shards)).astype(np.int64)


def shard_ints(values: np.ndarray | pl.Series, num_shards: int) -> np.ndarray:
    """The shard (int64) of every integer key (paper ids) for a partitioned shuffle. A null
    key (it joins nothing: a hand-edited id) goes to the shard of 0; as a NaN of `to_numpy`
    its shard was whatever the float-to-integer cast made of it."""
    if isinstance(values, pl.Series):
        values = (values.fill_null(0) if values.null_count() else values).to_numpy()
    return (mix64(np.asarray(values)) % np.uint64(num_shards)).astype(np.int64)


def split_by_shard(df: pl.DataFrame | pa.Table, shards: np.ndarray) -> list[tuple[int, pa.Table]]:
    """Cut a frame (or Arrow table) into `(shard, arrow table)` pieces, one per shard present,
    in shard order; a piece keeps its rows in input order.

    One stable sort of the shard numbers (a radix sort on 8 or 16 bits), one gather of the
    rows, and each piece a zero-copy slice of it: a per-shard partition of a polars frame,
    then a conversion of each part, cost twice as much at 16 shards."""
    table = df if isinstance(df, pa.Table) else df.to_arrow()
    if table.num_rows == 0:
        return []
    order = np.argsort(_narrow(shards), kind="stable")
    ends = np.cumsum(np.bincount(shards)).tolist()  # a piece ends where the next shard's rows start
    table = table.take(order)
    pieces, start = [], 0
    for shard, end in enumerate(ends):
        if end > start:
            pieces.append((shard, table.slice(start, end - start)))
        start = end
    return pieces


def _narrow(shards: np.ndarray) -> np.ndarray:
    """Shard numbers as 8- or 16-bit unsigned integers when they fit (numpy's stable sort is a
    radix sort for those), else as int64."""
    top = int(shards.max()) if len(shards) else 0
    return shards.astype(np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.int64)


def shard_pieces(df: pl.DataFrame | pa.Table, column: str, num_shards: int) -> list[tuple[int, bytes]]:
    """`split_by_shard` of `df` by the shard of its string `column`, each piece as Arrow
    IPC stream bytes (`to_frame` reads them back).

    Why bytes: Beam's default coder writes `bytes` as they are but pickles an Arrow table,
    and the in-process runner decodes and re-encodes every grouped value, so a table
    crossing a shuffle was pickled twice and unpickled twice (a third of the stage's time
    at 2M edges). Strings go with 32-bit offsets (polars exports `large_string`): 4 bytes
    less per string to copy. Each piece is narrowed after the cut, not the batch before it: a
    citing shard's edges at COCI scale can hold more than 2 GiB of strings in one column,
    which 32-bit offsets cannot address (a piece is a sixteenth of that)."""
    table = df if isinstance(df, pa.Table) else df.to_arrow()
    if table.num_rows == 0:
        return []
    pieces = split_by_shard(table, shard_strings(table.column(column), num_shards))
    return [(shard, to_ipc(_compact_strings(piece))) for shard, piece in pieces]


def _compact_strings(table: pa.Table) -> pa.Table:
    schema = pa.schema([f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in table.schema])
    return table if schema.equals(table.schema) else table.cast(schema)


def to_frame(tables, schema: pa.Schema | None = None) -> pl.DataFrame:
    """Concatenate Arrow tables, IPC stream bytes (`to_ipc`) or polars frames (possibly
    none) into one polars frame."""
    frames = []
    for t in tables:
        if isinstance(t, bytes):
            t = from_ipc(t)
        f = t if isinstance(t, pl.DataFrame) else pl.from_arrow(t)
        if f.height:
            frames.append(f)
    if not frames:
        if schema is None:
            return pl.DataFrame()
        return pl.from_arrow(schema.empty_table())
    return pl.concat(frames, how="vertical_relaxed")
