"""The report's citation-contexts section: present only after the contexts stage, with the
resolution share per marker style, every unresolved reason the stage counted (it writes each,
zero included) and the CCS pairs per split."""

from __future__ import annotations

from openmsd_build.report.contexts import contexts_blocks


def test_section_from_the_stage_counts() -> None:
    counts = {"sentences_seen": 100, "documents_with_reference_list": 3, "documents_without_reference_list": 1,
              "sentences_with_markers": 9, "contexts_written": 5, "markers_found": 12, "markers_resolved": 6,
              "markers_found.numeric": 8, "markers_resolved.numeric": 6, "markers_found.author_year": 4,
              "markers_unresolved.author_year_ambiguous": 4, "markers_unresolved.author_year_no_match": 0,
              "markers_unresolved.no_reference_list": 0, "markers_unresolved.number_out_of_range": 2,
              "markers_unresolved.reference_without_doi": 0,
              "ccs_pairs.train": 7}
    blocks = contexts_blocks({"stage_counts": {"contexts": counts}})
    tables = [b.rows for b in blocks if b.kind == "table"]
    assert tables[0] == [["author_year", "4", "0", "0.0%"], ["numeric", "8", "6", "75.0%"], ["all", "12", "6", "50.0%"]]
    assert dict(map(tuple, tables[1])) == {"no_reference_list": "0", "number_out_of_range": "2",
                                           "author_year_ambiguous": "4", "author_year_no_match": "0",
                                           "reference_without_doi": "0"}
    assert tables[2] == [["train", "7"], ["idt", "0"], ["odt", "0"]]
    assert "4 full texts" in blocks[1].text
    assert contexts_blocks({"stage_counts": {"pairs": {}}}) == []


def test_no_full_text_is_one_sentence_not_tables_of_zeros() -> None:
    """A build without full texts (`--fetch none`): the stage writes no sentence count at all,
    which must not read as "not built"."""
    counts = {"documents_read": 195, "documents_without_content": 195, "references_read": 8737,
              "markers_unresolved.no_reference_list": 0, "markers_unresolved.number_out_of_range": 0}
    blocks = contexts_blocks({"stage_counts": {"contexts": counts}})
    assert [b.kind for b in blocks] == ["h2", "p"]
    assert blocks[1].text.startswith("None of the 195 documents read has a full text")
    assert "not built" not in blocks[1].text
