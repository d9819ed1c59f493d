"""DOI normalization: examples from the sources, and hypothesis properties."""

from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openmsd_build.core.doi import InvalidDOI, normalize_doi, try_normalize_doi


@pytest.mark.parametrize(
    "raw",
    [
        "10.7717/peerj.4375",
        "10.7717/PEERJ.4375",
        "https://doi.org/10.7717/peerj.4375",
        "http://dx.doi.org/10.7717/peerj.4375",
        "doi:10.7717/peerj.4375",
        "DOI: 10.7717/peerj.4375",
        " 10.7717/peerj.4375.\n",
        "10.7717%2Fpeerj.4375",
        "https%3A%2F%2Fdoi.org%2F10.7717%2Fpeerj.4375",
        "\x0010.7717/peerj.4375\u200b",
        "<10.7717/peerj.4375>",
    ],
)
def test_variants_normalize_to_one_key(raw):
    assert normalize_doi(raw) == "10.7717/peerj.4375"


def test_lookalike_hyphens_and_sici_brackets():
    assert normalize_doi("10.1000/abc\u2010def") == "10.1000/abc-def"
    sici = "10.1890/0012-9658(2006)87[2832:TIOPMA]2.0.CO;2"
    assert normalize_doi(sici) == sici.lower()
    # an unbalanced closing bracket belongs to the sentence around the DOI
    assert normalize_doi("(see 10.1000/xyz)".split(" ")[1]) == "10.1000/xyz"
    assert normalize_doi("10.1002/(sici)1097-4636(199709)") == "10.1002/(sici)1097-4636(199709)"


@pytest.mark.parametrize(
    "raw,reason",
    [
        (None, "doi_not_a_string"),
        ("", "doi_empty"),
        ("   ", "doi_empty"),
        ("not a doi", "doi_malformed"),
        ("11.1234/x", "doi_malformed"),
        ("10.12/x", "doi_malformed"),
        ("10.1234/", "doi_malformed"),
        ("10.1234/with space", "doi_malformed"),
        ("10.1234/" + "x" * 500, "doi_too_long"),
        ("10.1000/%80", "doi_malformed"),  # percent-escape that is not UTF-8 (found by hypothesis)
    ],
)
def test_rejects_non_dois(raw, reason):
    with pytest.raises(InvalidDOI) as err:
        normalize_doi(raw)
    assert err.value.reason == reason
    assert try_normalize_doi(raw) is None


suffix_chars = st.characters(
    min_codepoint=33, max_codepoint=0x2FFF, blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc", "Cf")
)
dois = st.builds(
    lambda reg, suffix: f"10.{reg}/{suffix}",
    st.integers(min_value=1000, max_value=999999999),
    st.text(suffix_chars, min_size=1, max_size=40),
)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_normalization_is_idempotent_on_any_text(text):
    key = try_normalize_doi(text)
    if key is not None:
        assert normalize_doi(key) == key


@settings(max_examples=400, deadline=None)
@given(dois)
def test_spelling_variants_meet_in_one_key(doi):
    key = try_normalize_doi(doi)
    if key is None:  # e.g. a suffix of only trailing punctuation
        return
    assert normalize_doi(key) == key
    variants = [
        _ascii_upper(doi),  # DOIs are case-insensitive over ASCII (DOI Handbook)
        _ascii_lower(doi),
        "https://doi.org/" + doi,
        "http://dx.doi.org/" + doi,
        "doi:" + doi,
        " " + doi + " ",
        quote(doi, safe=""),
        "https://doi.org/" + quote(doi, safe="/"),
    ]
    for variant in variants:
        assert normalize_doi(variant) == key, variant


def _ascii_upper(text: str) -> str:
    return "".join(c.upper() if c.isascii() else c for c in text)


def _ascii_lower(text: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in text)


ascii_dois = st.builds(
    lambda reg, suffix: f"10.{reg}/{suffix}",
    st.integers(min_value=1000, max_value=99999),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=20),
)


@settings(max_examples=1000, deadline=None)
@given(st.one_of(dois, ascii_dois))
def test_fast_path_agrees_with_full_normalization(doi):
    from openmsd_build.core import doi as doi_module

    key = try_normalize_doi(doi)
    pattern = doi_module._CANONICAL_RE
    try:
        doi_module._CANONICAL_RE = doi_module.re.compile(r"(?!)")  # never matches: full pipeline
        slow = try_normalize_doi(doi)
    finally:
        doi_module._CANONICAL_RE = pattern
    assert key == slow
