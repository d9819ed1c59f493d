"""Sentence splitting for citation contexts, for every script of the build.

Why a rule of our own: a citation context is one sentence, so a splitter that cuts at "et
al." or "Fig." puts the author in one sentence and the year in the next, and one that only
knows ASCII periods never splits Chinese or Japanese text (written with 。！？ and no space).
The rules:

* paragraphs (blank lines) are always boundaries; a single line break is a space (PDF text);
* CJK terminators 。！？｡ and the fullwidth period ． end a sentence wherever they stand, with
  the closing quotes or brackets and a numeric marker (［3］) that follow them;
* `.`, `!`, `?` (and `…`) end a sentence when whitespace and then something that is not a
  lower-case letter follow, unless the word before the period is an abbreviation
  (`ABBREVIATIONS`: et al., Fig., e.g., i.e., vs., Eq., Ref., No., Vol., pp. ... in several
  languages) or a single capital (an initial). A numeric marker placed after the period
  ("shown.[3] Next", "shown.³ Next") stays with its sentence.
"""

from __future__ import annotations

import re

ABBREVIATIONS = frozenset(
    "al e.g i.e cf vs ed eds approx ca resp dr prof mr mrs ms st jr sr inc ltd corp dept univ ibid "
    "viz suppl eg ie z.b d.h bzw vgl ggf hrsg sog u.a p.ex éd coll др см т.е т.д т.п им".split()
)
# Abbreviations that are also words ("no", "p"): an abbreviation only before a number.
NUMBER_ABBREVIATIONS = frozenset(
    "fig figs eq eqs ref refs vol vols no nos pp p sect sec tab chap ch nr s abb bd рис табл г гг с".split()
)
_SUPERSCRIPTS = "\u00b9\u00b2\u00b3\u2070\u2074\u2075\u2076\u2077\u2078\u2079"
_CLOSERS = "\"'\u201d\u2019\u00bb)\\]\u300d\u300f\uff09\uff3d"
_NUMERIC_TAIL = (
    r"(?:\s?[\[\uff3b][0-9\uff10-\uff19][0-9\uff10-\uff19,\uff0c\u3001\s\u2013\u2014\-]*[\]\uff3d]"
    rf"|[{_SUPERSCRIPTS}]+(?:[,\u207b\u2013][{_SUPERSCRIPTS}]+)*)?"
)
_CJK_END = rf"[\u3002\uff01\uff1f\uff61\uff0e]+[{_CLOSERS}]*{_NUMERIC_TAIL}"
# A Latin end starts only at the first terminator of a run (the look-behind) and takes the
# whole run (possessive): a run not followed by whitespace and a word ("a....", "x!?!?y") was
# otherwise tried from every one of its positions, each scanning to the run's end and
# failing: quadratic (20,000 periods took a minute). Same boundaries: a match from inside a
# run ends where one from the run's start could, and a terminator never follows a match
# (closers and markers are not terminators, and the look-ahead wants whitespace).
_LATIN_TERMINATORS = "[.!?\u2026]"
_LATIN_END = rf"(?<!{_LATIN_TERMINATORS}){_LATIN_TERMINATORS}++[{_CLOSERS}]*{_NUMERIC_TAIL}(?=\s+\S)"
_END = re.compile(rf"(?P<cjk>{_CJK_END})|(?P<latin>{_LATIN_END})")
_WORD_WINDOW = 64  # an abbreviation is looked for in the characters just before the period
_WORD_BEFORE = re.compile(r"([^\W\d_]+(?:\.[^\W\d_]+)*)$")
_PARAGRAPHS = re.compile(r"\n[ \t\r\f\v]*\n+")
_SPACES = re.compile(r"\s+")


def _is_abbreviation(text: str, period_at: int, after: str) -> bool:
    """Is the period at `period_at` the end of an abbreviation or an initial (`after`: the
    first character after the whitespace that follows)?"""
    match = _WORD_BEFORE.search(text, max(0, period_at - _WORD_WINDOW), period_at)
    if match is None:
        return False
    word = match.group(1).lower()
    if word in NUMBER_ABBREVIATIONS and after.isdigit():
        return True
    return word in ABBREVIATIONS or (len(word) == 1 and match.group(1).isupper())


_NEXT_CHAR = re.compile(r"\s*(\S?)")


def _next_char(text: str, position: int) -> str:
    """The first character after the whitespace at `position` ("" at the end)."""
    return _NEXT_CHAR.match(text, position).group(1)  # type: ignore[union-attr]


def split_paragraph(paragraph: str) -> list[str]:
    """The sentences of one paragraph (whitespace collapsed), in order, none empty."""
    text = _SPACES.sub(" ", paragraph).strip()
    sentences: list[str] = []
    start = 0
    for match in _END.finditer(text):
        end = match.end()
        if match.group("latin") is not None:
            after = _next_char(text, end)
            if after.islower() or (match.group("latin")[0] == "." and _is_abbreviation(text, match.start(), after)):
                continue
        piece = text[start:end].strip()
        if piece:
            sentences.append(piece)
        start = end
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def split_sentences(text: str) -> list[str]:
    """Every sentence of a document's text, paragraph by paragraph."""
    out: list[str] = []
    for paragraph in _PARAGRAPHS.split(text or ""):
        out.extend(split_paragraph(paragraph))
    return out
