"""A paper's document row: metadata plus whatever was extracted from its pages and PDFs.

This is where the kept text of a paper is decided (pure function, no Beam):

- title: metadata (Crossref > OpenAlex > Unpaywall, see `merge`) > landing page > PDF (a
  PDF's printed title is found only for papers it can change: `printed_title_needed`);
- abstract: metadata (Crossref JATS, OpenAlex) > landing page (meta tags or abstract
  section) > PDF abstract section — metadata abstracts are the publisher's own text;
- content (full text): PDF body > landing page main text (trafilatura). Content that is
  hardly longer than the abstract is the abstract again, not full text, and is dropped;
- abstracts: every abstract the paper carries (metadata, page meta tags and sections, PDF
  headings), each split where its paragraphs change language (one "Abstract" heading over a
  German and an English paragraph is two abstracts) and labelled with its language; wrong
  ones (citation lines, page chrome, tables of contents, reference lists, the later language
  runs of a block cut at the extractor's word cap, a second abstract under the same heading
  in one language) are dropped with a reason (`abstract_entries`). `abstract` is the one in
  the paper's own language;
- language: the paper's own language is decided first (`_own_language`: the body text when
  there is one, else the title's language among the abstracts' languages, publisher hints
  only to break a tie), then CLD3 on title + the abstract in that language;
- kept when it has an abstract of at least `MIN_ABSTRACT_TOKENS` tokens or content of at
  least `MIN_CONTENT_TOKENS` tokens (the paper's "text could be extracted").

Every field keeps where it came from (`*_source`: crossref, openalex, unpaywall, landing, pdf).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from openmsd_build.core.language import UND, detect_language, normalize_language_code
from openmsd_build.core.textclean import (
    BIBLIOGRAPHY_MIN_ENTRIES,
    ENTRY_YEAR_RE,
    alnum_only,
    clean_abstract,
    clean_title,
    count_letters,
    count_tokens,
    looks_like_bibliography,
    normalize_text,
    text_layer_damage,
    word_chars,
)

MIN_ABSTRACT_TOKENS = 15
MIN_CONTENT_TOKENS = 150
# Content must be this much longer than the abstract to count as full text.
CONTENT_OVER_ABSTRACT = 1.5
LANGUAGE_TEXT_CHARS = 2000
BODY_SAMPLE_CHARS = 1000
"""A body's language (a PDF body, a landing page's long main text) is read from this many
characters (`_body_sample`): CLD3 reads 1,000 bytes of any text (`core.language.MAX_NUM_BYTES`)
but cleans all it is given first, so on the bench's bodies a slice twice as long cost it 1.7
times as much for the same answer (2,207 of 2,210)."""

MAX_ABSTRACTS = 6
"""Abstracts kept per paper: two or three languages is the norm, more is a parse gone wrong."""
MIN_PARAGRAPH_LETTERS = 60
"""Paragraphs shorter than this are not language-identified alone (they join their neighbour)."""
MAX_PARAGRAPHS_SPLIT = 8
MIN_SPLIT_RUN_TOKENS = 60
"""A part split off an abstract by a change of language (not its first part) is kept as an
abstract of its own when it has this many tokens or half as many as the first part: a
translation is about as long as the abstract it translates, while the short texts a heading's
block runs into (an epigraph, an affiliation or funding footnote, a quotation) are not.
Other parts are dropped with the reason `split_part_short`."""

# A reference line, not an abstract: "In: Scriptorium, Tome 22, 1968, pp. 3-12".
_CITATION_RE = re.compile(
    r"^\s*(?:in|dans|en|em|im)\s*:\s*\S|^\s*\(?\d{4}\)?\.\s+\S.{0,200}\b(?:vol|pp?|tome|bd|s)\.?\s*\d",
    re.IGNORECASE,
)
_CITATION_PARTS_RE = re.compile(r"\b(?:vol|tome|tomo|bd|band|no|n°|nr|pp?|s|issue|fasc)\.?\s*\d|\b(?:1[6-9]|20)\d{2}\b", re.IGNORECASE)
_CHROME_RE = re.compile(  # whole words: "design involving" holds "sign in"
    r"\b(?:cookies?|javascript|sign in|log in|subscribe|all rights reserved|click here|your browser|"
    r"computer science >|digital repository|dettaglio tesi|download (?:pdf|citation))(?!\w)",
    re.IGNORECASE,
)
_TOC_RE = re.compile(r"(?:\.\s?){5,}|…{3,}")
# A numbered list of section titles run together ("1. Does the Directive ... – 2. The limited
# scope ... – 3. ..."): an article's own contents printed under "Summary", not an abstract.
_ENUMERATED_RE = re.compile(r"(?:^|[–—;]\s*|\n\s*)(\d{1,2})\.\s+(?=[^\W\d_])")
# In an ASCII text (lower-cased: the regexes ignore case), every match of `_CHROME_RE` /
# `_TOC_RE` holds one of these pieces, and a text `_ENUMERATED_RE` reads as 1, 2, 3 holds all
# three of its pieces: text without them is not scanned by the regex (`_may_hold`). Not for other text, where a regex may read a character otherwise ("ſ" is an
# "s" to a case-insensitive regex; `\d` and `\s` take non-ASCII digits and spaces).
_CHROME_WORDS = ("cookie", "javascript", "sign in", "log in", "subscribe", "all rights reserved", "click here",
                 "your browser", "computer science >", "digital repository", "dettaglio tesi", "download")
_TOC_PIECES = tuple(f".{c}." for c in map(chr, range(128)) if c.isspace()) + ("..", "…")  # `\s` is `isspace`
_ENUMERATED_PIECES = ("1.", "2.", "3.")
_CASELESS_PIECES = _TOC_PIECES + _ENUMERATED_PIECES
assert not any(char.isalpha() for piece in _CASELESS_PIECES for char in piece)  # `_may_hold(..., fold=False)`


def _may_hold(text: str, pieces: tuple[str, ...], every: bool = False, fold: bool = True) -> bool:
    """False only when the ASCII `text` (lower-cased) holds none of `pieces` (with `every`: not
    all of them), so that a regex whose every match holds one (all) of them cannot match; True
    for any other text. `fold=False` for pieces without letters (`_CASELESS_PIECES`), which an
    ASCII text holds lower-cased or not: it is not lower-cased then."""
    if not text.isascii():
        return True
    lower = text.lower() if fold else text
    return (all if every else any)(piece in lower for piece in pieces)


# --- evidence: does a fetched document print the paper's title? -------------------------------

TITLE_MATCH_MIN = 0.5
"""Below this agreement between the metadata title and a fetched document (its printed title
and the start of its text), the document is taken for another text (a journal issue's front
matter, a cover sheet, another paper's page) when both titles are in one language: its
abstracts are not kept (reason `title_mismatch`)."""
MATCH_TEXT_CHARS = 20_000
"""How far into a fetched document's text the metadata title is looked for."""
MIN_EVIDENCE_TITLE_CHARS = 20
"""A metadata title shorter than this ("Editorial", "Introduction") is too common to be
evidence either way."""


def _squash_title(text: str | None) -> str:
    """`text` for comparing titles: NFKC, case folded, without spaces and punctuation. ASCII
    text (NFKC leaves it, case folding is `lower`) has its other bytes deleted in C."""
    if not text:
        return ""
    if text.isascii():
        return alnum_only(text.lower())
    return alnum_only(unicodedata.normalize("NFKC", text).casefold())


def _squash_clean(text: str | None) -> str:
    """`_squash_title` of a title that may still hold markup or entities."""
    if text and ("<" in text or "&" in text):
        text = clean_title(text)
    return _squash_title(text)


def _bigrams(text: str) -> Counter:
    return Counter(text[i:i + 2] for i in range(len(text) - 1))


def title_similarity(a: str | None, b: str | None) -> float:
    """Agreement of two titles in [0, 1] on their letters and digits only (case, spaces,
    punctuation and markup differences do not count): 1.0 when equal or when one holds the
    other and is at least 60 % of it (a subtitle printed or left out), else the Dice
    coefficient of their character bigrams (works for every script, CJK included)."""
    x, y = _squash_clean(a), _squash_clean(b)
    if not x or not y:
        return 0.0
    if x == y:
        return 1.0
    short, long_ = sorted((x, y), key=len)
    if short in long_ and len(short) >= 0.6 * len(long_):
        return 1.0
    bx, by = _bigrams(x), _bigrams(y)
    total = sum(bx.values()) + sum(by.values())
    return round(2.0 * sum((bx & by).values()) / total, 4) if total else 0.0


def metadata_titles(paper: dict) -> list[str]:
    """Every title the metadata gives the paper (the main one first), long enough to be
    evidence."""
    titles = [paper.get("title") or ""] + list(paper.get("titles") or [])
    out: list[str] = []
    for title in titles:
        title = clean_title(title)
        if len(_squash_title(title)) >= MIN_EVIDENCE_TITLE_CHARS and title not in out:
            out.append(title)
    return out


_TITLE_WORD_RE = re.compile(r"[^\W\d_]{4,}")


TITLE_WINDOW_FACTOR = 2
TITLE_WINDOW_MIN_CHARS = 200
"""Title words count as found in a text only together: within one stretch of the text of
`TITLE_WINDOW_FACTOR` times the title's length (at least `TITLE_WINDOW_MIN_CHARS`). A printed
title broken by line breaks, hyphens or formulas keeps its words together; words such as
"analysis", "effects" or "different" scattered over 20,000 characters of another paper are
no evidence of its title (`bench/title_evidence.py` on the hand-read real documents: with the
words counted anywhere, 31 of 345 wrong same-language titles matched, 9.0 %; counted together,
9, 2.6 %; all 73 own titles match either way)."""


def _word_positions(words: set[str], text: str) -> list[tuple[int, str]]:
    """(offset, word) of each occurrence in `text` of one of `words` (case-folded title words)
    as a whole word, the way `_TITLE_WORD_RE` finds words (a maximal run of letters), in text
    order. ASCII text is searched for each word with `str.find` rather than cut into its
    thousands of words."""
    if text.isascii():
        lower, found = text.lower(), []
        for word in words:
            if not word.isascii():
                continue
            size, start = len(word), lower.find(word)
            while start >= 0:
                end = start + size
                if (start == 0 or not lower[start - 1].isalpha()) and (end == len(lower) or not lower[end].isalpha()):
                    found.append((start, word))
                start = lower.find(word, start + 1)
        return sorted(found)
    return [(m.start(), word) for m in _TITLE_WORD_RE.finditer(text) if (word := m.group().casefold()) in words]


COMMON_WORD_CHARS = 5
COMMON_WORD_TIMES = 8
"""A title word of at most `COMMON_WORD_CHARS` letters that the text repeats at least
`COMMON_WORD_TIMES` times is common in it: a function word ("durch", "eine", "from", "para")
or a short topic word ("water", "cells"). Common words count as found only beside one that is
not (`_word_coverage`)."""


def _word_coverage(title: str, text: str) -> float:
    """Share of the title's words of four letters or more found together in `text`: the most
    of them within one window of `TITLE_WINDOW_FACTOR` x the title's length (0.0 for a title
    with fewer than three such words: a CJK title, a short one). A window whose found words are
    all common in the text (`COMMON_WORD_CHARS`) counts for nothing, and half of the words or
    fewer is no evidence (just under `TITLE_MATCH_MIN`): "Penisverletzung durch eine
    Moulinette" was half found, by "durch eine", in any German thesis. Measured with
    `bench/title_evidence.py --metadata` (2,305 real metadata titles against the 73 hand-read
    documents of their language): wrong titles matched 5 of 7,239 times instead of 23, the
    truth sets' wrong titles 6 of 345 instead of 9; every own title still matches, also with
    its words in reverse order (64 of 64, what a printed title that differs from the
    metadata's relies on)."""
    words = {w.casefold() for w in _TITLE_WORD_RE.findall(title)}
    if len(words) < 3:
        return 0.0
    span = max(TITLE_WINDOW_FACTOR * len(title), TITLE_WINDOW_MIN_CHARS)
    found = _word_positions(words, text)
    times = Counter(word for _, word in found)
    common = {w for w, n in times.items() if n >= COMMON_WORD_TIMES and len(w) <= COMMON_WORD_CHARS}
    inside: Counter = Counter()
    best = first = 0
    for offset, word in found:
        inside[word] += 1
        while offset - found[first][0] > span:
            left = found[first][1]
            inside[left] -= 1
            if not inside[left]:
                del inside[left]
            first += 1
        if len(inside) > best and (not common or any(w not in common for w in inside)):
            best = len(inside)
    if 2 * best <= len(words):  # half of the title's words or fewer: no evidence
        return round(min(best / len(words), TITLE_MATCH_MIN - 0.0001), 4)
    return round(best / len(words), 4)


def extraction_title_match(titles: list[str], extraction: dict) -> float | None:
    """How well a fetched document agrees with the paper's metadata titles, in [0, 1]: 1.0
    when one of them is printed in the first `MATCH_TEXT_CHARS` of its text (title page,
    article page), else the best of the `title_similarity` with the title the extractor found
    and the share of the title's words found together in that text (`_word_coverage`: line
    breaks, hyphenation and formulas make a printed title differ from the metadata's). None when there is no
    metadata title or the document has neither a title nor text."""
    if not titles:
        return None
    found = extraction.get("title") or ""
    text = (extraction.get("content") or "")[:MATCH_TEXT_CHARS]
    if not found and not text:
        return None
    if _title_printed([_squash_title(t) for t in titles], text):
        return 1.0
    similarity = [title_similarity(t, found) if found else 0.0 for t in titles]
    if max(similarity) == 1.0:  # the most either measure gives: the text's words need not be read
        return 1.0
    return max(max(s, _word_coverage(t, text)) for t, s in zip(titles, similarity, strict=True))


TITLE_PREFIX_CHARS = 1000
"""Characters of a document's text squashed first when looking for its title there
(`_title_printed`): a printed title is at the start of the text."""


def _title_printed(squashed_titles: list[str], text: str) -> bool:
    """`any(t in head for t in squashed_titles)` where `head = _squash_title(text)` is not
    empty, looked for first in the squashed start of `text` (up to the first space after
    `TITLE_PREFIX_CHARS`): a title found there is in `head`, which starts with it, and the
    rest of the text is squashed only when none is. `_squash_title` of two pieces cut before
    a space is the two pieces' squashes joined: NFKC never combines a character with a
    following space (no composition ends with one, and a space is a starter), and case
    folding and the alphanumeric filter go character by character."""
    cut = text.find(" ", TITLE_PREFIX_CHARS) if len(text) > TITLE_PREFIX_CHARS else -1
    if cut > 0:
        start = _squash_title(text[:cut])
        if start and any(t in start for t in squashed_titles):
            return True
    head = _squash_title(text)
    return bool(head) and any(t in head for t in squashed_titles)


# --- a PDF's printed title: looked for only when it can change the document ------------------

TITLE_NOT_NEEDED = "not_needed"
"""`rules["title"]` of a PDF extraction whose printed title was not looked for: no paper it
was fetched for can take it or be judged by it (`printed_title_needed`)."""


def printed_title_evidence(paper: dict) -> list[str] | None:
    """What each fetch task of `paper` carries to the PDF extractor (`title_keys`, see
    `printed_title_needed`): its metadata titles squashed (`_squash_title` of each of
    `metadata_titles`, a few dozen characters each) when `build_document` will give the paper
    its metadata main title whatever a PDF prints, else None (the PDF's printed title may be
    the document's). The main title is the document's when the metadata has one after
    `clean_title`, and it is not refused as a damaged text layer (only a title whose source
    is an extraction kind is checked for that): `_candidates` puts it first and the first
    usable candidate is taken."""
    title = clean_title(paper.get("title"))
    if not title or ((paper.get("title_source") or "metadata") in _TITLE_ORDER and text_layer_damage(title)):
        return None
    return list(dict.fromkeys(_squash_title(t) for t in metadata_titles(paper)))


def printed_title_needed(title_keys: list[str] | None, content: str | None) -> bool:
    """Whether a PDF whose text (`content`, as the extractor returns it) is fetched for a
    paper with `title_keys` (`printed_title_evidence`; None: the paper may take the PDF's
    title) needs its printed title found (the first page's font sizes, `_title_from_font`,
    the PDF metadata title, the cover-page rule), i.e. whether that title can change the
    paper's document row. It cannot when the keys are given and

    * they are empty: `metadata_titles` is empty, so `extraction_title_match` is None
      whatever the PDF holds and `_other_text` is False; or
    * one of them is printed in the first `MATCH_TEXT_CHARS` of `content`
      (`_title_printed`): `extraction_title_match` is then 1.0 by its text rule before it
      reads the PDF's title, so `_other_text` is False and `title_match` is the same.

    Proof that nothing else reads the title of such a PDF: `build_document` takes the
    metadata main title (`printed_title_evidence`), so no extraction's title or title rule
    (`_extraction_rule`) is reached and no title is refused as damaged; `abstract_entries`,
    `wrong_abstract_reason`, `_own_language` and the language get the document's title, not
    the PDF's; `main_text_needed` reads the row and the waiting landing pages only;
    `drop_shared_abstract` reads the row; the stage's counters read rows and rules other
    than the title's, its fetch rows hold no title, and `text.inspect` extracts without keys.
    The extraction's `content`, `abstracts` and `abstract` do not depend on its title
    (`extract_pdf` computes them first). A PDF fetched for several papers goes to each of
    them, so the extractor finds its title when any one needs it. A sufficient condition,
    not a necessary one."""
    if title_keys is None:
        return True
    return bool(title_keys) and not _title_printed(title_keys, (content or "")[:MATCH_TEXT_CHARS])


def _other_text(titles: list[str], extraction: dict, match: float | None, doi: str = "") -> bool:
    """Whether the fetched document is another text than the paper: it prints a title of its
    own, its agreement with the metadata title is under `TITLE_MATCH_MIN`, and either its text
    (a slice of the body, else its abstract or printed title) and a metadata title are both
    reliably in one language, or its front page prints another paper's DOI
    (`_prints_another_doi`) and no metadata title is reliably in another language than it. A
    paper whose metadata gives only a translated title is not taken for another text (a
    translation prints its own DOI too); nor is a document or a title whose language CLD3
    cannot tell (short titles often) when it prints no other DOI: when unsure, the document is
    used. A page without a title of its own is never another text (`main_text_needed` relies
    on it)."""
    if match is None or match >= TITLE_MATCH_MIN or not extraction.get("title"):
        return False
    content = extraction.get("content") or ""
    sample = content[len(content) // 3:][:BODY_SAMPLE_CHARS] if content else (
        extraction.get("abstract") or extraction.get("title") or "")
    language, _prob, reliable = detect_language(None, sample)
    if language != UND and reliable:  # the titles' languages are read only when the text's is sure
        readings = [detect_language(t)[:3:2] for t in titles]
        if (language, True) in readings:
            return True
        if any(ok and lang != language for lang, ok in readings):
            return False  # a translation: it prints its own DOI too
    return bool(doi) and _prints_another_doi(doi, content or extraction.get("abstract") or "")


DOI_HEAD_CHARS = 3000
"""How much of a document's text is its first page's front matter, where a paper prints its
own DOI (a reference list or a related-articles box, which print others', come later)."""
_PRINTED_DOI_RE = re.compile(r"\b(10\.\d{4,9})/\S{3,}")


def _prints_another_doi(doi: str, text: str) -> bool:
    """Whether `text`'s head prints DOIs, every one of another registrant than the paper's DOI
    (`10.2903/...` in a PDF saved for a `10.3897/...` paper), and the paper's DOI is printed
    nowhere in it. A registrant's other DOIs are not counted (a journal's PDF may print a
    correction's or a supplement's DOI, or the paper's own cut at a line end), nor is a DOI
    printed only further in (references): only a front page that says "I am that paper"."""
    head = _PRINTED_DOI_RE.findall(text[:DOI_HEAD_CHARS])
    own = doi.split("/", 1)[0].lower()
    if not head or any(prefix.lower() == own for prefix in head):
        return False
    return doi.lower() not in "".join(text.split()).lower()


# Extraction kinds in order of preference for each field.
_TITLE_ORDER = ("landing", "pdf")
_ABSTRACT_ORDER = ("landing", "pdf")
_CONTENT_ORDER = ("pdf", "landing")


def _candidates(paper: dict, extractions: list[dict], field: str, order: tuple[str, ...]) -> list[tuple[str, str]]:
    """(raw text, source) for `field`: the metadata's value first, then every extraction's
    in `order` of kinds (URL order inside a kind). Callers take the first that passes their
    test, so a placeholder ("No abstract available.") or a truncated PDF never hides a
    better candidate behind it."""
    found: list[tuple[str, str]] = []
    if (paper.get(field) or "").strip():
        found.append((paper[field], paper.get(f"{field}_source") or "metadata"))
    for kind in order:
        found += [(e[field], kind) for e in extractions if e.get("kind") == kind and (e.get(field) or "").strip()]
    return found


def wrong_abstract_reason(text: str, title: str = "") -> str | None:
    """Why `text` is not an abstract of the paper, or None: a damaged text layer (glyph codes,
    not letters: `text_layer_damage`), a citation line, page chrome, a table of contents, or
    the title again."""
    if text_layer_damage(text):
        return "text_layer_damaged"
    head = text[:400]
    if len(text) < 400 and (_CITATION_RE.search(head) or len(_CITATION_PARTS_RE.findall(head)) >= 3):
        return "citation"
    if len(text) < 600 and _may_hold(head, _CHROME_WORDS) and _CHROME_RE.search(head):
        return "page_chrome"
    if (_may_hold(text, _TOC_PIECES, fold=False) and len(_TOC_RE.findall(text)) >= 3) or _enumerated_sections(text):
        return "table_of_contents"
    if looks_like_bibliography(text):
        return "bibliography"
    if title and _same_words(text, title):
        return "title_again"
    return None


_NOT_ASCII_WORD_BYTES = bytes(b for b in range(256) if b >= 128 or not (chr(b).isalnum() or b == ord("_")))


def _same_words(text: str, title: str) -> bool:
    """`word_chars(text) == word_chars(title)`, for an abstract and a title: an abstract
    holding more ASCII word characters than the title's key is longer (each stays a word
    character when lower-cased), counted in C before the abstract's key is built."""
    key = word_chars(title)
    if len(text.encode("utf-8", "surrogatepass").translate(None, _NOT_ASCII_WORD_BYTES)) > len(key):
        return False
    return word_chars(text) == key


def _cut_bibliography(text: str) -> tuple[str, bool]:
    """(`text` up to its first paragraph that reads as a reference list, whether one was cut):
    a heading's block that ran on into the bibliography keeps the abstract above it."""
    if "\n\n" not in text or len(ENTRY_YEAR_RE.findall(text)) < BIBLIOGRAPHY_MIN_ENTRIES:
        return text, False
    paragraphs = text.split("\n\n")
    for k, paragraph in enumerate(paragraphs):
        if k and looks_like_bibliography(paragraph):
            return "\n\n".join(paragraphs[:k]).rstrip(), True
    return text, False


def _enumerated_sections(text: str) -> bool:
    """Whether `text` opens as a numbered list of sections (1., 2., 3. in order, each after a
    dash, a semicolon or a line break): a contents list, not running prose."""
    if not _may_hold(text[:3000], _ENUMERATED_PIECES, every=True, fold=False):
        return False
    numbers = [int(n) for n in _ENUMERATED_RE.findall(text[:3000])]
    return numbers[:3] == [1, 2, 3]


_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[^\W\d_])")
MIN_SPLIT_LETTERS = 150
"""Each side of a paragraph split by language has at least this many letters."""
SPLIT_SCAN_CHARS = 20_000
"""A paragraph's sentences are looked for in its first this many characters (the rest, if any,
ends its last part)."""


def _split_paragraph(paragraph: str) -> list[str]:
    """A paragraph that changes language between two sentences (a German abstract and its
    English translation printed as one block) as its parts; at most one split per paragraph,
    each side long enough for CLD3 to be reliable, so a sentence full of English terms does
    not cut a German abstract.

    Such a paragraph ends in its second language, so its sentences are looked at one by one
    only when its last two sentences past a possible split are reliably in another language
    than its start: most paragraphs are in one language, and asking CLD3 about every
    sentence pair of each was two fifths of the CLD3 calls of building a document."""
    if len(paragraph) < 2 * MIN_SPLIT_LETTERS:
        return [paragraph]
    sentences = _SENTENCE_SPLIT_RE.split(paragraph[:SPLIT_SCAN_CHARS])
    if len(sentences) < 2 or len(sentences) > 40:
        return [paragraph]
    total = count_letters(paragraph)
    # the sentences after which a split leaves enough letters on each side
    boundaries = []
    letters = 0
    for k, sentence in enumerate(sentences[:-1]):
        letters += count_letters(sentence)
        if letters >= MIN_SPLIT_LETTERS and total - letters >= MIN_SPLIT_LETTERS:
            boundaries.append(k)
    if not boundaries:
        return [paragraph]
    first = detect_language(None, paragraph[:LANGUAGE_TEXT_CHARS])[0]
    last = boundaries[-1]  # the sentences after it end the paragraph
    end = detect_language(None, " ".join(sentences[last + 1:last + 3]))
    if end[0] in (UND, first) or not end[2]:
        return [paragraph]
    for k in boundaries:
        nxt = detect_language(None, " ".join(sentences[k + 1:k + 3]))
        if nxt[0] in (UND, first) or not nxt[2]:
            continue
        head = detect_language(None, " ".join(sentences[:k + 1])[-LANGUAGE_TEXT_CHARS:])
        tail = detect_language(None, " ".join(sentences[k + 1:])[:LANGUAGE_TEXT_CHARS])
        if head[2] and tail[2] and head[0] != tail[0] and UND not in (head[0], tail[0]):
            return [" ".join(sentences[:k + 1]), " ".join(sentences[k + 1:]) + paragraph[SPLIT_SCAN_CHARS:]]
    return [paragraph]


def _language_runs(text: str) -> list[tuple[str, bool, str]]:
    """`text` as (language, text) runs: consecutive paragraphs in one language stay together,
    a change of language starts a new abstract (bilingual blocks under one heading, or one
    paragraph holding an abstract and its translation: `_split_paragraph`)."""
    paragraphs = [part for p in text.split("\n\n") if p.strip() for part in _split_paragraph(p)]
    if len(paragraphs) > MAX_PARAGRAPHS_SPLIT:
        paragraphs = paragraphs[: MAX_PARAGRAPHS_SPLIT - 1] + ["\n\n".join(paragraphs[MAX_PARAGRAPHS_SPLIT - 1:])]
    runs: list[list] = []
    for paragraph in paragraphs:
        letters = count_letters(paragraph[:400])
        language = detect_language(None, paragraph)[0] if letters >= MIN_PARAGRAPH_LETTERS or not runs else UND
        if runs and (language in (UND, runs[-1][0]) or runs[-1][0] == UND):
            runs[-1][1].append(paragraph)
            if runs[-1][0] == UND:
                runs[-1][0] = language
            continue
        runs.append([language, [paragraph]])
    out = []
    for _, ps in runs:  # each run detected on all its text (a paragraph alone can mislead)
        joined = "\n\n".join(ps)
        language, _prob, reliable = detect_language(None, joined)
        out.append((language, reliable, joined))
    return out


def _abstract_rule(item: dict | str, extraction: dict) -> str:
    """The extractor rule behind one abstract of an extraction ("citation_abstract",
    "abstract_heading:Resumo", "before_keywords"), or "extracted" when it did not say."""
    if isinstance(item, dict) and item.get("rule"):
        heading = item.get("heading")
        if item["rule"] == "abstract_heading" and not heading:
            return "unlabelled"
        return f"{item['rule']}:{heading}" if heading else str(item["rule"])
    return str((extraction.get("rules") or {}).get("abstract") or "extracted")


def abstract_entries(paper: dict, extractions: list[dict], title: str = "",
                     skip: Iterable[int] = ()) -> tuple[list[dict], list[tuple[str, str]]]:
    """(every abstract of the paper as {"text", "language", "source", "reliable", "rule",
    "n_tokens"} in order of trust (`n_tokens`: `count_tokens` of the text, counted once here for
    every later use), [(source, reason), ...] for the ones dropped as wrong). The metadata abstract comes
    first, then each extraction's (`abstracts` list, or its `abstract`) in `_ABSTRACT_ORDER`;
    texts that repeat an earlier one, or are too short, are skipped without a reason. The
    extractions at the indexes `skip` (documents found to be another text) give none: each of
    their abstracts is dropped with the reason `title_mismatch`."""
    raw: list[tuple[str, str, str, bool, int]] = []  # text, source, rule, capped, extraction index
    dropped: list[tuple[str, str]] = []
    skip = set(skip)
    if (paper.get("abstract") or "").strip():
        raw.append((paper["abstract"], paper.get("abstract_source") or "metadata", "metadata", False, -1))
    for kind in _ABSTRACT_ORDER:
        for index, e in enumerate(extractions):
            if e.get("kind") != kind:
                continue
            items = [a for a in (e.get("abstracts") or []) if (a.get("text") if isinstance(a, dict) else a)]
            if not items and e.get("abstract"):
                items = [e["abstract"]]
            if index in skip:
                dropped += [(kind, "title_mismatch") for _ in items]
                continue
            for item in items:
                text = item.get("text") if isinstance(item, dict) else item
                if text and text.strip():
                    capped = bool(isinstance(item, dict) and item.get("capped"))
                    raw.append((text, kind, _abstract_rule(item, e), capped, index))
    entries: list[dict] = []
    seen: list[str] = []
    headings: set[tuple[int, str, str]] = set()  # (extraction, language, heading) of kept entries
    clean_keys: dict[str, str] = {}  # a text as given -> its cleaned key, when it passed every check uncut
    for given, source, rule, capped, origin in raw:
        if given in clean_keys and any(clean_keys[given] in k for k in seen):
            continue  # given again word for word: it would pass the checks below again and be skipped
        text, cut = _cut_bibliography(clean_abstract(given))
        if cut:
            dropped.append((source, "bibliography"))
        n_text = count_tokens(text)
        if n_text < MIN_ABSTRACT_TOKENS:
            if text_layer_damage(text):  # glyph codes hold few word characters: still counted
                dropped.append((source, "text_layer_damaged"))
            continue
        reason = wrong_abstract_reason(text, title)
        if reason:
            dropped.append((source, reason))
            continue
        whole = word_chars(text)
        if not cut:
            clean_keys[given] = whole
        if any(whole in k for k in seen):
            # the text repeats a kept abstract (the metadata's, printed again on the landing
            # page and in the PDF: half the texts of the bench sample's papers): each of its
            # runs below is a piece of it and would be skipped as a repeat
            continue
        first_tokens = 0
        runs = _language_runs(text)
        for index, (language, reliable, part) in enumerate(runs):
            n_part = n_text if part == text else count_tokens(part)  # one run is mostly the whole text
            first_tokens = first_tokens or n_part
            key = word_chars(part)
            if n_part < MIN_ABSTRACT_TOKENS or any(key[:80] in k or k[:80] in key for k in seen):
                continue
            reason = _wrong_run_reason(index, n_part, first_tokens, part, title, capped) if len(runs) > 1 else None
            heading = (origin, language, re.sub(r"\W+", "", rule.lower())) if rule.startswith("abstract_heading:") else None
            if reason is None and heading in headings:
                reason = "repeated_heading"
            if reason:
                dropped.append((source, reason))
                continue
            if heading:
                headings.add(heading)
            seen.append(key)
            entries.append({"text": part, "language": language, "source": source, "reliable": reliable, "rule": rule,
                            "n_tokens": n_part})
    return entries[:MAX_ABSTRACTS], dropped


def _wrong_run_reason(index: int, n_part: int, first_tokens: int, part: str, title: str, capped: bool) -> str | None:
    """Why one language run of an abstract split at its language changes is not an abstract:

    * `ran_past_end`: a later run of a block cut at the extractor's word cap (it never reached
      a heading, keywords or a footnote, so past its first run it may be the body);
    * `split_part_short`: a later run much shorter than the first (an epigraph, a footnote);
    * any `wrong_abstract_reason` of the run alone (a bibliography the block ran into)."""
    if index and capped:
        return "ran_past_end"
    if index and n_part < MIN_SPLIT_RUN_TOKENS and 2 * n_part < first_tokens:
        return "split_part_short"
    return wrong_abstract_reason(part, title)


def _column(entries: list[dict]) -> list[dict] | None:
    """The `abstracts` column value: text, language, source of each entry."""
    return [{"text": e["text"], "language": e["language"], "source": e["source"]} for e in entries] or None


def _body_sample(content: str) -> str:
    """`BODY_SAMPLE_CHARS` of a body: from a third of the way in (past the front matter) when
    the body is longer than `3 * LANGUAGE_TEXT_CHARS`, else from its start."""
    start = len(content) // 3 if len(content) > 3 * LANGUAGE_TEXT_CHARS else 0
    return content[start:start + BODY_SAMPLE_CHARS]


def _sample_language(content: str) -> tuple[str, bool]:
    """CLD3 on `_body_sample(content)`: (language, reliable)."""
    language, _prob, reliable = detect_language(None, _body_sample(content))
    return language, reliable


def _own_language(title: str, entries: list[dict], content: str, hints: list[str], page_text: str = "") -> str:
    """The paper's own language: the body's when there is a PDF body (front matter and
    translated abstracts say less about it; a landing page's text is the page, with its
    interface and every abstract, not the paper); else, for abstracts in several languages,
    a landing page's long main text when its language is also the publisher's one language
    tag and one of the abstracts'; else the title's if one of the abstracts is in it, else a publisher hint that
    one of the abstracts is in, else the first abstract's."""
    if content:
        language, reliable = _sample_language(content)
        if language != UND and reliable:
            return language
    languages = [e["language"] for e in entries if e["reliable"]]
    if page_text and len(set(hints)) == 1 and len(set(languages)) > 1 and count_tokens(page_text) >= 5 * max(
            e["n_tokens"] for e in entries):
        # a page's main text alone may be its interface; several times longer than the
        # abstracts and agreeing with the publisher's one language tag and one of the
        # abstracts, it is the paper's body (an English title over a French article does not
        # make it English; a repository page tagging two languages decides nothing)
        language, reliable = _sample_language(page_text)
        if reliable and language in hints and language in languages:
            return language
    title_language = detect_language(title)[0] if title else UND
    if title_language != UND and (title_language in languages or not languages):
        return title_language
    for hint in hints:
        if hint in languages:
            return hint
    return languages[0] if languages else title_language


def _extraction_rule(extractions: list[dict], kind: str, value: str, field: str) -> str:
    """The extractor rule that produced `value` of `field` in the extraction of `kind` that
    holds it ("citation_title", "largest_font"), or "extracted"."""
    for e in extractions:
        if e.get("kind") == kind and e.get(field) == value:
            return str((e.get("rules") or {}).get(field) or "extracted")
    return "extracted"


def build_document(paper: dict, extractions: Iterable[dict] = (), dropped: list[tuple[str, str]] | None = None
                   ) -> tuple[dict | None, str]:
    """(document row, "kept") or (None, drop reason) for one paper.

    `paper` is a `papers` row (or its projection); `extractions` are the extractor outputs
    for its fetched URLs, each with `kind` ("landing" or "pdf"), `url`, `title`,
    `abstract`, `content` (any may be empty). Extractions are sorted by (kind, url) first
    so the result never depends on the order fetches finished in.

    Drop reasons: `no_text` (nothing fetched or extracted and no metadata abstract),
    `abstract_too_short` / `content_too_short` (text found, all of it under the minimum),
    `abstract_wrong` (the only abstracts were citation lines, page chrome or contents),
    `nothing_extracted` (pages fetched, no text in them), `title_mismatch` (every fetched
    document is another text than the paper, `_other_text`). `dropped`, when given, receives
    (source, reason) of every abstract dropped as wrong (`wrong_abstract_reason`), kept
    paper or not, so the stage can count them by reason."""
    extractions = sorted(extractions, key=lambda e: (e.get("kind") or "", e.get("url") or ""))
    # evidence: how well each fetched document agrees with the paper's metadata title; a
    # document that is another text gives the paper neither title, abstracts nor content
    titles = metadata_titles(paper)
    matches = [extraction_title_match(titles, e) for e in extractions]
    other = {k for k, e in enumerate(extractions) if _other_text(titles, e, matches[k], paper.get("doi") or "")}
    usable = [e for k, e in enumerate(extractions) if k not in other]
    known = [m for m in matches if m is not None]
    title_match = max(known) if known else None

    title, title_source, title_rule = "", None, None
    _damaged: list[tuple[str, str]] = []  # page / PDF text refused as a damaged text layer
    for raw, source in _candidates(paper, usable, "title", _TITLE_ORDER):
        title = clean_title(raw)
        if title and source in _TITLE_ORDER and text_layer_damage(title):
            _damaged.append((source, "title_text_layer_damaged"))
            title = ""
        if title:
            title_source = source
            title_rule = "metadata" if source not in _TITLE_ORDER else _extraction_rule(usable, source, raw, "title")
            break

    entries, _dropped = abstract_entries(paper, extractions, title, skip=other)
    if other:
        _dropped += [(extractions[k].get("kind") or "", "title_mismatch_content") for k in sorted(other)
                     if extractions[k].get("content")]
    extractions = usable
    if dropped is not None:
        dropped.extend(_dropped)
        dropped.extend(_damaged)  # title and content refusals below join it as they happen
    abstracts = _candidates(paper, extractions, "abstract", _ABSTRACT_ORDER)
    longest = max((e["n_tokens"] for e in entries), default=0)
    content, content_source, n_content = "", None, 0
    contents = _candidates({}, extractions, "content", _CONTENT_ORDER)
    for raw, source in contents:
        text = normalize_text(raw)
        if text_layer_damage(text):
            if dropped is not None:
                dropped.append((source, "content_text_layer_damaged"))
            continue
        n_text = count_tokens(text)
        if n_text >= MIN_CONTENT_TOKENS and n_text >= CONTENT_OVER_ABSTRACT * longest:
            content, content_source, n_content = text, source, n_text
            break

    hints = [h for e in extractions for h in (e.get("language_hints") or [])]
    publisher = normalize_language_code(paper.get("publisher_language"))
    body = content if content_source == "pdf" else ""
    page_text = content if content_source == "landing" else ""
    own = _own_language(title, entries, body, hints + ([publisher] if publisher else []), page_text)
    # the first abstract in the paper's language; one whose language CLD3 could not tell
    # reliably is not passed over for a later one (metadata comes first for a reason)
    chosen = next((e for e in entries if e["language"] == own or not e["reliable"]), entries[0] if entries else None)
    abstract = chosen["text"] if chosen else ""
    abstract_source = chosen["source"] if chosen else None
    abstract_rule = chosen["rule"] if chosen else None
    n_abstract = chosen["n_tokens"] if chosen else 0  # `count_tokens(abstract)`, counted by `abstract_entries`

    if not abstract and not content:
        if other and not extractions and not entries:
            return None, "title_mismatch"
        if _dropped and not entries:
            return None, "abstract_wrong"
        if abstracts:
            return None, "abstract_too_short"
        if contents:
            return None, "content_too_short"
        return None, "no_text" if not extractions else "nothing_extracted"

    own_title = title if not title or detect_language(title)[0] in (own, UND) else ""
    language, probability, reliable = detect_language(own_title, abstract or content[:LANGUAGE_TEXT_CHARS])
    if own != UND and language != own and body:
        # the abstract (or title) says otherwise, the body is the paper: keep the body's label,
        # read from the sample `_own_language` read (the memo answers)
        language, probability, reliable = detect_language(None, _body_sample(body))
    row = {
        "doi": paper["doi"],
        "title": title or None,
        "abstract": abstract or None,
        "abstracts": _column(entries),
        "abstract_rules": [e["rule"] for e in entries] or None,
        "content": content or None,
        "language": language,
        "language_prob": float(probability),
        "language_reliable": bool(reliable),
        "publisher_language": normalize_language_code(paper.get("publisher_language")),
        "title_source": title_source,
        "abstract_source": abstract_source,
        "content_source": content_source,
        "title_rule": title_rule,
        "abstract_rule": abstract_rule,
        "title_match": title_match,
        "text_source": content_source or abstract_source,
        "n_tokens_title": count_tokens(title),
        "n_tokens_abstract": n_abstract,
        "n_tokens_content": n_content,
        "year": paper.get("year"),
        "venue": paper.get("venue"),
        "type": paper.get("type"),
        "categories": list(paper.get("categories") or []),
        "relations": list(paper.get("relations") or []),
    }
    return row, "kept"


# --- landing pages read without their main text ------------------------------------------------

def _waiting_pages(extractions: list[dict]) -> list[dict]:
    """The landing pages extracted without their main text (`content_from` set: the text
    stage runs trafilatura on such a page only when its paper needs it)."""
    return [e for e in extractions if e.get("content_from")]


def main_text_needed_unbuilt(extractions: list[dict]) -> bool:
    """Whether a paper needs its waiting pages' main text before it is built at all: it has
    such a page and no PDF text, so its content can only be a page's (`main_text_needed`
    would say so after building it)."""
    return bool(_waiting_pages(extractions)) and not any(e.get("kind") == "pdf" and e.get("content")
                                                         for e in extractions)


def main_text_needed(paper: dict, extractions: list[dict], row: dict | None) -> bool:
    """Whether a paper built with some landing pages waiting for their main text must be
    built again with it. Not needed when the result provably cannot change (a sufficient
    condition, not a necessary one): the document's content is a PDF's (`_CONTENT_ORDER`
    tries PDFs first, so a landing page's text is never reached), and the text could not
    change the title evidence -- with no metadata title there is none; else the document
    already agrees fully (`title_match` 1.0, the most any text can give) and every waiting
    page with a title of its own agrees at least `TITLE_MATCH_MIN` without its text (a text
    only raises a page's agreement, so it stays a page of the paper, `_other_text`).
    Anything else (no PDF content, a dropped paper, weaker evidence) is built again."""
    waiting = _waiting_pages(extractions)
    if not waiting:
        return False
    if row is None or row.get("content_source") != "pdf":
        return True
    titles = metadata_titles(paper)
    if not titles:
        return False
    if row.get("title_match") != 1.0:
        return True
    return any(e.get("title") and (extraction_title_match(titles, e) or 0.0) < TITLE_MATCH_MIN for e in waiting)


# --- the same metadata abstract on several DOIs ------------------------------------------------

METADATA_SOURCES = ("crossref", "openalex", "unpaywall")
"""Abstract sources that are a metadata record's field (not text found on the paper's pages)."""
SHARED_ABSTRACT = "abstract_duplicate_across_dois"
"""Why an abstract is dropped when the same metadata text is the abstract of two DOIs, and the
drop reason of a paper left without text by it."""


def _squashed(text: str) -> str:
    return re.sub(r"\W+", "", text.casefold())


def shared_abstract_key(row: dict) -> str | None:
    """The key under which documents whose abstract is the same metadata text meet: a hash of
    the abstract with case, spaces and punctuation removed; None when the abstract did not come
    from metadata (a page or PDF abstract is the paper's own text, read from its own file).

    Why: OpenAlex (and sometimes Crossref) attaches one paper's abstract to another DOI; seen
    one paper at a time it looks fine, but the same text on two DOIs cannot belong to both."""
    if row.get("abstract_source") not in METADATA_SOURCES or not row.get("abstract"):
        return None
    import hashlib

    return hashlib.sha1(_squashed(row["abstract"]).encode("utf-8")).hexdigest()


def drop_shared_abstract(row: dict) -> tuple[dict | None, str]:
    """`row` without its metadata abstract (it is also another DOI's): every abstract entry
    from that metadata source goes, the next abstract the paper has (page or PDF, in the
    document's language first) takes its place, and the paper is kept with the same rule as
    `build_document` (an abstract of `MIN_ABSTRACT_TOKENS`, entries already are, or content);
    else (None, `SHARED_ABSTRACT`). The language is re-detected on the new text unless the
    PDF body decided it."""
    source = row.get("abstract_source")
    all_entries = row.get("abstracts") or []
    rules = list(row.get("abstract_rules") or [None] * len(all_entries))
    kept = [k for k, e in enumerate(all_entries) if e.get("source") != source]
    entries = [{**all_entries[k], "rule": rules[k] if k < len(rules) else None} for k in kept]
    chosen = next((e for e in entries if e.get("language") == row.get("language")), entries[0] if entries else None)
    abstract = chosen["text"] if chosen else ""
    content = row.get("content") or ""
    if not abstract and not content:
        return None, SHARED_ABSTRACT
    out = dict(row)
    out.update({
        "abstract": abstract or None,
        "abstracts": _column(entries) if entries else None,
        "abstract_rules": [e["rule"] for e in entries] or None,
        "abstract_source": chosen["source"] if chosen else None,
        "abstract_rule": chosen.get("rule") if chosen else None,
        "n_tokens_abstract": count_tokens(abstract),
        "text_source": row.get("content_source") or (chosen["source"] if chosen else None),
    })
    if row.get("content_source") != "pdf":
        title = row.get("title") or ""
        own_title = title if title and detect_language(title)[0] in (row.get("language"), UND) else ""
        language, probability, reliable = detect_language(own_title, abstract or content[:LANGUAGE_TEXT_CHARS])
        out.update({"language": language, "language_prob": float(probability), "language_reliable": bool(reliable)})
    return out, "kept"


def build_documents_job(_data: bytes, papers: list[tuple[dict, list[dict]]]) -> dict:
    """`build_document` of several papers as one job for a child process of an `ExtractorPool`
    (the text stage builds documents on every core of a local run). One paper takes ~1.5 ms
    to build, about what a round trip to the child costs the stage's worker, so papers go in
    batches (`text.beam.BuildDocuments`). `{"answers": [...]}` in the order of `papers`, each
    `{"row", "outcome", "dropped"}`, or `{"error": detail}` for a paper whose building raised
    (the worker builds that one again, where the exception shows its traceback)."""
    answers: list[dict] = []
    for paper, extractions in papers:
        dropped: list[tuple[str, str]] = []
        try:
            row, outcome = build_document(paper, extractions, dropped)
        except Exception as exc:  # noqa: BLE001 - one paper's failure, reported with its cause
            answers.append({"error": f"{type(exc).__name__}: {exc}"[:500]})
            continue
        answers.append({"row": row, "outcome": outcome, "dropped": dropped})
    return {"answers": answers}
