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

from openmsd_build.core.errors import UserError, damaged
from openmsd_build.core.parquet_io import check_parts, list_parts, read_file_bytes, unreadable

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
    `folders` (those the query scanned) are read one at a time, only after a failure, and the
    first one Arrow cannot read either is named (`parquet_io.read_file_bytes`); with no such
    file, the build's files as a whole."""
    from apache_beam.io.filesystems import FileSystems

    for folder in folders:
        for path in list_parts(folder):
            try:
                with FileSystems.open(path) as f:
                    read_file_bytes(f.read(), path=path)
            except UserError as named:
                return named
            except OSError as unread:
                return unreadable(path, unread)
    return damaged("a Parquet file of the build", "could not be read (a damaged data page?)", exc)


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
