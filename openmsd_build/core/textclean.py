"""Text normalization shared by every field of every source: markup, whitespace, tokens.

Crossref abstracts are JATS XML fragments (`<jats:p>`, `<jats:italic>`, `<mml:math>`),
titles can carry HTML or MathML, and pages and PDFs bring stray control characters. This
module turns all of them into NFC plain text, keeping paragraph breaks and the text inside
math, and is where a paper's abstract is cleaned.

The published reference scripts removed JATS tags with a greedy `</?jats:.+>` regex, which
deletes everything between the first and the last tag, i.e. the whole abstract. Here tags
are matched one at a time (`<[^>]*>`), so only the tags go.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter

# Block-level tags whose end is a paragraph break.
_BLOCK_TAGS = r"(?:jats:)?(?:p|sec|title|list-item|list|def-item|disp-quote|boxed-text|br|div|h[1-6]|li|tr|table|label|caption)"
# `[^<>]`, not `[^>]`: a tag holds no `<`, and with `[^>]` every unclosed `<p` rescans to
# the end of the text (quadratic on "<p <p <p ...").
_BLOCK_TAG_RE = re.compile(rf"</?{_BLOCK_TAGS}\b[^<>]*/?>", re.IGNORECASE)
_TAG_RE = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")
# Raw input kept per field before cleaning: ten times the longest value the papers stage
# keeps (2,000-character titles, 100,000-character abstracts), so markup-heavy text is still
# complete while a multi-megabyte "title" costs bounded time. Output is cut by the caller.
MAX_RAW_TITLE_CHARS = 20_000
MAX_RAW_ABSTRACT_CHARS = 1_000_000
# Unicode's 66 noncharacters (U+FDD0-U+FDEF and the last two code points of every plane): a
# program's own markers, never text; a source that leaks one (U+FFFF as an end marker) gives a
# title no reader can show.
NONCHARACTER_CODES = (*range(0xFDD0, 0xFDF0), *(plane + end for plane in range(0, 0x110000, 0x10000) for end in (0xFFFE, 0xFFFF)))
_CONTROL_RE = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b\ufeff" + "".join(map(chr, NONCHARACTER_CODES)) + "]")
ESCAPE_SEQUENCE_RE = re.compile(r"\x1b(?:\[[0-?]*[!-/]*[A-Za-z@`~]|\][^\x07\x1b\n]{0,256}(?:\x07|\x1b\\))")
"""A terminal escape sequence (ECMA-48's CSI "ESC [ 31 m", "ESC [ 3 ~", and a terminated OSC
"ESC ] 0;x BEL"): text copied from a terminal carries them, and deleting only the ESC left
"[31m" in the words. Removed whole wherever control characters are (`normalize_text`, the
papers stage's short fields). The CSI's last character is a letter, "@", "`" or "~" (what
terminals use; ECMA-48 allows any of "@" to "~") and no space comes before it, so an ESC
before "[ and" or "[12]" takes only itself. Not the two-character escapes ("ESC A"): an ESC in
a PDF's text layer may stand for a glyph (TeX's T1 encoding puts "ff" there, OT1 "œ"), and
the letter after it is text. Nor the one-byte C1 forms (0x9B CSI, 0x9D OSC): 0x9B is also cp1252's
"›" decoded as Latin-1, printed before a word ("\x9bAbstract"), and a CSI rule there would take
the word's first letter; those bytes go as control characters, the parameters stay."""
_SPACES_RE = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
# The characters of `_SPACES_RE` but " ": a text without them and without "  " has only runs
# of one " ", which the substitution leaves as they are. Testing for them first (C scans) is
# ~10x cheaper than the substitution, which builds a replacement for every word gap and was a
# quarter of cleaning an abstract.
_OTHER_SPACES_RE = re.compile(r"[\t\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_BLANK_LINES_RE = re.compile(r"\n\s*\n+")
# The abstract's heading in the languages of the world's journals. One list for every source,
# as `KEYWORD_LABELS` is: the same label heads an abstract on a landing page
# (`extract.landing`), in a PDF (`extract.pdf`) and at the start of a metadata abstract, where
# it is removed (`clean_abstract`).
ABSTRACT_LABELS = (
    r"abstract|summary|resumo|resumen|r[ée]sum[ée]|resum|zusammenfassung|kurzfassung|riassunto|sommario|"
    r"samenvatting|streszczenie|abstrakt|abstrak|absztrakt|intisari|souhrn|аннотация|анотація|резюме|реферат|"
    r"摘\s?要|要\s?旨|要\s?約|抄\s?録|초\s?록|요\s?약|özet|öz|ملخص|الملخص|چکیده|sammanfattning|sammendrag|"
    r"tiivistelmä|περίληψη|tóm tắt|บทคัดย่อ|सारांश|extended summary"
)
# A heading that only says "Abstract" before the real text.
_ABSTRACT_HEADING_RE = re.compile(rf"^\s*(?:{ABSTRACT_LABELS})\s*[:.\-–—]?\s*(?:\n|$)", re.IGNORECASE)
# Same heading glued to the first sentence ("Abstract: We study ...", "ABSTRACT We ...",
# OpenAlex's "Zusammenfassung Die ...", "Resumo Atividades ...", "SUMMARY The ..."): the
# heading word followed by punctuation, or by a space and a capital. Structured-abstract
# labels ("BACKGROUND:", "Objetivo.") are part of the text as printed and stay.
_ABSTRACT_PREFIX_RE = re.compile(
    rf"^\s*(?i:{ABSTRACT_LABELS})\s*[:.\-–—：]\s*|^\s*(?i:{ABSTRACT_LABELS})\s+(?=[A-ZÀ-ÖØ-ÞĀ-ſА-ЯЁЄІЇ])"
)
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
# `_TOKEN_RE`'s word characters in ASCII (letters, digits, "_") to b"a", every other byte to b" "
_ASCII_WORD_MASK = bytes(ord("a") if chr(b).isalnum() or b == ord("_") else ord(" ") for b in range(256))
# the same for UTF-8 text whose non-ASCII characters are all word characters: their bytes to b"a"
_UTF8_WORD_MASK = _ASCII_WORD_MASK[:128] + b"a" * 128
_ASCII_BYTES = bytes(range(128))
# A newline between two CJK characters. The pattern starts with the newline and looks back
# over it (`\n(?<=X\n)` matches where `(?<=X)\n` does), so the regex engine jumps from one
# newline to the next instead of trying its lookbehind at every character; the same for
# `_SINGLE_NEWLINE_RE` (`(?<!\n)\n(?!\n)`).
_CJK_WRAP_RE = re.compile(r"\n(?<=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef\u3000-\u303f]\n)(?=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef\u3000-\u303f])")
_SINGLE_NEWLINE_RE = re.compile(r"\n(?<!\n\n)(?!\n)")
_SPACE_RUN_RE = re.compile(r" {2,}")
_WHITESPACE_RUN_RE = re.compile(r"\s+")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


SURROGATE_RE = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate half: never text, and no UTF-8 writer (Parquet, Beam's coders) takes one."""


def join_surrogates(text: str) -> str:
    """`text` with each pair of UTF-16 surrogate halves as its one character and a half
    without its partner left out (as pypdfium2's `get_text_range` decodes PDFium's text).

    Two sources hand out halves: PDFium counts a character outside the Basic Multilingual
    Plane (a mathematical italic letter, an emoji, a CJK extension ideograph) as two
    characters, and a page read one PDFium character at a time gets both halves apart; and
    JSON spells such a character as two escapes, which `json.loads` leaves apart when a page's
    JSON-LD has one without its partner. A title holding them stopped `inspect` and would
    stop the Parquet write."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")


def normalize_text(text: str | None, keep_paragraphs: bool = True) -> str:
    """NFC, control characters removed, runs of spaces collapsed, blank-line paragraphs kept,
    typographic ligatures expanded and ligatures split by a space rejoined
    (`repair_ligatures`)."""
    if not text:
        return ""
    if keep_paragraphs:
        # line breaks at either end go (a run of them becomes one blank line or one space, and
        # the end result is stripped) without touching the rest: what is between them is
        # classified (the first line of a block cut off, as `clean_abstract` does with a heading)
        core = text.strip("\n") if text[:1] == "\n" or text[-1:] == "\n" else text
        layout = text_layout(core) if core else OTHER_LAYOUT
        if layout == NORMAL_LAYOUT:
            return repair_ligatures(core)
        if layout == WRAPPED_LAYOUT:  # only the line-wrapping steps below change it
            return repair_ligatures(_SINGLE_NEWLINE_RE.sub(" ", _CJK_WRAP_RE.sub("", core)))
    text = unicodedata.normalize("NFC", text)
    if text.isprintable():
        # Fast path for the common case (most titles, many abstracts): no line breaks, no
        # control or format characters, no exotic spaces -- only runs of ASCII spaces.
        return repair_ligatures(" ".join(text.split()))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in text:
        text = ESCAPE_SEQUENCE_RE.sub("", text)
    text = _CONTROL_RE.sub("", text)
    if "  " in text or "\t" in text or (not text.isascii() and _OTHER_SPACES_RE.search(text)):
        text = _SPACES_RE.sub(" ", text)
    if keep_paragraphs:
        text = _BLANK_LINES_RE.sub("\n\n", text)
        lines = [line.strip() for line in text.split("\n")]
        text = "\n".join(lines)
        # single newlines are line wrapping: a space, except between two CJK characters
        # (Chinese / Japanese lines wrap inside words and are written without spaces)
        text = _CJK_WRAP_RE.sub("", text)
        text = _SINGLE_NEWLINE_RE.sub(" ", text)
        if "  " in text:
            text = _SPACE_RUN_RE.sub(" ", text)
    else:
        text = _WHITESPACE_RUN_RE.sub(" ", text)
    return repair_ligatures(text.strip())


NORMAL_LAYOUT = 2
"""`text_layout`: `normalize_text` changes nothing but ligatures (`is_normal_layout`)."""
WRAPPED_LAYOUT = 1
"""`text_layout`: as `NORMAL_LAYOUT` but for single line breaks (lines wrapped, as a PDF
body joined by its lines gives them): `normalize_text` only unwraps them and repairs
ligatures."""
OTHER_LAYOUT = 0
"""`text_layout`: any other text, which goes through every step of `normalize_text`."""


def is_normal_layout(text: str) -> bool:
    """Whether every step of `normalize_text` before `repair_ligatures` leaves `text` as it is
    (`text_layout` is `NORMAL_LAYOUT`). Text an extractor already normalized is so, and is
    then not scanned again by each of those steps (a body is the longest text of a paper)."""
    return text_layout(text) == NORMAL_LAYOUT


def text_layout(text: str) -> int:
    """Which steps of `normalize_text` (with paragraphs kept) can change `text`: none but
    `repair_ligatures` (`NORMAL_LAYOUT`), only the unwrapping of single line breaks as well
    (`WRAPPED_LAYOUT`), or any (`OTHER_LAYOUT`). Text is normal layout when it is NFC, holds no
    control, format or exotic space character (`str.isprintable` once the line breaks are set
    aside), no run of spaces, no space at the start or end of a line, and line breaks only in
    pairs (paragraphs); wrapped layout allows single line breaks too.

    Why each check suffices: printable text holds no `_CONTROL_RE` or `_OTHER_SPACES_RE`
    character and no "\\r" or "\\t", so its only whitespace is " " and "\\n"; with no "  ",
    no " \\n" or "\\n " and no "\\n\\n\\n", every `_BLANK_LINES_RE` match is "\\n\\n" itself and
    lines are stripped already; with every line break in a pair neither `_CJK_WRAP_RE` nor
    `_SINGLE_NEWLINE_RE` matches, and a single line break they replace has a non-space on
    each side, so no run of spaces and no space at either end appears."""
    if "  " in text or text[:1] == " " or text[-1:] in (" ", "\n") or text[:1] == "\n":
        return OTHER_LAYOUT
    layout = NORMAL_LAYOUT
    if "\n" in text:
        if " \n" in text or "\n " in text or "\n\n\n" in text:
            return OTHER_LAYOUT
        if text.count("\n") != 2 * text.count("\n\n"):
            layout = WRAPPED_LAYOUT
    # printable but for its line breaks: the ASCII printable bytes and "\n" deleted in C, what
    # is left (the other characters, mostly few) asked `isprintable` (a lookup per character)
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_PRINTABLE_OR_NEWLINE)
    if text.isascii():
        return OTHER_LAYOUT if rest else layout
    if rest.decode("utf-8", "surrogatepass").isprintable() and unicodedata.is_normalized("NFC", text):
        return layout
    return OTHER_LAYOUT


_ASCII_PRINTABLE_OR_NEWLINE = bytes(b for b in range(128) if chr(b).isprintable() or b == ord("\n"))


# --- ligatures ---------------------------------------------------------------------------------
#
# PDF text layers (and abstracts publishers copied out of PDFs) carry the ligature glyphs
# U+FB00..FB06 ("ﬁ"), or lose them as a space: "scientifi c", "signi fi cant", "e ffective",
# "crisis fi nanciera". The glyphs are expanded as NFKC does. A space next to a ligature is
# removed only where the split is certain or the text itself shows that its ligatures are
# split (see `_ligature_joins`), so "staff members", "off the", Italian plurals ("i filosofi
# greci") and German "S. 71 ff" are never glued.
_LIGATURE_CHARS = {0xFB00: "ff", 0xFB01: "fi", 0xFB02: "fl", 0xFB03: "ffi", 0xFB04: "ffl", 0xFB05: "st", 0xFB06: "st"}
_LIGATURE_CHAR_RE = re.compile("[\ufb00-\ufb06]")
_LIGATURES = ("ffi", "ffl", "ff", "fi", "fl")
MIN_SPLIT_LIGATURES = 3
"""Split ligatures a text of 30 words or more with no ligature inside a word must show before
its words ending in a ligature are joined to the next one on the text's own evidence (with
one certain split, two are enough); either way twice as many as ligatures inside words."""
MIN_WORDS_FOR_FRAGMENTS = 100
"""Words a text must have before "the fragment is never used alone" counts as evidence."""
# Cheap test before any work: a ligature before a space and a lower-case letter, or a word
# starting with "ff" after a space (no word of the corpus's languages starts so).
# Written to start with "f" (the second branch looks back for the space), so the regex engine
# skips in C from one "f" to the next instead of trying both branches at every space: the same
# texts match, ten times faster on a body.
_SPLIT_HINT_RE = re.compile(r"f(?:[fil] [^\W\d_A-Z]|(?<= f)f[^\W\d_])")
SPLIT_HINT_PIECES = ("ff ", "fi ", "fl ", " ff")
"""Every match of the split-ligature hint holds one of these: a text with none of them is
left as it is by `repair_ligatures` when it is ASCII (the Crossref columnar reader keeps
such titles without calling the cleaner)."""
_INTERNAL_LIGATURE_RE = re.compile(r"(?:ff|fi|fl)(?=[^\W\d_])")
_LEADING_LETTERS_RE = re.compile(r"[^\W\d_]+")
_TRAILING_LETTERS_RE = re.compile(r"[^\W\d_]+$")
_CORE_RE = re.compile(r"[^\w]*([^\W\d_]+)[^\w]*")
_VOWELS = frozenset("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýœ")
_AFTER_FF = _VOWELS | {"l", "r"}  # "ffect", "fficient", "fford", "ffl": not "ffms" (code, names)
# Short words that often stand before a word starting with "fi" / "fl" ("de fi nes", "a fi n",
# "the fi rst"): never glued to a following ligature whose word the text does not confirm.
_FUNCTION_WORDS = frozenset(
    "a an and as at by e for in into is of on or the to with de del della di da do das dos des du el en "
    "et la las le les lo los na no o por para per que se su un una um uma y al au aux con der die das "
    "und im am zu ein eine och i w z na do".split()
)


def repair_ligatures(text: str) -> str:
    """Ligature glyphs expanded ("ﬁ" -> "fi"), and words a lost ligature split rejoined.

    One pass over the space-separated tokens (linear; nothing happens unless
    `_SPLIT_HINT_RE` finds a candidate). A space is removed when the split is certain:

    * a lone "fi" / "fl" / "ffi" / "ffl" / "ff" token before a lower-case word
      ("crisis fi nanciera", "Al fi n") -- none of them is a word on its own (an "ff" or
      "fl" after a number, "S. 71 ff", "2 fl oz", is left);
    * a word ending in a ligature before a lone consonant ("scientifi c", "perfi s");
    * a vowel before a word starting with "ff" ("e ffective", "a ff ect": after the lone-token
      rule, "a ffect");
    * the fragment before a lone "ff" / "ffi" / "ffl" ("su ffi cient"), which never starts a word.

    Further joins need evidence from the text itself that its ligatures are split (twice as
    many ligatures followed by a space as inside words, and one certain split, or three in a
    text of 30 words without a ligature inside a word): then a word ending in a
    ligature is joined to the next lower-case word unless both are words the text also uses
    elsewhere ("bibliográfi co", "signifi cativa"; not "staff members"), and, when no ligature
    stays glued to its left part anywhere in the text (spaces on both sides: "signi fi cant"),
    a lower-case fragment before a lone "fi" / "fl" that the text never uses alone and that is
    not a common short word ("the fi rst" stays "the first")."""
    if not text:
        return text
    # `isascii` is O(1) (a flag of the string): an ASCII text holds no ligature glyph; a text
    # the hint does not match (one scan, from "f" to "f") is returned as it is.
    if not text.isascii() and _LIGATURE_CHAR_RE.search(text):
        text = text.translate(_LIGATURE_CHARS)
    if not _SPLIT_HINT_RE.search(text):
        return text
    parts = text.split(" ")
    joins = _ligature_joins(parts, len(_INTERNAL_LIGATURE_RE.findall(text)), _ligature_sites(text, parts))
    if not joins:
        return text
    out = [parts[0]]
    for k in range(1, len(parts)):
        out.append(parts[k] if k - 1 in joins else " " + parts[k])
    return "".join(out)


# A space after "ff" / "fi" / "fl" (so also "ffi", "ffl") or before "ff": where a lost
# ligature may have put it. Each match ends with that space. Written to start with a
# character ("f" or the space) rather than a lookbehind, which the regex engine tried at
# every position of the text: half the time of `(?<=f[fil]) | (?=ff)`, the same spaces.
_LIGATURE_SITE_RE = re.compile(r"f[fil] | (?=ff)")


def _ligature_sites(text: str, parts: list[str]) -> list[int]:
    """The indexes k, in order, with `parts[k]` ending in a ligature or `parts[k + 1]`
    starting with "ff", where `parts = text.split(" ")`: the spaces a regex finds, each
    numbered by the spaces before it (counted between one site and the next, in C: no
    Python step per word)."""
    if len(parts) < 2:
        return []
    sites = []
    k = last = 0
    for match in _LIGATURE_SITE_RE.finditer(text):
        space = match.end() - 1
        k += text.count(" ", last, space)
        last = space
        sites.append(k)
    return sites


def _ligature_joins(parts: list[str], n_internal: int, sites: list[int]) -> set[int]:
    """Indexes k whose space (between parts[k] and parts[k+1]) a lost ligature put there
    (rules: `repair_ligatures`). Only the parts next to a ligature (`sites`, from
    `_ligature_sites`) are looked at."""
    n = len(parts)

    def tail(k: int) -> str:
        """The lower-cased letters `parts[k]` ends with ("" when it ends otherwise)."""
        m = _TRAILING_LETTERS_RE.search(parts[k])
        return m.group().lower() if m else ""

    def head(k: int) -> str:
        """The letters `parts[k]` starts with."""
        m = _LEADING_LETTERS_RE.match(parts[k])
        return m.group() if m else ""

    def lone(k: int) -> bool:
        """`parts[k]` is a ligature alone (after opening punctuation), not after a number
        ("71 ff", "2 fl oz")."""
        word = parts[k].lstrip("(\"“‘«[¿¡-")
        return word in _LIGATURES and not (k > 0 and parts[k - 1][-1:].isdigit())

    joins: set[int] = set()
    glued_left: list[int] = []  # "scientifi c": a word ending in a ligature, then a lower-case word
    lone_left: list[int] = []   # "signi fi cant": the fragment before a lone ligature
    for k in sites:
        nxt = head(k + 1)
        if not nxt or not nxt[0].islower():
            continue
        last = tail(k)
        if lone(k):
            joins.add(k)
            # the fragment before it, unless that is itself the end of a joined word
            before = k - 1
            prev = tail(before) if before >= 0 else ""
            if prev and prev[-1] in _VOWELS and not lone(before) and (before - 1) not in joins:
                if last in ("ff", "ffi", "ffl"):
                    joins.add(before)
                elif prev == parts[before]:
                    lone_left.append(before)
            continue
        if not last or not parts[k].endswith(last):
            continue  # punctuation or a capital before the space
        if nxt.startswith("ff") and last[-1] in _VOWELS and nxt[2:3] in _AFTER_FF:
            joins.add(k)  # "e ffective"
        elif len(last) > 2 and last.endswith(_LIGATURES):
            if len(nxt) == 1 and nxt not in _VOWELS:
                joins.add(k)  # "scientifi c"
            elif not last.endswith("ff"):  # "off the", "staff members", "Begriff der" are words
                glued_left.append(k)
    certain = len(joins)  # splits no word explains: the text does lose its ligatures
    n_split = len(glued_left) + certain
    evidence = (certain and n_split >= 2) or (not n_internal and n_split >= MIN_SPLIT_LIGATURES and n >= 30)
    if not evidence or n_split < 2 * n_internal:
        return joins
    # the text splits its ligatures: words the text uses on their own elsewhere
    candidates = Counter(tail(k) for k in glued_left)
    candidates.update(head(k + 1).lower() for k in glued_left)
    candidates.update(tail(k) for k in lone_left)
    words = Counter(m.group(1).lower() for p in parts if (m := _CORE_RE.fullmatch(p)))

    def known(word: str) -> bool:
        """Used as a word elsewhere in the text (not only at split points)."""
        return words[word] > candidates[word]

    for k in glued_left:
        if not (known(tail(k)) and known(head(k + 1).lower())):
            joins.add(k)
    if not glued_left and n > MIN_WORDS_FOR_FRAGMENTS:
        for k in lone_left:
            if tail(k) not in _FUNCTION_WORDS and not known(tail(k)):
                joins.add(k)
    return joins


def strip_markup(text: str | None, keep_paragraphs: bool = True) -> str:
    """Remove HTML / JATS / MathML tags one at a time, keeping the text inside them
    (so `<mml:mi>x</mml:mi>` keeps "x"), block ends as paragraph breaks, entities decoded."""
    if not text:
        return ""
    if "<" not in text and "&" not in text:
        return normalize_text(strip_tex_preambles(text), keep_paragraphs=keep_paragraphs)
    text = _replace_delimited(text, "<![CDATA[", "]]>", keep_inside=True)
    text = _replace_delimited(text, "<!--", "-->", keep_inside=False)
    # Block tags end a paragraph (or a phrase, in a one-line title); inline tags (<i>, <sub>,
    # MathML tokens) sit inside words ("c<sub>p</sub>", "BiFeO<sub>3</sub>") and vanish
    # without a space, or they would leave "c p" / "BiFeO 3".
    text = _BLOCK_TAG_RE.sub("\n\n" if keep_paragraphs else " ", text)
    text = _TAG_RE.sub("", text)
    text = html.unescape(html.unescape(text)) if "&amp;" in text else html.unescape(text)
    text = _TAG_RE.sub("", text)  # tags that were entity-escaped in the source ("&lt;i&gt;")
    return normalize_text(strip_tex_preambles(text), keep_paragraphs=keep_paragraphs)


def _replace_delimited(text: str, start: str, end: str, keep_inside: bool) -> str:
    r"""Replace each `start ... end` span by its inside (CDATA) or a space (comments).

    Same result as the lazy regexes `<!--.*?-->` / `<!\[CDATA\[(.*?)\]\]>`, in one pass:
    those regexes rescan to the end of the text for every unclosed opener, which is
    quadratic on a text of many `<!--`."""
    if start not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        i = text.find(start, pos)
        if i < 0:
            break
        j = text.find(end, i + len(start))
        if j < 0:
            break  # unclosed: neither this nor any later opener can close
        out.append(text[pos:i])
        out.append(text[i + len(start):j] if keep_inside else " ")
        pos = j + len(end)
    out.append(text[pos:])
    return "".join(out)


# Unicode tag characters (they spell hidden ASCII) and bidi embeddings, overrides and isolates:
# invisible, and in a title only a way to show one text and hold another.
_INVISIBLE_RE = re.compile("[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069]")


def clean_title(title: str | None) -> str:
    """A title as one line: markup (incl. MathML) stripped with its text kept, tag characters
    and bidi overrides removed; a title without a letter or digit (zero-width joiners,
    combining marks, emoji alone, punctuation) is no title (""). Raw input past
    `MAX_RAW_TITLE_CHARS` is not looked at."""
    if title and len(title) > MAX_RAW_TITLE_CHARS:
        title = title[:MAX_RAW_TITLE_CHARS]
    cleaned = strip_markup(title, keep_paragraphs=False)
    if cleaned and not cleaned.isascii() and _INVISIBLE_RE.search(cleaned):
        cleaned = _SPACES_RE.sub(" ", _INVISIBLE_RE.sub("", cleaned)).strip()
    if cleaned and not any(char.isalnum() or "\ue000" <= char <= "\uf8ff" for char in cleaned):
        return ""  # (private-use glyphs are a damaged text layer, which `text_layer_damage` names)
    return cleaned


# The keywords label in the languages of the world's journals. One list for every source: an
# abstract ends at it (`clean_abstract`, the PDF rules), and in a PDF the unlabelled paragraph
# above it is an abstract.
KEYWORD_LABELS = (
    r"key\s?words?|key\s?phrases|index terms|palavras[- ]chave|descritores|palabras[- ]clave|descriptores|"
    r"mots[- ]cl[ée]s|schl[üu]sselw[öo]rter|stichw[öo]rter|parole chiave|paraules clau|s[łl]owa kluczowe|"
    r"trefwoorden|sleutelwoorden|kata[- ]kata kunci|kata kunci|anahtar (?:kelimeler|sözcükler)|"
    r"ключевые слова|ключові слова|ключови думи|кључне речи|клучни зборови|түйін сөздер|"
    r"kl[íi]čov[áa] slova|kľúčové slová|kulcsszavak|cuvinte[- ]cheie|klju[čc]ne (?:rije[čc]i|besede)|"
    r"λέξεις[- ]κλειδιά|nyckelord|emneord|n[øo]gleord|asiasanat|avainsanat|märksõnad|atslēgvārdi|"
    r"raktažodžiai|açar sözlər|t[ừu] kh[óo]a|คำสำคัญ|मुख्य शब्द|מילות מפתח|"
    r"关键词|关键字|關鍵詞|關鍵字|キーワード|주제어|핵심어|검색어|الكلمات المفتاحية|الكلمات الدالة|"
    r"کلید ?واژه(?:ها)?|واژگان کلیدی|کلمات کلیدی"
)
# A paragraph (not the first) that opens with the keywords label -- "Keywords: a; b", or the
# label alone on its first line -- is the keyword list printed under the abstract, and what
# follows it (abbreviations, classification codes) is not the abstract either.
# The match starts at the last blank line before the label and takes no run of line breaks
# into a quantifier: a text of many blank lines costs linear time, not cubic.
_KEYWORDS_PARAGRAPH_RE = re.compile(rf"\n[ \t]*\n[ \t]*+(?:{KEYWORD_LABELS})[ \t]*+(?:[:：.—–-]|\n)", re.IGNORECASE)


# The same label run into the abstract's last paragraph (a deposit that lost its line breaks:
# "... subjects. Keywords Education on Climate Change; Teaching ..."): after a sentence end, a
# capitalised label, then a separator or a capitalised term list (a ";" before any full stop).
# Case-insensitive only inside the labels, so the engine skips to sentence ends in C.
_KEYWORDS_INLINE_RE = re.compile(
    rf"[.!?。][ \t]+(?=[^\W\d_a-zß-ÿа-я])(?i:{KEYWORD_LABELS})"
    r"(?:[ \t]*[:：—–]|[ \t]+(?=[A-ZÀ-ÖØ-ÞА-ЯЁ][^.;\n]{0,120};))"
)
_INLINE_SEPARATORS = (":", "：", ";", "—", "–")


def _inline_keywords(text: str) -> int | None:
    """Where a keywords label run into the text starts (`_KEYWORDS_INLINE_RE`), or None (at
    once when the text holds none of the separators the label needs)."""
    if not any(sep in text for sep in _INLINE_SEPARATORS):
        return None
    found = _KEYWORDS_INLINE_RE.search(text)
    return found.start() + 1 if found is not None else None


# A reference list, not an abstract (a heading's block that ran past the abstract into the
# bibliography): entries name an author "Surname, Given" or "Surname AB," and close their
# year the way reference styles do ("1971. Title", "(2019).", ", 2007.", "2019;12:").
_YEAR = r"(?:1[5-9]\d\d|20\d\d)[a-z]?"
ENTRY_YEAR_RE = re.compile(rf"\b{_YEAR}\.\s|\({_YEAR}\)[.,:]?\s|,\s{_YEAR}[.,;]\s|\b{_YEAR};\s?\d")
# an entry's author and year together: "Chang, Chung-Yuan. 1971.", "Smith, J. (2019).",
# "Smith JA, Lee K. ... 2019;" is left to the year count ("Chile, Argentina and Uruguay" is prose)
_ENTRY_AUTHOR_RE = re.compile(
    rf"[A-ZÀ-ÖØ-ÞĀ-Ž][\w'’-]+,\s+(?:[A-ZÀ-ÖØ-Þ][\w'’-]*\.?[ \t]*){{1,3}}[.,]?[ \t]*\(?{_YEAR}\)?[.,:;]")
# a numbered entry: "1. Trần Bá Hoành (2003).", "[12] Smith J, Lee K. Title. 2019;"
_NUMBERED_ENTRY_RE = re.compile(rf"(?:^|(?<=[\s.]))\[?\d{{1,3}}[\].]\s*[^\W\d_][^\n]{{0,80}}?\(?{_YEAR}\)?[.,:;]")
BIBLIOGRAPHY_MIN_ENTRIES = 3
"""Entry years (and at least two entry authors) that make a text a reference list, at one
per 40 words or denser: an abstract cites a few years in running prose ("Oreg (2003)"), not
one every sentence after an author name."""
_YEAR_STARTS = ("15", "16", "17", "18", "19", "20")
"""How every `_YEAR` starts."""


def looks_like_bibliography(text: str) -> bool:
    """Whether `text` reads as reference-list entries (`ENTRY_YEAR_RE`, and `_ENTRY_AUTHOR_RE`
    or `_NUMBERED_ENTRY_RE` for their starts)."""
    if sum(text.count(start) for start in _YEAR_STARTS) < BIBLIOGRAPHY_MIN_ENTRIES:
        return False  # each entry year starts a distinct one of them (counted in C)
    years = len(ENTRY_YEAR_RE.findall(text))
    if years < BIBLIOGRAPHY_MIN_ENTRIES or 40 * years < len(text.split()):
        return False
    return len(_ENTRY_AUTHOR_RE.findall(text)) + len(_NUMBERED_ENTRY_RE.findall(text)) >= 2


def _without_keywords(text: str) -> str:
    """`text` cut before its keywords paragraph (or its keywords label run into the last
    paragraph, `_KEYWORDS_INLINE_RE`) when that label, with what follows it, is the tail of
    the text (shorter than what precedes it, or a reference list). Some abstracts print the keywords early, after
    an extent line ("Обсяг роботи 30 сторінок ... Ключові слова: ...") and before the body:
    those are kept whole."""
    found = _KEYWORDS_PARAGRAPH_RE.search(text)
    start = found.start() if found is not None else _inline_keywords(text)
    if start is None or (len(text) - start >= start and not looks_like_bibliography(text[start:])):
        return text
    return text[:start]


# Paragraphs under an abstract that are page furniture, not prose: a subject-heading list
# ("Physics Subject Headings (PhySH)", "Dynamo theory", ...), a running head, or a date, DOI or
# copyright line ("Received 26 September 2018", "DOI:https://...", "© 2019 ...").
MAX_FURNITURE_CHARS = 80
_SENTENCE_END_RE = re.compile(r"[.!?。！？…।۔։።]\W{0,3}$")
_LABELLED_RE = re.compile(r"^[^\W\d_][\w /-]{0,40}[:：]\s*\S")  # "Trial registration: NCT...", "Conclusion: ..."
_FURNITURE_LINE_RE = re.compile(
    r"^(?:(?:received|accepted|published(?: online)?|revised|available online)\b[^.]{0,30}?\d"
    r"|doi\s*:?\s*(?:https?://\S+|10\.\S+)$|https?://\S+$|©|\(c\)\s?\d|copyright\s*(?:©|\(c\)|\d))",
    re.IGNORECASE,
)


def _without_trailing_furniture(text: str) -> str:
    """`text` without the furniture paragraphs that end it: two or more short ones that are not
    prose (no sentence end, not a labelled line, under `MAX_FURNITURE_CHARS` weighted
    characters: a list or a running head), or any that is a date / DOI / copyright line; its
    first paragraph always stays."""
    if "\n\n" not in text:
        return text
    paragraphs = text.split("\n\n")
    end, furniture = len(paragraphs), False
    while end > 1:
        last = paragraphs[end - 1].strip()
        if not last:
            end -= 1
            continue
        if weighted_length(last) >= MAX_FURNITURE_CHARS:
            break
        if _FURNITURE_LINE_RE.match(last):
            furniture = True
        elif _SENTENCE_END_RE.search(last) or _LABELLED_RE.match(last):
            break
        end -= 1
    short = sum(1 for p in paragraphs[end:] if p.strip())
    if end == len(paragraphs) or not (furniture or short >= 2):
        return text
    return "\n\n".join(paragraphs[:end])


def clean_abstract(abstract: str | None) -> str:
    """An abstract from any source: markup stripped, paragraphs kept, a leading
    "Abstract" heading (in several languages) dropped, and a keywords paragraph printed under
    it cut off with what follows (`_without_keywords`), and the furniture paragraphs under it
    (subject headings, date, DOI and copyright lines: `_without_trailing_furniture`)."""
    if not abstract:
        return ""
    if len(abstract) > MAX_RAW_ABSTRACT_CHARS:
        abstract = abstract[:MAX_RAW_ABSTRACT_CHARS]
    # A heading on a line of its own ("Resumo\n..."): single line breaks are joined into
    # spaces by normalization, so look at the raw first line before that happens.
    first, newline, rest = abstract.lstrip().partition("\n")
    if newline:
        first = strip_markup(first, keep_paragraphs=False)
        heading = _ABSTRACT_HEADING_RE.match(first)
        if heading and heading.end() == len(first):
            abstract = rest
    text = strip_markup(abstract, keep_paragraphs=True)
    for _ in range(2):
        stripped = _ABSTRACT_HEADING_RE.sub("", text, count=1)
        stripped = _ABSTRACT_PREFIX_RE.sub("", stripped, count=1)
        if stripped == text:
            break
        text = stripped.lstrip()
    return _without_trailing_furniture(_without_keywords(text).strip()).strip()


CJK_CHAR_WEIGHT = 4
"""A Chinese, Japanese or Korean character carries about what four Latin characters do (a
word of one or two characters against a word and its space), so a length floor written in
Latin characters admits a CJK text of a quarter the characters (`weighted_length`)."""


def weighted_length(text: str) -> int:
    """`len(text)` with each CJK character counted `CJK_CHAR_WEIGHT` times: a length floor
    that is fair to every script (a three-sentence Japanese abstract is ~90 characters)."""
    return len(text) + (CJK_CHAR_WEIGHT - 1) * len(_CJK_RE.findall(text))


def count_tokens(text: str | None) -> int:
    """Whitespace/word tokens, with each CJK character counted as a token (CJK text has no
    spaces, so a word count would call a whole Chinese abstract one token)."""
    if not text:
        return 0
    if text.isascii():  # most texts: word characters as b"a", others as b" ", runs counted in C
        words = text.encode("ascii").translate(_ASCII_WORD_MASK)
        return words.count(b" a") + words.startswith(b"a")
    distinct = set(text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass"))
    if _CJK_RE.search("".join(distinct)) is None:
        # the non-ASCII characters that are not word characters (dashes, quotation marks) as
        # spaces, then the words counted on the bytes as for ASCII text: every other
        # non-ASCII character is a letter or digit, all of its bytes count as word bytes
        for char in distinct:
            if not char.isalnum():
                text = text.replace(char, " ")
        words = text.encode("utf-8", "surrogatepass").translate(_UTF8_WORD_MASK)
        return words.count(b" a") + words.startswith(b"a")
    cjk = len(_CJK_RE.findall(text))
    words = len(_TOKEN_RE.findall(_CJK_RE.sub(" ", text)))
    return words + cjk


# --- lines that are not running text -----------------------------------------------------------

# A letter-spaced word ("R EVI EW", "A B S T R A C T", "a c t i v i t y"): letter groups of
# one to three, at least three groups, at least one alone; one case (a capital may start it).
_SPACED_TOKEN_RE = re.compile(r"[^\W\d_]{1,3}")
_SPACED_CJK_RE = re.compile(r"(?<![^\s])([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff])(?: ([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff])(?![^\s：:])){2,}")
_HANGUL_RE = re.compile(r"[\uac00-\ud7af]")
MAX_SPACED_LINE_CHARS = 80
# Four characters without a space: a token `_SPACED_TOKEN_RE` cannot match whole (tokens are
# the line's runs of non-space characters), so most lines are decided by this one scan.
_FOUR_NON_SPACES_RE = re.compile(r"[^ ]{4}")


_ASCII_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ASCII_NOT_WORD = bytes(b for b in range(128) if not (chr(b).isalnum() or b == ord("_")))
_NOT_WORD_RE = re.compile(r"\W+")
_LATIN1_NOT_WORD = bytes(b for b in range(256) if not (chr(b).isalnum() or b == ord("_")))


def count_letters(text: str) -> int:
    """How many characters of `text` are letters (`str.isalpha`); see `letter_counts` (ASCII
    text, the common case, without its tuple)."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data) - len(data.translate(None, _ASCII_LETTERS))
    ascii_letters, other_letters = letter_counts(text)
    return ascii_letters + other_letters


def letter_counts(text: str) -> tuple[int, int]:
    """(ASCII letters, other letters) of `text` (`str.isalpha`): ASCII text counted in C, and
    in other text its ASCII letters, its other characters asked one by one only when they are
    not all letters (a dash, a quotation mark). Apart because language identification asks how
    much of a text is Latin (`language._script_languages`)."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data) - len(data.translate(None, _ASCII_LETTERS)), 0
    data = text.encode("utf-8", "surrogatepass")
    ascii_letters = len(data.translate(None, _NOT_ASCII_LETTER_BYTES))
    rest = data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")  # the non-ASCII characters
    return ascii_letters, (len(rest) if rest.isalpha() else sum(map(str.isalpha, rest)))


_NOT_ASCII_LETTER_BYTES = bytes(b for b in range(256) if not (b < 128 and chr(b).isalpha()))


def word_chars(text: str) -> str:
    r"""`text` lower-cased with every non-word character removed (`re.sub(r"\W+", "",
    text.lower())`): the key two texts are compared by. ASCII text is done in C."""
    if text.isascii():
        return text.encode("ascii").lower().translate(None, _ASCII_NOT_WORD).decode("ascii")
    low = text.lower()
    try:  # most European text: Latin-1 throughout, done in C as ASCII is
        return low.encode("latin-1").translate(None, _LATIN1_NOT_WORD).decode("latin-1")
    except UnicodeEncodeError:
        return _NOT_WORD_RE.sub("", low)


def has_letters(text: str, n: int) -> bool:
    """`text` holds at least `n` letters (`str.isalpha`); stops counting at the `n`-th, so a
    hot check ("enough letters to be a title / to detect a language") does not walk the
    whole text."""
    count = 0
    for ch in text:
        if ch.isalpha():
            count += 1
            if count >= n:
                return True
    return False


def collapse_letter_spacing(line: str) -> str:
    """A line printed letter-spaced as one word again: "R EVI EW" -> "REVIEW", "A B S T R A C T"
    -> "ABSTRACT", "参 考 文 献" -> "参考文献". Only a whole short line of letter groups is
    collapsed (Latin, Cyrillic, Greek: single letters, or in capitals groups of one to three
    averaging 2.5 letters at most with one single; one case), so "DNA RNA", code "br x x fin"
    or a formula "k I g k" stay; where the print
    separated words by two spaces, the words are kept apart. A run of three or more single
    Chinese / Japanese characters is joined (those scripts use no spaces); Korean, which spaces
    its words (some of one syllable), only as a whole line of single syllables ("참 고 문 헌")."""
    stripped = line.strip()
    if not stripped or len(stripped) > MAX_SPACED_LINE_CHARS or " " not in stripped:
        return line
    if _CJK_RE.search(stripped):
        if not re.search(r"\S \S \S", stripped):
            return line
        if _HANGUL_RE.search(stripped):  # Korean spaces words: only a whole line of single syllables
            tokens = stripped.split()
            return "".join(tokens) if len(tokens) >= 3 and all(len(t) == 1 and _HANGUL_RE.match(t) for t in tokens) else line
        return _SPACED_CJK_RE.sub(lambda m: m.group().replace(" ", ""), stripped)
    if _FOUR_NON_SPACES_RE.search(stripped):  # a token of four or more: not letter-spaced
        return line
    words = re.split(r" {2,}", stripped)
    tokens = [t for w in words for t in w.split(" ")]
    if len(tokens) < 3 or not all(_SPACED_TOKEN_RE.fullmatch(t) for t in tokens):
        return line
    singles = sum(len(t) == 1 for t in tokens)
    letters = "".join(tokens)
    rest = letters[1:]
    if not singles or not (rest.isupper() or rest.islower()):
        return line
    # in capitals, groups of up to three ("R EVI EW"); otherwise single letters only
    if not (letters.isupper() and 2 * len(letters) <= 5 * len(tokens)) and singles != len(tokens):
        return line
    return " ".join(w.replace(" ", "") for w in words)


_TEX_PREAMBLE_RE = re.compile(
    r"\\documentclass(?:\[[^\]\n]{0,80}\])?\{[^}\n]{0,40}\}"
    r"(?:\s*\\(?:usepackage|setlength|pagestyle|renewcommand|newcommand)(?:\[[^\]\n]{0,80}\])?(?:\{[^{}\n]{0,80}\}){0,2}[^\\\n]{0,20})*"
    r"\s*\\begin\{document\}|\\end\{document\}"
)
_TEX_LINE_START_RE = re.compile(
    r"^\s*\\(?:documentclass|usepackage|begin\{|end\{|newcommand|renewcommand|def\\|section\*?\{|subsection\*?\{|"
    r"label\{|bibliography|bibliographystyle|maketitle|author\{|title\{|setlength|input\{|include\{)"
)
_TEX_COMMAND_RE = re.compile(r"\\[A-Za-z]{2,}")  # not "\n" / "\t" escapes of program code


def strip_tex_preambles(text: str) -> str:
    """LaTeX document wrappers gone, their formula kept: Crossref abstracts of some publishers
    carry each formula as a whole TeX document ("\\documentclass[12pt]{minimal}
    \\usepackage{amsmath} ... \\begin{document}$$\\alpha$$\\end{document}") next to its MathML."""
    if "\\documentclass" not in text and "\\end{document}" not in text:
        return text
    return _TEX_PREAMBLE_RE.sub(" ", text)


def is_tex_source_line(line: str) -> bool:
    """A line of LaTeX source, not text: it starts with a structural command (\\documentclass,
    \\usepackage, \\begin{...}, \\section{...}), or it is math-heavy (three or more backslash
    commands making up a quarter of its characters)."""
    if "\\" not in line:
        return False
    if _TEX_LINE_START_RE.match(line):
        return True
    commands = _TEX_COMMAND_RE.findall(line)
    return len(commands) >= 3 and sum(map(len, commands)) * 4 >= len(line.replace(" ", ""))


# A breadcrumb trail ("Computer Science > Digital Libraries", "Home › Journals › Vol. 3"):
# short segments, each starting with a capital or a digit, joined by > › » or →.
_BREADCRUMB_SPLIT_RE = re.compile(r"\s+[>›»→]\s+|\s*[›»]\s*")
MAX_BREADCRUMB_SEGMENT_CHARS = 60


def is_breadcrumb_line(line: str) -> bool:
    """A line of site navigation: two or more short segments joined by ">" / "›" / "»" / "→",
    each starting with a capital letter or a digit and holding two letters or more, the first
    starting with a letter ("S > 0", "N > M" in an equation are not one)."""
    if len(line) > 200 or "«" in line or not any(sep in line for sep in (">", "›", "»", "→")):
        return False  # "«" ... "»" are quotation marks
    segments = [s.strip() for s in _BREADCRUMB_SPLIT_RE.split(line.strip())]
    if len(segments) < 2 or not segments[0][:1].isalpha():
        return False
    return all(
        s and len(s) <= MAX_BREADCRUMB_SEGMENT_CHARS and (s[0].isupper() or s[0].isdigit()) and len(s.split()) <= 8
        and sum(ch.isalpha() for ch in s) >= 2
        for s in segments
    )


# --- damaged text layers ------------------------------------------------------------------------

DAMAGE_SAMPLE_CHARS = 4000
"""Characters of a text looked at to tell a damaged text layer (enough for a title or an
abstract; a long content is judged on its start and middle)."""
_PRIVATE_USE_RE = re.compile("[\ue000-\uf8ff]")
_DAMAGE_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_UTF8_AS_LATIN1_RE = re.compile("[ÃÂ][\u0080-\u00bf]|â€")
_NOT_ALNUM_RE = re.compile(r"[\W_]+")
_ANY_DAMAGE_CHAR_RE = re.compile("[\ue000-\uf8ff\ufffd\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00c3\u00c2\u00e2]")
"""A character every match of `_PRIVATE_USE_RE`, `_DAMAGE_CONTROL_RE` and `_UTF8_AS_LATIN1_RE`
holds, or U+FFFD: a text without one shows none of those signs of damage."""
_ASCII_NOT_ALNUM = bytes(b for b in range(128) if not chr(b).isalnum())


def alnum_only(text: str) -> str:
    r"""`text` without every character that is not alphanumeric (`str.isalnum`): what
    `re.sub(r"[\W_]+", "", text)` gives (a regex `\w` is `isalnum` or "_"). The ASCII
    characters go as bytes deleted in C; the rest of the text is checked in one C call and
    only scanned by the regex when one of its non-ASCII characters is not alphanumeric (a
    dash, a quotation mark)."""
    if text.isascii():
        return text.encode("ascii").translate(None, _ASCII_NOT_ALNUM).decode("ascii")
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_NOT_ALNUM).decode("utf-8", "surrogatepass")
    return rest if not rest or rest.isalnum() else _NOT_ALNUM_RE.sub("", rest)


_ASCII_SPACES = bytes(b for b in range(128) if chr(b).isspace())


def visible_chars(text: str) -> int:
    """How many characters of `text` are not whitespace (`sum(map(len, text.split()))`), with
    the ASCII whitespace deleted as bytes in C; a rest that `isprintable` holds no other
    whitespace (every non-ASCII space or line separator is unprintable), else it is split."""
    if text.isascii():
        return len(text.encode("ascii").translate(None, _ASCII_SPACES))
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_SPACES).decode("utf-8", "surrogatepass")
    return len(rest) if rest.isprintable() else sum(map(len, rest.split()))


_ASCII_CONTROLS = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])  # `_DAMAGE_CONTROL_RE`'s ASCII part
_ASCII_ALNUM = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # `str.isalnum()` in ASCII


def text_layer_damage(text: str | None) -> str | None:
    """Why `text` is not readable text but the output of a damaged text layer, or None.

    A PDF whose fonts carry no usable Unicode map gives glyph codes instead of letters: Private
    Use Area characters, U+FFFD replacement characters, control characters, or a run of
    symbols with hardly a letter in it; a page decoded with the wrong charset gives UTF-8
    read as Latin-1 ("Ã©", "â€™"). Such text must not go out as a title, abstract or body.
    Each sign is measured on the letters and symbols of (a sample of) the text, so one stray
    symbol in a formula does not condemn a paragraph."""
    if not text:
        return None
    if len(text) > DAMAGE_SAMPLE_CHARS:
        middle = len(text) // 2
        text = text[: DAMAGE_SAMPLE_CHARS // 2] + text[middle: middle + DAMAGE_SAMPLE_CHARS // 2]
    # counted in C: `str.split()` cuts where `str.isspace()`; for an ASCII text (most) the
    # control and alphanumeric characters are bytes deleted by `bytes.translate`, for any other
    # `[\W_]` is what `str.isalnum()` is not (both checked on every code point by the tests)
    visible = visible_chars(text)
    if visible < 4:
        return None
    if text.isascii():  # no private-use, replacement or Latin-1-read character
        data = text.encode("ascii")
        if (len(data) - len(data.translate(None, _ASCII_CONTROLS))) * 30 > visible:
            return "control_characters"
        alnum = len(data) - len(data.translate(None, _ASCII_ALNUM))
        return "symbols_not_letters" if visible >= 40 and alnum * 3 < visible else None
    if _ANY_DAMAGE_CHAR_RE.search(text) is None:  # one scan: none of the four signs below can count
        return "symbols_not_letters" if visible >= 40 and _few_alnum(text, visible) else None
    if len(_PRIVATE_USE_RE.findall(text)) * 20 > visible:
        return "private_use_glyphs"
    if text.count("\ufffd") * 30 > visible:
        return "replacement_characters"
    if len(_DAMAGE_CONTROL_RE.findall(text)) * 30 > visible:
        return "control_characters"
    if visible >= 12 and len(_UTF8_AS_LATIN1_RE.findall(text)) * 40 > visible:
        return "utf8_read_as_latin1"
    if visible >= 40 and _few_alnum(text, visible):
        return "symbols_not_letters"
    return None


def _few_alnum(text: str, visible: int) -> bool:
    """`len(alnum_only(text)) * 3 < visible`: the ASCII letters and digits alone (bytes kept
    in C) are a lower bound of the count, enough to say no for most text in a Latin script;
    the others are counted as `alnum_only` counts them."""
    data = text.encode("utf-8", "surrogatepass")
    if (len(data) - len(data.translate(None, _ASCII_ALNUM))) * 3 >= visible:
        return False
    return len(alnum_only(text)) * 3 < visible
