"""A citations run that keeps no edge where the build holds some is refused, its previous
outputs kept, as the text stage refuses one that keeps no document: `citations
--opencitations` with another slice's file (every row names papers the build lacks)
replaced a build's edges with none, exit 0, the warning the only trace."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq

from openmsd_build.cli import main
from openmsd_build.evaluate.testing import write_tiny_build

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]


def test_a_run_that_would_empty_citations_is_refused(tmp_path, capsys, real_sample) -> None:
    out = tmp_path / "build"
    write_tiny_build(str(out))
    (out / "_stats").mkdir()  # a build's output root: a stage finished there
    (out / "_stats" / "text.json").write_text("{}")
    before = pq.read_table(out / "citations").num_rows
    assert before > 0
    other = real_sample("opencitations/coci_rows_from_citecorp_api.csv")  # rows of other papers
    assert main(["citations", "--out", str(out), "--opencitations", str(other), *FNAPI]) == 2
    err = capsys.readouterr().err
    assert f"citations: this run kept 0 edges where {out / 'citations'} holds {before:,}; the previous outputs " \
           "were kept" in err, err
    assert "are the OpenCitations and metadata slices from the same papers?" in err
    assert pq.read_table(out / "citations").num_rows == before
    # the way through, named in the message, when an empty result is meant (a new slice)
    assert f"remove {out / 'citations'} and run again" in err
    shutil.rmtree(out / "citations")
    assert main(["citations", "--out", str(out), "--opencitations", str(other), *FNAPI]) == 0
