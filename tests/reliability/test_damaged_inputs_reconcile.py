"""A text stage built from damaged inputs still reconciles: its rejects are the extraction
failures plus the input's own rejects (archive files that are not WARCs or hold records cut
short, manifest rows that cannot be used), each counted in the stage's stats.

`reconcile.check_text` is what the soak script and the reliability suite use to say that a
build lost nothing; without these rows in its sum, a build from a damaged archive would look
like a loss (or hide one)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from reconcile import check_text

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import PAPERS, REJECTS
from openmsd_build.text.fetch import warc_index
from openmsd_build.text.fetch.local_files import MISSING, OUTSIDE, write_manifest_csv

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]


def _counts(out: Path) -> dict:
    return json.loads((out / "_stats" / "text.json").read_text())["counts"]


def _reject_reasons(out: Path) -> list[str]:
    return sorted(r["reason"] for r in parquet_io.read_table(layout.rejects_dir(str(out), "text"),
                                                              schema=REJECTS).to_pylist())


def test_a_build_from_damaged_archives_reconciles(sample_inputs, tmp_path):
    out, archives = tmp_path / "build", tmp_path / "archives"
    assert main(["run", "--inputs", str(sample_inputs), "--out", str(out), "--to-stage", "papers", "--no-report",
                 *FNAPI]) == 0
    archives.mkdir()
    [warc] = sorted((sample_inputs / "warc").glob("*.warc.gz"))
    shutil.copy(warc, archives / "whole.warc.gz")
    last = list(warc_index.index_warc_file(str(warc)))[-1]  # a copy cut inside its last response
    (archives / "cut.warc.gz").write_bytes(warc.read_bytes()[: last["offset"] + last["length"] // 2])
    (archives / "junk.warc.gz").write_bytes(b"not an archive at all\n")

    assert main(["text", "--out", str(out), "--fetch", f"warc:{archives}/*.warc.gz", *FNAPI]) == 0
    counts = _counts(out)
    assert counts[warc_index.CUT_SHORT] == 1 and counts["archive.files_cut_short"] == 1
    assert sum(v for k, v in counts.items() if k.startswith("archive.rejected.")) == 1
    reasons = _reject_reasons(out)
    assert reasons.count("archive_records_cut_short") == 1 and len(reasons) >= 2
    assert check_text(out) == []


def test_a_local_build_with_rejected_manifest_rows_reconciles(tmp_path):
    out, folder = tmp_path / "build", tmp_path / "files"
    folder.mkdir()
    (folder / "page.html").write_text("<html><head><title>A page</title></head><body><p>"
                                      + "Words of a page. " * 40 + "</p></body></html>", encoding="utf-8")
    (tmp_path / "outside.pdf").write_bytes(b"%PDF-1.4 outside")
    papers = [{"doi": d, "sources": ["unpaywall"], "n_records": 1, "categories": [], "relations": [], "urls": []}
              for d in ("10.1000/page", "10.1000/gone", "10.1000/up")]
    parquet_io.write_table(parquet_io.table_from_rows(papers, PAPERS),
                           parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))
    manifest = tmp_path / "m.csv"
    write_manifest_csv([{"doi": "10.1000/page", "path": "page.html"}, {"doi": "10.1000/gone", "path": "gone.pdf"},
                        {"doi": "10.1000/up", "path": "../outside.pdf"}], str(manifest))

    assert main(["text", "--out", str(out), "--fetch", f"local:{folder}@{manifest}", *FNAPI]) == 0
    counts = _counts(out)
    assert counts[f"local.rejected.{MISSING}"] == 1 and counts[f"local.rejected.{OUTSIDE}"] == 1
    assert counts["extracted.landing"] == 1
    assert _reject_reasons(out) == sorted([MISSING, OUTSIDE])
    assert check_text(out) == []
