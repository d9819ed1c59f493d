"""The text stage's numeric flags are checked before anything runs. `--extract-timeout 0`
(or below) made every extraction a timeout and replaced a build's 13 documents with 4;
`--rate-per-host 0` or below fetched live with no rate limit at all; `--max-urls-per-paper
0` planned no URL and blamed the metadata ('their metadata gives none'); `--host-shards 0`
or below was taken as 1; `--extract-workers -1` was refused only inside the run. Each is a
usage error when the command line is parsed now (exit 2, one line naming the flag), and the
build is left as it was."""

from __future__ import annotations

import pytest

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import PAPERS


@pytest.mark.parametrize("flag, value, said", [
    ("--extract-timeout", "0", "must be above 0, not 0"), ("--extract-timeout", "-5", "must be above 0, not -5"),
    ("--rate-per-host", "0", "must be above 0, not 0"), ("--rate-per-host", "-1", "must be above 0, not -1"),
    ("--rate-per-host", "nan", "must be above 0, not nan"), ("--rate-per-host", "inf", "must be above 0, not inf"),
    ("--extract-timeout", "nan", "must be above 0, not nan"),
    ("--max-urls-per-paper", "0", "must be 1 or more, not 0"), ("--host-shards", "0", "must be 1 or more, not 0"),
    ("--host-shards", "-2", "must be 1 or more, not -2"), ("--extract-workers", "-1", "must be 0 or more, not -1"),
])
def test_a_flag_out_of_range_is_refused_before_the_run(tmp_path, monkeypatch, capsys, flag, value, said) -> None:
    import openmsd_build.pipelines.text as pipeline

    out = tmp_path / "build"
    paper = {name: None for name in PAPERS.names} | {
        "doi": "10.1/a", "urls": [{"url": "http://example.org/a", "kind": "landing", "rank": 0}]}
    parquet_io.write_table(parquet_io.table_from_rows([paper], PAPERS),
                           parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))

    def build(*args, **kwargs):
        raise AssertionError("the pipeline ran")

    monkeypatch.setattr(pipeline, "build", build)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    with pytest.raises(SystemExit) as stop:
        main(["text", "--out", str(out), "--fetch", "http", flag, value])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert lines == [f"openmsd-build text: error: argument {flag}: {said}"] and "Traceback" not in err, err
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
