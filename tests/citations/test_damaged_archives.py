"""Damaged OpenCitations archives cost the file, never the stage: a truncated or corrupt
OpenCitations Meta archive (`--meta`) raised EOFError / BadZipFile out of the citations
stage with a traceback (exit 1). Now it is `files_unreadable` with one reject naming the
file, the Meta mappings read before the damage are kept, and the stage warns."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest

from openmsd_build.citations.opencitations import parse_meta_file
from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.stats import read_stage_counts
from openmsd_build.schemas import DOCUMENTS

CSV = b"oci,citing,cited\n1,10.1000/a,10.1000/b\n2,10.1000/b,10.1000/a\n"
META = b"id,title\n" + b"".join(b'"omid:br/%d doi:10.1000/m%d",t\n' % (i, i) for i in range(3000))


def _parse(function, path: Path) -> tuple[int, Counter, list[str]]:
    rows, counts, reasons = 0, Counter(), []
    for table, rejects, batch_counts in function(str(path)):
        rows += table.num_rows
        counts.update(batch_counts)
        reasons += [r["reason"] for r in rejects]
    return rows, counts, reasons


META_DAMAGE = {
    "truncated_gzip": ("meta.csv.gz", lambda: (lambda d: d[: len(d) // 2])(gzip.compress(META)), "truncated_archive"),
    "not_gzip": ("meta.csv.gz", lambda: META, "corrupt_archive"),
    "not_a_zip": ("meta.zip", lambda: b"PK\x03\x04 not a zip", "corrupt_archive"),
}


@pytest.mark.parametrize("name", sorted(META_DAMAGE))
def test_a_damaged_meta_archive_is_a_rejected_file(tmp_path, name):
    file_name, data, reason = META_DAMAGE[name]
    path = tmp_path / file_name
    path.write_bytes(data())
    rows, counts, reasons = _parse(parse_meta_file, path)
    assert counts["files_unreadable"] == 1 and reasons == [reason]
    assert rows == counts["meta_rows_mapped"]  # the mappings before the damage are kept and counted
    if name == "truncated_gzip":
        assert 0 < rows < 3000


@pytest.mark.parametrize("damage", ["meta_truncated"])
def test_the_citations_stage_goes_on_past_a_damaged_archive(tmp_path, capsys, damage):
    out = tmp_path / "build"
    parquet_io.write_table(DOCUMENTS.empty_table(), str(out / "documents" / "part-00000-of-00001.parquet"))
    (tmp_path / "coci.csv").write_bytes(CSV)
    argv = ["citations", "--out", str(out), "--opencitations", str(tmp_path / "coci.csv"), "--runner", "FnApiRunner"]
    (tmp_path / "meta.csv.gz").write_bytes(gzip.compress(META)[:500])
    argv += ["--meta", str(tmp_path / "meta.csv.gz")]
    assert main(argv) == 0
    assert "cannot be read on (files_unreadable)" in capsys.readouterr().err
    counts = read_stage_counts(str(out), "citations")
    assert counts["files_unreadable"] == 1 and counts["rows_read"] == 2
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "citations"))
    assert sorted(rejects.column("reason").to_pylist()) == ["truncated_archive"]
