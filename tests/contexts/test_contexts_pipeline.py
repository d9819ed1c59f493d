"""The contexts stage end to end on the in-process FnApiRunner: documents/, splits/ and
Crossref files in; contexts/, pairs/ccs/, rejects and counts that reconcile out."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

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
        "crossref_files_read": 2, "crossref_files_rejected": 1,
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
        "markers_unresolved.reference_without_doi": 1}
    rejects = pq.read_table(out / "rejects" / "contexts").to_pylist()
    assert [(r["reason"], r["key"].rsplit("/", 1)[-1]) for r in rejects] == [("crossref_unreadable", "broken.json")]


def test_without_crossref_every_marker_is_unresolved(tmp_path, beam_args) -> None:
    out, _ = _build(tmp_path)
    counts = run_contexts(str(out), [], beam_args, shards=1)
    assert check_counts(counts) == []
    assert counts["markers_found"] == counts["markers_unresolved.no_reference_list"] == 9
    assert pq.read_table(out / "contexts").num_rows == 0
