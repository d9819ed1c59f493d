"""`reconstruct`'s `--fetch` is checked before its papers step: a typo in the form, WARCs
that match no file, a local folder that is not there, or `--warc-prefix` without
`cc-index:` stopped the run only after the papers stage had read the whole snapshots
(hours on a full Unpaywall), and a malformed `--fetch` was reported as the *text* command's
usage. Now each is one `openmsd-build reconstruct: error:` line, exit 2, and nothing is
written. The release is a handful of files made here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main

IDS = "ids/split=train/part-00000-of-00001.parquet"


def _release(root: Path) -> Path:
    rel = root / "rel"
    (rel / IDS).parent.mkdir(parents=True)
    pq.write_table(pa.table({"doi": ["10.1/a"], "split": ["train"], "language": ["en"]}), rel / IDS)
    data = (rel / IDS).read_bytes()
    (rel / "MANIFEST.json").write_text(json.dumps(
        {"files": [{"path": IDS, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}]}))
    return rel


@pytest.mark.parametrize("fetch, said", [
    (["--fetch", "warc"], "--fetch must be none | http"),
    (["--fetch", "warc:{tmp}/no-such-*.warc.gz"], "matches no file"),
    (["--fetch", "local:{tmp}/no-such-folder"], "is not a folder"),
    (["--fetch", "warc:{tmp}/crossref.jsonl", "--warc-prefix", "/data"], "--warc-prefix applies only to"),
])
def test_a_wrong_fetch_is_refused_before_the_papers_step(tmp_path, capsys, fetch, said) -> None:
    rel = _release(tmp_path)
    crossref = tmp_path / "crossref.jsonl"
    crossref.write_text(json.dumps({"DOI": "10.1/a", "title": ["A"], "type": "journal-article"}) + "\n")
    out = tmp_path / "out"
    argv = ["reconstruct", str(rel), "--out", str(out), "--crossref", str(crossref),
            *(a.format(tmp=tmp_path) for a in fetch)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "usage:" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("openmsd-build reconstruct: error:")]
    assert len(lines) == 1 and said in lines[0], err
    assert not out.exists() or not any(out.iterdir())  # the papers step never ran


@pytest.mark.parametrize("flag, value, said", [("--extract-timeout", "0", "must be above 0, not 0"),
                                               ("--rate-per-host", "0", "must be above 0, not 0"),
                                               ("--rate-per-host", "nan", "must be above 0, not nan"),
                                               ("--max-urls-per-paper", "0", "must be 1 or more, not 0")])
def test_a_number_out_of_range_is_refused_before_the_papers_step(tmp_path, capsys, flag, value, said) -> None:
    """Out of range, the text step's numbers stopped the run only after the papers step; then
    they were checked at the start of reconstruct's run; they are usage errors when the
    command line is parsed now, as the text stage's own flags (exit 2, one line)."""
    rel = _release(tmp_path)
    crossref = tmp_path / "crossref.jsonl"
    crossref.write_text(json.dumps({"DOI": "10.1/a", "title": ["A"], "type": "journal-article"}) + "\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        main(["reconstruct", str(rel), "--out", str(out), "--crossref", str(crossref), "--fetch", "none", flag, value])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert lines == [f"openmsd-build reconstruct: error: argument {flag}: {said}"], err
    assert not out.exists()
