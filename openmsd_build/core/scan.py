"""Lazy polars scans of a stage folder, for the readers of a whole build (report, export,
evaluate): a stage reads another stage's Parquet through here, not through its code.

Every part file's footer is checked first (`parquet_io.check_parts`): a truncated or foreign
file, or a column of the wrong type, is a `UserError` naming the file before polars plans a
query. Polars reports such damage only when a query is collected, as a `ComputeError` or
`SchemaError` naming neither the file nor the column. What the footers cannot show (a damaged
data page) is caught where a query is collected (`collect`, `collect_all`), which name the
damaged file when told the folders the query scanned.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from openmsd_build.core.errors import UserError, damaged
from openmsd_build.core.parquet_io import check_parts, list_parts, unreadable

POLARS_ERRORS = (pl.exceptions.PolarsError, pa.ArrowException, OSError)
"""What a collect over damaged Parquet raises (polars' errors; Arrow's for a remote read)."""


def scan(directory: str, columns: Sequence[str], schema: pa.Schema | None = None) -> pl.LazyFrame | None:
    """A lazy scan of a stage folder restricted to `columns`, or None when the folder has
    no Parquet parts. Columns absent from the files (an older build) come back as typed
    nulls taken from `schema`, so a query never fails on a schema drift.

    Local folders are scanned lazily by polars; other filesystems (gs://, ...) are read
    through Beam's FileSystems, which knows their credentials, into memory — polars' own
    cloud readers would need separately configured credentials."""
    from apache_beam.io.filesystems import FileSystems

    parts = list_parts(directory)
    if not parts:
        return None
    check_parts(parts, schema, columns)
    if any("://" in p for p in parts):
        frames = []
        for path in parts:
            with FileSystems.open(path) as f:
                data = f.read()
            try:
                frames.append(pl.read_parquet(io.BytesIO(data)))
            except POLARS_ERRORS as exc:
                raise unreadable(path, exc) from None
        lf = pl.concat(frames, how="diagonal_relaxed").lazy()
    else:
        lf = pl.scan_parquet(parts, missing_columns="insert", extra_columns="ignore")
    present = set(lf.collect_schema().names())
    exprs = []
    for name in columns:
        if name in present:
            exprs.append(pl.col(name))
        else:
            dtype = pl.from_arrow(schema.empty_table().select([name])).dtypes[0] if schema is not None else pl.String
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return lf.select(exprs)


def _failed(exc: BaseException, folders: Sequence[str] = ()) -> UserError:
    """The error of a query over damaged Parquet. Polars names no file, so the part files of
    `folders` (those the query scanned) are read again, only after a failure, and the first
    one Arrow cannot read either is named; with no such file, the build's files as a whole."""
    for folder in folders:
        for path in list_parts(folder):
            if (named := _unreadable(path)) is not None:
                return named
    return damaged("a Parquet file of the build", "could not be read (a damaged data page?)", exc)


def _unreadable(path: str) -> UserError | None:
    """The error naming `path` when Arrow cannot read one of its row groups, else None. One row
    group at a time, synchronously, through the file system's seekable stream: a whole part
    file read at once held ~6x its size (a 191 MB documents part: 1.2 GB), and a remote one
    was downloaded whole before its pages were looked at."""
    from apache_beam.io.filesystems import FileSystems

    try:
        with FileSystems.open(path) as f, pq.ParquetFile(f) as parquet:
            for group in range(parquet.num_row_groups):
                parquet.read_row_group(group, use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as unread:
        return unreadable(path, unread)
    return None


def collect(lf: pl.LazyFrame, folders: Sequence[str] = (), engine: str = "streaming") -> pl.DataFrame:
    """`lf` collected, by default by the streaming engine (bounded memory on full-scale
    folders); damage in the data that the footers did not show is a `UserError` naming the
    damaged file of `folders` (the stage folders `lf` scans: `_failed`), not polars' traceback."""
    try:
        return lf.collect(engine=engine)
    except POLARS_ERRORS as exc:
        raise _failed(exc, folders) from None


def collect_all(frames: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    """Several queries over one scan at once (polars shares the scan between them), as `collect`."""
    try:
        return pl.collect_all(frames, engine="streaming")
    except POLARS_ERRORS as exc:
        raise _failed(exc) from None
