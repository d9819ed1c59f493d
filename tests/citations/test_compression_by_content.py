"""Citation files are decompressed by their bytes, not their names: a browser that saves
`x.csv.gz` often inflates it and keeps the name (the whole file was one `corrupt_archive`
reject), and a gzip named `.csv` was read as text (`unrecognized_header`)."""

from __future__ import annotations

import gzip
import io
import zipfile

import pytest

from openmsd_build.citations.opencitations import open_binary_streams

CSV = b"oci,citing,cited,creation,timespan,journal_sc,author_sc\n1-2,10.1000/a,10.1000/b,2020,P1Y,no,no\n"


@pytest.mark.parametrize("name, data", [
    ("inflated-by-the-browser.csv.gz", CSV), ("gzip-named.csv", gzip.compress(CSV)),
    ("plain.csv", CSV), ("real.csv.gz", gzip.compress(CSV)),
])
def test_a_file_is_read_by_its_bytes(tmp_path, name, data) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    # each stream is read before the next is asked for (the file closes after its last)
    assert [(source, stream.read()) for source, stream in open_binary_streams(str(path))] == [(str(path), CSV)]


def test_zip_members_are_read_by_their_bytes(tmp_path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.csv.gz", CSV)  # inflated, the name kept
        archive.writestr("b.csv", gzip.compress(CSV))
    path = tmp_path / "dump.zip"
    path.write_bytes(buffer.getvalue())
    assert [stream.read() for _, stream in open_binary_streams(str(path))] == [CSV, CSV]
