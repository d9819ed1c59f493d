"""Citation markers in one sentence: numeric and author-year, in the conventions of several
scripts. Pure functions; `find_markers` returns one `Marker` per cited item, so `[3, 7]` is two
markers and `[3–5]` three, each with the span of the text that names it.

Styles (the `style` of a marker; the stage counts resolution per style):

* `numeric` — brackets `[3]`, `[3, 7]`, `[3–5]`, fullwidth `［3］`, `［３，５］`; a range is
  expanded when it spans at most `MAX_RANGE` numbers (else its two ends are kept);
* `superscript` — Unicode superscript digits after a word or punctuation (`shown¹²`, `shown.³⁻⁵`),
  not after a unit (`m²`, `cm³`: a word of one or two letters after a number), of at most four
  digits a number and none 0, as in brackets;
* `author_year` — a parenthesis holding `Name [et al. | and Name], year[, year]` items
  separated by `;` or `,` (`(Smith et al., 2019; Lee 2020)`, `(Wylie 1954, Price et al. 1981)`,
  `(Иванов и др., 2019)`, `（Smith, 2019）`); year suffixes kept (`2014a`);
* `narrative` — `Smith et al. (2019)`: a parenthesis of years only, the name before it (not
  the last word of a capitalized run: "Journal of Adolescent Health (2011)" is a venue).

What is never a marker: a parenthesis whose "name" is a lower-case word ("measured in 2019"),
a month or a word from `NOT_NAMES` ("Table", "January"), or longer than `MAX_NAME_WORDS` words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_RANGE = 30
MAX_NAME_WORDS = 6
MAX_PARENTHESIS_CHARS = 400

_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014\u2212\uff0d~\uff5e"
MAX_NUMBER_DIGITS = 4
_NUM = f"[0-9\uff10-\uff19]{{1,{MAX_NUMBER_DIGITS}}}"
_NUM_ITEM = rf"{_NUM}(?:\s*[{_DASHES}]\s*{_NUM})?"
_NUMERIC = re.compile(
    rf"[\[\uff3b]\s*(?P<body>{_NUM_ITEM}(?:\s*[,\uff0c;\uff1b\u3001]\s*{_NUM_ITEM})*)\s*[\]\uff3d]")
_NUM_PART = re.compile(rf"(?P<a>{_NUM})(?:\s*[{_DASHES}]\s*(?P<b>{_NUM}))?")
_SUP_DIGITS = {"\u00b9": 1, "\u00b2": 2, "\u00b3": 3, "\u2070": 0, "\u2074": 4, "\u2075": 5, "\u2076": 6,
               "\u2077": 7, "\u2078": 8, "\u2079": 9}
_SUP = "[" + "".join(_SUP_DIGITS) + "]+"
_SUPERSCRIPT = re.compile(rf"(?P<body>{_SUP}(?:[,\u207b\u2013\-]{_SUP})*)")
_LONG_NUMBER = re.compile(rf"\d{{{MAX_NUMBER_DIGITS + 1}}}")
_UNIT_BEFORE = re.compile(r"(?:^|[\d\s])[^\W\d_]{1,2}$")
_PARENS = re.compile(rf"[(\uff08](?P<body>[^()\uff08\uff09]{{2,{MAX_PARENTHESIS_CHARS}}})[)\uff09]")
_YEAR = r"(?:1[6-9]\d\d|20\d\d)(?:[a-z](?![^\W\d_]))?"
_YEARS = rf"{_YEAR}(?:\s*[,\uff0c]\s*{_YEAR}(?![\w]))*"
_AY_ITEM = re.compile(
    rf"(?P<names>[^\W\d_][^;\uff1b()\d]*?)[\s,\uff0c]*(?P<years>{_YEARS})(?!\w)")
_ONLY_YEARS = re.compile(rf"^\s*(?P<years>{_YEARS})\s*$")
_ONE_YEAR = re.compile(r"(?P<y>1[6-9]\d\d|20\d\d)(?P<s>[a-z])?")
_NAME_TOKEN = r"[^\W\d_][\w'\u2019\-]+"
_PARTICLE = r"(?:van|von|der|den|de|da|di|du|la|le|dos|das|del|della|ten|ter|al|el)"
_NARRATIVE_NAME = re.compile(
    rf"(?P<names>(?:{_PARTICLE}\s+)*{_NAME_TOKEN}"
    rf"(?:\s+(?:et\s+al\.?|and\s+{_NAME_TOKEN}|&\s+{_NAME_TOKEN}|и\s+др\.?|и\s+{_NAME_TOKEN}|und\s+{_NAME_TOKEN}))?)"
    r"\s*$")
# Where the first author's surname ends inside a names phrase.
_NAME_END = re.compile(
    r"\s+(?:et\s+al|and|&|и|und|et|y|e|ve|dan|och|og|en|i)(?:\s|\.|,|$)|\s*[,\uff0c\u3001]|\s+и\s+др|等|ら|\s*&")
_LEADING_WORDS = re.compile(r"^(?:(?:e\.g\.|i\.e\.|cf\.|see|also|reviewed\s+in|for\s+review|in|by|z\.\s?B\.|vgl\.|"
                            r"см\.|напр\.|например|and|or|but|as|from|after)[\s,:]+)+", re.IGNORECASE)
NOT_NAMES = frozenset(
    "table tables figure figures fig figs eq equation appendix section chapter supplementary supplement "
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec spring summer autumn fall winter "
    "since until from between before after during in at by circa ca accessed retrieved published received "
    "accepted revised available updated version copyright tabelle abbildung tableau figure tabla figura "
    "таблица рисунок рис год".split()
)
_PARTICLES = frozenset("van von der den de da di du la le dos das del della ten ter al el".split())
_FULLWIDTH_DIGITS = str.maketrans("\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19", "0123456789")


@dataclass(frozen=True)
class Marker:
    """One cited item: `number` for numeric styles, `surname` + `year` (+ `suffix`) for
    author-year styles; `start`/`end` index the sentence."""

    style: str
    start: int
    end: int
    number: int | None = None
    surname: str | None = None
    year: int | None = None
    suffix: str | None = None


def _numbers(body: str) -> list[int]:
    out: list[int] = []
    for part in _NUM_PART.finditer(body.translate(_FULLWIDTH_DIGITS)):
        a = int(part.group("a"))
        b = int(part.group("b")) if part.group("b") else None
        if b is not None and a < b <= a + MAX_RANGE:
            out.extend(range(a, b + 1))
        else:
            out.extend([a] if b is None or b == a else [a, b])  # "[5-5]" names one reference
    return out


def _numeric(sentence: str) -> list[Marker]:
    """Bracketed numbers; a group holding a 0 is an interval ("[0, 1]"), not a citation."""
    out: list[Marker] = []
    for m in _NUMERIC.finditer(sentence):
        numbers = _numbers(m.group("body"))
        if 0 not in numbers:
            out.extend(Marker("numeric", m.start(), m.end(), number=n) for n in numbers)
    return out


def _superscripts(sentence: str) -> list[Marker]:
    """Superscript numbers; a run of more than `MAX_NUMBER_DIGITS` digits, or a group holding a
    0, is not a citation (as in brackets): `_numbers` cut "¹²³⁴⁵⁶⁷⁸⁹" into 1234, 5678 and 9, and
    "¹⁻¹⁰⁰⁰⁰⁰⁰" into 0, 1 and 1000, which resolved to references the sentence never cited."""
    out: list[Marker] = []
    for m in _SUPERSCRIPT.finditer(sentence):
        before = sentence[: m.start()]
        if not before or before[-1].isspace() or before[-1].isdigit() or _UNIT_BEFORE.search(before):
            continue
        body = "".join(str(_SUP_DIGITS[c]) if c in _SUP_DIGITS else "-" if c in "\u207b\u2013-" else c
                       for c in m.group("body"))
        numbers = _numbers(body)
        if _LONG_NUMBER.search(body) or 0 in numbers:
            continue
        out.extend(Marker("superscript", m.start(), m.end(), number=n) for n in numbers)
    return out


def first_surname(names: str) -> str | None:
    """The first author's surname in a names phrase ("see Smith et al." -> "Smith", "van der
    Berg and Lee" -> "van der Berg", "Иванов и др." -> "Иванов"); None when it is not a name."""
    names = _LEADING_WORDS.sub("", names.strip())
    cut = _NAME_END.search(names)
    surname = (names[: cut.start()] if cut else names).strip(" .,:\u3001")
    words = surname.split()
    if not words or len(words) > MAX_NAME_WORDS:
        return None
    head = next((w for w in words if w.lower() not in _PARTICLES), None)
    if head is None or head.lower().strip(".") in NOT_NAMES:
        return None
    first = head[0]
    if not first.isalpha() or first.islower():
        return None
    if any(w[0].islower() and w.lower() not in _PARTICLES for w in words):
        return None
    return surname


def _years(text: str) -> list[tuple[int, str | None, int, int]]:
    return [(int(m.group("y")), m.group("s"), m.start(), m.end()) for m in _ONE_YEAR.finditer(text)]


_NAME_WINDOW = 120  # a narrative name is looked for in the characters just before "(2019)"
_PREVIOUS_WORDS = re.compile(r"(?:(\S+)\s+)?(\S+)\s*$")
_ET_AL = re.compile(r"\s(?:et\s+al|и\s+др)")
_TITLE_GLUE = frozenset("of on for and in & de des der du la le di do da del van".split())


def _narrative_name(sentence: str, named: re.Match) -> bool:
    """A name before "(2019)" is an author's unless it ends a title or venue: a run of
    capitalized words, possibly glued by "of", "on", "de" ... ("Journal of Adolescent
    Health (2011)", "Journal of Climate and Society (2008)"); "Smith et al." is always a name."""
    if _ET_AL.search(named.group("names")):
        return True
    before = _PREVIOUS_WORDS.search(sentence, max(0, named.start("names") - _NAME_WINDOW), named.start("names"))
    if before is None:
        return True
    word, earlier = before.group(2), before.group(1)
    if word[0].isupper() and word[-1] not in ".:;":
        return False
    return not (word.lower() in _TITLE_GLUE and earlier and earlier[0].isupper() and earlier[-1] not in ".:;")


def _author_year(sentence: str) -> list[Marker]:
    out: list[Marker] = []
    for paren in _PARENS.finditer(sentence):
        body, base = paren.group("body"), paren.start("body")
        only = _ONLY_YEARS.match(body)
        if only:
            named = _NARRATIVE_NAME.search(sentence, max(0, paren.start() - _NAME_WINDOW), paren.start())
            surname = first_surname(named.group("names")) if named and _narrative_name(sentence, named) else None
            if surname is not None and named is not None:
                out.extend(Marker("narrative", named.start("names"), paren.end(), surname=surname, year=y, suffix=s)
                           for y, s, _, _ in _years(only.group("years")))
            continue
        for item in _AY_ITEM.finditer(body):
            surname = first_surname(item.group("names"))
            if surname is None:
                continue
            start = base + item.start("names") + (len(item.group("names")) - len(item.group("names").lstrip()))
            out.extend(Marker("author_year", start, base + item.end(), surname=surname, year=y, suffix=s)
                       for y, s, _, _ in _years(item.group("years")))
    return out


def find_markers(sentence: str) -> list[Marker]:
    """Every citation marker of `sentence`, in reading order."""
    found = _numeric(sentence) + _superscripts(sentence) + _author_year(sentence)
    return sorted(found, key=lambda m: (m.start, m.end, m.number or 0, m.year or 0, m.suffix or ""))


def normalize_name(name: str) -> str:
    """A surname for comparison: accents and case folded, hyphens and apostrophes as spaces,
    only letters kept ("García" -> "garcia", "Al-Sayed" -> "al sayed")."""
    decomposed = unicodedata.normalize("NFKD", name)
    letters = "".join(c if c.isalpha() else " " for c in decomposed if not unicodedata.combining(c))
    return " ".join(letters.casefold().split())
