"""DOIs that look the same are one key; DOIs that differ stay two keys.

The canonical form (`core.doi._look_alikes`): NFKC, every decimal digit as its ASCII digit,
hyphen look-alikes as `-`, invisible characters (Default_Ignorable_Code_Point, every other
format character, controls) removed, lower case. Property tests: any look-alike spelling of
a DOI normalizes to the DOI's key (no split), two different ASCII keys never meet (no merge),
normalization is idempotent, and the columnar Crossref reader agrees with the reference."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openmsd_build.core.doi import InvalidDOI, normalize_doi, try_normalize_doi
from openmsd_build.papers.sources import crossref_columnar
from openmsd_build.papers.sources.crossref import parse_crossref

PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Invisible characters of several kinds: zero-width, bidi controls, soft hyphen, word joiner,
# BOM, variation selectors, Mongolian vowel separator, tag characters, Hangul filler,
# interlinear annotation marks (format characters outside Default_Ignorable_Code_Point).
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069",
             "\u00ad", "\u2060", "\u2063", "\u2064", "\ufeff", "\ufe0f", "\ufe00", "\u180e", "\u034f",
             "\U000e0041", "\U000e007f", "\u3164", "\uffa0", "\ufff9", "\u061c", "\U000e0100"]
DIGIT_SCRIPTS = [0x0660, 0x06F0, 0x0966, 0x09E6, 0xFF10, 0x1D7CE, 0x1D7D8, 0x0E50, 0x1040]

suffix_chars = st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-._;()/:")
dois = st.builds(
    lambda reg, sub, suffix: f"10.{reg}{sub}/{suffix}",
    st.integers(1000, 999_999_999).map(str),
    st.sampled_from(["", ".1", ".22"]),
    st.text(suffix_chars, min_size=1, max_size=30).filter(lambda s: s[-1] not in ".;:)(/" and s[0] != "/"),
).filter(lambda d: try_normalize_doi(d) == d)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _digits(text: str, zero: int) -> str:
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in text)


@st.composite
def look_alikes(draw):
    doi = draw(dois)
    variant = doi
    for step in draw(st.lists(st.sampled_from(["invisible", "fullwidth", "digits", "case", "prefix", "hyphen"]),
                              max_size=4)):
        if step == "invisible":
            for _ in range(draw(st.integers(1, 4))):
                at = draw(st.integers(0, len(variant)))
                variant = variant[:at] + draw(st.sampled_from(INVISIBLE)) + variant[at:]
        elif step == "fullwidth":
            variant = _fullwidth(variant)
        elif step == "digits":
            variant = _digits(variant, draw(st.sampled_from(DIGIT_SCRIPTS)))
        elif step == "case":
            variant = variant.upper()
        elif step == "prefix":
            variant = draw(st.sampled_from(["https://doi.org/", "doi:", "ｄｏｉ：", "https://dx.doi.org/"])) + variant
        elif step == "hyphen":
            variant = variant.replace("-", draw(st.sampled_from(["\u2010", "\u2011", "\u2212", "\ufe63", "\uff0d"])))
    return doi, variant


@PROPS
@given(pair=look_alikes())
def test_a_look_alike_spelling_is_the_same_key(pair):
    doi, variant = pair
    assert normalize_doi(variant) == doi


@PROPS
@given(a=dois, b=dois)
def test_two_different_dois_stay_two_keys(a, b):
    assert (normalize_doi(a) == normalize_doi(b)) == (a == b)


@PROPS
@given(value=st.text(max_size=60) | look_alikes().map(lambda p: p[1]))
def test_keys_are_fixpoints_without_invisible_or_non_ascii_digits(value):
    try:
        key = normalize_doi(value)
    except InvalidDOI:
        return
    assert normalize_doi(key) == key
    assert unicodedata.normalize("NFKC", key) == key
    assert not any(unicodedata.category(c) in ("Cf", "Cc") for c in key)
    assert all(c.isascii() for c in key if c.isdecimal())
    assert key.split("/", 1)[0].replace(".", "").isascii()


@pytest.mark.parametrize("value,key", [
    ("10.1234/abc\u200d", "10.1234/abc"),
    ("10.1234/a\U000e0041bc", "10.1234/abc"),
    ("１０．１２３４／ＡＢＣ", "10.1234/abc"),
    ("10.\u0661\u0662\u0663\u0664/x", "10.1234/x"),
    ("10.1234/\U0001d7cf\U0001d7d0", "10.1234/12"),
    ("10.1234%EF%BC%8Fabc", "10.1234/abc"),
    ("10.1234/x\u2011y", "10.1234/x-y"),
    ("10.1234/ﬁle", "10.1234/file"),
])
def test_examples(value, key):
    assert normalize_doi(value) == key


def test_other_scripts_letters_stay_distinct():
    """A Cyrillic `а` is not a Latin `a`: folding confusable letters could merge two DOIs."""
    assert normalize_doi("10.1234/\u0430bc") != normalize_doi("10.1234/abc")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(look_alikes(), min_size=1, max_size=8))
def test_columnar_reader_agrees_with_the_reference(pairs):
    import orjson

    items = [{"DOI": variant, "title": ["T"]} for _doi, variant in pairs]
    columnar = crossref_columnar.parse_chunk(orjson.dumps({"items": items}))
    assert columnar is not None
    records, rejects = columnar
    assert not rejects
    reference = [parse_crossref(item)["doi"] for item in items]
    assert [r["doi"] for r in records] == reference == [doi for doi, _ in pairs]
