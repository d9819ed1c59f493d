"""Whole-build reliability: a full sample build reconciles at every stage and is
reproducible, and transient DoFn failures (retried bundles, failed-and-rerun stages) neither
drop nor duplicate a row.

- `openmsd-build sample` + two concurrent `openmsd-build run`: every stage's
  in = out + rejects (+ merges) holds (`reconcile.check_build`), and the two builds have the
  same content hash for every Parquet table and every stage's counters.
- Papers stage on Beam's BundleBasedDirectRunner (which retries a failed bundle, discarding
  its outputs) with DoFns that fail the first attempt of half their bundles after emitting
  output and after writing part files: output identical to the clean build.
- Text stage on FnApiRunner (which does not retry bundles: a failure fails the run) with a
  flaky fetch/extract DoFn (fails after emitting its first output): the failed run is rerun, the result
  is identical to the clean build; and on BundleBasedDirectRunner, which retries the failed
  bundles: the stage's own count checks hold and the result is identical too.
"""

from __future__ import annotations

import pytest
from faults import ENV, MOD_ENV, FlakyMergeAndWriteShard, FlakyReadSourceFile, FlakyReplayArchive
from reconcile import check_build, diff_digests, output_digest

from openmsd_build.papers import command as papers_pipeline
from openmsd_build.pipelines import papers as papers_graph
from openmsd_build.pipelines import text as text_graph
from openmsd_build.text import command as text_pipeline

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]
BUNDLE_RETRYING = ["--runner=BundleBasedDirectRunner"]


# Two builds of the sample (session fixtures) run in the first test that uses them.
pytestmark = pytest.mark.timeout(1200)


def _only(digest: dict, *prefixes: str) -> dict:
    return {k: v for k, v in digest.items() if k.startswith(prefixes)}


def test_full_sample_build_reconciles_and_is_reproducible(clean_builds):
    a, b = clean_builds
    assert check_build(a) == []
    assert check_build(b) == []
    da, db = output_digest(a), output_digest(b)
    assert len(da) >= 15
    assert diff_digests(da, db) == []


def _papers_inputs(sample_inputs):
    return ([str(sample_inputs / "unpaywall" / "*")], [str(sample_inputs / "crossref" / "*")])


def test_papers_stage_survives_retried_bundles(clean_builds, sample_inputs, tmp_path, monkeypatch):
    faults = tmp_path / "faults"
    faults.mkdir()
    monkeypatch.setenv(ENV, str(faults))
    monkeypatch.setattr(papers_graph, "ReadSourceFile", FlakyReadSourceFile)
    monkeypatch.setattr(papers_graph, "MergeAndWriteShard", FlakyMergeAndWriteShard)
    out = tmp_path / "out"
    unpaywall, crossref = _papers_inputs(sample_inputs)
    papers_pipeline.run_papers(str(out), {"unpaywall": unpaywall, "crossref": crossref}, BUNDLE_RETRYING)
    assert len(list(faults.iterdir())) >= 2  # faults were really injected
    assert check_build(out, ["papers"]) == []
    clean = _only(output_digest(clean_builds[0]), "papers", "rejects/papers", "_stats/papers")
    assert diff_digests(_only(output_digest(out), "papers", "rejects/papers", "_stats/papers"), clean) == []


def _flaky_text_build(clean, tmp_path, monkeypatch):
    """(OUT holding the clean build's papers stage, the faults folder): the text stage to run
    there with a fetch/extract DoFn failing the first attempt of about one bundle in six."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(clean / "papers", out / "papers")  # the papers stage's outputs and counts
    if (clean / "rejects" / "papers").is_dir():
        shutil.copytree(clean / "rejects" / "papers", out / "rejects" / "papers")
    (out / "_stats").mkdir()
    shutil.copy(clean / "_stats" / "papers.json", out / "_stats" / "papers.json")
    faults = tmp_path / "faults"
    faults.mkdir()
    monkeypatch.setenv(ENV, str(faults))
    monkeypatch.setenv(MOD_ENV, "6")
    monkeypatch.setattr(text_graph, "ReplayArchive", FlakyReplayArchive)
    return out, faults


def test_text_stage_rerun_after_transient_failures(clean_builds, sample_inputs, tmp_path, monkeypatch):
    out, faults = _flaky_text_build(clean_builds[0], tmp_path, monkeypatch)
    fetch = f"warc:{sample_inputs / 'warc' / '*.warc.gz'}"
    attempts = 0
    while True:  # the FnApiRunner fails the run on the first exception: rerun the stage
        attempts += 1
        try:
            text_pipeline.run_text(str(out), fetch, FNAPI)
            break
        except Exception as exc:  # noqa: BLE001 - Beam wraps the injected fault
            assert "InjectedFault" in repr(exc) or "first attempt" in str(exc), exc
            assert attempts < 12
    assert attempts >= 2 and len(list(faults.iterdir())) >= 1
    assert check_build(out, ["papers", "text"]) == []
    keys = ("documents", "fetch", "rejects/text", "_stats/text")
    assert diff_digests(_only(output_digest(out), *keys), _only(output_digest(clean_builds[0]), *keys)) == []


@pytest.mark.parametrize("stage", ["citations", "split", "pairs"])
def test_downstream_stage_rerun_is_identical(clean_builds, sample_inputs, tmp_path, stage):
    """Re-running one stage alone over a finished build (as after a crash) rewrites its
    folders to exactly the same content."""
    import shutil

    from openmsd_build.cli import main

    out = tmp_path / "out"
    shutil.copytree(clean_builds[0], out)
    argv = ["run", "--out", str(out), "--from-stage", stage, "--to-stage", stage, "--no-report",
            "--opencitations", str(sample_inputs / "opencitations" / "*")]  # the sample the builds read
    if stage != "citations":
        argv = argv[:-2]
    assert main(argv) == 0
    assert check_build(out) == []
    assert diff_digests(output_digest(out), output_digest(clean_builds[0])) == []


def test_check_build_fails_when_a_stage_lost_its_stats(clean_builds, tmp_path):
    """A stage whose `_stats/<stage>.json` is missing is a problem, not a pass (it once
    returned [] for it, so a build whose stats were never written reconciled)."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(clean_builds[0], out)
    (out / "_stats" / "split.json").unlink()
    assert check_build(out) == ["split: no _stats/split.json (the stage did not run, or its stats were lost)"]


def test_text_stage_survives_retried_bundles(clean_builds, sample_inputs, tmp_path, monkeypatch):
    """The text stage on Beam's BundleBasedDirectRunner, which retries a failed bundle and
    discards what its failed attempt emitted (documents, fetch rows, counts): with a
    fetch/extract DoFn failing the first attempt of about one bundle in six after its first
    output, the stage's own checks hold (it would refuse the run otherwise: a retried
    bundle's counts must not be added twice) and the outputs equal the clean build's."""
    out, faults = _flaky_text_build(clean_builds[0], tmp_path, monkeypatch)
    text_pipeline.run_text(str(out), f"warc:{sample_inputs / 'warc' / '*.warc.gz'}", BUNDLE_RETRYING)
    assert len(list(faults.iterdir())) >= 1  # faults were really injected, and retried
    assert check_build(out, ["text"]) == []
    keys = ("documents", "fetch", "rejects/text", "_stats/text")
    assert diff_digests(_only(output_digest(out), *keys), _only(output_digest(clean_builds[0]), *keys)) == []


@pytest.mark.parametrize(("stage", "folder", "flags"), [
    ("papers", "papers", ["--unpaywall", "unpaywall/*", "--crossref", "crossref/*"]),
    ("citations", "citations", ["--opencitations", "opencitations/*"]),
    ("split", "splits", []),
    ("pairs", "pairs/cc", []),
])
def test_a_stage_that_writes_fewer_rows_than_it_counts_is_refused(clean_builds, sample_inputs, tmp_path, monkeypatch,
                                                                   capsys, stage, folder, flags):
    """Every stage checks the rows it wrote (the Parquet footers) against its counts after
    its run (`core.stats.rows_unlike_counts`): a write that lost a row, as a runner that loses
    elements leaves it, is refused and the build's outputs stay as they were."""
    import shutil

    import pyarrow as pa

    from openmsd_build.cli import main
    from openmsd_build.core import parquet_io

    out = tmp_path / "out"
    shutil.copytree(clean_builds[0], out)
    before = output_digest(out)
    write_table, write_tables, dropped = parquet_io.write_table, parquet_io.write_tables, []

    def short(table: pa.Table, path: str) -> pa.Table:
        if f"/{folder}/" in path and "/rejects/" not in path and table.num_rows and not dropped:
            dropped.append(path)
            return table.slice(0, table.num_rows - 1)
        return table

    monkeypatch.setattr(parquet_io, "write_table", lambda table, path: write_table(short(table, path), path))
    monkeypatch.setattr(parquet_io, "write_tables",
                        lambda tables, schema, path: write_tables([short(t, path) for t in tables], schema, path))
    flags = [f if f.startswith("--") else str(sample_inputs / f) for f in flags]
    argv = ["run", "--out", str(out), "--from-stage", stage, "--to-stage", stage, "--no-report", *flags]
    assert main(argv) != 0
    assert dropped, "no row was dropped: the stage writes its folder some other way"
    err = capsys.readouterr().err
    assert f"{stage}: this run's counts do not reconcile ({folder}/" in err, err
    assert diff_digests(output_digest(out), before) == []

