"""A damaged `documents/` part (cut short by a full disk, another file's bytes, a column of
another type) stops the stages that read it, citations and enrich, with exit 2 and one line
naming the file, before any work is done or any answer paid for: both printed Arrow's
traceback (exit 1; citations from inside the Beam pipeline, enrich part-way through its run)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.evaluate.testing import write_tiny_build


def _part(out: Path) -> Path:
    return Path(parquet_io.list_parts(layout.documents_dir(str(out)))[0])


def _retype_doi(path: Path) -> None:
    table = pq.read_table(path)
    pq.write_table(table.set_column(table.schema.get_field_index("doi"), "doi",
                                    pa.array(range(table.num_rows), pa.int64())), path)


DAMAGE = {
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "is not a readable Parquet"),
    "empty": (lambda p: p.write_bytes(b""), "is not a readable Parquet"),
    "garbage": (lambda p: p.write_bytes(b"not parquet at all"), "is not a readable Parquet"),
    "doi_int": (_retype_doi, "column 'doi' is int64"),
}


@pytest.mark.parametrize("command", ["citations", "enrich"])
@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_a_damaged_documents_part_is_one_line(tmp_path, capsys, command, name):
    out = tmp_path / "build"
    write_tiny_build(str(out))
    shutil.rmtree(out / "citations")  # the tiny build is no stage's output (no _stats/): citations would refuse it
    damage, message = DAMAGE[name]
    part = _part(out)
    damage(part)
    (tmp_path / "coci.csv").write_text("oci,citing,cited\n1,10.1000/a,10.1000/b\n")
    argv = {"citations": ["citations", "--out", str(out), "--opencitations", str(tmp_path / "coci.csv"),
                          "--runner", "FnApiRunner"],
            "enrich": ["enrich", "--out", str(out), "--summarizer", "none"]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(part) in err[0] and message in err[0], err
