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
