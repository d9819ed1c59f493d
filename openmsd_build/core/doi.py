"""DOI normalization: the single join key of the whole build.

Crossref writes DOIs in mixed case, OpenAlex prefixes `https://doi.org/`, OpenCitations
Index rows carry `doi:` prefixes, and scraped pages URL-encode them. Every stage calls
`normalize_doi` so that these spellings of one DOI meet in the same join key; the published
reference scripts did not, and lost the joins.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

# Prefixes seen in the sources, matched case-insensitively after whitespace is trimmed.
_PREFIX_RE = re.compile(
    r"^(?:(?:https?://)?(?:(?:dx\.|www\.)?doi\.org|doi\.[a-z]+\.org)/|doi:\s*|info:doi/|urn:doi:)",
    re.IGNORECASE,
)
# Hyphen look-alikes that copy/paste and PDF extraction put into DOIs.
_HYPHENS = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")
# Invisible characters that must never be part of a key: C0/C1 controls and Unicode's
# Default_Ignorable_Code_Point set (soft hyphen, zero-width and bidi controls, word joiner,
# variation selectors, Hangul fillers, tags, ...: DerivedCoreProperties.txt). Every other
# format character (general category Cf) is removed too (`_without_invisible`).
_INVISIBLE_RE = re.compile(
    "[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
# Trailing punctuation that belongs to the sentence around a DOI, not to the DOI.
_TRAILING = ".,;:'\"»>"
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_LEADING = "<\"'«"
_MAX_PEELS = 8
# Registrant prefix "10." + 4–9 digits (optionally dotted sub-prefixes), "/" and a suffix
# with no whitespace.
_DOI_RE = re.compile(r"^10\.[0-9]{4,9}(?:\.[0-9]+)*/\S+$")
MAX_DOI_LENGTH = 400
# Cap on the *raw* value, checked before any work: room for a URL prefix and a DOI that is
# percent-encoded twice (`%252F`, 5 characters per character), nothing more. Every step of
# normalization is linear, but a 200k-character "DOI" must cost nothing at all.
MAX_RAW_DOI_LENGTH = 5 * MAX_DOI_LENGTH + 64
# Already canonical: ASCII, lower-case, no '%', no leading/trailing punctuation to strip.
# Such strings are returned as they are without the full pipeline (most source DOIs).
_CANONICAL_RE = re.compile(r"10\.[0-9]{4,9}(?:\.[0-9]+)*/[!-$&-@\[-~]+(?<![.,;:'\"\>\)\]\}])")


class InvalidDOI(ValueError):
    """Raised by `normalize_doi` with a short reason code in `.reason`."""

    def __init__(self, reason: str, value: object) -> None:
        super().__init__(f"{reason}: {value!r:.120}")
        self.reason = reason


def normalize_doi(value: object) -> str:
    """Return the canonical key for a DOI string, or raise `InvalidDOI`.

    Steps: trimming of whitespace, NULs and invisible characters; prefix removal
    (`https://doi.org/`, `http://dx.doi.org/`, `doi:` ...); URL-decoding (repeated while
    it changes something, so a double-encoded DOI normalizes too); one spelling for
    look-alike characters (`_look_alikes`: NFKC, digits of any script as ASCII
    digits, look-alike hyphens as ASCII, invisible characters removed); lower-case (DOIs
    are case-insensitive by the DOI Handbook); trailing sentence punctuation removed. The
    result is idempotent: normalizing a key returns it unchanged.
    """
    if not isinstance(value, str):
        raise InvalidDOI("doi_not_a_string", value)
    if len(value) > MAX_RAW_DOI_LENGTH:
        raise InvalidDOI("doi_too_long", value)
    if len(value) <= MAX_DOI_LENGTH and _CANONICAL_RE.fullmatch(value):
        return value
    text = _look_alikes(value).strip()
    # Prefixes and encodings can nest ("doi:https%3A%2F%2Fdoi.org%2F10..."): peel them off
    # until nothing changes, so the result is a fixpoint and normalization is idempotent.
    for _ in range(_MAX_PEELS):
        before = text
        text = _PREFIX_RE.sub("", text).strip()
        if "%" in text and _valid_percent(text):
            try:
                text = unquote(text, errors="strict")
            except UnicodeDecodeError:  # "%80": escapes that are not UTF-8 encode no DOI
                raise InvalidDOI("doi_malformed", value) from None
        text = _strip_leading(_strip_trailing(_look_alikes(text).strip()))
        if text == before:
            break
    else:
        raise InvalidDOI("doi_malformed", value)
    # The DOI Handbook makes DOIs case-insensitive over ASCII; lower() is what every source
    # we join against (COCI, OpenAlex) already uses, so keys stay comparable with theirs.
    text = _lower(text)
    if not text:
        raise InvalidDOI("doi_empty", value)
    if len(text) > MAX_DOI_LENGTH:
        raise InvalidDOI("doi_too_long", value)
    if not _DOI_RE.match(text) or "%" in text and _valid_percent(text):
        raise InvalidDOI("doi_malformed", value)
    if not text.isprintable() or not _encodable(text):  # lone surrogates cannot be written to Parquet
        raise InvalidDOI("doi_malformed", value)
    return text


def _without_invisible(text: str) -> str:
    """`text` without `_INVISIBLE_RE`'s characters and any other format character (Cf)."""
    text = _INVISIBLE_RE.sub("", text)
    if not text.isascii():
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return text


def _look_alikes(text: str) -> str:
    """One spelling for the characters that look alike (part of the key's canonical form):

    - NFKC: full-width forms (`１０．１２３４／ａｂｃ`, typed with a CJK input method),
      ligatures, super- and subscript digits, the Kelvin sign ... become the ASCII characters
      they stand for; NFKC rather than NFC, as a DOI is an identifier typed and copied, not
      text whose compatibility forms carry meaning;
    - every decimal digit (Unicode category Nd: Arabic-Indic, Devanagari, mathematical bold
      ...) becomes its ASCII digit: the registrant prefix is numeric by definition and a
      number is the same number in any script;
    - hyphen look-alikes become `-`, and invisible characters are removed (again after
      NFKC, which can expose some).

    Letters of other scripts are kept as they are (a Cyrillic `а` is not a Latin `a`:
    folding confusable letters could merge two different DOIs). Applied before the prefix
    is peeled (`ｄｏｉ：` is `doi:`) and after every URL-decoding (escapes can encode any of
    these)."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFKC", text)
    text = "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c for c in text)
    return _without_invisible(text.translate(_HYPHENS))


def _lower(text: str) -> str:
    """Lower case, then NFKC again (lower-casing can leave a decomposable form), so the
    result is a fixpoint of `_look_alikes`."""
    text = text.lower()
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _strip_leading(text: str) -> str:
    """Drop quotes and angle or unbalanced opening brackets in front of a DOI.

    One pass with running bracket counts (not `text[1:]` and `count()` per character, which
    is quadratic on a long run of quotes or brackets)."""
    opened = {o: text.count(o) for o in _OPENERS}
    closed = {c: text.count(c) for c in _OPENERS.values()}
    start = 0
    while start < len(text):
        first = text[start]
        if first in _LEADING or first.isspace():
            start += 1
        elif first in _OPENERS and opened[first] > closed[_OPENERS[first]]:
            opened[first] -= 1
            start += 1
        else:
            break
    return text[start:]


def _strip_trailing(text: str) -> str:
    """Drop sentence punctuation after a DOI.

    Brackets are legal inside DOIs (SICI style "...(2006)87[2832:tiopma]2.0.co;2"), so a
    closing bracket is only dropped when it is unbalanced, i.e. it closes the sentence's.
    One pass from the end with running counts, so it is linear in the length.
    """
    closed = {c: text.count(c) for c in _CLOSERS}
    opened = {o: text.count(o) for o in _CLOSERS.values()}
    end = len(text)
    while end:
        last = text[end - 1]
        if last in _TRAILING or last.isspace():
            end -= 1
        elif last in _CLOSERS and closed[last] > opened[_CLOSERS[last]]:
            closed[last] -= 1
            end -= 1
        else:
            break
    return text[:end]


_BAD_PERCENT_RE = re.compile(r"%(?![0-9a-fA-F]{2})")


def _valid_percent(text: str) -> bool:
    """True when every '%' starts a two-hex-digit escape (else the '%' is literal).
    A search for one bad '%' is a single linear scan without backtracking."""
    return _BAD_PERCENT_RE.search(text) is None


def try_normalize_doi(value: object) -> str | None:
    """`normalize_doi` that returns None instead of raising, for optional fields."""
    try:
        return normalize_doi(value)
    except InvalidDOI:
        return None
