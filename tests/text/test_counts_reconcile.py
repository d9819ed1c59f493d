"""The text stage checks its own counts after the run and refuses one that lost records
between its steps (`command.check_counts`, `core.stats.refuse_unreconciled`): Beam's local
`multi_threading` mode with two workers kept 30-242 fewer of 20,000 papers, differently each
run, without an error (the extractions of some papers never reached their document, the
metadata of others never reached its extractions). That mode is refused up front
(`core.runner.refuse_threaded_workers`); the counts catch such a loss from any cause."""

from __future__ import annotations

import pytest
from archive_samples import REDIRECT_URLS, add_papers, write_redirect_warcs

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.core.runner import pipeline_options
from openmsd_build.schemas import DOCUMENTS
from openmsd_build.text import beam as text_beam
from openmsd_build.text.command import check_counts, check_outputs, run_text

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]

HEALTHY = {"papers": 5, "documents.kept": 3, "documents.no_text": 2, "planned.landing": 4, "planned.pdf": 1,
           "local.files_matched.pdf": 1, "follow.citation_pdf_url": 1, "tasks.answered": 7, "fetch.ok": 4,
           "fetch.error.http_404": 2, "extracted.landing": 3, "extract_failed.timeout": 1, "extractions.sent": 4,
           "extractions.received": 4}


def test_healthy_counts_reconcile():
    assert check_counts(HEALTHY) == []
    assert check_counts({"papers": 2, "documents.kept": 2}) == []  # --fetch none: no extraction at all


@pytest.mark.parametrize(("change", "named"), [
    ({"documents.kept": 2}, "papers = documents.*: 5 != 4"),
    ({"extractions.received": 3}, "extractions.sent = extractions.received: 4 != 3"),
    ({"orphan_extractions": 2}, "orphan_extractions = 0: 2 != 0"),
    ({"tasks.answered": 6}, "planned.* + local.files_matched.* + follow.citation_pdf_url = tasks.answered: 7 != 6"),
    ({"extract_failed.timeout": 0}, "fetch.ok = extracted.* + extract_failed.*: 4 != 3"),
])
def test_each_broken_identity_is_named(change, named):
    assert check_counts({**HEALTHY, **change}) == [named]


def _docs(out) -> list[dict]:
    return parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()


def _good_build(tmp_path, capsys) -> tuple[list[str], object, list[dict]]:
    """A build whose text stage ran once and well: (the command's arguments, OUT, its documents)."""
    warcs = write_redirect_warcs(tmp_path / "warcs")
    out = tmp_path / "build"
    add_papers(out, REDIRECT_URLS)
    args = ["text", "--out", str(out), "--fetch", "warc:" + ",".join(warcs), *FNAPI]
    assert main(args) == 0
    before = _docs(out)
    assert before and capsys.readouterr()
    return args, out, before


def test_a_run_that_loses_an_extraction_at_the_join_is_refused_and_replaces_nothing(tmp_path, monkeypatch, capsys):
    args, out, before = _good_build(tmp_path, capsys)

    untag, lost = text_beam.untag, []

    def losing_untag(values, *names):  # the join by DOI misses one paper's extraction, as the runner did
        grouped = untag(values, *names)
        if names == (text_beam.META, text_beam.EXT) and grouped[text_beam.EXT] and not lost:
            lost.append(grouped[text_beam.EXT].pop())
        return grouped

    monkeypatch.setattr(text_beam, "untag", losing_untag)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert lost and "text: this run's counts do not reconcile (extractions.sent" in err, err
    assert "nothing was replaced" in err
    assert _docs(out) == before


def test_a_run_that_writes_fewer_rows_than_it_counts_is_refused(tmp_path, monkeypatch, capsys):
    """A document lost on its way into `documents/` (a write that dropped a row) is seen in the
    files' footers against `documents.kept`: refused, the previous documents kept."""
    from openmsd_build.core import parquet_io as pio

    args, out, before = _good_build(tmp_path, capsys)
    write = pio.write_table

    def dropping(table, path):
        if "/documents/" in path and table.num_rows:
            table = table.slice(0, table.num_rows - 1)
        return write(table, path)

    monkeypatch.setattr(pio, "write_table", dropping)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"(documents/ holds {len(before) - 1} rows where the counts say {len(before)})" in err, err
    assert _docs(out) == before


def test_rows_written_are_checked_against_the_counts(tmp_path):
    warcs = write_redirect_warcs(tmp_path / "warcs")
    out = tmp_path / "build"
    add_papers(out, REDIRECT_URLS)
    counts = run_text(str(out), "warc:" + ",".join(warcs), FNAPI)
    assert check_outputs(str(out), counts) == [] and counts["documents.kept"] and counts["fetch.ok"]
    off = {**counts, "documents.kept": counts["documents.kept"] + 1, "fetch.error.http_404": 0,
           "extract_failed.crashed": counts.get("extract_failed.crashed", 0) + 2}
    fetch_rows = counts["fetch.ok"] + sum(v for k, v in counts.items() if k.startswith("fetch.error."))
    rejects = sum(v for k, v in counts.items() if k.startswith(("extract_failed.", "archive.rejected.")))
    assert check_outputs(str(out), off) == [
        f"documents/ holds {counts['documents.kept']} rows where the counts say {counts['documents.kept'] + 1}",
        f"fetch/ holds {fetch_rows} rows where the counts say {fetch_rows - counts.get('fetch.error.http_404', 0)}",
        f"rejects/text/ holds {rejects} rows where the counts say {rejects + 2}",
    ]


@pytest.mark.parametrize("workers", ["2", "0"])
def test_threaded_local_workers_are_refused(workers, monkeypatch):
    monkeypatch.setattr("openmsd_build.core.runner.local_cores", lambda: 4)
    with pytest.raises(UserError, match="multi_threading with more than one worker loses or mixes up records"):
        pipeline_options([*FNAPI, "--direct_running_mode=multi_threading", f"--direct_num_workers={workers}"])


def test_local_worker_modes_that_keep_every_record_are_accepted():
    for flags in (["--direct_running_mode=multi_threading", "--direct_num_workers=1"],
                  ["--direct_running_mode=multi_processing", "--direct_num_workers=2"], []):
        pipeline_options([*FNAPI, *flags])
