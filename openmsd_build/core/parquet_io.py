"""Parquet reading and writing shared by every stage (local paths and `gs://` alike).

Files are written through Beam's `FileSystems`, so the same code writes to a local folder,
to Cloud Storage or to any filesystem Beam knows. Tables are zstd-compressed and carry the
stage's explicit schema, with every column present in every file.

Beam is imported when a file is first read or written, not with this module: the papers
stage's parsing processes, which never import Beam, join paths and encode Parquet here too.
"""

from __future__ import annotations

import io
import os
import posixpath
import tempfile
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from openmsd_build.core.errors import UserError, damaged

COMPRESSION = "zstd"
ROW_GROUP_SIZE = 64_000


def _filesystems() -> Any:
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def join_path(base: str, *parts: str) -> str:
    """Join path parts for local paths and URLs (`gs://bucket/x`) alike."""
    if "://" in base:
        return posixpath.join(base, *parts)
    return os.path.join(base, *parts)


def table_from_rows(rows: Sequence[dict], schema: pa.Schema) -> pa.Table:
    """Rows (dicts) to a table of exactly `schema`; missing keys become nulls."""
    return pa.Table.from_pylist(list(rows), schema=schema)


def concat(tables: Iterable[pa.Table], schema: pa.Schema) -> pa.Table:
    """Concatenate tables of one schema; an empty iterable gives an empty table."""
    tables = [t if t.schema.equals(schema) else t.select(schema.names).cast(schema) for t in tables]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)


def write_table(table: pa.Table, path: str) -> int:
    """Write one Parquet file atomically enough for re-runs: the bytes go to a temporary
    name and are renamed into place, so a reader never sees a half-written part file.
    Returns the number of rows written."""
    write_bytes(encode(table), path)
    return table.num_rows


def encode(table: pa.Table) -> bytes:
    """A part file's bytes: zstd, `ROW_GROUP_SIZE` rows a group (the same bytes wherever a
    table is encoded, in the worker or in a pool process)."""
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=COMPRESSION, row_group_size=ROW_GROUP_SIZE)
    return buf.getvalue()


def write_bytes(data: bytes, path: str) -> None:
    """A finished file's bytes (e.g. Parquet encoded by a pool process) put in place as
    `write_table` does: to a temporary name, renamed over `path`."""
    _put(path, lambda f: f.write(data))


def _put(path: str, write: Any) -> None:
    """`write(f)` into a temporary name beside `path` (local or remote), renamed over `path`:
    a reader never sees a half-written file."""
    FileSystems = _filesystems()
    tmp = path + ".tmp"
    try:
        with FileSystems.create(tmp) as f:
            write(f)
    except BaseException:
        # a write cut short (a full disk, Ctrl-C) leaves `path` as it was and no temporary
        if FileSystems.exists(tmp):
            FileSystems.delete([tmp])
        raise
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([tmp], [path])


def write_tables(tables: Iterable[pa.Table], schema: pa.Schema, path: str) -> int:
    """`write_table` for a part file too large to hold as one table or one buffer: the pieces
    (of `schema`, in order; each piece is at least one row group) are encoded one at a time
    into a local temporary file, which is then copied into place as `write_bytes` puts bytes
    (temporary name, rename). Returns the number of rows written."""
    rows = 0
    with tempfile.TemporaryDirectory(prefix="openmsd-part-") as tmp:
        local = os.path.join(tmp, "part.parquet")
        with pq.ParquetWriter(local, schema, compression=COMPRESSION) as writer:
            for table in tables:
                writer.write_table(table, row_group_size=ROW_GROUP_SIZE)
                rows += table.num_rows
        _put_file(local, path)
    return rows


_COPY_BYTES = 8 << 20


def _put_file(local: str, path: str) -> None:
    """A finished local file copied to `path` (local or remote) a block at a time, put in
    place as `write_bytes` puts bytes (`_put`)."""
    def copy(f: Any) -> None:
        with open(local, "rb") as src:
            while block := src.read(_COPY_BYTES):
                f.write(block)

    _put(path, copy)


def part_path(directory: str, shard: int, num_shards: int) -> str:
    return join_path(directory, f"part-{shard:05d}-of-{num_shards:05d}.parquet")


def fill_missing_parts(folders: Iterable[tuple[str, pa.Schema]], num_shards: int) -> None:
    """An empty part file of the folder's schema for every shard that wrote none, so every
    folder of a sharded output holds `num_shards` files (a reader never meets a gap)."""
    FileSystems = _filesystems()
    for directory, schema in folders:
        for shard in range(num_shards):
            path = part_path(directory, shard, num_shards)
            if not FileSystems.exists(path):
                write_table(schema.empty_table(), path)


def match_paths(pattern: str) -> list[str]:
    """Paths matching a glob (local or remote), sorted; [] when nothing matches (some Beam
    filesystems raise BeamIOError for "no match" instead of returning nothing)."""
    try:
        return sorted(m.path for m in _filesystems().match([pattern])[0].metadata_list)
    except Exception:  # noqa: BLE001
        return []


def footer_rows(paths: Sequence[str]) -> int:
    """Rows of the Parquet files `paths`, read from their footers (no data is read)."""
    rows = 0
    for path in paths:
        with _filesystems().open(path) as fh:
            rows += pq.ParquetFile(fh).metadata.num_rows
    return rows


def list_parts(directory: str) -> list[str]:
    """The Parquet part files of a stage folder, sorted; [] when the folder has none."""
    return match_paths(join_path(directory, "*.parquet"))


def read_file_bytes(data: bytes, columns: Sequence[str] | None = None, path: str | None = None) -> pa.Table:
    """One Parquet file's bytes as a table, read synchronously by `ParquetFile`, columns decoded
    in this thread. Arrow wraps `data` in a buffer that holds the Python object, and whichever
    thread drops the last reader of it takes the GIL: `pq.read_table` (a dataset scan) and
    `ParquetFile.read` with threads (a column reader per pool task) both let a pool thread
    drop it a moment after the table is returned, so a command that stopped right after a
    read (a refused input, exit 2) had that thread take the GIL during the interpreter's
    shutdown, and the process aborted ("terminate called without an active exception", exit
    134; 1 exit in ~250 of `evaluate` refusing an embeddings file, with threads). Files read
    here are small (embeddings, ids, a release's lists): one thread decodes them quickly.

    Bytes that are not a readable Parquet file (truncated, another file's, a damaged page) are
    a `UserError` naming `path` (the file the bytes came from) instead of Arrow's traceback."""
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        # `ParquetFile.read` leaves out a column it does not have, where `read_table` refused
        missing = [c for c in columns or () if c not in parquet.schema_arrow.names]
        if missing:
            raise ValueError(f"no column {', '.join(missing)} (columns: {', '.join(parquet.schema_arrow.names)})")
        return parquet.read(columns=list(columns) if columns else None, use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise unreadable(path or "Parquet data", exc) from None


def unreadable(path: str, exc: BaseException) -> UserError:
    """The one-line error for a Parquet file a reader cannot read (`errors.damaged`)."""
    return damaged(path, "is not a readable Parquet file (truncated or damaged?)", exc)


def read_table(directory: str, columns: Sequence[str] | None = None, schema: pa.Schema | None = None) -> pa.Table:
    """Read a whole stage folder into one table (for small outputs, reports and tests)."""
    parts = list_parts(directory)
    tables = []
    for path in parts:
        with _filesystems().open(path) as f:
            tables.append(read_file_bytes(f.read(), columns, path))
    if not tables:
        if schema is None:
            raise FileNotFoundError(f"no Parquet files under {directory}")
        empty = schema.empty_table()
        return empty.select(list(columns)) if columns else empty
    return pa.concat_tables(tables, promote_options="default")


def _kind(dtype: pa.DataType) -> object:
    """A type's family for `check_parts`: the types a reader treats alike (any string, any
    integer width, any float width, a list of either kind) compare equal."""
    if pa.types.is_dictionary(dtype):
        return _kind(dtype.value_type)
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_string_view(dtype):
        return "string"
    if pa.types.is_integer(dtype):
        return "integer"
    if pa.types.is_floating(dtype):
        return "float"
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        return ("list", _kind(dtype.value_type))
    if pa.types.is_struct(dtype):
        return "struct"
    return str(dtype)


def _null_count(parquet: pq.ParquetFile, name: str) -> int:
    """Nulls in a top-level column: from the row groups' statistics, or by reading the column
    when a row group has none."""
    meta = parquet.metadata
    leaf = next((i for i in range(len(parquet.schema)) if parquet.schema.column(i).path == name), -1)
    counts = []
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(leaf).statistics if leaf >= 0 else None
        if stats is None or not stats.has_null_count:
            return parquet.read(columns=[name]).column(0).null_count
        counts.append(stats.null_count)
    return sum(counts)


def check_parts(paths: Sequence[str], schema: pa.Schema | None = None, columns: Sequence[str] | None = None,
                required: Sequence[str] = (), non_null: Sequence[str] = ()) -> None:
    """Refuse, before any data is read, the part files a reader could not use: a file whose
    footer does not read (truncated, empty, another file's bytes), a column of `columns` (all
    of `schema` when None) whose type is not of the family `schema` gives it (`_kind`: a
    `language` of integers, `categories` a string), or a `required` column missing. Each is a
    `UserError` naming the file; a polars or Beam reader would otherwise fail mid-query with a
    traceback that names neither the file nor the column. Only footers are read (the readers
    read them anyway), so a sound build costs one small read a file. A column of `non_null`
    holding a null is refused too, told by the footer's statistics (the column itself is read
    only from a file written without them)."""
    names = list(columns) if columns is not None else (schema.names if schema is not None else [])
    for path in paths:
        try:
            with _filesystems().open(path) as fh:
                parquet = pq.ParquetFile(fh)
                found = parquet.schema_arrow
                nulls = {name: _null_count(parquet, name) for name in non_null
                         if found.get_field_index(name) >= 0}
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise unreadable(path, exc) from None
        for name, count in nulls.items():
            if count:
                raise damaged(path, f"has {count:,} null {name!r} value(s): every row needs one (damaged?)")
        for name in required:
            if found.get_field_index(name) < 0:
                raise damaged(path, f"has no {name!r} column (columns: {', '.join(found.names)[:200]})")
        if schema is None:
            continue
        for name in names:
            if schema.get_field_index(name) < 0 or found.get_field_index(name) < 0:
                continue  # a column absent from the file comes back as nulls (`core.scan`)
            want, got = schema.field(name).type, found.field(name).type
            if pa.types.is_null(got) or _kind(got) == _kind(want):
                continue
            raise damaged(path, f"column {name!r} is {got}, expected {want} (damaged, or another table's file?)")


def clear_directory(directory: str) -> None:
    """Remove a stage folder's previous part files so a re-run never mixes old and new."""
    stale = list_parts(directory) + match_paths(join_path(directory, "*.tmp"))
    if stale:
        _filesystems().delete(stale)
