"""Empty results are never silent: a stage that keeps nothing warns with the likely cause,
records it in its `_stats`, `run` repeats it at the end, the report shows a notice instead
of tables of zeros, and `export` refuses the build with that reason; a high reject rate is
loud and `--max-reject-rate` stops it; re-running a stage says which later ones are stale."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from openmsd_build.cli import main
from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.notices import check_reject_rate, stage_warnings

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]
COCI = "opencitations/coci_rows_from_citecorp_api.csv"


def test_citations_warning_names_the_cause():
    counts = {"rows_read": 135, "citing_missing": 133, "duplicate_edge": 2, "documents_read": 125}
    [line] = stage_warnings("citations", counts)
    assert line.startswith("citations kept 0 of 135 rows read; 133 rows name a citing DOI that is not among the 125")
    assert "are the OpenCitations and metadata slices from the same papers?" in line
    # a healthy stage says nothing; a suspiciously small one does
    assert stage_warnings("citations", {"rows_read": 1000, "edges_kept": 900, "documents_read": 50}) == []
    assert stage_warnings("citations", {"rows_read": 1000, "edges_kept": 3, "cited_missing": 990})
    assert stage_warnings("pairs", {}) and stage_warnings("split", {"documents_read": 9, "no_link": 9})
    assert stage_warnings("text", {"papers": 10, "documents.no_text": 10})


def test_citations_warning_names_drops_not_tallies():
    """Rows lost mostly to duplicates: the warning listed `lines_parsed`, `input_lines`,
    `rows_read` as if they were drops, and not the real reason."""
    counts = {"input_lines": 200_002, "lines_parsed": 200_002, "rows_read": 183_208, "rows_parsed": 183_207,
              "edges_kept": 39, "duplicate_edge": 183_168, "malformed_row": 1, "documents_read": 100,
              "omid_resolved": 90_000, "rows_too_long": 1}
    [line] = stage_warnings("citations", counts)
    assert line == "citations kept 39 of 183,208 rows read; dropped: duplicate_edge 183,168, malformed_row 1"


def test_a_local_file_that_is_another_text_warns():
    """A manifest row mapping a paper to another paper's PDF was only counted (title_mismatch):
    the user named that file for that DOI, so it is said (papers, not their abstracts)."""
    counts = {"papers": 10, "documents.kept": 9, "fetch.ok": 10, "local.papers_matched": 10, "local.manifest_used": 1,
              "abstracts_wrong.title_mismatch": 2, "documents.title_mismatch": 1}
    assert any(w.startswith("files read with --fetch local: print another title than their paper's (title_mismatch: "
                            "1 papers dropped, 2 abstracts left out)")
               for w in stage_warnings("text", counts))
    del counts["local.papers_matched"]  # the same counts from archives: a wrong page is no user's mapping
    assert not any("--fetch local" in w for w in stage_warnings("text", counts))


def test_archived_records_cut_short_warn():
    """A truncated WARC's last record is not replayed (`warc_index.CUT_SHORT`): said, not
    left to a `not_in_archive` count."""
    healthy = {"papers": 10, "documents.kept": 10, "fetch.ok": 20, "extracted.pdf": 20, "archive.files_indexed": 2}
    assert stage_warnings("text", healthy) == []
    [line] = stage_warnings("text", {**healthy, "archive.records_cut_short": 1})
    assert line.startswith("1 archived record ends before the Content-Length (a truncated file?), not replayed")


def test_local_folder_warnings_count_url_rows_and_name_the_folder():
    """A manifest of URL rows matches no DOI but reads files: no "nothing matched" warning;
    a folder that gave nothing says so, not the `--fetch none` hint."""
    read_by_url = {"papers": 5, "local.papers_matched": 0, "fetch.ok": 2, "extracted.pdf": 2, "documents.kept": 2,
                   "documents.no_text": 3}
    assert not any("matched" in line for line in stage_warnings("text", read_by_url))
    nothing = {"papers": 5, "local.papers_matched": 0, "documents.no_text": 5}
    lines = stage_warnings("text", nothing)
    assert any(line.startswith("no file of the folder matched any of the 5 papers") for line in lines)
    assert any(line.endswith("no file of the folder was read for them") for line in lines), lines


def test_input_files_cut_short_warn():
    """A truncated .jsonl.gz or .csv.gz keeps the records before the cut: one reject row is
    not enough to tell the user the rest of the file is missing."""
    papers = {"read.unpaywall": 1000, "written": 990, "rejected.unpaywall.truncated_gzip": 1, "with_abstract": 900}
    [line] = stage_warnings("papers", papers)
    assert line.startswith("1 input file ends early or cannot be read on (truncated_gzip 1)")
    assert stage_warnings("papers", {**papers, "rejected.unpaywall.truncated_gzip": 0}) == []
    citations = {"rows_read": 416, "edges_kept": 400, "files_unreadable": 2, "documents_read": 300}
    [line] = stage_warnings("citations", citations)
    assert line.startswith("2 input files end early or cannot be read on (files_unreadable)")


def test_high_reject_rate_is_loud_and_limited():
    counts = {"read.crossref": 100, "rejected.crossref.bad_doi": 60, "written": 40}
    assert any("rejected 60 of 100 records read (60%)" in line for line in stage_warnings("papers", counts))
    with pytest.raises(UserError, match="--max-reject-rate 0.5"):
        check_reject_rate("papers", counts, 0.5)
    check_reject_rate("papers", counts, 1.0)
    check_reject_rate("papers", {**counts, "rejected.crossref.bad_doi": 5}, 0.5)


@pytest.fixture(scope="module")
def empty_citations_build(tmp_path_factory, real_samples):
    """`run` on a generated sample with real OpenCitations rows (other papers): 0 edges."""
    root = tmp_path_factory.mktemp("empty-citations")
    assert main(["sample", "--out", str(root / "inputs"), "--papers", "60", "--seed", "3"]) == 0
    return root


def test_empty_citations_warn_report_and_export(empty_citations_build, real_samples, capsys):
    root = empty_citations_build
    out = str(root / "build")
    code = main(["run", "--inputs", str(root / "inputs"), "--out", out, "--fetch", "none",
                 "--opencitations", str(real_samples / COCI), "--top-k", "5", *FNAPI])
    assert code == 0
    captured = capsys.readouterr()
    err = captured.err
    # said when the stage ends, and again at the end of the run
    cause = "are the OpenCitations and metadata slices from the same papers?"
    assert err.count(cause) == 2, err
    tail = err[err.index("warnings (also in _stats"):]
    assert "citations: citations kept 0 of" in tail and "pairs: pairs wrote 0 pairs" in tail
    stats = json.loads(Path(layout.stats_path(out, "citations")).read_text())
    assert any(cause in line for line in stats["warnings"])
    assert json.loads(Path(layout.stats_path(out, "papers")).read_text())["warnings"] == []
    # every stage's _stats lists the files it read
    inputs = {s: json.loads(Path(layout.stats_path(out, s)).read_text())["inputs"]
              for s in ("papers", "text", "citations", "split", "pairs")}
    assert [(f["source"], f["path"]) for f in inputs["citations"] if f["source"] == "opencitations"] == [
        ("opencitations", str(real_samples / COCI))]
    assert {f["source"] for f in inputs["split"]} >= {"text/documents", "citations/citations"}
    assert inputs["pairs"] and inputs["text"] and inputs["papers"]
    # the report: warnings at the top and a notice instead of tables of zeros
    report = (Path(out) / "report" / "report.md").read_text()
    assert "> **Warning:** citations: citations kept 0 of" in report
    assert "No related pairs" in report and "Table 3" not in report
    html = (Path(out) / "report" / "report.html").read_text()
    assert 'class="warning"' in html
    # export refuses, naming the reason
    assert main(["export", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "export refused: the build has no related pairs" in err and cause in err
    assert not (Path(out) / "export").exists()
    # so does a recipe with a part made of pairs; one of titles and abstracts alone needs no
    # pair, but the splits hold only linked papers, so it writes nothing and says why
    assert main(["export", "--out", out, "--recipe", "openmsd-dc"]) == 2
    err = capsys.readouterr().err
    assert "export --recipe openmsd-dc refused: the build has no related pairs, so its part mix:dc would have no" \
        in err and cause in err
    assert not (Path(out) / "export").exists()
    recipe = root / "ta.json"
    recipe.write_text(json.dumps({"name": "ta", "splits": ["train", "idt"], "parts": [{"kind": "title-abstract"}]}))
    assert main(["export", "--out", out, "--recipe", str(recipe)]) == 0
    assert "warning: recipe ta wrote no example of 0 candidates; its splits (train, idt) hold no paper" \
        in capsys.readouterr().err
    # a release is allowed (ids of what there is) but says the same
    assert main(["release", out, *FNAPI]) == 0
    assert cause in capsys.readouterr().err


def test_rerun_says_which_stages_are_stale(empty_citations_build, capsys):
    root = empty_citations_build
    out = root / "stale"
    shutil.copytree(root / "build", out)
    inputs = root / "inputs"
    (out / "release").mkdir(exist_ok=True)  # made from the build before: a stage run alone says so
    assert main(["papers", "--out", str(out), "--unpaywall", str(inputs / "unpaywall" / "*.jsonl.gz"), *FNAPI]) == 0
    err = capsys.readouterr().err
    assert "warning: text, citations, split, pairs, contexts are now stale (papers was rebuilt after they ran)" in err
    line = next(line for line in err.splitlines() if "made from the build before papers ran" in line)
    assert "release/" in line and f"of {out} " in line and "make them again once the build is whole" in line
    shutil.rmtree(out / "release")
    assert main(["report", str(out)]) == 0
    assert "warning: text is stale (upstream papers was rebuilt after text ran)" in capsys.readouterr().err
    assert main(["run", "--inputs", str(inputs), "--out", str(out), "--from-stage", "citations", "--plan"]) == 0
    plan = capsys.readouterr().out
    assert "text is stale" in plan and "--from-stage text" in plan
    # a stage run on stale inputs says so; the stages stale before it ran are not blamed on it
    assert main(["pairs", "--out", str(out), *FNAPI]) == 0
    err = capsys.readouterr().err
    assert "pairs ran on stale inputs (upstream citations is stale): its outputs are stale too; re-run with " \
        "`openmsd-build run ... --from-stage text`" in err
    assert "warning: still stale: text (upstream papers was rebuilt after text ran); citations (" in err
    assert "now stale (pairs was rebuilt" not in err
    # evaluate refuses a stale build, as export and release do
    assert main(["evaluate", "--out", str(out), "--baseline", "bm25"]) == 2
    assert "evaluate refused: stale stages" in capsys.readouterr().err
    assert main(["evaluate-pools", "--out", str(out)]) == 2
    assert "evaluate-pools refused: stale stages" in capsys.readouterr().err
    # and run's own baseline is not computed on it (it was, and written to evaluation/)
    assert main(["run", "--inputs", str(inputs), "--out", str(out), "--from-stage", "pairs", "--to-stage", "pairs",
                 *FNAPI]) == 0
    printed = capsys.readouterr().out
    assert "   skipped: text, citations, split, pairs, contexts are stale" in printed, printed
    assert not (out / "evaluation").exists()


def test_a_warnings_breakdown_adds_up_to_its_total():
    """"8 manifest rows were rejected (a 3, b 2, c 1)": the two smallest reasons were left
    out with no sign, and the breakdown summed to 6."""
    counts = {"local.rejected.local_manifest_bad_row": 3, "local.rejected.local_path_outside_folder": 2,
              "local.rejected.local_file_not_a_document": 1, "local.rejected.local_file_missing": 1,
              "local.rejected.local_doi_not_among_papers": 1, "local.manifest_used": 1, "papers": 3,
              "local.papers_matched": 1, "documents.kept": 1}
    line = next(line for line in stage_warnings("text", counts) if "rejected" in line)
    assert "(local_manifest_bad_row 3, local_path_outside_folder 2, " in line and ", and 2 for 2 other reasons)" in line


def test_a_folder_without_manifest_that_matched_nothing_is_asked_about_its_names():
    """Files named after the DOIs but of another type (.xml) matched nothing, and the warning
    asked about "the manifest" that was never given, and not about the files skipped."""
    counts = {"papers": 2, "local.papers_matched": 0, "documents.no_text": 2, "local.files_of_other_types": 3}
    line = next(line for line in stage_warnings("text", counts) if line.startswith("no file of the folder matched"))
    assert "manifest" not in line and "(3 other files were not)" in line and ".xhtml" in line
    line = next(line for line in stage_warnings("text", {**counts, "local.manifest_used": 1})
                if line.startswith("no file of the folder matched"))
    assert "does the manifest use the papers' DOIs or URLs?" in line


def test_one_empty_test_split_is_warned_about():
    """A build whose languages all fit in the top --top-k has no ODT: its pairs, evaluation and
    export configs were empty with no warning (only both test splits empty was said)."""
    counts = {"documents_read": 211, "train": 125, "idt": 13, "odt": 0,
              **{f"top_language_rank.{lang}": i for i, lang in enumerate(("en", "es", "id", "it", "pt"), 1)}}
    [line] = stage_warnings("split", counts)
    assert "split put no paper in ODT" in line and "all 5 languages" in line and "lower --top-k" in line
    assert "split put no paper in IDT" in stage_warnings("split", {**counts, "idt": 0, "odt": 4})[0]
    assert stage_warnings("split", {**counts, "odt": 4}) == []


def test_a_split_of_no_documents_is_warned_about():
    """A split over an empty documents/ printed its counts (all zero) and no warning of its own."""
    [line] = stage_warnings("split", {"documents_read": 0, "no_link": 0})
    assert line.startswith("split read 0 documents") and "text stage's warning" in line


def test_refused_addresses_name_the_flag_that_permits_them():
    """Fetching your own server (an intranet repository, a local mirror) gave only
    `errors: blocked_address 13`: the refusal of private and loopback addresses is the
    default, and the warning did not say which flag permits them."""
    counts = {"papers": 13, "documents.no_text": 13, "fetch.error.blocked_address": 13}
    lines = stage_warnings("text", counts)
    assert "errors: blocked_address 13" in lines[0]
    assert any(line.startswith("13 URLs were refused") and "--allow-network CIDR" in line for line in lines), lines
    # some refused among others fetched: said too
    counts = {"papers": 13, "documents.kept": 10, "fetch.ok": 10, "fetch.error.blocked_address": 3}
    assert any("--allow-network CIDR" in line for line in stage_warnings("text", counts))


def test_a_test_split_without_a_pair_is_warned_about():
    """A small build of one's own put 1 paper in IDT: the split stage said nothing (IDT was
    not empty), and pairs wrote train pairs and none in IDT or ODT without a word, so
    evaluate and export had no IDT or ODT task to offer."""
    counts = {"dc_kept.train": 20, "cc_pairs.train": 12, "bc_pairs.train": 11, "cc_pairs.idt": 0, "bc_pairs.idt": 0,
              "cc_pairs.odt": 0, "bc_pairs.odt": 0}
    [line] = stage_warnings("pairs", counts)
    assert line.startswith("pairs wrote no related pair in IDT, ODT"), line
    assert stage_warnings("pairs", {**counts, "dc_kept.idt": 1, "bc_pairs.odt": 3}) == []
