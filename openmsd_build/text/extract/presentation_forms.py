"""Arabic-script text layers written in presentation forms, read back as letters in reading order.

Why this exists: some PDF producers draw Arabic and Persian with the contextual glyphs of the
"presentation forms" blocks (U+FB50-U+FDFF, U+FE70-U+FEFF: "ﺍﻟﻌﺮﺑﻴﺔ" instead of "العربية")
and store each line in the order it is drawn, left to right, which is the reverse of the
reading order. Such a line matches nothing (no heading word, no title, no truth) and CLD3
reads it poorly, so an abstract in it is lost or kept as noise.

The repair (`read_presentation_forms`), line by line, only where a line holds presentation
forms: the forms become their letters (NFKC), and the line is turned into reading order when
CLD3 finds the turned line more probable than the line as stored. Turning reverses the order
of the line's runs and the letters of its right-to-left runs; a Latin word or a number inside
keeps its own order ("2019", "۱۳۹۸", "BlockChain").
"""

from __future__ import annotations

import re
import unicodedata

_FORMS_RE = re.compile("[\ufb50-\ufdff\ufe70-\ufeff]")
# right-to-left letters (Hebrew, Arabic and their presentation forms), not Arabic-Indic or
# Persian digits: numbers read left to right in every script, so they keep their order
_RTL = "\u0590-\u065f\u066a-\u06ef\u06fa-\u08ff\ufb1d-\ufdff\ufe70-\ufefc"
_RTL_RUN_RE = re.compile(f"([{_RTL}]+(?:[ \u200c]+[{_RTL}]+)*)")
MIN_FORMS = 3
"""Presentation-form characters a line needs before it is repaired (a stray ligature glyph in
a proper Unicode line is left to NFKC elsewhere)."""


def has_presentation_forms(text: str) -> bool:
    """Whether `text` holds any Arabic presentation-form character."""
    return _FORMS_RE.search(text) is not None


def turn_line(line: str) -> str:
    """`line` in the other direction: its runs in reverse order, the letters of each
    right-to-left run reversed, other runs (Latin words, numbers) kept as they are."""
    parts = _RTL_RUN_RE.split(line)
    return "".join(part[::-1] if k % 2 else part for k, part in enumerate(reversed(parts)))


def read_presentation_forms(text: str) -> str:
    """`text` with every line that holds presentation forms as letters in reading order."""
    if not has_presentation_forms(text):
        return text
    from openmsd_build.core.language import detect_language

    lines = text.split("\n")
    for k, line in enumerate(lines):
        if len(_FORMS_RE.findall(line)) < MIN_FORMS:
            continue
        stored = unicodedata.normalize("NFKC", line)
        turned = unicodedata.normalize("NFKC", turn_line(line))
        lines[k] = turned if detect_language(None, turned)[1] > detect_language(None, stored)[1] else stored
    return "\n".join(lines)
