"""Citation markers: numeric (ranges, lists, fullwidth, superscripts) and author-year (lists,
suffixes, Cyrillic, narrative), and the parentheses that are not citations."""

from __future__ import annotations

from openmsd_build.contexts.markers import find_markers, first_surname, normalize_name


def _numbers(sentence: str) -> list[int | None]:
    return [m.number for m in find_markers(sentence)]


def _author_years(sentence: str) -> list[tuple[str | None, int | None, str | None]]:
    return [(m.surname, m.year, m.suffix) for m in find_markers(sentence)]


def test_numeric_lists_and_ranges() -> None:
    assert _numbers("Known [3, 7] and [3\u20135] and [2-4,9].") == [3, 7, 3, 4, 5, 2, 3, 4, 9]
    sentence = "Known [12]."
    (marker,) = find_markers(sentence)
    assert (marker.style, sentence[marker.start:marker.end]) == ("numeric", "[12]")


def test_fullwidth_brackets_digits_and_separators() -> None:
    assert _numbers("研究［３，５］と［1－3］と［2、8］。") == [3, 5, 1, 2, 3, 2, 8]


def test_a_range_too_long_keeps_its_ends_and_an_interval_is_not_a_citation() -> None:
    assert _numbers("See [1-200].") == [1, 200]
    assert _numbers("on the interval [0, 1] and [0-5]") == []


def test_superscripts_after_words_not_after_units() -> None:
    markers = find_markers("An area of 10 m\u00b2 was shown\u00b9,\u00b3 before.\u00b2\u207b\u2074")
    assert [(m.style, m.number) for m in markers] == [("superscript", 1), ("superscript", 3), ("superscript", 2),
                                                      ("superscript", 3), ("superscript", 4)]


def test_author_year_lists_with_semicolons_commas_and_suffixes() -> None:
    assert _author_years("As shown (Smith et al., 2019; Lee 2020).") == [("Smith", 2019, None), ("Lee", 2020, None)]
    assert _author_years("(Wylie 1954, Price et al. 1981, Akasaka et al. 2002, 2003, Jian et al. 2013a, 2013b)") == [
        ("Wylie", 1954, None), ("Price", 1981, None), ("Akasaka", 2002, None), ("Akasaka", 2003, None),
        ("Jian", 2013, "a"), ("Jian", 2013, "b")]
    assert _author_years("(e.g. Smith 2003; Jones & Brown 2004a)") == [("Smith", 2003, None), ("Jones", 2004, "a")]


def test_other_scripts_and_fullwidth_parentheses() -> None:
    assert _author_years("Величина (Иванов и др., 2019) растёт.") == [("Иванов", 2019, None)]
    assert _author_years("（Smith，2019）によれば") == [("Smith", 2019, None)]
    assert _author_years("(see van der Berg and Lee, 2001)") == [("van der Berg", 2001, None)]


def test_narrative_citations_but_not_venues() -> None:
    markers = find_markers("Kirov et al. (2014b) showed it, as did Lee (2001).")
    assert [(m.style, m.surname, m.year, m.suffix) for m in markers] == [
        ("narrative", "Kirov", 2014, "b"), ("narrative", "Lee", 2001, None)]
    assert find_markers("International Journal of Adolescent Health (2011) - https://doi.org/x") == []
    assert find_markers("Journal of Hydrogeology (2016). Transactions on Climate and Society (2022)") == []
    assert [m.surname for m in find_markers("This is the work of Smith (2019).")] == ["Smith"]


def test_parentheses_that_are_not_citations() -> None:
    assert find_markers("measured in 2019 (in 2019) and (Table 2, 2019) (January 2019) (n = 2019)") == []


def test_first_surname_and_name_normalization() -> None:
    assert first_surname("see also Smith, Jones and Lee") == "Smith"
    assert first_surname("measured in") is None
    assert normalize_name("García-Márquez") == "garcia marquez"
    assert normalize_name("Müller") == "muller"


def test_a_superscript_run_longer_than_a_reference_number_is_not_cut_into_citations() -> None:
    # brackets take at most four digits ([3-1000000] is no marker); a superscript run of more
    # was cut into four-digit pieces: "¹²³⁴⁵⁶⁷⁸⁹" cited 1234, 5678 and 9, "¹⁻¹⁰⁰⁰⁰⁰⁰" cited 0, 1 and 1000
    assert _numbers("As shown [3-1000000] here.") == []
    assert _numbers("Digits shown\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079 there.") == []
    assert _numbers("Shown\u00b9\u207b\u00b9\u2070\u2070\u2070\u2070\u2070\u2070 here.") == []
    assert _numbers("Shown\u00b9\u00b2\u00b3\u2074 here.") == [1234]


def test_a_superscript_zero_is_not_a_citation() -> None:
    # as a bracketed group holding a 0 ("[0, 1]"): a reference list starts at 1
    assert _numbers("Shown\u2070 here and\u2070\u207b\u00b3 there.") == []
    assert _numbers("Shown\u00b9\u2070 here.") == [10]


def test_a_range_from_a_number_to_itself_is_one_marker() -> None:
    # one cited item, one marker: "[5-5]" was two markers of reference 5 (markers_found counted both)
    assert _numbers("Shown [5-5] and [5\u20135, 7] and\u00b3\u207b\u00b3 here.") == [5, 5, 7, 3]
