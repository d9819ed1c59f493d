"""A pretty-printed Unpaywall file (one JSON document) was rejected line by line as
`invalid_json`, the run refused with nothing saying why; the refusal now says that the flag
takes JSON Lines. A JSON Lines file, and a Crossref document (which is read as one), get no
such line."""

from __future__ import annotations

import gzip
import json

import pytest

from openmsd_build.cli import main

RECORDS = [{"doi": f"10.1/x{i}", "title": f"Title {i}", "is_oa": True} for i in range(3)]


@pytest.mark.parametrize("name, data", [
    ("array.json", json.dumps(RECORDS, indent=2).encode()),
    ("object.json.gz", gzip.compress(json.dumps(RECORDS[0], indent=2).encode())),
    ("compact-array.json", json.dumps(RECORDS).encode()),
])
def test_a_json_document_given_as_json_lines_is_named(tmp_path, capsys, name, data) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["papers", "--out", str(tmp_path / "out"), "--unpaywall", str(path), "--runner", "FnApiRunner"]) == 2
    err = capsys.readouterr().err
    assert f"{path} is one JSON document, not JSON Lines: --unpaywall takes one record per line" in err, err


def test_json_lines_get_no_such_line(tmp_path, capsys) -> None:
    path = tmp_path / "u.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n" + "{broken\n" * 30)
    assert main(["papers", "--out", str(tmp_path / "out"), "--unpaywall", str(path), "--runner", "FnApiRunner"]) == 2
    err = capsys.readouterr().err
    assert "invalid_json" in err and "not JSON Lines" not in err, err
