"""Tokenization for the BM25 baseline: per language, offline, no stemmer downloads.

Rules (applied to NFKC-normalized, lower-cased text):

- Scripts written without spaces between words — Han, Hiragana, Katakana, Hangul (CJK), and
  Thai, Lao, Khmer, Myanmar — are cut into runs of that script, and each run becomes its
  overlapping character bigrams (a run of one character is one unigram). This is the
  usual language-independent baseline for CJK retrieval and needs no dictionary. It is
  applied by script, not only for zh / ja / ko documents: Latin words inside a Japanese
  abstract stay words, and Chinese terms inside an English abstract still become bigrams.
- Everything else is split into words: maximal runs of letters, digits and combining marks
  (`\\w`), with apostrophes and hyphens acting as separators.
- Stop words are removed for the languages whose lists ship inside `bm25s` (no download):
  en, de, fr, es, it, pt, nl, da, no, sv, ru, tr. Other languages keep every word: BM25's
  IDF already down-weights very frequent words.

The query language and the document language can differ (cross-lingual classes): each text
is tokenized with its own language, so a shared surface form (a formula, a gene name, a
borrowed English term) still matches.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

# Runs of scripts written without word separators.
_NO_SPACE_SCRIPTS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3100-\u312f"  # Bopomofo
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # CJK extensions B-G
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
)
_TOKEN_RE = re.compile(rf"([{_NO_SPACE_SCRIPTS}]+)|((?:(?![{_NO_SPACE_SCRIPTS}])\w)+)")

_STOPWORD_LISTS = {
    "en": "STOPWORDS_EN",
    "de": "STOPWORDS_GERMAN",
    "fr": "STOPWORDS_FRENCH",
    "es": "STOPWORDS_SPANISH",
    "it": "STOPWORDS_ITALIAN",
    "pt": "STOPWORDS_PORTUGUESE",
    "nl": "STOPWORDS_DUTCH",
    "da": "STOPWORDS_DANISH",
    "no": "STOPWORDS_NORWEGIAN",
    "sv": "STOPWORDS_SWEDISH",
    "ru": "STOPWORDS_RUSSIAN",
    "tr": "STOPWORDS_TURKISH",
}


@cache
def stopwords(language: str | None) -> frozenset[str]:
    """The bundled stop-word list of `language` (ISO 639-1), or an empty set."""
    name = _STOPWORD_LISTS.get((language or "").lower())
    if name is None:
        return frozenset()
    try:
        from bm25s import stopwords as lists
    except ImportError:  # bm25s is a dependency; without it, keep every word
        return frozenset()
    return frozenset(unicodedata.normalize("NFKC", w).lower() for w in getattr(lists, name, ()))


def char_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a run; one character gives itself."""
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str | None, language: str | None = None) -> list[str]:
    """Tokens of `text` written in `language` (see the module docstring)."""
    if not text:
        return []
    text = unicodedata.normalize("NFKC", text).lower()
    stop = stopwords(language)
    tokens: list[str] = []
    for no_space, word in _TOKEN_RE.findall(text):
        if no_space:
            tokens.extend(char_bigrams(no_space))
        elif word.strip("_") and word not in stop:
            tokens.append(word)
    return tokens


