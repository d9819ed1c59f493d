"""The columnar merge (what the stage runs) agrees with the per-DOI reference merge."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from openmsd_build.papers.merge_fast import PROJECTED, merge_frame
from openmsd_build.papers.merge_reference import completeness, merge_records

texts = st.one_of(st.none(), st.sampled_from(["", "alpha", "beta", "gamma title"]))
urls = st.lists(
    st.fixed_dictionaries({
        "url": st.sampled_from(["https://a.example/1", "https://a.example/1 ", "https://b.example/2", "https://c.example/3"]),
        "kind": st.sampled_from(["pdf", "landing"]),
        "host_type": st.sampled_from([None, "publisher", "repository"]),
        "license": st.none(), "version": st.none(),
        "source": st.just("x"),
        "rank": st.integers(0, 5),
    }),
    max_size=3,
)
relations = st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["has-preprint", "is-version-of"]),
                           "doi": st.sampled_from(["10.1/a", "10.1/b", "10.1/c"])}),
    max_size=2,
)
records = st.fixed_dictionaries({
    "doi": st.sampled_from(["10.1/a", "10.1/b", "10.1/c"]),
    "source": st.sampled_from(["unpaywall", "crossref", "openalex"]),
    "origin": st.sampled_from(["f1:1", "f1:2", "f2:1", "f3:9"]),
    "title": texts, "abstract": texts, "venue": texts, "publisher": texts, "type": texts,
    "publisher_language": st.sampled_from([None, "en", "de"]), "license": texts,
    "year": st.one_of(st.none(), st.integers(1990, 2024)),
    "is_oa": st.one_of(st.none(), st.booleans()),
    "categories": st.lists(st.sampled_from(["Oncology", "Physics"]), max_size=2, unique=True),
    "titles": st.lists(st.sampled_from(["Ein Titel", "A title"]), max_size=2, unique=True),
    "urls": urls, "relations": relations,
})


def _table(recs: list[dict]) -> pa.Table:
    rows = [{**r, "completeness": completeness(r)} for r in recs]
    return pa.Table.from_pylist(rows, schema=PROJECTED)


@settings(max_examples=300, deadline=None)
@given(st.lists(records, min_size=1, max_size=8, unique_by=lambda r: (r["source"], r["origin"])))
def test_columnar_merge_equals_reference(recs):
    table, counts = merge_frame(_table(recs))
    got = {row["doi"]: row for row in table.to_pylist()}
    by_doi: dict[str, list[dict]] = {}
    for rec in recs:
        by_doi.setdefault(rec["doi"], []).append(rec)
    assert sorted(got) == sorted(by_doi)
    assert table.column("doi").to_pylist() == sorted(by_doi)
    for doi, group in by_doi.items():
        expected = merge_records(group)
        for field in ("title", "abstract", "venue", "publisher", "type", "publisher_language", "license"):
            # the reference keeps "" when nothing better exists; the columnar merge gives None
            expected[field] = expected[field] or None
        expected["title_source"] = expected["title_source"] if expected["title"] else None
        expected["abstract_source"] = expected["abstract_source"] if expected["abstract"] else None
        assert got[doi] == expected, doi
    assert counts["written"] == len(by_doi)
    assert counts["merged_records"] == len(recs) - len(by_doi)


def test_every_registered_source_is_a_dataflow_template_parameter() -> None:
    """Adding a source is one registry entry: the flex template's metadata must list it."""
    import json
    from pathlib import Path

    from openmsd_build.papers.sources.registry import SOURCES

    metadata = json.loads((Path(__file__).resolve().parents[2] / "deploy" / "dataflow" / "metadata.json").read_text())
    names = {p["name"] for p in metadata["parameters"]}
    assert {s.name for s in SOURCES} <= names
