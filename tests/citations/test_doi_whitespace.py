"""Whitespace inside a citation field's DOI: `parse_id_field` split a field on whitespace and
took the first token that normalized, so a bare DOI field holding whitespace (`10.1000/abc
def`) became `10.1000/abc`, another paper's DOI, joined silently (and `10.1000/ abc` failed
as `10.1000/`). A field whose tokens are not all prefixed ids is no list of ids: it is one
value, taken when `normalize_doi` accepts it whole (`doi: 10.1000/x`), else rejected as
`bad_doi` (detail `doi_whitespace`, counted in `bad_doi_whitespace`), on both parsing paths
alike. The multi-id form (`omid:br/061 doi:10.1/x pmid:123`) is read as before."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from openmsd_build.citations import columnar
from openmsd_build.citations.opencitations import parse_citation_file, parse_id_field, parse_meta_file

DOI_WHITESPACE = "doi_whitespace"  # the reject detail (`opencitations.DOI_WHITESPACE`)


@pytest.mark.parametrize("field", [
    "10.1000/abc def", "10.1000/ abc", "10.1000/abc\tdef", "10.1000/ab\u00a0c", "doi:10.1000/abc def",
    "omid:br/0601 doi:10.1000/abc def pmid:1", "omid:br/0601 doi:10.1000/ abc", "pmid:1 10.1000/r",
])
def test_a_field_that_is_no_list_of_ids_and_no_doi_is_refused(field):
    assert parse_id_field(field) == (None, None, DOI_WHITESPACE)


@pytest.mark.parametrize(("field", "doi"), [
    ("doi: 10.1000/X", "10.1000/x"), ("https://doi.org/ 10.1000/x", "10.1000/x"), (" 10.1000/x \t", "10.1000/x"),
])
def test_whitespace_that_leaves_one_doi_is_recovered(field, doi):
    assert parse_id_field(field) == (doi, None, None)


@pytest.mark.parametrize(("field", "expected"), [  # the answers of the code before the change
    ("omid:br/061 doi:10.1/x pmid:123", (None, "br/061", "doi_malformed")),
    ("omid:br/06101 doi:10.1000/ABC pmid:123", ("10.1000/abc", "br/06101", None)),
    ("doi:bad doi:10.1000/y", ("10.1000/y", None, "doi_malformed")),
    ("omid:br/1 pmid:2", (None, "br/1", None)),
    ("doi:10.1000/a omid:br/2 doi:10.1000/b", ("10.1000/a", "br/2", None)),
    ("OMID:BR/7 DOI:10.1000/Q", ("10.1000/q", "br/7", None)),
    ("https://doi.org/10.1000/Y", ("10.1000/y", None, None)),
])
def test_lists_of_prefixed_ids_read_as_before(field, expected):
    assert parse_id_field(field) == expected


def _run(path: Path, fast: bool) -> tuple[list, list, Counter]:
    edges, rejects, counts = [], [], Counter()
    for table, rej, c in parse_citation_file(str(path), columnar=fast):
        edges += table.to_pylist()
        rejects += rej
        counts.update(c)
    return sorted(edges, key=repr), rejects, +counts


def test_both_parsing_paths_refuse_a_doi_with_whitespace_alike(tmp_path):
    good = [f"{i},10.1000/a{i},10.1000/b{i}" for i in range(300)]  # plain rows: the columnar path decides them
    damaged = ["900,10.1000/abc def,10.1000/x", '901,"10.1000/ abc",10.1000/x', "902,10.1000/x,doi:10.1000/abc def",
               "903,omid:br/0601 doi:10.1000/q r,10.1000/x", "904,pmid:1 10.1000/r,10.1000/x"]
    recovered = ["905,doi: 10.1000/Y,10.1000/x", "906,omid:br/0602 doi:10.1000/z pmid:9,10.1000/x"]
    path = tmp_path / "c.csv"
    path.write_text("\n".join(["oci,citing,cited", *good[:150], *damaged, *recovered, *good[150:]]) + "\n")
    fast, slow = _run(path, True), _run(path, False)
    assert fast == slow  # the same edges, rejects (in order) and counts on both paths
    edges, rejects, counts = fast
    ends = {e["citing_doi"] for e in edges} | {e["cited_doi"] for e in edges}
    assert "10.1000/abc" not in ends and "10.1000/q" not in ends and "10.1000/r" not in ends
    assert {"10.1000/y", "10.1000/z"} <= ends
    assert [(r["reason"], r["detail"], r["key"].rsplit(":", 1)[1]) for r in rejects] == [
        ("bad_doi", DOI_WHITESPACE, str(line)) for line in range(152, 157)]
    assert counts["bad_doi"] == counts["bad_doi_whitespace"] == 5
    assert counts["rows_read"] == 307 == counts["rows_parsed"] + counts["bad_doi"] and len(edges) == 302


def test_the_columnar_decision_never_takes_a_field_that_is_no_list():
    fields = ["10.1000/abc def", "10.1000/ abc", "pmid:1 10.1000/r", "omid:br/1 doi:10.1000/a b", " 10.1000/x ",
              "omid:br/1 doi:10.1000/a pmid:2", "doi: 10.1000/x", "  "]
    decided = columnar.parse_id_fields(pl.Series("f", fields)).rows()
    for value, (doi, omid, sure) in zip(fields, decided, strict=True):
        if sure:  # where the columnar path decides, it is `parse_id_field`'s answer
            assert (doi, omid) == parse_id_field(value)[:2], value
    assert [sure for _, _, sure in decided[:4]] == [False] * 4  # no list of ids: the row parser decides


def test_a_meta_id_column_with_a_doi_with_whitespace_is_refused(tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text('id,title\n"omid:br/1 doi:10.1000/abc def",T\n"omid:br/2 doi:10.1000/b",U\n')
    mapped, reasons, counts = [], [], Counter()
    for table, rejects, batch in parse_meta_file(str(path)):
        mapped += table.to_pylist()
        reasons += [(r["reason"], r["detail"]) for r in rejects]
        counts.update(batch)
    assert mapped == [{"omid": "br/2", "doi": "10.1000/b"}]
    assert reasons == [("meta_bad_doi", DOI_WHITESPACE)]
    assert counts == {"meta_rows_read": 2, "meta_rows_mapped": 1, "meta_bad_doi": 1}
