"""A damaged or hostile release stops `reconstruct` with exit 2 and one bounded line naming
the file, before any pipeline runs: an `ids/` file whose checksum matches but whose schema is
not an ids table (integer or null DOIs, no split column) failed deep inside Beam; a manifest
nested past the recursion limit raised RecursionError; a manifest path of 5,000 characters
was quoted whole; a FIFO blocked the checksum for ever, and a file of another size than
listed was hashed whole before the size was compared. No demo build needed: the release is
a handful of files made here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main

IDS = "ids/split=train/part-00000-of-00001.parquet"


def _release(root: Path, table: pa.Table, extra: list[dict] | None = None) -> Path:
    """A release of one signed ids file (and `extra` manifest entries)."""
    rel = root / "rel"
    (rel / IDS).parent.mkdir(parents=True)
    pq.write_table(table, rel / IDS)
    data = (rel / IDS).read_bytes()
    files = [{"path": IDS, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, *(extra or [])]
    (rel / "MANIFEST.json").write_text(json.dumps({"files": files}))
    return rel


def _ids(**columns) -> pa.Table:
    base = {"doi": pa.array(["10.1/a", "10.1/b"]), "split": pa.array(["train", "train"]),
            "language": pa.array(["en", "de"])}
    base.update(columns)
    return pa.table({k: v for k, v in base.items() if v is not None})


IDS_DAMAGE = {
    "doi_integers": (_ids(doi=pa.array([1, 2], pa.int64())), "column 'doi' is int64, expected string"),
    "doi_nulls": (_ids(doi=pa.array([None, "10.1/b"], pa.string())), "1 null 'doi' value"),
    "no_split_column": (_ids(split=None), "has no 'split' column"),
}


def _reconstruct(rel: Path, out: Path, capsys) -> str:
    assert main(["reconstruct", str(rel), "--out", str(out), "--fetch", "none"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("openmsd-build reconstruct: error:")]
    assert len(lines) == 1 and len(lines[0]) < 700, err
    assert not out.exists() or not any(out.iterdir())
    return lines[0]


@pytest.mark.parametrize("damage", sorted(IDS_DAMAGE))
def test_an_ids_file_of_the_wrong_schema_is_refused_before_any_pipeline(tmp_path, capsys, damage) -> None:
    table, said = IDS_DAMAGE[damage]
    rel = _release(tmp_path, table)
    line = _reconstruct(rel, tmp_path / "out", capsys)
    assert f"{rel / IDS}: " in line and said in line


def test_the_ids_check_reads_a_column_only_without_statistics(tmp_path) -> None:
    """Nulls are told by the footer's statistics; a file written without them is still checked."""
    from openmsd_build.core import parquet_io
    from openmsd_build.core.errors import UserError
    from openmsd_build.schemas.tables import RELEASE_IDS

    path = tmp_path / "ids.parquet"
    pq.write_table(_ids(), path, write_statistics=False)
    parquet_io.check_parts([str(path)], RELEASE_IDS, non_null=("doi", "split"))
    pq.write_table(_ids(split=pa.array(["train", None])), path, write_statistics=False)
    with pytest.raises(UserError, match="1 null 'split' value"):
        parquet_io.check_parts([str(path)], RELEASE_IDS, non_null=("doi", "split"))


@pytest.mark.parametrize("manifest", ["[" * 100_000 + "]" * 100_000,
                                      '{"files": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}"])
def test_a_deeply_nested_manifest_is_refused(tmp_path, capsys, manifest) -> None:
    rel = _release(tmp_path, _ids())
    (rel / "MANIFEST.json").write_text(manifest)
    line = _reconstruct(rel, tmp_path / "out", capsys)
    assert "MANIFEST.json: is not a JSON file (damaged?) (RecursionError" in line


def test_a_long_manifest_path_is_quoted_bounded(tmp_path, capsys) -> None:
    rel = _release(tmp_path, _ids(), extra=[{"path": "ids/split=train/" + "a" * 5000, "sha256": "0" * 64}])
    line = _reconstruct(rel, tmp_path / "out", capsys)
    assert "(5,016 characters)" in line and "file_unreadable" in line


@pytest.mark.parametrize("damage", ["huge", "not_json", "not_utf8", "a_list"])
def test_a_huge_or_malformed_manifest_is_one_line(tmp_path, capsys, monkeypatch, damage) -> None:
    """The manifest was read whole, whatever its size: a hostile release's MANIFEST.json of
    gigabytes went into memory before anything was checked. It is now read as a build's
    `_stats` files are (`core.stats.read_json`), at most `MAX_MANIFEST_BYTES` (here made 1 MB),
    else refused with one line naming it, as one that is not JSON, not UTF-8 or not an object is."""
    from openmsd_build.release import reconstruct

    monkeypatch.setattr(reconstruct, "MAX_MANIFEST_BYTES", 1 << 20)
    rel = _release(tmp_path, _ids())
    manifest = rel / "MANIFEST.json"
    if damage == "huge":  # a valid manifest, padded past the cap
        text = manifest.read_text()
        manifest.write_text(text[:-1] + " " * ((1 << 20) + 1 - len(text)) + "}")
    else:
        manifest.write_bytes({"not_json": b'{"files": [', "not_utf8": b'{"files": "\xff"}', "a_list": b"[]"}[damage])
    line = _reconstruct(rel, tmp_path / "out", capsys)
    assert str(manifest) in line and (damage != "huge" or "is larger than 1 MB" in line), line


def test_a_manifest_larger_than_a_stats_file_is_read(tmp_path) -> None:
    """A release's manifest lists every input file (one Common Crawl's WARCs: ~16 MB), so it is
    not held to a `_stats` file's 32 MB: two crawls' manifest was refused as damaged."""
    from openmsd_build.core.stats import MAX_JSON_BYTES
    from openmsd_build.release.reconstruct import read_manifest

    rel = _release(tmp_path, _ids())
    manifest = rel / "MANIFEST.json"
    text = manifest.read_text()
    manifest.write_text(text[:-1] + " " * (MAX_JSON_BYTES + 1 - len(text)) + "}")
    assert read_manifest(str(rel))["files"]
