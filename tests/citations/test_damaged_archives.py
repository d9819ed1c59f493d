"""Damaged OpenCitations archives cost the file, never the stage: a zip whose member is
encrypted or packed with a method `zipfile` lacks (Windows' Deflate64) raised RuntimeError /
NotImplementedError, and a truncated or corrupt OpenCitations Meta archive (`--meta`) raised
EOFError / BadZipFile, each out of the citations stage with a traceback (exit 1). Now each
is `files_unreadable` with one reject naming the file, the rows (or Meta mappings) read
before the damage are kept, and the stage warns."""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import pytest

from openmsd_build.citations.opencitations import parse_citation_file, parse_meta_file
from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.stats import read_stage_counts
from openmsd_build.schemas import DOCUMENTS

CSV = b"oci,citing,cited\n1,10.1000/a,10.1000/b\n2,10.1000/b,10.1000/a\n"
META = b"id,title\n" + b"".join(b'"omid:br/%d doi:10.1000/m%d",t\n' % (i, i) for i in range(3000))


def _zip_with_flags(data: bytes, encrypted: bool = False, method: int | None = None) -> bytes:
    """A one-member zip (`a.csv`, stored) whose headers claim encryption or another method."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("a.csv", data)
    raw = bytearray(buffer.getvalue())
    central = raw.find(b"PK\x01\x02")
    if encrypted:
        raw[6] |= 1
        raw[central + 8] |= 1
    if method is not None:
        raw[8] = method
        raw[central + 10] = method
    return bytes(raw)


DAMAGED_ZIPS = {
    "encrypted_member": lambda: _zip_with_flags(CSV, encrypted=True),
    "deflate64_member": lambda: _zip_with_flags(CSV, method=9),
}


def _parse(function, path: Path) -> tuple[int, Counter, list[str]]:
    rows, counts, reasons = 0, Counter(), []
    for table, rejects, batch_counts in function(str(path)):
        rows += table.num_rows
        counts.update(batch_counts)
        reasons += [r["reason"] for r in rejects]
    return rows, counts, reasons


@pytest.mark.parametrize("name", sorted(DAMAGED_ZIPS))
def test_an_unreadable_zip_member_is_a_rejected_file(tmp_path, name):
    path = tmp_path / "coci.zip"
    path.write_bytes(DAMAGED_ZIPS[name]())
    for function in (parse_citation_file, parse_meta_file):
        rows, counts, reasons = _parse(function, path)
        assert (rows, counts["files_unreadable"], reasons) == (0, 1, ["corrupt_archive"])


META_DAMAGE = {
    "truncated_gzip": ("meta.csv.gz", lambda: (lambda d: d[: len(d) // 2])(gzip.compress(META)), "truncated_archive"),
    # gzip's magic, then no gzip (a plain CSV under a .gz name is read as the CSV it is)
    "not_gzip": ("meta.csv.gz", lambda: b"\x1f\x8b" + META, "corrupt_archive"),
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


@pytest.mark.parametrize("damage", ["meta_truncated", "zip_encrypted"])
def test_the_citations_stage_goes_on_past_a_damaged_archive(tmp_path, capsys, damage):
    out = tmp_path / "build"
    parquet_io.write_table(DOCUMENTS.empty_table(), str(out / "documents" / "part-00000-of-00001.parquet"))
    (tmp_path / "coci.csv").write_bytes(CSV)
    argv = ["citations", "--out", str(out), "--opencitations", str(tmp_path / "coci.csv"), "--runner", "FnApiRunner"]
    if damage == "meta_truncated":
        (tmp_path / "meta.csv.gz").write_bytes(gzip.compress(META)[:500])
        argv += ["--meta", str(tmp_path / "meta.csv.gz")]
    else:
        (tmp_path / "bad.zip").write_bytes(DAMAGED_ZIPS["encrypted_member"]())
        argv += ["--opencitations", str(tmp_path / "bad.zip")]
    assert main(argv) == 0
    assert "cannot be read on (files_unreadable)" in capsys.readouterr().err
    counts = read_stage_counts(str(out), "citations")
    assert counts["files_unreadable"] == 1 and counts["rows_read"] == 2
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "citations"))
    assert sorted(rejects.column("reason").to_pylist()) == [
        "truncated_archive" if damage == "meta_truncated" else "corrupt_archive"]


def _blank_flood_gzip(path: Path, lines: int) -> None:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        out.write(comp.compress(b"oci,citing,cited\n1,10.1000/a,10.1000/b\n"))
        for _ in range(lines >> 20):
            out.write(comp.compress(b"\n" * (1 << 20)))
        out.write(comp.compress(b"2,10.1000/c,10.1000/d\n"))
        out.write(comp.flush())


def test_a_gzip_of_blank_lines_is_a_compression_bomb(tmp_path):
    """A 64 KB gzip of 64M blank lines was read line by line to its end (over two minutes per
    MB of gzip for 1G lines); past one line per compressed byte (and a million lines) the rest
    of the file is one `compression_bomb` reject, the rows before it kept and counted."""
    path = tmp_path / "flood.csv.gz"
    _blank_flood_gzip(path, 64 << 20)
    rows, counts, reasons = _parse(parse_citation_file, path)
    assert (rows, counts["rows_read"], counts["files_unreadable"], reasons) == (1, 1, 1, ["compression_bomb"])
    assert counts["input_lines"] == counts["lines_parsed"] < 2 << 20
    zipped = tmp_path / "flood.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.csv", gzip.decompress(path.read_bytes()))
    rows, counts, reasons = _parse(parse_citation_file, zipped)
    assert (rows, counts["files_unreadable"], reasons) == (1, 1, ["compression_bomb"])


def test_real_and_long_line_inputs_are_no_bomb(tmp_path, real_sample):
    """Real rows (far under one line per compressed byte) and one long line (which costs no
    time per line) are read as before."""
    real = real_sample("opencitations/coci_rows_from_citecorp_api.csv")
    gz = tmp_path / "real.csv.gz"
    gz.write_bytes(gzip.compress(real.read_bytes()))
    assert _parse(parse_citation_file, gz) == _parse(parse_citation_file, real)
    long = tmp_path / "long.csv.gz"
    long.write_bytes(gzip.compress(b"citing,cited\n10.1000/a," + b"x" * (40 << 20) + b"\n10.1000/c,10.1000/d\n"))
    rows, counts, reasons = _parse(parse_citation_file, long)
    assert (rows, reasons) == (1, ["line_too_long"])
