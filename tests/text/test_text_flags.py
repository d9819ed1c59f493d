"""The text stage's numeric flags are checked before anything runs. `--extract-timeout 0`
(or below) made every extraction a timeout and replaced a build's 13 documents with 4;
`--rate-per-host 0` or below fetched live with no rate limit at all; `--max-urls-per-paper
0` planned no URL and blamed the metadata ('their metadata gives none'); `--host-shards 0`
or below was taken as 1. Each is now one line, exit 2, and the build is left as it was."""

from __future__ import annotations

import pytest

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import PAPERS


@pytest.mark.parametrize("flag, value", [
    ("--extract-timeout", "0"), ("--extract-timeout", "-5"), ("--rate-per-host", "0"), ("--rate-per-host", "-1"),
    ("--rate-per-host", "nan"), ("--rate-per-host", "inf"), ("--extract-timeout", "nan"),
    ("--max-urls-per-paper", "0"), ("--host-shards", "0"), ("--host-shards", "-2"),
])
def test_a_flag_out_of_range_is_refused_before_the_run(tmp_path, monkeypatch, capsys, flag, value) -> None:
    import openmsd_build.pipelines.text as pipeline

    out = tmp_path / "build"
    paper = {name: None for name in PAPERS.names} | {
        "doi": "10.1/a", "urls": [{"url": "http://example.org/a", "kind": "landing", "rank": 0}]}
    parquet_io.write_table(parquet_io.table_from_rows([paper], PAPERS),
                           parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))

    def build(*args, **kwargs):
        raise AssertionError("the pipeline ran")

    monkeypatch.setattr(pipeline, "build", build)
    assert main(["text", "--out", str(out), "--fetch", "http", flag, value]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("openmsd-build text: error:")]
    assert len(lines) == 1 and flag in lines[0] and "Traceback" not in err, err
