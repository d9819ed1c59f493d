"""The contexts stage end to end on the in-process FnApiRunner: documents/, splits/ and
Crossref files in; contexts/, pairs/ccs/, rejects and counts that reconcile out."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from openmsd_build.contexts.command import check_counts, run_contexts
from openmsd_build.core import parquet_io
from openmsd_build.schemas import CONTEXTS, DOCUMENTS, PAIRS, SPLITS


def _write(rows: list[dict], schema, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    full = [{name: row.get(name) for name in schema.names} for row in rows]
    parquet_io.write_table(parquet_io.table_from_rows(full, schema), str(path))


def _work(doi: str, refs: list[dict]) -> dict:
    return {"DOI": doi.upper(), "title": ["t"], "reference": refs}


REFS = [
    {"key": "k1", "DOI": "10.1234/P1", "author": "Smith", "year": "2019"},
    {"key": "k2", "DOI": "10.1234/p2", "author": "Lee", "year": "2020"},
    {"key": "k3", "unstructured": "Brown A (2001) A paper without a DOI."},
]


def _build(tmp_path: Path) -> tuple[Path, str]:
    out = tmp_path / "out"
    docs = [
        {"doi": "10.1234/a", "language": "en", "content": "Intro text. Prior work [1, 2] showed it. Others (Lee et al., "
         "2020; Smith 2019) agree.\n\nNo markers here. Out of range [9]. Brown (2001) had no DOI."},
        {"doi": "10.1234/b", "language": "zh", "content": "先前研究［1，2］表明。没有引用。"},
        {"doi": "10.1234/c", "language": "en", "content": "Shown before [1]."},
        {"doi": "10.1234/d", "language": "en", "content": None},
    ]
    _write(docs, DOCUMENTS, out / "documents" / "part-00000-of-00001.parquet")
    splits = [{"doi": d, "paper_id": k, "split": "train", "language": "en", "group": d}
              for k, d in enumerate(("10.1234/p1", "10.1234/p2", "10.1234/a"))]
    _write(splits, SPLITS, out / "splits" / "part-00000-of-00001.parquet")
    crossref = tmp_path / "crossref"
    crossref.mkdir()
    items = {"items": [_work("10.1234/a", REFS), _work("10.1234/b", REFS[:2]), _work("10.1234/b", REFS[:1]),
                       _work("10.1234/zz", REFS), {"DOI": "not a doi", "reference": REFS}]}
    (crossref / "part-0.json.gz").write_bytes(gzip.compress(json.dumps(items).encode()))
    (crossref / "broken.json").write_text("{not json", encoding="utf-8")
    return out, str(crossref / "*")


def test_contexts_stage_end_to_end(tmp_path, beam_args) -> None:
    out, crossref = _build(tmp_path)
    counts = run_contexts(str(out), [crossref], beam_args, shards=2)
    assert check_counts(counts) == []
    contexts = pq.read_table(out / "contexts").sort_by([("citing_doi", "ascending"), ("sentence_index", "ascending")])
    assert contexts.schema.equals(CONTEXTS)
    rows = contexts.to_pylist()
    assert [(r["citing_doi"], r["sentence"], r["cited_dois"]) for r in rows] == [
        ("10.1234/a", "Prior work [1, 2] showed it.", ["10.1234/p1", "10.1234/p2"]),
        ("10.1234/a", "Others (Lee et al., 2020; Smith 2019) agree.", ["10.1234/p2", "10.1234/p1"]),
        ("10.1234/b", "先前研究［1，2］表明。", ["10.1234/p1", "10.1234/p2"]),
    ]
    first = rows[0]["markers"][0]
    assert (first["text"], first["style"], first["reference_order"], first["reference_key"], first["method"]) == (
        "[1, 2]", "numeric", 1, "k1", "number_position")
    assert rows[2]["language"] == "zh"
    pairs = pq.read_table(out / "pairs" / "ccs" / "split=train")
    assert pairs.schema.equals(PAIRS)
    assert pairs.to_pylist() == [{"doi_a": "10.1234/p1", "doi_b": "10.1234/p2", "lang_a": "en", "lang_b": "en",
                                  "lang_class": "en-en", "support": 3}]
    assert pq.read_table(out / "pairs" / "ccs" / "split=idt").num_rows == 0
    expected = {
        "documents_read": 4, "documents_without_content": 1, "documents_with_reference_list": 2,
        "documents_without_reference_list": 1, "reference_lists_read": 4, "reference_lists_joined": 2,
        "reference_lists_duplicate": 1, "reference_lists_without_text": 1, "crossref_works_bad_doi": 1,
        "crossref_files_read": 2, "crossref_rejected.invalid_json": 1,
        "markers_found": 9, "markers_resolved": 6, "markers_unresolved.number_out_of_range": 1,
        "markers_unresolved.reference_without_doi": 1, "markers_unresolved.no_reference_list": 1,
        "markers_method.author_year_unstructured": 1, "sentences_with_markers": 6, "contexts_written": 3,
        "contexts_without_doi": 3, "ccs_instances": 3, "ccs_instances_kept": 3, "ccs_pairs.train": 1,
    }
    assert {k: counts.get(k, 0) for k in expected} == expected
    # every reason is in the stats, zero included: the report lists them from there
    assert {k: v for k, v in counts.items() if k.startswith("markers_unresolved.")} == {
        "markers_unresolved.author_year_ambiguous": 0, "markers_unresolved.author_year_no_match": 0,
        "markers_unresolved.no_reference_list": 1, "markers_unresolved.number_out_of_range": 1,
        "markers_unresolved.reference_past_cap": 0, "markers_unresolved.reference_without_doi": 1,
        "markers_unresolved.self_reference": 0}
    rejects = pq.read_table(out / "rejects" / "contexts").to_pylist()
    assert sorted((r["reason"], r["key"].rsplit("/", 1)[-1]) for r in rejects) == [
        ("crossref_invalid_json", "broken.json:1"), ("crossref_work_bad_doi", "part-0.json.gz:#4")]


def test_without_crossref_every_marker_is_unresolved(tmp_path, beam_args) -> None:
    out, _ = _build(tmp_path)
    counts = run_contexts(str(out), [], beam_args, shards=1)
    assert check_counts(counts) == []
    assert counts["markers_found"] == counts["markers_unresolved.no_reference_list"] == 9
    assert pq.read_table(out / "contexts").num_rows == 0


def test_damaged_crossref_files_cost_their_damaged_records_and_warn(tmp_path, beam_args, monkeypatch,
                                                                     capsys) -> None:
    """One bad line in a JSON Lines file of works cost the whole file (0 of its reference lists
    read, 0 contexts) with no warning; a file inflating past the papers stage's cap was read
    whole (6.6 GB for a 3 MB gzip); works without a valid DOI were counted but not written to
    the rejects; and a run without --crossref wrote nothing without a word."""
    from openmsd_build.cli import main
    from openmsd_build.core import json_records

    out, _ = _build(tmp_path)
    files = tmp_path / "damaged"
    files.mkdir()
    lines = [json.dumps(_work("10.1234/a", REFS)), '{"DOI": "10.1/x", "reference": [ broken',
             json.dumps(_work("10.1234/b", REFS[:2])), json.dumps({"DOI": "not-a-doi/1", "reference": REFS})]
    (files / "works.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (files / "bomb.json.gz").write_bytes(gzip.compress(b'{"items": [' + b" " * 50_000 + b"]}"))
    monkeypatch.setattr(json_records, "MAX_DOCUMENT_BYTES", 10_000)  # the stage runs in this process
    assert main(["contexts", "--out", str(out), "--crossref", str(files), *beam_args]) == 0
    stats = json.loads((out / "_stats" / "contexts.json").read_text())
    counts = stats["counts"]
    assert counts["reference_lists_read"] == 2 and counts["contexts_written"] == 3
    assert counts["crossref_rejected.invalid_json"] == 1 and counts["crossref_rejected.file_too_large"] == 1
    rejects = sorted((r["reason"], r["key"].rsplit("/", 1)[-1])
                     for r in pq.read_table(out / "rejects" / "contexts").to_pylist())
    assert rejects == [("crossref_file_too_large", "bomb.json.gz:0"), ("crossref_invalid_json", "works.jsonl:2"),
                       ("crossref_work_bad_doi", "works.jsonl:4")]
    assert stats["warnings"] == [
        "2 Crossref records could not be read (invalid_json 1, file_too_large 1): see rejects/contexts/",
        "1 Crossref work has no valid DOI: see rejects/contexts/"]
    assert "2 Crossref records could not be read" in capsys.readouterr().err

    # without --crossref nothing resolves: on a build holding contexts that is refused (next
    # test); on one without, written with the warning
    for folder in ("contexts", "pairs"):
        shutil.rmtree(out / folder)
    assert main(["contexts", "--out", str(out), *beam_args]) == 0
    warnings = json.loads((out / "_stats" / "contexts.json").read_text())["warnings"]
    assert warnings == ["no --crossref files were given: all 9 citation markers stay unresolved and no context is "
                        "written (give the Crossref snapshot the papers were built from)"]


def test_a_run_that_would_empty_contexts_keeps_the_earlier_ones(tmp_path, beam_args, capsys) -> None:
    """`contexts` run again without --crossref (or with another slice's Crossref files) resolved
    nothing and replaced the build's contexts with none: on the 300-paper sample, 671 contexts
    and 184 CCS pairs gone, with a warning. As `text` and `citations` do, such a run is refused
    and the earlier outputs kept; the message gives the stage's warnings."""
    from openmsd_build.cli import main

    out, crossref = _build(tmp_path)
    assert main(["contexts", "--out", str(out), "--crossref", crossref, *beam_args]) == 0
    before = pq.read_table(out / "contexts").num_rows
    stats = (out / "_stats" / "contexts.json").read_text()
    capsys.readouterr()
    assert before == 3
    assert main(["contexts", "--out", str(out), *beam_args]) == 2
    err = capsys.readouterr().err
    assert f"contexts: this run kept 0 contexts where {out / 'contexts'} holds 3; the previous outputs were kept" in err
    assert "no --crossref files were given: all 9 citation markers stay unresolved" in err
    assert pq.read_table(out / "contexts").num_rows == before
    assert pq.read_table(out / "pairs" / "ccs" / "split=train").num_rows == 1
    assert (out / "_stats" / "contexts.json").read_text() == stats


def test_a_file_of_bad_records_gives_a_bounded_number_of_reject_rows(monkeypatch) -> None:
    """Every failure was kept in memory and written as a reject row (millions for a large
    file of bad lines); as in the papers stage, past the per-file budget they are counted."""
    from collections import Counter

    from openmsd_build.contexts import references
    from openmsd_build.core import rejects
    from openmsd_build.core.json_records import Item

    monkeypatch.setattr(rejects, "MAX_REJECTS_PER_FILE", 3)
    monkeypatch.setattr(rejects.RejectBudget.__init__, "__defaults__", (3,))
    items = [Item(f"f:{k}", reason="invalid_json") for k in range(10)] + [Item("f:11", obj={"DOI": "bad"})]
    counts: Counter = Counter()
    rows, failures = references.reference_lists(items, counts)
    assert rows == [] and len(failures) == 3
    assert counts["crossref_rejected.invalid_json"] == 10 and counts["crossref_works_bad_doi"] == 1
    assert counts["rejects_suppressed"] == 8


def test_a_number_past_the_kept_references_is_not_out_of_range() -> None:
    """A work depositing 6,000 references keeps the first `MAX_REFERENCES`; a marker [5500]
    named a real entry of the list but was counted `number_out_of_range`, the reason for a
    number past the list's end. It is now `reference_past_cap`; [6001] is still out of range."""
    from collections import Counter

    import polars as pl
    import pyarrow as pa

    from openmsd_build.contexts import references
    from openmsd_build.contexts.beam import REFERENCE_LISTS
    from openmsd_build.contexts.extract import document_contexts
    from openmsd_build.contexts.references import longest_lists
    from openmsd_build.core.json_records import Item

    entries = [{"key": f"r{n}", "DOI": f"10.1000/{n}"} for n in range(1, 6001)]
    counts: Counter = Counter()
    rows, _ = references.reference_lists([Item("f:1", obj={"DOI": "10.5555/citing", "reference": entries})], counts)
    assert counts["references_truncated"] == 6000 - references.MAX_REFERENCES
    # through the stage's own hand-over: the Arrow table and the per-DOI choice
    frame = pl.from_arrow(pa.Table.from_pylist(rows, schema=REFERENCE_LISTS))
    lists = longest_lists(frame.select("doi", "references", "listed").iter_rows(), Counter())
    kept, listed = lists["10.5555/citing"]
    assert len(kept) == references.MAX_REFERENCES and listed == 6000
    counts = Counter()
    found, _ = document_contexts("10.5555/citing", "As shown [2], [5500] and [6001] agree with it.", "en", kept, counts,
                                 listed)
    assert counts["markers_unresolved.reference_past_cap"] == 1
    assert counts["markers_unresolved.number_out_of_range"] == 1
    assert found[0]["cited_dois"] == ["10.1000/2"]


def test_lists_of_files_reads_crossref_files_as_the_stage_does(tmp_path) -> None:
    """The bench scripts handed a file's bytes to `reference_lists`, which takes the reader's
    items: every script that looked at reference lists failed. They now call `lists_of_files`."""
    from openmsd_build.contexts.references import lists_of_files

    path = tmp_path / "chunk.json.gz"
    works = [{"DOI": "10.5555/a", "reference": [{"key": "x", "DOI": "10.5555/b"}]},
             {"DOI": "10.5555/a", "reference": [{"key": "x"}, {"key": "y"}]}, {"DOI": "10.5555/c"}]
    path.write_bytes(gzip.compress(json.dumps({"items": works}).encode()))
    lists = lists_of_files([str(path)])
    assert list(lists) == ["10.5555/a"] and lists["10.5555/a"][1] == 2


def test_the_stage_shows_its_progress(tmp_path, beam_args) -> None:
    """At full scale the stage reads Crossref's ~1.5B references and every full text, yet it
    printed no progress line (it had no progress spec): now the documents done out of those
    read, with the Crossref records it could not use as errors, as the other long stages."""
    import io

    from openmsd_build.core import progress

    out, crossref = _build(tmp_path)
    stream = io.StringIO()
    with progress.reporting("contexts", interval=3600, stream=stream):
        run_contexts(str(out), [crossref], beam_args, shards=2)
    last = stream.getvalue().strip().splitlines()[-1]
    assert last.startswith("contexts: 4 / 4 documents (100%)") and "2 errors" in last, last


def test_a_paper_splits_lists_twice_gives_no_ccs_pair_and_is_counted() -> None:
    """A splits/ folder mixing two builds' files lists a DOI in two splits: each of its pairs
    was joined to both rows, written in both splits and counted twice (on the 300-paper
    sample with 100 train papers listed in idt too: 681 instances accounted for 436 found,
    65 IDT pairs instead of 8). Such a paper's pairs are now dropped and counted as
    ccs_instances_split_ambiguous, and the counts reconcile."""
    import polars as pl

    from openmsd_build.contexts import cocitation

    names = pl.DataFrame({"doi": ["a", "b", "b", "c"], "split": ["train", "train", "idt", "train"],
                          "lang": ["en", "en", "en", "de"]})
    pairs = pl.DataFrame({"doi_a": ["a", "a"], "doi_b": ["b", "c"], "support": [2, 3]})
    low, missing, ambiguous = cocitation.attach(pairs, names, "a")
    assert (low.height, missing, ambiguous) == (2, 0, 0)
    high, missing, ambiguous = cocitation.attach(low, names, "b")
    assert (missing, ambiguous) == (0, 2)
    per_split, counts = cocitation.finalize(high)
    assert per_split["train"].select("doi_a", "doi_b", "support").rows() == [("a", "c", 3)]
    assert per_split["idt"].height == 0 and counts["ccs_instances_kept"] == 3
    counts = {"ccs_instances": 5, "ccs_instances_split_ambiguous": 2, "ccs_instances_kept": 3}
    assert check_counts(counts) == []
    from openmsd_build.core.notices import stage_warnings

    assert stage_warnings("contexts", counts) == [
        "2 co-citation instances name a paper that splits/ lists more than once (a splits/ folder mixing two "
        "builds' files?): no CCS pair of theirs is written"]


def test_a_run_whose_counts_do_not_reconcile_is_refused(tmp_path, beam_args, capsys, monkeypatch) -> None:
    """A run that lost records between its steps without counting them (here: one marker
    found by nobody's count, as a runner that drops elements leaves it) must not replace a
    complete build: refused with the broken identity named, the earlier outputs kept."""
    from openmsd_build.cli import main
    from openmsd_build.contexts import command

    out, crossref = _build(tmp_path)
    assert main(["contexts", "--out", str(out), "--crossref", crossref, *beam_args]) == 0
    stats = (out / "_stats" / "contexts.json").read_text()
    capsys.readouterr()
    read = command.read_stage_counts
    monkeypatch.setattr(command, "read_stage_counts",
                        lambda root, stage: {**read(root, stage), "markers_resolved": 5})
    assert main(["contexts", "--out", str(out), "--crossref", crossref, *beam_args]) == 2
    err = capsys.readouterr().err
    assert "contexts: this run's counts do not reconcile (markers_found: 9 != 8)" in err, err
    assert "nothing was replaced" in err
    assert (out / "_stats" / "contexts.json").read_text() == stats
    assert pq.read_table(out / "contexts").num_rows == 3


def test_a_run_that_writes_fewer_rows_than_it_counts_is_refused(tmp_path, beam_args, capsys, monkeypatch) -> None:
    """A context lost on its way into `contexts/` (a write that dropped a row) is seen in the
    files' footers against `contexts_written`: refused, the earlier outputs kept."""
    from openmsd_build.cli import main
    from openmsd_build.core import parquet_io

    out, crossref = _build(tmp_path)
    assert main(["contexts", "--out", str(out), "--crossref", crossref, *beam_args]) == 0
    capsys.readouterr()
    write = parquet_io.write_tables

    def dropping(tables, schema, path):  # the shard's contexts, from its spool, less the last row
        tables = list(tables)
        table = pa.concat_tables(tables) if "/contexts/" in path and tables else None
        if table is not None and table.num_rows:
            tables = [table.slice(0, table.num_rows - 1)]
        return write(tables, schema, path)

    monkeypatch.setattr(parquet_io, "write_tables", dropping)
    assert main(["contexts", "--out", str(out), "--crossref", crossref, *beam_args]) == 2
    err = capsys.readouterr().err
    assert "(contexts/ holds 1 rows where the counts say 3)" in err, err  # each of its two shards less one
    assert pq.read_table(out / "contexts").num_rows == 3
