"""Each stage's own identities (`<stage>.command.check_counts`), which its run checks after
the pipeline and refuses to replace the previous outputs when one breaks: a healthy set of
counts passes, and one count off is named with both sides."""

from __future__ import annotations

import pytest

from openmsd_build.citations.command import check_counts as citations
from openmsd_build.core.stats import unequal
from openmsd_build.pairs.command import check_counts as pairs
from openmsd_build.papers.command import check_counts as papers
from openmsd_build.split.command import check_counts as split

HEALTHY = {
    papers: {"read.unpaywall": 7, "read.crossref": 5, "written": 6, "rejected.bad_doi": 2, "merged_records": 4},
    citations: {"rows_read": 10, "edges_kept": 6, "self_citation": 1, "duplicate_edge": 2, "cited_missing": 1,
                "input_lines": 11, "lines_parsed": 11},
    split: {"documents_read": 9, "no_link": 2, "papers_linked": 7, "train": 4, "idt": 2, "odt": 1},
    pairs: {"edges_read": 12, "edges_unannotated": 3, "edges_split_ambiguous": 1, "edges_annotated": 8,
            "dc_kept.train": 5, "dc_kept.idt": 1, "dc_cross_split": 1, "dc_odt_en_en": 1},
}


@pytest.mark.parametrize(("check", "change", "named"), [
    (papers, {"written": 5}, "read.* = written + rejected.* + merged_records: 12 != 11"),
    (citations, {"edges_kept": 7}, "rows_read = edges_kept + drops: 10 != 11"),
    (citations, {"lines_parsed": 10}, "input_lines = lines_parsed: 11 != 10"),
    (split, {"no_link": 3}, "documents_read = no_link + papers_linked: 9 != 10"),
    (split, {"odt": 0}, "papers_linked = train + idt + odt: 7 != 6"),
    (pairs, {"edges_unannotated": 2}, "edges_read = edges_unannotated + edges_split_ambiguous + edges_annotated: "
                                      "12 != 11"),
    (pairs, {"dc_kept.idt": 0}, "edges_annotated = dc_kept.* + dc_cross_split + dc_odt_en_en: 8 != 7"),
])
def test_each_stage_names_the_identity_a_count_breaks(check, change, named):
    assert check(HEALTHY[check]) == []
    assert check({**HEALTHY[check], **change}) == [named]


def test_unequal_quotes_large_counts_readably():
    assert unequal([("a = b", 1_234_567, 1_234_567), ("c = d", 20_000, 19_864)]) == ["c = d: 20,000 != 19,864"]
