"""Text layers written in a legacy 8-bit font encoding, read back as the letters they draw.

Why this exists: before Unicode fonts were common, Vietnamese journals typeset with TCVN3
fonts (".VnTime", ".VnTimeH") and LaTeX set Central European text with T1 ("Cork") fonts.
A PDF that embeds such a font without a usable Unicode map gives the font's byte codes as
Latin-1 characters: "nghiªn cøu ¶nh h-ëng" for "nghiên cứu ảnh hưởng", "po£etni" for
"početni". Such lines often hold the title (set in a display font) while the body is proper
Unicode, so one wrong title goes out per paper unless the line is read in its encoding.

How it decides (evidence, not word lists):

* a line is a candidate when a Latin-1 sign (¢, ª, ®, ¸, ...) sits *between two letters*,
  which no real orthography does (`legacy_signs`), and it holds no letter beyond Latin-1
  (a line with "ầ" or "č" was written with a Unicode font);
* the page's candidate lines are read in each known encoding, and an encoding is chosen
  only when CLD3 finds the decoded lines a language with a reliable answer and a higher
  probability than the lines as they are, and in a language the encoding was made for
  (`choose_encoding`): Catalan's "l·l", a Portuguese "1ª" or a Spanish "mg·kg" stays as it
  is, and Croatian in T1 is not read as Vietnamese.
"""

from __future__ import annotations

import re

# TCVN3 (TCVN 5712:1993, VN3): the code points the font's glyphs sit at, as Latin-1
# characters, and the Vietnamese letters they draw. Upper-case toned vowels have no code of
# their own (the ".VnTimeH" fonts draw capitals at the lower-case codes).
_TCVN3_FROM = (
    "¸µ¶·¹" "¨¾»¼½Æ" "©ÊÇÈÉË" "®" "ÐÌÎÏÑ" "ªÕÒÓÔÖ" "Ý\u00d7\u00d8ÜÞ" "ãßáâä" "«èåæçé" "¬íêëìî"
    "óïñòô" "\u00adøõö÷ù" "ýúûüþ" "¡¢£¤¥¦§"
)
_TCVN3_TO = (
    "áàảãạ" "ăắằẳẵặ" "âấầẩẫậ" "đ" "éèẻẽẹ" "êếềểễệ" "íìỉĩị" "óòỏõọ" "ôốồổỗộ" "ơớờởỡợ"
    "úùủũụ" "ưứừửữự" "ýỳỷỹỵ" "ĂÂÊÔƠƯĐ"
)
# T1 ("Cork", LaTeX's fontenc T1): the accented letters at 0x80-0xBF; 0xC0-0xFF are Latin-1's
# letters except the four below.
_T1_FROM = "".join(chr(c) for c in range(0x80, 0xC0)) + "×ß÷ÿ"
_T1_TO = (
    "ĂĄĆČĎĚĘĞĹĽŁŃŇŊŐŔŘŚŠŞŤŢŰŮŸŹŽŻĲİđ§"
    "ăąćčďěęğĺľłńňŋőŕřśšşťţűůÿźžżĳ¡¿£"
    "Œ" "ß" "œ" "ß"
)
assert len(_TCVN3_FROM) == len(_TCVN3_TO) and len(_T1_FROM) == len(_T1_TO)

ENCODINGS = {"tcvn3": str.maketrans(_TCVN3_FROM, _TCVN3_TO), "t1": str.maketrans(_T1_FROM, _T1_TO)}
"""The legacy encodings a text layer is tried in, as `str.translate` tables."""
ENCODING_LANGUAGES = {
    "tcvn3": frozenset({"vi"}),
    "t1": frozenset({"cs", "sk", "pl", "hr", "bs", "sr", "sl", "hu", "ro", "tr", "lt", "lv", "et", "mt", "sq", "eo"}),
}
"""The languages each encoding's reading must be detected as: TCVN3 holds only Vietnamese
letters; T1's upper half holds the letters of Central and Eastern European languages (a
Spanish "mg·kg" read in T1 still reads as Spanish, so it is not taken for T1)."""


_LETTER = "A-Za-zÀ-ÖØ-öø-ÿ"
_SIGNS = "\u0080-\u009f¡-§©-³µ-·¹-¿"
LEGACY_SIGNS = _SIGNS
"""The signs (a regex class's body) that a legacy-encoded letter is read as: a text without
any is not in a legacy encoding (`legacy_signs` is 0)."""
# a sign between two letters: "nghiªn", "c¾t", "po£etni"; the spacing accents `¨´¸` are not
# signs here (they are the TeX accent repair's: "te´orica"), but a line shown to be in an
# encoding by other signs is read whole, those included
_SIGN_IN_WORD_RE = re.compile(f"[{_LETTER}][{_SIGNS}]+[{_LETTER}]")
_BEYOND_LATIN1_RE = re.compile("[\u0100-\u024f\u1e00-\u1eff]")
# in a TCVN3 line PDFium gives the soft-hyphen code (ư) as a hyphen: "h-ëng" is "hưởng" (only
# before another TCVN3 letter code: "e-mail" stays)
_HYPHEN_IN_WORD_RE = re.compile(f"(?<=[{_LETTER}])[-\u00ad](?=[{re.escape(_TCVN3_FROM)}])")
MIN_SIGNS_PER_PAGE = 2
"""Signs inside words needed on a page before any decoding is tried: one stray "l·l" or a
font's odd glyph is not an encoding."""


_ANY_SIGN_RE = re.compile(f"[{_SIGNS}]")


def legacy_signs(text: str) -> int:
    """How many times a Latin-1 sign or C1 code sits between two letters in `text` (0 at once
    when it holds no sign at all, as most pages do)."""
    if _ANY_SIGN_RE.search(text) is None:
        return 0
    return len(_SIGN_IN_WORD_RE.findall(text))


def _is_candidate(line: str) -> bool:
    """Whether `line` may be in a legacy encoding: a sign inside a word, no letter beyond Latin-1."""
    return _SIGN_IN_WORD_RE.search(line) is not None and _BEYOND_LATIN1_RE.search(line) is None


def candidate_lines(text: str) -> list[str]:
    """The lines of `text` that may be in a legacy encoding (`_is_candidate`)."""
    return [ln for ln in text.splitlines() if _is_candidate(ln)]


def decode_line(line: str, encoding: str) -> str:
    """`line` read in `encoding` (a key of `ENCODINGS`)."""
    if encoding == "tcvn3":
        line = _HYPHEN_IN_WORD_RE.sub("\u00ad", line)
    return line.translate(ENCODINGS[encoding])


def choose_encoding(text: str) -> str | None:
    """The legacy encoding `text`'s candidate lines are written in, or None: the encoding whose
    reading CLD3 finds reliably in one language, more probably than the lines as they are."""
    if legacy_signs(text) < MIN_SIGNS_PER_PAGE:
        return None
    lines = candidate_lines(text)
    if not lines:
        return None
    from openmsd_build.core.language import detect_language

    sample = " ".join(lines)[:2000]
    _lang, best_prob, _ok = detect_language(None, sample)
    best = None
    for name in ENCODINGS:
        lang, prob, reliable = detect_language(None, " ".join(decode_line(ln, name) for ln in lines)[:2000])
        if lang not in ENCODING_LANGUAGES[name]:
            continue
        if reliable and prob > best_prob:
            best, best_prob = name, prob
    return best


_TCVN3_CODE_RE = re.compile(f"[{re.escape(_TCVN3_FROM.replace(chr(0xAD), ''))}]")


def decode_text(text: str, encoding: str | None) -> str:
    """`text` with each candidate line (`candidate_lines`) read in `encoding`; unchanged when
    `encoding` is None. On a page found to be TCVN3 a line of Latin-1 letters that holds any
    TCVN3 code is read too ("Kü thuËt ®iÖn tö" has no sign inside a word): Vietnamese written
    with a Unicode font has letters beyond Latin-1 in nearly every line."""
    if encoding is None:
        return text
    out = []
    for line in text.split("\n"):
        if _is_candidate(line) or (encoding == "tcvn3" and _TCVN3_CODE_RE.search(line)
                                   and not _BEYOND_LATIN1_RE.search(line)):
            line = decode_line(line, encoding)
        out.append(line)
    return "\n".join(out)
