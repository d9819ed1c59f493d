"""Language identification (CLD3) and normalization of publisher language codes.

OpenMSD labels each paper with the language CLD3 detects on its title + abstract, keeping the
probability and CLD3's reliability flag, so this module does exactly that and nothing more
clever: the label must be reproducible from the published definition.

Why the details below matter:

* The `gcld3` detector is a native object that does not pickle, so it is never created at
  import time or stored on a DoFn before `setup()`; `get_detector()` builds one lazily per
  thread (the native object is not documented as thread-safe, and Beam runs several bundles in
  threads of one process).
* With `min_num_bytes=0` CLD3 answers "ja", *reliable*, for an empty string and confidently
  guesses a language for one letter, so texts with fewer than `MIN_LETTERS` letters are
  answered `("und", 0.0, False)` before CLD3 sees them.
* CLD3 still uses a few legacy codes (`iw`, `jw`, `fil`, ...) and romanized variants
  (`zh-Latn`, `ja-Latn`, `ru-Latn`, ...). Codes are mapped to ISO 639-1 where one exists; the
  few languages without one keep CLD3's ISO 639-2/3 code (`ceb`, `haw`, `hmn`).
* `*-Latn` results are mapped to `und` (probability kept, reliable False): on scientific text
  they are almost always a short Latin-script title full of names or formulas, not a romanized
  abstract, and labelling such a paper Chinese or Russian would put it in the wrong split.
* Script evidence overrides CLD3 where the script decides (`_script_override`): Han text
  without any kana is not Japanese (CLD3 calls short Chinese "ja"), Japanese has kana, Korean
  has Hangul; and Indonesian written in a Malay-looking register (CLD3 answers "ms") is
  recognised by words Malay does not use.
* A text whose letters are almost all (`SCRIPT_SHARE`) of one non-Latin script gets a
  language of that script or `und`: CLD3 is misled by a few Latin words (a Chinese structured
  abstract under "Background" / "Results" headings was "mr", an Arabic one "sv"), so such an
  answer is asked again without the Latin words (`_script_languages`).
* Below `MIN_PROBABILITY` (0.5) the code is `und`, probability kept, so a downstream filter can
  still look at it.
* A lone surrogate (`"\\ud800"`, not valid Unicode) cannot be encoded for CLD3, so it is read
  as "?" (`_cld3`). The stages never hand one over (Parquet cannot hold one, the papers stage
  rejects records holding one, the extractors join or drop halves: `textclean.join_surrogates`);
  a Python caller's text may hold one (a JSON escape, a file read with `surrogateescape`).
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from openmsd_build.core.textclean import has_letters, letter_counts

UND = "und"
MIN_LETTERS = 8
"""Texts with fewer letters than this are not identified (a short title of names is noise)."""
MIN_PROBABILITY = 0.5
"""Below this CLD3 probability the language is reported as `und` (probability still returned)."""
MAX_NUM_BYTES = 1000
"""CLD3 classifies at most this many UTF-8 bytes: title + the start of the abstract is plenty
(the DESIGN measured 3k–9k texts/s on one core with this cap). It still cleans all it is given
first, up to `_MAX_INPUT_CHARS`, so a longer input costs more for much the same answer:
callers hand it slices of a body, not the body."""
_MAX_INPUT_CHARS = 4 * MAX_NUM_BYTES  # never hand a megabyte of text to the native code

# CLD3 output codes that are not ISO 639-1 but have an ISO 639-1 equivalent.
_CLD3_RENAMES = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "fil": "tl", "mo": "ro", "sh": "sr"}

# `(?:https?://|www\.|doi:\s*10\.|\b10\.\d{4,9}/)\S*` matched ignoring case (the characters
# a case-insensitive regex takes for each letter spelled out: "ſ" is an "s", "İ" and "ı" are an
# "i"), written to start with one character class and check which branch it began with in a
# lookbehind: the regex engine then skips in C to the next h, w, d or 1 instead of trying four
# case-insensitive branches at every character (4x faster, the same matches).
_URL_RE = re.compile(
    r"[hHwWdD1](?:(?<=[hH])[tT][tT][pP][sSſ]?://|(?<=[wW])[wW][wW]\.|(?<=[dD])[oO][iIİı]:\s*10\.|(?<=\b1)0\.\d{4,9}/)\S*")
_EMAIL_RE = re.compile(r"\S+@\S+\.\w+")
_DOI_NUMBER_RE = re.compile(r"10\.\d{4}")
"""What a bare DOI (`_URL_RE`'s last branch) holds. Every `_URL_RE` match holds "://", "www." or
this, or "doi" (case-insensitive: "ı" is an "i" to the regex) before "10.": the substitution
runs only on text holding one (a number "10.5" alone does not)."""

_KANA_RE = re.compile("[\u3040-\u30ff]")
_HAN_RE = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
_HANGUL_RE = re.compile("[\uac00-\ud7af]")
# Words common in Indonesian scientific prose and not used in Malay (which says "kajian",
# "kerana", "ialah", "boleh"), and Malay-only words.
_INDONESIAN_RE = re.compile(r"\b(?:penelitian|karena|tersebut|merupakan|sehingga|berdasarkan|dilakukan|bisa)\b", re.IGNORECASE)
_MALAY_RE = re.compile(r"\b(?:kajian|kerana|ialah|iaitu|boleh|penyelidikan|daripada)\b", re.IGNORECASE)

SCRIPT_SHARE = 0.8
"""A text whose letters are at least this share of one non-Latin script is in a language of that
script (`_script_languages`)."""
SCRIPT_SAMPLE_CHARS = MAX_NUM_BYTES
"""Characters at a text's start whose script is counted: CLD3 classifies about its first
`MAX_NUM_BYTES` bytes, so those decide its answer (and counting all of a 4,000-character abstract
cost more than CLD3's own call)."""
_SCRIPT_LANGUAGES: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple(
    (re.compile(f"[^{chars}]+"), frozenset(languages)) for chars, languages in (
        ("\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af", ("zh", "ja", "ko")),
        ("\u0400-\u04ff", ("ru", "uk", "bg", "be", "mk", "sr", "kk", "ky", "mn", "tg", "uz")),
        ("\u0600-\u06ff\u0750-\u077f", ("ar", "fa", "ur", "ps", "sd", "ku", "ug")),
        ("\u0900-\u097f", ("hi", "mr", "ne")),
        ("\u0370-\u03ff", ("el",)),
        ("\u0590-\u05ff", ("he", "yi")),
        ("\u0e00-\u0e7f", ("th",)),
    ))
"""Non-Latin scripts, each as the pattern of what is *not* in it (removing its matches leaves the
script's characters, counted in C), and the CLD3 languages (ISO codes, as `map_cld3_code` gives)
written in them."""
_LATIN_WORD_RE = re.compile(r"[A-Za-z\u00c0-\u024f]+")

_local = threading.local()


def _script_override(code: str, text: str) -> str:
    """CLD3's answer corrected by script evidence (see the module docstring)."""
    if code in ("ja", "zh", "ko") or code == UND:
        han, kana, hangul = len(_HAN_RE.findall(text)), len(_KANA_RE.findall(text)), len(_HANGUL_RE.findall(text))
        if hangul > max(han, 5) and code != "ko":
            return "ko"
        if code == "ja" and han >= 5 and kana == 0:
            return "zh"
        if code == "zh" and kana >= max(5, han // 10):
            return "ja"
    if code == "ms" and len(_INDONESIAN_RE.findall(text)) >= 2 and len(_MALAY_RE.findall(text)) <= 1:
        return "id"
    return code


def get_detector() -> Any:
    """The calling thread's CLD3 detector, created on first use (it cannot be pickled, so it
    must be made inside the worker, e.g. from `DoFn.setup()` or lazily here)."""
    detector = getattr(_local, "detector", None)
    if detector is None:
        import gcld3  # imported here so importing this module never loads the native library

        detector = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=MAX_NUM_BYTES)
        _local.detector = detector
    return detector


def _prepare(title: str | None, abstract: str | None) -> str:
    """Title and abstract joined, URLs / DOIs / e-mails removed (they are Latin-script noise in
    any language), cut to a bounded length."""
    parts = [p.strip() for p in (title or "", abstract or "") if p and p.strip()]
    text = "\n".join(parts)[:_MAX_INPUT_CHARS]
    # each pattern runs only when text holds a piece every match must contain (most texts
    # hold none, and the e-mail pattern backtracks over every word)
    lower = text.lower()
    if "://" in text or "www." in lower or (
            "10." in text and ("doi" in lower or "doı" in lower or _DOI_NUMBER_RE.search(text))):
        text = _URL_RE.sub(" ", text)
    if "@" in text:
        text = _EMAIL_RE.sub(" ", text)
    return text.strip()


def map_cld3_code(code: str | None) -> str:
    """A CLD3 result code as ISO 639-1 where one exists; `und` for unknown/romanized results."""
    if not code or code == UND:
        return UND
    code = code.strip()
    if "-" in code:  # "zh-Latn", "ja-Latn", ...: see module docstring
        return UND
    code = code.lower()
    return _CLD3_RENAMES.get(code, code)


def detect_language(
    title: str | None, abstract: str | None = None, detector: Any | None = None
) -> tuple[str, float, bool]:
    """(ISO 639-1 code or "und", CLD3 probability, CLD3 reliable flag) for title + abstract.

    `detector` lets a DoFn pass the one it created in `setup()`; otherwise the thread's lazily
    created detector is used, and answers are memoized: building one document asks about the
    same paragraph several times (alone, then as its language run, then as the abstract), and
    CLD3 gives one text one answer. Too little text gives `("und", 0.0, False)`.
    """
    if detector is None:
        return _detect_raw_memo(title, abstract)
    return _detect_prepared(_prepare(title, abstract), detector)


@functools.lru_cache(maxsize=256)
def _detect_raw_memo(title: str | None, abstract: str | None) -> tuple[str, float, bool]:
    """`_detect_memo` of the prepared text, memoized on the texts as given too: one document
    asks about the same paragraph several times, and preparing it (strip, join, the URL and
    e-mail checks) costs a few microseconds each time. Small: the texts may be long, and the
    repeats come from one document."""
    return _detect_memo(_prepare(title, abstract))


def _script_languages(text: str) -> frozenset[str] | None:
    """The languages CLD3 may answer for `text` when one non-Latin script of
    `_SCRIPT_LANGUAGES` writes at least `SCRIPT_SHARE` of its letters, else None (Latin text,
    mixed text, another script); counted over its first `SCRIPT_SAMPLE_CHARS` characters.
    Its ASCII letters are counted with the rest (`letter_counts`): a Latin text stops there."""
    head = text[:SCRIPT_SAMPLE_CHARS]
    ascii_letters, other_letters = letter_counts(head)
    letters = ascii_letters + other_letters
    if not letters or ascii_letters > (1 - SCRIPT_SHARE) * letters:
        return None
    for others, languages in _SCRIPT_LANGUAGES:
        if len(others.sub("", head)) >= SCRIPT_SHARE * letters:
            return languages
    return None


def _cld3(text: str, detector: Any) -> tuple[str, float, bool]:
    try:
        result = detector.FindLanguage(text=text)
    except TypeError:
        # The binding encodes the text to UTF-8, which a lone surrogate ("\ud800", from a
        # JSON escape or a file decoded with surrogateescape) cannot be: it raised TypeError.
        # Handled here, on the error path, so ordinary text costs nothing more; a surrogate is
        # no letter, so "?" in its place leaves the answer as it would be without it.
        clean = text.encode("utf-8", "replace").decode("utf-8")
        if clean == text:  # not an encoding failure: a caller's bug, not ours to hide
            raise
        result = detector.FindLanguage(text=clean)
    return _script_override(map_cld3_code(result.language), text), float(result.probability), bool(result.is_reliable)


def _detect_prepared(text: str, detector: Any | None) -> tuple[str, float, bool]:
    if not has_letters(text, MIN_LETTERS):
        return UND, 0.0, False
    detector = detector or get_detector()
    code, probability, reliable = _cld3(text, detector)
    languages = _script_languages(text) if not text.isascii() else None
    if languages is not None and code not in languages:
        # a text in one script answered with a language of another: CLD3 misled by a few Latin
        # words (a Chinese abstract under "Background" / "Results" headings was "mr", an
        # Arabic one "sv"); asked again without them, and never a language of another script
        latin_free = _LATIN_WORD_RE.sub(" ", text)
        if latin_free != text and has_letters(latin_free, MIN_LETTERS):
            code, probability, reliable = _cld3(latin_free, detector)
        if code not in languages:
            return UND, probability, False
    if code == UND or probability < MIN_PROBABILITY:
        return UND, probability, False
    return code, probability, reliable


@functools.lru_cache(maxsize=4096)
def _detect_memo(text: str) -> tuple[str, float, bool]:
    """Memoized on the prepared text (at most `_MAX_INPUT_CHARS`), so the cache stays small
    however long the abstracts are."""
    return _detect_prepared(text, None)


def forget_answers() -> None:
    """Empty both memos of `detect_language`, so the next calls ask CLD3 again (a benchmark
    timing detection, a test counting CLD3's calls)."""
    _detect_raw_memo.cache_clear()
    _detect_memo.cache_clear()


# --- publisher language fields -------------------------------------------------------------

# ISO 639-2 (bibliographic and terminology) / 639-3 codes and English and native names of the
# languages seen in scholarly metadata -> ISO 639-1. Publisher fields use all of these forms.
_LANGUAGE_TABLE: dict[str, tuple[str, ...]] = {
    "af": ("afr", "afrikaans"),
    "am": ("amh", "amharic"),
    "ar": ("ara", "arabic", "العربية"),
    "az": ("aze", "azerbaijani"),
    "be": ("bel", "belarusian"),
    "bg": ("bul", "bulgarian", "български"),
    "bn": ("ben", "bengali", "bangla"),
    "bs": ("bos", "bosnian"),
    "ca": ("cat", "catalan", "català"),
    "cs": ("ces", "cze", "czech", "čeština"),
    "cy": ("cym", "wel", "welsh"),
    "da": ("dan", "danish", "dansk"),
    "de": ("deu", "ger", "german", "deutsch"),
    "el": ("ell", "gre", "greek", "modern greek", "ελληνικά"),
    "en": ("eng", "english"),
    "eo": ("epo", "esperanto"),
    "es": ("spa", "spanish", "español", "espanol", "castellano"),
    "et": ("est", "estonian", "eesti"),
    "eu": ("eus", "baq", "basque", "euskara"),
    "fa": ("fas", "per", "persian", "farsi", "فارسی"),
    "fi": ("fin", "finnish", "suomi"),
    "fr": ("fra", "fre", "french", "français", "francais"),
    "ga": ("gle", "irish"),
    "gl": ("glg", "galician", "galego"),
    "gu": ("guj", "gujarati"),
    "he": ("heb", "hebrew", "iw", "עברית"),
    "hi": ("hin", "hindi", "हिन्दी"),
    "hr": ("hrv", "croatian", "hrvatski"),
    "hu": ("hun", "hungarian", "magyar"),
    "hy": ("hye", "arm", "armenian"),
    "id": ("ind", "indonesian", "bahasa indonesia", "in"),
    "is": ("isl", "ice", "icelandic"),
    "it": ("ita", "italian", "italiano"),
    "ja": ("jpn", "japanese", "日本語"),
    "jv": ("jav", "javanese", "jw"),
    "ka": ("kat", "geo", "georgian"),
    "kk": ("kaz", "kazakh"),
    "km": ("khm", "khmer"),
    "kn": ("kan", "kannada"),
    "ko": ("kor", "korean", "한국어"),
    "ku": ("kur", "kurdish"),
    "ky": ("kir", "kyrgyz", "kirghiz"),
    "la": ("lat", "latin"),
    "lo": ("lao",),
    "lt": ("lit", "lithuanian", "lietuvių"),
    "lv": ("lav", "latvian", "latviešu"),
    "mk": ("mkd", "mac", "macedonian"),
    "ml": ("mal", "malayalam"),
    "mn": ("mon", "mongolian"),
    "mr": ("mar", "marathi"),
    "ms": ("msa", "may", "malay", "bahasa melayu"),
    "mt": ("mlt", "maltese"),
    "my": ("mya", "bur", "burmese"),
    "nb": ("nob", "norwegian bokmål", "bokmål"),
    "ne": ("nep", "nepali"),
    "nl": ("nld", "dut", "dutch", "flemish", "nederlands"),
    "nn": ("nno", "norwegian nynorsk", "nynorsk"),
    "no": ("nor", "norwegian", "norsk"),
    "pa": ("pan", "punjabi", "panjabi"),
    "pl": ("pol", "polish", "polski"),
    "ps": ("pus", "pashto"),
    "pt": ("por", "portuguese", "português", "portugues"),
    "ro": ("ron", "rum", "romanian", "română", "mo"),
    "ru": ("rus", "russian", "русский"),
    "si": ("sin", "sinhala", "sinhalese"),
    "sk": ("slk", "slo", "slovak", "slovenčina"),
    "sl": ("slv", "slovenian", "slovene", "slovenščina"),
    "sq": ("sqi", "alb", "albanian"),
    "sr": ("srp", "serbian", "српски", "sh"),
    "sv": ("swe", "swedish", "svenska"),
    "sw": ("swa", "swahili", "kiswahili"),
    "ta": ("tam", "tamil"),
    "te": ("tel", "telugu"),
    "tg": ("tgk", "tajik"),
    "th": ("tha", "thai", "ไทย"),
    "tl": ("tgl", "fil", "tagalog", "filipino"),
    "tr": ("tur", "turkish", "türkçe", "turkce"),
    "uk": ("ukr", "ukrainian", "українська"),
    "ur": ("urd", "urdu", "اردو"),
    "uz": ("uzb", "uzbek"),
    "vi": ("vie", "vietnamese", "tiếng việt"),
    "yi": ("yid", "yiddish", "ji"),
    "zh": ("zho", "chi", "chinese", "中文", "汉语", "漢語", "mandarin"),
}
_ALIASES: dict[str, str] = {}
for _iso1, _names in _LANGUAGE_TABLE.items():
    _ALIASES[_iso1] = _iso1
    for _name in _names:
        _ALIASES[_name] = _iso1
_NOT_A_LANGUAGE = {"und", "mul", "zxx", "mis", "xx", "null", "none", "n/a", "na", "unknown", ""}
_SEPARATOR_RE = re.compile(r"[-_]")


def normalize_language_code(code: str | None) -> str | None:
    """A publisher / metadata language value ("en", "EN", "eng", "en-US", "en_GB", "English",
    "Deutsch", "iw") as ISO 639-1, or None when it is empty, "und"/"mul", or unknown.

    Region and script subtags are dropped (`pt-BR` -> `pt`, `zh-Hans` -> `zh`): the dataset
    labels languages, not locales.
    """
    if code is None:
        return None
    value = str(code).strip().lower()
    if value in _NOT_A_LANGUAGE:
        return None
    if value in _ALIASES:  # full names may contain separators ("bahasa indonesia")
        return _ALIASES[value]
    primary = _SEPARATOR_RE.split(value, maxsplit=1)[0].strip()
    if primary in _NOT_A_LANGUAGE:
        return None
    return _ALIASES.get(primary)
