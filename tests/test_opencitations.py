"""Parsing OpenCitations CSVs: every real sample, and the traps of the published scripts."""

from __future__ import annotations

import csv
import gzip
import io

import polars as pl

from openmsd_build.citations import graph as cg
from openmsd_build.citations.opencitations import (
    parse_citation_file,
    parse_citation_rows,
    parse_id_field,
    parse_meta_rows,
)
from openmsd_build.core import frames
from openmsd_build.core.hashing import hash64


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _parse(text: str):
    tables, rejects, counts = [], [], {}
    for t, r, c in parse_citation_rows(_rows(text), "mem.csv"):
        tables.append(t)
        rejects += r
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
    return cg.to_frame(tables), rejects, counts


def test_id_field_shapes():
    assert parse_id_field("10.1000/X") == ("10.1000/x", None, None)
    assert parse_id_field("omid:br/06101 doi:10.1000/ABC pmid:123")[:2] == ("10.1000/abc", "br/06101")
    assert parse_id_field("omid:br/06101") == (None, "br/06101", None)
    assert parse_id_field("https://doi.org/10.1000/Y")[0] == "10.1000/y"
    assert parse_id_field("pmid:123") == (None, None, None)
    assert parse_id_field("not-a-doi")[2] == "doi_malformed"


def test_oci_in_doi_comma_in_quoted_doi_and_prefixes():
    text = (
        "oci,citing,cited,creation\n"
        "1-2,10.1000/social.oci.2,10.1000/A,2020\n"
        '1-3,"10.1000/a,b",doi:10.1000/C,2020\n'
        "1-4,https://doi.org/10.1000/D,DOI:10.1000/e,2020\n"
    )
    edges, rejects, counts = _parse(text)
    assert edges.select("citing_doi", "cited_doi").rows() == [
        ("10.1000/social.oci.2", "10.1000/a"),
        ("10.1000/a,b", "10.1000/c"),
        ("10.1000/d", "10.1000/e"),
    ]
    assert counts["rows_read"] == counts["rows_parsed"] == 3 and not rejects


def test_malformed_bad_and_no_doi_rows_are_counted_and_rejected():
    text = "citing,cited\n10.1000/a\n,10.1000/b\nnope,10.1000/b\npmid:1,10.1000/b\n\n10.1000/a,10.1000/b\n"
    edges, rejects, counts = _parse(text)
    assert counts == {"files_read": 1, "rows_read": 5, "malformed_row": 2, "bad_doi": 1, "no_doi": 1,
                      "rows_parsed": 1}
    assert sorted(r["reason"] for r in rejects) == ["bad_doi", "malformed_row", "malformed_row"]
    assert edges.height == 1


def test_omid_only_rows_keep_omids_and_meta_maps_them():
    edges, _, counts = _parse("id,citing,cited\nx,omid:br/1,omid:br/2 doi:10.1000/b\n")
    assert edges.row(0) == (None, "10.1000/b", "br/1", None)
    assert counts["rows_needing_meta"] == 1
    meta, rejects, mcounts = parse_meta_rows(_rows('id,title\n"omid:br/1 doi:10.1000/A issn:1",t\nomid:br/3,t\n'), "m")
    assert meta.to_pylist() == [{"omid": "br/1", "doi": "10.1000/a"}]
    assert mcounts == {"meta_rows_read": 2, "meta_rows_mapped": 1, "meta_rows_no_doi": 1}
    resolved = cg.resolve_omids(edges, pl.from_arrow(meta), "citing")
    done, c = cg.finish_resolution(resolved)
    assert done.rows() == [("10.1000/a", "10.1000/b")] and c == {"no_doi": 0}


def test_every_real_sample_parses(real_samples):
    files = sorted((real_samples / "opencitations").rglob("*.csv"))
    assert len(files) >= 5
    for path in files:
        n_lines = sum(1 for r in csv.reader(path.open(newline="")) if r) - 1
        total = {}
        rows = 0
        for table, _, counts in parse_citation_file(str(path)):
            rows += table.num_rows
            for k, v in counts.items():
                total[k] = total.get(k, 0) + v
            assert all(d is None or d == d.lower() for d in table["citing_doi"].to_pylist())
        assert total["rows_read"] == n_lines, path.name
        if "prov" in path.name:
            assert total["rows_unrecognized_file"] == n_lines and rows == 0
        else:
            assert rows == n_lines and total["rows_parsed"] == n_lines, path.name


def test_gzip_input(tmp_path):
    p = tmp_path / "x.csv.gz"
    p.write_bytes(gzip.compress(b"oci,citing,cited\n1,10.1000/A,10.1000/b\n"))
    (table, _, counts), = list(parse_citation_file(str(p)))
    assert table["citing_doi"].to_pylist() == ["10.1000/a"] and counts["rows_parsed"] == 1


def test_filter_edges_counts():
    edges = pl.DataFrame({"citing_doi": ["a", "a", "a", "b", "x", "b"], "cited_doi": ["a", "b", "b", "y", "b", "n"]})
    keys = pl.DataFrame({"doi": ["a", "b", "n"], "has_abstract": [True, True, False]})
    kept, counts = cg.filter_edges(edges, keys)
    assert kept.rows() == [("a", "b", hash64("a"), hash64("b"))]  # ids = splits' paper_id
    assert counts == {"self_citation": 1, "duplicate_edge": 1, "citing_missing": 1, "cited_missing": 1,
                      "no_abstract": 1, "edges_kept": 1}


def test_hash_strings_stable_and_slice_safe():
    import pyarrow as pa

    arr = pa.array(["10.1000/a", "", None, "10.1000/ä" * 50])
    h = frames.hash_strings(arr)
    assert list(frames.hash_strings(arr.slice(1))) == list(h[1:])
    assert len(set(h.tolist())) == 4
    assert frames.hash_strings(pa.array(["10.1000/a"]))[0] == h[0]
