"""`parquet_io.read_file_bytes`: one Parquet file's bytes, read synchronously."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.core.errors import UserError
from openmsd_build.core.parquet_io import read_file_bytes


def test_a_column_the_file_lacks_is_refused_not_left_out():
    """`ParquetFile.read(columns=...)` leaves out a column the file does not have, where
    `pq.read_table` refused: a caller asking for `language` got a table without it (and a
    KeyError later, or nulls after a concat)."""
    buffer = io.BytesIO()
    pq.write_table(pa.table({"doi": ["10.1/a"], "split": ["train"]}), buffer)
    data = buffer.getvalue()
    assert read_file_bytes(data, ["doi"]).column_names == ["doi"]
    with pytest.raises(UserError, match="no column language"):
        read_file_bytes(data, ["doi", "language"], path="ids/split=train/part-0.parquet")


def test_no_reference_to_the_bytes_outlives_the_read():
    """Arrow's buffer over `data` holds the Python object, and the thread that drops the last
    reader of it takes the GIL. With threads, a pool thread dropped it a moment after the table
    was returned (right after 1 read in ~8 here), and at a command's exit that thread aborted
    the process (exit 134). Every reference is now dropped before the read returns."""
    import sys

    buffer = io.BytesIO()
    rows = 50_000
    pq.write_table(pa.table({"doi": [f"10.1/{i}" for i in range(rows)], "n": list(range(rows)),
                             "vector": [[1.0, 2.0]] * rows}), buffer, row_group_size=5_000)
    data = buffer.getvalue()
    before = sys.getrefcount(data)
    lingering = 0
    for _ in range(200):
        table = read_file_bytes(data)
        lingering += sys.getrefcount(data) != before
        del table
    assert lingering == 0
