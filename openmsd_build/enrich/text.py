"""The enriched text format and the token cut.

Format (the OpenMSD paper's best model): `Title: {title}. Abstract: ({summary}) {abstract}`.
A paper without a summary (English, or its summary was rejected) is written in the same
format without the parenthesis, so raw-vs-enriched comparisons differ by the summary only
and never by the wrapper words.

Tokens: one rule for the whole build, `openmsd_build.core.textclean.count_tokens` (the
documents' `n_tokens_*` columns): a token is a run of word characters (`\\w+`), and every
CJK character (Han, kana, Hangul) is a token of its own. `truncate_tokens(text, n)` keeps
the shortest prefix holding the first `n` such tokens, so
`count_tokens(truncate_tokens(t, n)) == min(n, count_tokens(t))` (tested). These are not
an LLM's BPE tokens: the README's cost estimate converts with a stated factor.
"""

from __future__ import annotations

import hashlib
import re

from openmsd_build.core.textclean import count_tokens

PAPER_TOKEN_CUTS = (64, 128)  # the paper's two summary lengths

# The CJK ranges of `count_tokens` (Hiragana/Katakana, CJK ext. A, unified ideographs,
# Hangul syllables, compatibility ideographs). A test checks the two rules agree.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|(?:(?![{_CJK}])\\w)+")
_SPACE = re.compile(r"\s+")


def truncate_tokens(text: str | None, n: int) -> str:
    """The prefix of `text` holding its first `n` tokens (whole text when shorter), with
    whitespace collapsed; a trailing partial sentence is kept as is (the paper cuts by
    length, not by sentence)."""
    if not text or n <= 0:
        return ""
    text = _SPACE.sub(" ", text).strip()
    end = None
    for i, m in enumerate(_TOKEN.finditer(text)):
        if i == n - 1:
            end = m.end()
            break
    if end is None:
        return text
    return text[:end]


def clean_summary(text: str | None) -> str:
    """A model's answer as one line: labels such as `Summary:` dropped, list bullets and
    numbering turned into sentences, whitespace collapsed, wrapping quotes removed."""
    if not text:
        return ""
    lines = []
    for line in text.replace("\r", "\n").split("\n"):
        line = line.strip()
        line = re.sub(r"^(?:[-*\u2022]|\d+[.)])\s+", "", line)
        line = re.sub(r"^(?:english\s+)?(?:summary|findings?|translation)\s*:\s*", "", line, flags=re.I)
        if line:
            lines.append(line if line[-1] in ".!?;:" else line + ".")
    out = " ".join(lines).strip()
    if len(out) >= 2 and out[0] == out[-1] and out[0] in "\"'":
        out = out[1:-1].strip()
    return _SPACE.sub(" ", out)


def enriched_text(title: str | None, abstract: str | None, summary: str | None = None) -> str:
    """`Title: {title}. Abstract: ({summary}) {abstract}`; no parenthesis without a summary.
    A title's own final period is not doubled."""
    t = _SPACE.sub(" ", (title or "")).strip().rstrip(".")
    a = _SPACE.sub(" ", (abstract or "")).strip()
    s = _SPACE.sub(" ", (summary or "")).strip()
    body = f"({s}) {a}".strip() if s else a
    return f"Title: {t}. Abstract: {body}"


def enriched_abstract(abstract: str | None, summary: str | None) -> str:
    """The abstract part alone, `({summary}) {abstract}` (BEIR / MTEB corpora keep the
    title in its own column)."""
    a = _SPACE.sub(" ", (abstract or "")).strip()
    s = _SPACE.sub(" ", (summary or "")).strip()
    return f"({s}) {a}".strip() if s else a


def text_sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


__all__ = [
    "PAPER_TOKEN_CUTS",
    "clean_summary",
    "count_tokens",
    "enriched_abstract",
    "enriched_text",
    "text_sha1",
    "truncate_tokens",
]
