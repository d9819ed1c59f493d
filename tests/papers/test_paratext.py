"""Paratext flags and too-short metadata abstracts: the same answer from the row-by-row merge
(the reference) and the columnar one the stage runs."""

from __future__ import annotations

import pyarrow as pa
import pytest

from openmsd_build.papers.merge_fast import PROJECTED, merge_frame
from openmsd_build.papers.merge_reference import merge_records
from openmsd_build.papers.paratext import paratext_reason


@pytest.mark.parametrize(("title", "reason"), [
    ("Front Matter Volume 8 Issue 3 1962", "front_matter"),
    ("Editorial Board", "front_matter"),
    ("Issue Information", "front_matter"),
    ("Contents of Forest Ecology and Management, volume 97", "table_of_contents"),
    ("Sumário", "table_of_contents"),
    ("Index", "index"),
    ("Index of Biblical References", "index"),
    ("Erratum", "erratum"),
    ("Correction: Pneumococcal carriage among sickle cell disease patients", "erratum"),
    ("Retraction Notice: Research on feasibility", "erratum"),
    ("Fe de erratas", "erratum"),
    ("Correction of a split nail deformity", None),
    ("Contents of heavy metals in soils", None),
    ("Index of refraction of thin films", None),
    ("Cover crops in Brazil", None),
])
def test_paratext_titles(title: str, reason: str | None) -> None:
    assert paratext_reason("10.1000/x", title, "journal-article") == reason


def test_test_prefix_and_issue_types() -> None:
    assert paratext_reason("10.5555/1234111222", "A real-looking title", "journal-article") == "test_doi"
    assert paratext_reason("10.1000/x", "Volume 3, Issue 2", "journal-issue") == "issue"


def _record(doi: str, source: str, title: str, abstract: str | None, origin: str, work_type: str = "journal-article") -> dict:
    return {"doi": doi, "source": source, "origin": origin, "completeness": 2, "title": title, "titles": [title],
            "abstract": abstract, "venue": None, "publisher": None, "year": 2020, "type": work_type, "categories": [],
            "publisher_language": None, "license": None, "is_oa": None, "urls": [], "relations": []}


def test_both_merges_flag_paratext_and_pass_over_short_abstracts() -> None:
    records = [
        _record("10.1000/a", "openalex", "Errata", "Errata", "o:1"),
        _record("10.1000/b", "crossref", "A paper", "International audience", "c:1"),
        _record("10.1000/b", "openalex", "A paper", "We measured the soil carbon of forty plots.", "o:2"),
        _record("10.5555/c", "crossref", "hola", "hola", "c:2"),
    ]
    table, counts = merge_frame(pa.Table.from_pylist(records, schema=PROJECTED))
    fast = {r["doi"]: r for r in table.to_pylist()}
    for doi in fast:
        ref = merge_records([r for r in records if r["doi"] == doi])
        assert (ref["abstract"], ref["abstract_source"], ref["paratext"]) == (
            fast[doi]["abstract"], fast[doi]["abstract_source"], fast[doi]["paratext"]), doi
    assert fast["10.1000/a"]["paratext"] == "erratum" and fast["10.1000/a"]["abstract"] is None
    assert fast["10.1000/b"]["abstract"] == "We measured the soil carbon of forty plots."
    assert fast["10.1000/b"]["paratext"] is None and fast["10.5555/c"]["paratext"] == "test_doi"
    assert counts["abstracts_too_short"] == 3
    assert counts["paratext.erratum"] == 1 and counts["paratext.test_doi"] == 1
