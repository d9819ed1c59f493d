"""Resolution of markers against a reference list: positions, author-year matches, suffixes,
ambiguity and every unresolved reason."""

from __future__ import annotations

from openmsd_build.contexts.markers import Marker
from openmsd_build.contexts.resolve import Reference, ReferenceIndex

REFS = [
    Reference(1, "r1", "10.1/a", "Smith", "2019"),
    Reference(2, "r2", None, "Lee", "2020"),
    Reference(3, "r3", "10.1/c", "Kirov", "2014"),
    Reference(4, "r4", "10.1/d", "Kirov", "2014"),
    Reference(5, "r5", "10.1/e", "García", "2001a"),
    Reference(6, "r6", "10.1/f", "García", "2001b"),
    Reference(7, "r7", "10.1/g", None, None, "Agence Francaise (AFSSA) 2004 Evaluation des risques"),
    Reference(8, "r8", "10.1/h", "Wang", "2010"),
    Reference(9, "r9", "10.1/i", None, None, "Wang L, Chen Y (2010) Another paper"),
]


def _ay(surname: str, year: int, suffix: str | None = None) -> Marker:
    return Marker("author_year", 0, 1, surname=surname, year=year, suffix=suffix)


def _num(n: int) -> Marker:
    return Marker("numeric", 0, 1, number=n)


def _outcome(index: ReferenceIndex, marker: Marker) -> tuple[str | None, str | None, str | None]:
    r = index.resolve(marker)
    return r.doi, r.method, r.reason


def test_numbers_are_positions_in_the_list() -> None:
    index = ReferenceIndex(REFS)
    assert _outcome(index, _num(1)) == ("10.1/a", "number_position", None)
    assert _outcome(index, _num(2)) == (None, "number_position", "reference_without_doi")
    assert _outcome(index, _num(10)) == (None, None, "number_out_of_range")
    assert _outcome(index, _num(0)) == (None, None, "number_out_of_range")


def test_author_year_by_first_author_and_year() -> None:
    index = ReferenceIndex(REFS)
    assert _outcome(index, _ay("Smith", 2019)) == ("10.1/a", "author_year", None)
    assert _outcome(index, _ay("SMITH", 2019)) == ("10.1/a", "author_year", None)
    assert _outcome(index, _ay("Smith", 2018)) == (None, None, "author_year_no_match")
    assert _outcome(index, _ay("Lee", 2020)) == (None, "author_year", "reference_without_doi")


def test_suffixes_pick_the_deposited_suffix_or_the_list_order() -> None:
    index = ReferenceIndex(REFS)
    assert _outcome(index, _ay("Garcia", 2001, "b")) == ("10.1/f", "author_year", None)
    assert _outcome(index, _ay("Kirov", 2014, "b")) == ("10.1/d", "author_year_suffix_order", None)
    assert _outcome(index, _ay("Kirov", 2014, "c")) == (None, None, "author_year_ambiguous")


def test_two_candidates_without_a_suffix_are_ambiguous() -> None:
    index = ReferenceIndex(REFS)
    assert _outcome(index, _ay("Kirov", 2014)) == (None, None, "author_year_ambiguous")
    assert _outcome(index, _ay("García", 2001)) == (None, None, "author_year_ambiguous")
    # a namesake deposited without an author field competes with the one that has it
    assert _outcome(index, _ay("Wang", 2010)) == (None, None, "author_year_ambiguous")


def test_unstructured_entries_match_by_a_name_before_the_year() -> None:
    index = ReferenceIndex(REFS)
    assert _outcome(index, _ay("AFSSA", 2004)) == ("10.1/g", "author_year_unstructured", None)
    assert _outcome(index, _ay("Evaluation", 2004)) == (None, None, "author_year_no_match")


def test_the_same_doi_twice_is_one_work() -> None:
    index = ReferenceIndex([Reference(1, None, "10.1/x", "Ito", "1999"), Reference(2, None, "10.1/x", "Ito", "1999")])
    assert _outcome(index, _ay("Ito", 1999)) == ("10.1/x", "author_year", None)


def test_no_reference_list() -> None:
    assert _outcome(ReferenceIndex([]), _num(1)) == (None, None, "no_reference_list")
    assert _outcome(ReferenceIndex([]), _ay("Smith", 2019)) == (None, None, "no_reference_list")


def test_a_reference_to_the_citing_paper_is_no_citation_and_no_co_citation() -> None:
    """A reference list that names the paper itself (in the helper's case an upper-case DOI URL
    of its own DOI) made it a cited DOI of its own sentences, and a CCS pair of itself with each
    of its references."""
    from collections import Counter

    from openmsd_build.contexts.extract import document_contexts

    own = "10.55501/ijobr.2016.0001937"
    # a reference list as the stage reads it from Crossref (DOIs normalized: an upper-case DOI URL of its own)
    references = [{"order": n, "key": f"r{n}", "doi": doi} for n, doi in enumerate((own, "10.1000/other",
                                                                                    "10.1000/third"), start=1)]
    counts: Counter = Counter()
    rows, pairs = document_contexts(own, "Earlier work [1, 2, 3] found the same effect in every sample.", "en",
                                    references, counts)
    assert [row["cited_dois"] for row in rows] == [["10.1000/other", "10.1000/third"]]
    assert pairs == {("10.1000/other", "10.1000/third"): 1}
    assert counts["markers_unresolved.self_reference"] == 1
    assert counts["markers_found"] == counts["markers_resolved"] + counts["markers_unresolved.self_reference"]


def test_a_marker_repeated_is_searched_once(monkeypatch) -> None:
    """A document citing one author-year 100,000 times against 5,000 unstructured references
    took 251 s: every marker scanned every reference. Each distinct marker is now searched
    once (the answers are the same), and only the references of its year are scanned."""
    refs = [Reference(i, f"r{i}", f"10.1/{i}", None, None, f"Smith J ({2000 + i % 3}) Title {i}") for i in range(1, 301)]
    index = ReferenceIndex(refs)
    searched = []
    real = ReferenceIndex.candidates

    def counting(self, marker):
        searched.append(marker)
        return real(self, marker)

    monkeypatch.setattr(ReferenceIndex, "candidates", counting)
    answers = {_outcome(index, _ay("Smith", 2001)) for _ in range(1000)}
    assert answers == {(None, None, "author_year_ambiguous")} and len(searched) == 1
    assert _outcome(index, _ay("Smith", 2001, "a")) == ("10.1/1", "author_year_suffix_order", None)
    assert len(index.unstructured[2001]) == 100 and len(searched) == 2


def test_an_unstructured_reference_whose_year_is_deposited_apart():
    """A reference with `year` and `unstructured` text that holds no year (common in Crossref
    deposits) crashed the whole stage (AttributeError): the names part was cut at the year
    found in the text. Its names part is now what comes before the first ". "."""
    index = ReferenceIndex([Reference(1, "r1", "10.1/a", None, "2019", "Smith J. A title without the year. Journal."),
                            Reference(2, "r2", "10.1/b", None, "2019", "Jones K. The Brown method. Journal.")])
    assert _outcome(index, _ay("Smith", 2019)) == ("10.1/a", "author_year_unstructured", None)
    assert _outcome(index, _ay("Jones", 2019)) == ("10.1/b", "author_year_unstructured", None)
    assert _outcome(index, _ay("Brown", 2019)) == (None, None, "author_year_no_match")  # a title's word


def test_a_document_repeating_its_co_citations_holds_each_pair_once():
    """20,000 sentences citing the same references ([1-30,31-50], 500 KB of text) gave 24.5M
    instance tuples held at once (6.2 GB); a document's instances are summed as it goes: one
    entry per pair, its support the sentences, the instance count unchanged."""
    from collections import Counter

    from openmsd_build.contexts.cocitation import partial_supports
    from openmsd_build.contexts.extract import document_contexts

    references = [{"order": n, "key": f"r{n}", "doi": f"10.1000/c{n}"} for n in range(1, 6)]
    counts: Counter = Counter()
    text = "Shown here [1-5]. " * 2000
    rows, pairs = document_contexts("10.1000/citing", text, "en", references, counts)
    assert len(pairs) == 10 and set(pairs.values()) == {len(rows)} and len(rows) > 1000
    assert counts["ccs_instances"] == 10 * len(rows)
    table = partial_supports(pairs)
    assert table.height == 10 and table["support"].sum() == counts["ccs_instances"]
