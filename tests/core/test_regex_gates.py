"""`start_gate` says False only where the line-start regex it stands in front of cannot match.

The gate answers most lines from a set of ASCII first characters computed with its own regex;
these tests draw lines around every first character in every casing, after white space of
several kinds, with the letters a case-insensitive regex treats specially ("ſ" is an "s", the
Kelvin sign a "k", "ı" and "İ" an "i"), and compare with the regex."""

from __future__ import annotations

import random
import re

import pytest

from openmsd_build.core.regex_gates import first_characters, gated_match, start_gate

_WORDS = r"abstract|summary|r[ée]sum[ée]|摘\s?要|özet|kurzfassung|\*\s*correspond|©|1st"
_SPECIAL = ["ſ", "\u212a", "ı", "İ", "Ö", "ö", "É", "k", "K", "s", "S", "x", "1", "*", "©", "摘", " ", "\t", "\u3000",
            "\u00a0", "\n", "", "a", "A", "é", "z"]


def test_first_characters_of_an_alternation() -> None:
    assert first_characters(_WORDS) == {"a", "s", "r", "摘", "ö", "k", "*", "©", "1"}
    assert first_characters("key(?:words|phrases)|index") == {"k", "p", "i"}  # "phrases)" adds a spare "p"
    for bad in (r"\s+x|y", "[ab]c|d", "(?:a|b)", "a||b", r"\d{4}|x"):
        with pytest.raises(ValueError):
            first_characters(bad)


def test_the_gate_never_refuses_a_line_the_regex_matches() -> None:
    regex = re.compile(rf"^\s*(?:{_WORDS})", re.IGNORECASE)
    gate = start_gate(first_characters(_WORDS))
    first_only = re.compile(r"\s*[" + "".join(sorted(first_characters(_WORDS))) + "]", re.IGNORECASE)
    rng = random.Random(1)
    lines = ["".join(rng.choice(_SPECIAL) for _ in range(rng.randint(0, 4))) + rng.choice(
        ["", "bstract", "ummary", "ésumé", "要", "zet", "urzfassung", "correspond", " x", "st"]) for _ in range(30_000)]
    lines += [chr(c) + "bstract" for c in range(0x3000)]  # every first character of the BMP's first part
    matches = gated_match(regex, first_characters(_WORDS))
    assert [matches(t) for t in lines] == [regex.match(t) is not None for t in lines]
    matched = 0
    for line in lines:
        assert gate(line) == (first_only.match(line) is not None), repr(line)  # the gate is its own regex
        if regex.match(line):
            matched += 1
            assert gate(line), repr(line)
    assert matched > 1000 and sum(not gate(t) for t in lines) > 3000
