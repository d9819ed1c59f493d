"""Exact prechecks in front of line-start regexes.

The PDF and landing rules ask long case-insensitive alternations (`^\\s*(?:abstract|summary|
...)`) about every line of a document, and most lines start with a letter no alternative
starts with. A regex call costs about a microsecond however soon it fails; a set lookup on the
line's first character costs a tenth of that. `start_gate` builds that lookup from the
alternation itself, and lets the regex engine decide every case the lookup is not sure of, so
the answer is the regex's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_NOT_LITERAL = set("()[]{}.?*+^$|\\")


def first_characters(alternation: str) -> set[str]:
    """The characters the alternatives of `alternation` (a regex `a|b|...` of words) start
    with. Every top-level alternative must start with a literal character (a letter, a digit,
    or an escaped sign such as `\\*`): a class or a group there would hide which characters can
    start a match, so it is refused. Pieces that start after a `|` inside a group add their
    first characters too (more than needed, never fewer)."""
    out = set()
    for piece in alternation.split("|"):
        if piece[:1] == "\\":
            first = piece[1:2]
            if not first or first.isalnum():  # `\s`, `\d`, `\w`: a class, not a character
                raise ValueError(f"alternative {piece!r} starts with a class")
        else:
            first = piece[:1]
            if not first or first in _NOT_LITERAL:
                raise ValueError(f"alternative {piece!r} does not start with a literal character")
        out.add(first)
    return out


def start_gate(firsts: set[str], flags: int = re.IGNORECASE) -> Callable[[str], bool]:
    """A test `may_start(line)` that is False only when `line`, after leading white space, does
    not start with one of `firsts` as a regex compiled with `flags` compares characters
    (case-insensitively: "ſ" is an "s", "K" (Kelvin) a "k"): a necessary condition for any
    regex `^\\s*(?:...)` whose every match starts with one of them.

    A line whose first character is ASCII and not white space (most lines) is answered from a
    set computed once with the gate's own regex; any other line asks that regex."""
    gate = re.compile(r"\s*[" + "".join(re.escape(c) for c in sorted(firsts)) + "]", flags)
    ascii_firsts = frozenset(c for c in map(chr, range(128)) if not c.isspace() and gate.match(c))

    def may_start(line: str) -> bool:
        first = line[:1]
        if first.isascii() and not first.isspace():  # "" too: nothing to start a match
            return first in ascii_firsts
        return gate.match(line) is not None

    may_start.ascii_firsts = ascii_firsts  # type: ignore[attr-defined]
    return may_start


def gated_match(regex: re.Pattern[str], firsts: set[str]) -> Callable[[str], bool]:
    """`lambda line: regex.match(line) is not None` for a regex `^\\s*(?:...)` every match of
    which starts, after white space, with one of `firsts` (`first_characters` of its
    alternation): the regex runs only on lines `start_gate(firsts, regex.flags)` lets through,
    with the gate's lookup made in the same call."""
    gate = start_gate(firsts, regex.flags)
    ascii_firsts = gate.ascii_firsts  # type: ignore[attr-defined]
    match = regex.match

    def matches(line: str) -> bool:
        first = line[:1]
        if first.isascii() and not first.isspace() and first not in ascii_firsts:
            return False
        return match(line) is not None

    return matches
