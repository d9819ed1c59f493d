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
_CONTROL_RE = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b\ufeff\ufffe]")
_SPACES_RE = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_BLANK_LINES_RE = re.compile(r"\n\s*\n+")
# A heading that only says "Abstract" (in the languages we see most) before the real text.
_ABSTRACT_HEADING_RE = re.compile(
    r"^\s*(?:abstract|summary|résumé|resume|resumen|resumo|zusammenfassung|riassunto|"
    r"samenvatting|streszczenie|аннотация|резюме|реферат|摘要|要旨|要約|초록|özet|ملخص|abstrak)"
    r"\s*[:.\-–—]?\s*(?:\n|$)",
    re.IGNORECASE,
)
# Same heading glued to the first sentence ("Abstract: We study ...", "ABSTRACT We ...",
# OpenAlex's "Zusammenfassung Die ...", "Resumo Atividades ...", "SUMMARY The ..."): the
# heading word followed by punctuation, or by a space and a capital. Structured-abstract
# labels ("BACKGROUND:", "Objetivo.") are part of the text as printed and stay.
_HEADING_WORDS = (
    r"abstract|summary|résumé|resume|resumen|resumo|zusammenfassung|kurzfassung|riassunto|sommario|"
    r"samenvatting|streszczenie|аннотация|анотація|резюме|реферат|摘要|要旨|要約|抄録|초록|요약|özet|öz|ملخص|"
    r"چکیده|abstrak|sammanfattning|tiivistelmä"
)
_ABSTRACT_PREFIX_RE = re.compile(
    rf"^\s*(?i:{_HEADING_WORDS})\s*[:.\-–—：]\s*|^\s*(?i:{_HEADING_WORDS})\s+(?=[A-ZÀ-ÖØ-ÞĀ-ſА-ЯЁЄІЇ])"
)
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
_CJK_WRAP_RE = re.compile(r"(?<=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef\u3000-\u303f])\n(?=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef\u3000-\u303f])")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def normalize_text(text: str | None, keep_paragraphs: bool = True) -> str:
    """NFC, control characters removed, runs of spaces collapsed, blank-line paragraphs kept."""
    if not text:
        return ""
    text = unicodedata.normalize("NFC", text)
    if text.isprintable():
        # Fast path for the common case (most titles, many abstracts): no line breaks, no
        # control or format characters, no exotic spaces -- only runs of ASCII spaces.
        return " ".join(text.split())
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL_RE.sub("", text)
    text = _SPACES_RE.sub(" ", text)
    if keep_paragraphs:
        text = _BLANK_LINES_RE.sub("\n\n", text)
        lines = [line.strip() for line in text.split("\n")]
        text = "\n".join(lines)
        # single newlines are line wrapping: a space, except between two CJK characters
        # (Chinese / Japanese lines wrap inside words and are written without spaces)
        text = _CJK_WRAP_RE.sub("", text)
        text = re.sub(r"(?<!\n)\n(?!\n)", " ", text)
        text = re.sub(r" {2,}", " ", text)
    else:
        text = re.sub(r"\s+", " ", text)
    return text.strip()


def strip_markup(text: str | None, keep_paragraphs: bool = True) -> str:
    """Remove HTML / JATS / MathML tags one at a time, keeping the text inside them
    (so `<mml:mi>x</mml:mi>` keeps "x"), block ends as paragraph breaks, entities decoded."""
    if not text:
        return ""
    if "<" not in text and "&" not in text:
        return normalize_text(text, keep_paragraphs=keep_paragraphs)
    text = _replace_delimited(text, "<![CDATA[", "]]>", keep_inside=True)
    text = _replace_delimited(text, "<!--", "-->", keep_inside=False)
    # Block tags end a paragraph (or a phrase, in a one-line title); inline tags (<i>, <sub>,
    # MathML tokens) sit inside words ("c<sub>p</sub>", "BiFeO<sub>3</sub>") and vanish
    # without a space, or they would leave "c p" / "BiFeO 3".
    text = _BLOCK_TAG_RE.sub("\n\n" if keep_paragraphs else " ", text)
    text = _TAG_RE.sub("", text)
    text = html.unescape(html.unescape(text)) if "&amp;" in text else html.unescape(text)
    text = _TAG_RE.sub("", text)  # tags that were entity-escaped in the source ("&lt;i&gt;")
    return normalize_text(text, keep_paragraphs=keep_paragraphs)


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


def clean_title(title: str | None) -> str:
    """A title as one line: markup (incl. MathML) stripped with its text kept. Raw input
    past `MAX_RAW_TITLE_CHARS` is not looked at."""
    if title and len(title) > MAX_RAW_TITLE_CHARS:
        title = title[:MAX_RAW_TITLE_CHARS]
    return strip_markup(title, keep_paragraphs=False)


def clean_abstract(abstract: str | None) -> str:
    """An abstract from any source: markup stripped, paragraphs kept, a leading
    "Abstract" heading (in several languages) dropped."""
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
    return text.strip()


def count_tokens(text: str | None) -> int:
    """Whitespace/word tokens, with each CJK character counted as a token (CJK text has no
    spaces, so a word count would call a whole Chinese abstract one token)."""
    if not text:
        return 0
    cjk = len(_CJK_RE.findall(text))
    words = len(_TOKEN_RE.findall(_CJK_RE.sub(" ", text)))
    return words + cjk
