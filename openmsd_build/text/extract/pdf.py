"""Title, abstract and main text from a paper PDF, with pypdfium2.

pypdfium2 (PDFium) was chosen because it is the fastest extractor measured here (570–1,650
pages/s against 9–31 for pdfminer.six, see DESIGN "Known traps") and keeps two-column reading
order. Text layout is then repaired with plain rules, each reported in `rules`:

* de-hyphenation: PDFium marks a line-end hyphen it considers a word break as U+FFFE; it is
  removed between lower-case letters ("appro-priately") and kept as "-" otherwise
  ("FISH-based" broken after "FISH"); a literal "-" at a line end followed by a lower-case
  word is also joined.
* running headers / footers: lines found, digits ignored, among the first or last
  `_EDGE_LINES` lines of at least `REPEAT_MIN_PAGES` pages (and of half the pages) are removed,
  as are bare page numbers ("12", "Page 3 of 9").
* the reference list is cut at the last heading "References" / "Bibliography" / "Literatur" /
  "Références" / "Referências" / "Referencias" / "Список литературы" / "参考文献" ... found
  after the first 30 % of the text (earlier hits are tables of contents or running text).
* abstract: the text after the first "Abstract" heading (or its equivalent in the main
  languages, alone on its line or glued to the first sentence) on the first two pages, up to
  the next section heading ("Keywords", "Introduction", "1 Introduction", "Resumo" after
  "Abstract", ...), at most `MAX_ABSTRACT_WORDS` words.
* title: PDF metadata `Title` when it looks like a title (not a file name, not "untitled"),
  appears on the first page and is not in another language than the body while a printed
  title is; otherwise the first-page title block in the largest font (`_title_from_font`:
  fragments on one baseline joined, regular line spacing, split where the language changes,
  the part in the body's language first; a thesis cover's "на тему:" / "Thema:" label wins;
  journal banners, cover chrome, place-and-year lines and section labels skipped; none below
  a marked author list in its size, where an affiliation stands when the title is not in the
  text layer: `_below_author_list`); otherwise a plausible metadata title. The title is found last, and in the text stage only when a paper
  the PDF was fetched for can use it (`documents.printed_title_needed`: most papers have a
  metadata title printed at the start of the PDF's text): the first page's glyph boxes are
  the costliest rule after PDFium's own text, and the PDF is read once either way.
* abstracts also without a heading: a structured abstract opening with an objective label
  followed by a methods label (on a line of its own or run into the text after a sentence),
  and the paragraph right above a keywords line on the first
  pages; headings glued to the end of the previous line are split off first; the pages
  before the reference list are searched too (a thesis's abstracts after its conclusion).
* broken text layers (`fix_text_layer`): Arabic lam-alef order, mirrored brackets in
  right-to-left lines, TeX spacing accents; letter-spaced lines collapsed ("R EVI EW",
  `textclean.collapse_letter_spacing`); ligatures lost as a space rejoined by the shared
  cleaning (`textclean.repair_ligatures`); LaTeX source lines dropped from the body.
"""

from __future__ import annotations

import functools
import math
import operator
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np  # imported with the module: the extractor children's fork server preloads it

from openmsd_build.core.regex_gates import first_characters, gated_match, start_gate
from openmsd_build.core.textclean import (
    ABSTRACT_LABELS,
    KEYWORD_LABELS,
    MAX_SPACED_LINE_CHARS,
    SURROGATE_RE,
    clean_abstract,
    clean_title,
    collapse_letter_spacing,
    has_letters,
    is_tex_source_line,
    join_surrogates,
    normalize_text,
    word_chars,
)
from openmsd_build.text.documents import TITLE_NOT_NEEDED, printed_title_needed
from openmsd_build.text.extract.caps import MAX_CONTENT_CHARS, cap_extraction
from openmsd_build.text.extract.legacy_fonts import LEGACY_SIGNS, choose_encoding, decode_text, legacy_signs
from openmsd_build.text.extract.presentation_forms import has_presentation_forms, read_presentation_forms

MAX_PAGES = 300
"""Pages read per PDF: enough for any paper or thesis body, bounded for a 5,000-page scan."""
MAX_ABSTRACT_WORDS = 600
ABSTRACT_FRONT_PAGES = 16
"""Pages searched for abstract headings from the start: a thesis has a cover, a declaration,
acknowledgements and contents before its abstracts."""
ABSTRACT_TAIL_PAGES = 2
MIN_ABSTRACT_CHARS = 100
MIN_CONTENT_CHARS = 300
REPEAT_MIN_PAGES = 3
_EDGE_LINES = 4
_REFS_MIN_POSITION = 0.3

# "Abstract" (any of `textclean.ABSTRACT_LABELS`, one list for pages, PDFs and metadata) alone
# on its line (":" / "." allowed), or glued to the first sentence. A heading
# numbered as the first section ("I. Özet", "1. Abstract", "0 Summary") is one too: an
# abstract opens a paper, so a later number ("7. Summary") is a closing section, not one.
_ABSTRACT_ALONE_RE = re.compile(rf"^\s*(?:(?:[01]|I)[.)]?\s+)?(?:{ABSTRACT_LABELS})\s*[:.：]?\s*$", re.IGNORECASE)
_ABSTRACT_GLUED_RE = re.compile(
    rf"^\s*(?:{ABSTRACT_LABELS})\s*(?:[:.：—–|-]\s*|\s+(?=[A-ZÀ-ÝА-ЯЁІЇЄ]))(?=\S)", re.IGNORECASE
)
# Every match of `_ABSTRACT_ALONE_RE`, `_ABSTRACT_GLUED_RE` and `_ABSTRACT_UPPER_GLUED_RE` (a
# letter-spaced line compacted keeps its first character) starts, after spaces, with the first
# letter of a heading word or of a section number: a line starting otherwise (most lines) is
# passed over by `_heading_at` at once (`regex_gates.start_gate`: a set lookup for most lines).
_HEADING_FIRSTS = first_characters(ABSTRACT_LABELS) | {"0", "1", "I"}
_may_start_heading = start_gate(_HEADING_FIRSTS)
_ABSTRACT_UPPER_GLUED_RE = re.compile(r"^\s*(?:ABSTRACT|RESUMO|RESUMEN|RÉSUMÉ|SUMMARY|ZUSAMMENFASSUNG|RIASSUNTO)\s+(?=\S)")
# A letter-spaced line ("A B S T R A C T", "R E S U M O"): every token one or two letters.
_LETTER_SPACED_RE = re.compile(r"^(?:\w{1,2} ){2,}\w{1,2}\s*[:.：]?$")
# The keywords label in the languages of the world's journals: `textclean.KEYWORD_LABELS` (one
# list: the abstract ends at it, and the unlabelled paragraph above it is an abstract,
# `_abstract_before_keywords`).
_KEYWORD_WORDS = KEYWORD_LABELS
# Front-matter and back-matter headings that are never inside an abstract: a thesis puts its
# acknowledgements, dedication, declaration and contents right after the abstract page, an
# article its history and correspondence lines.
_FRONT_MATTER_WORDS = (
    r"acknowledge?ments?|ringraziamenti|agradecimentos|agradecimientos|remerciements|danksagung|dank|"
    r"podzi[ęe]kowania|te[şs]ekk[üu]r|благодарности|подяк[аи]|dankwoord|tack|kiitokset|köszönetnyilvánítás|"
    r"致谢|致謝|謝辞|감사의 ?글|تشکر و قدردانی|سپاسگزاری|شكر وتقدير|ucapan terima kasih|kata pengantar|"
    r"dedicat(?:ion|oria)|dedica|dédicace|widmung|dedicat[óo]ria|declaration|declara[çc][ãa]o|erkl[äa]rung|"
    r"o[śs]wiadczenie|table of contents|contents|indice|índice|sum[áa]rio|sommaire|inhalt(?:sverzeichnis)?|"
    r"spis tre[śs]ci|содержание|зміст|目录|目錄|目次|목차|فهرست(?: مطالب)?|daftar isi|i[çc]indekiler|"
    r"list of (?:figures|tables|abbreviations)|elenco delle (?:figure|tabelle)|lista de (?:figuras|tabelas|tablas)|"
    r"liste des (?:figures|tableaux)|abbildungsverzeichnis|tabellenverzeichnis|preface|prefácio|prefacio|"
    r"pr[ée]face|vorwort|prefazione|foreword|funding|financiamento|financiación|conflicts? of interest"
)
# Headings that end an abstract (alone on their line, or "Keywords: ..." glued).
_STOP_WORDS = (
    _KEYWORD_WORDS + "|" + _FRONT_MATTER_WORDS + "|"
    r"introduction|introdu[çc][ãa]o|introducci[óo]n|einleitung|einf[üu]hrung|introduzione|wprowadzenie|"
    r"inleiding|giri[şs]|pendahuluan|введение|вступ|引言|前言|はじめに|서론|مقدمة|background and aims|"
    r"jel classification|msc|ams subject classification|citation|copyright|©|received|recebido|recibido|re[çc]u|"
    r"eingegangen|ricevuto|поступила|correspondence|"
    r"\*\s*correspond|how to cite|article history|highlights|graphical abstract"
)
# A footnote line at a page foot: a marker (*, †, ‡, §, a superscript digit) then a word: an
# affiliation, a funding note or a correspondence address, never the abstract's next line.
_FOOTNOTE_LINE_RE = re.compile(r"^\s*(?:\*{1,3}|[†‡§¶]|[¹²³⁴⁵⁶⁷⁸⁹]+)\s*[^\W\d_]")
_STOP_RE = re.compile(rf"^\s*(?:{_STOP_WORDS})(?!\w)", re.IGNORECASE)
_NUMBER_PREFIX = r"^\s*(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,4}\.)\s+"
_NUMBERED_HEADING_RE = re.compile(_NUMBER_PREFIX + r"\S.{0,80}$")
_REFERENCES_RE = re.compile(
    r"^\s*(?:\d{1,2}\.?\s+|[IVX]{1,4}\.\s+)?(?:references?(?: and notes| cited)?|bibliography|bibliographie|"
    r"literatur(?:verzeichnis)?|literature(?: cited)?|works cited|références(?: bibliographiques)?|"
    r"referências(?: bibliográficas)?|referencias(?: bibliográficas)?|bibliografía|bibliografia|"
    r"riferimenti bibliografici|bibliografie|literatuur|piśmiennictwo|kaynaklar|daftar pustaka|"
    r"список литературы|литература|список використаних джерел|参考文献|引用文献|참고문헌|المراجع|منابع)"
    r"\s*[:.]?\s*$",
    re.IGNORECASE,
)
_PAGE_NUMBER_RE = re.compile(r"^\s*(?:page|p\.|pág\.?|seite|стр\.?)?\s*\d{1,4}\s*(?:(?:of|/|de|von|из)\s*\d{1,4})?\s*$", re.IGNORECASE)


def _is_page_number(line: str) -> bool:
    """`_PAGE_NUMBER_RE.match(line)`: every match ends with a digit (`\\d` is `str.isdecimal`)
    before white space (`\\s` is `str.isspace`, what `rstrip` strips), so a line ending
    otherwise (most lines) is passed over without the regex."""
    end = line[-1:]
    if end.isspace():
        end = line.rstrip()[-1:]
    return end.isdecimal() and _PAGE_NUMBER_RE.match(line) is not None
_DIGITS_RE = re.compile(r"\d+")
_SENTENCE_END_RE = re.compile(r"[.!?:;)\]。！？]$")
_SENTENCE_END_CHARS = frozenset(".!?:;)]。！？")  # `_SENTENCE_END_RE`'s class


def _ends_sentence(line: str) -> bool:
    """`_SENTENCE_END_RE.search(line) is not None` without a search along the line: its class at
    the end, or before a final line break (where `$` also matches)."""
    last = line[-1:]
    return last in _SENTENCE_END_CHARS or (last == "\n" and line[-2:-1] in _SENTENCE_END_CHARS)
_BAD_METADATA_TITLE_RE = re.compile(
    r"\.(?:pdf|docx?|p65|indd|qxd|tex|dvi|rtf|ps)\b|\.(?:hwpx?|odt|wpd|sxw|pages|pptx?|xlsx?|key)\s*$|"
    r"^untitled|^microsoft word|^title$|^\s*$|^[\w-]+$|template|^(?:doi|http|www)",
    re.IGNORECASE,
)
"""A PDF's Info Title that names no article: the file it was made from (a word processor's,
a typesetter's, a slide or spreadsheet program's: "paper (1).hwp", "final.odt"; the rarer
formats only as the title's last word, where a name ends), a template's placeholder, a link."""
_NOT_TITLE_LINE_RE = re.compile(
    r"journal|vol\.|volume|\bissn\b|doi|https?:|www\.|©|copyright|open access|research article|"
    r"original article|review article|artigo original|proceedings|published|received|accepted|"
    r"university|universit[yéà]|department|@|"
    # cover-page and page chrome lines of theses, summary sheets and preprints, in the
    # languages of the corpus: they are set large but are not the work's title
    r"\bthesis\b|\btesi[s]?\b|\btese\b|\bth[èe]se\b|masterarbeit|bachelorarbeit|diplomarbeit|dissertation|"
    r"skripsi|praca (?:licencjacka|magisterska|dyplomowa)|\bfacult(?:y|ad|é|à)\b|faculdade|fakult[äa]t|"
    r"grado en|kwalifikac|кваліфікаційна|дипломна|выпускная|курсовая|робота$|работа$|"
    r"毕业论文|學位論文|学位论文|卒業論文|졸업\s?논문|إعداد|إشراف|جامعة|دانشگاه|پایان\s?نامه|"
    r"universi|університет|университет|uniwersytet|üniversite|trabajo de fin|fin de grado|trabalho de conclus|"
    r"\bpp?\.\s*\d|\banno [IVXLC\d]|^editorial$|arxiv:|digital repository|dettaglio tesi|template$|summary sheet",
    re.IGNORECASE,
)

_NOT_CONTINUATION_RE = re.compile(r"doi|https?:|www\.|©|@", re.IGNORECASE)


class PdfParseError(ValueError):
    """PDFium could not open the bytes as a PDF (reported as `parse_error`)."""


_LONE_CR_RE = re.compile(r"\r(?!\n)")
# PDFium sometimes keeps the line break after the U+FFFE hyphen and sometimes drops it.
_WORD_BREAK_RE = re.compile(r"(?<=[a-zà-ÿа-я])\ufffe\s*(?:\r?\n)?\s*(?=[a-zà-ÿа-я])")
_BREAK_HYPHEN_RE = re.compile(r"\ufffe\s*(?:\r?\n)?\s*")
_WORD_END_RE = re.compile(r"\w+$")
_WORD_START_RE = re.compile(r"\w+")


def _broken_words(line: str) -> list[tuple[str, str, str]]:
    """(text before, the word's two halves ...) for `line` split at its joined line-break
    marks: [(piece, left half, right half), ...] plus the last piece as (piece, "", "")."""
    pieces = line.split("\ufffe")
    out = []
    for k, piece in enumerate(pieces[:-1]):
        left = _WORD_END_RE.search(piece[-60:])
        right = _WORD_START_RE.match(pieces[k + 1])
        out.append((piece, left.group() if left else "", right.group() if right else ""))
    out.append((pieces[-1], "", ""))
    return out


def resolve_breaks(texts: list[str], evidence: str | set[str]) -> list[str]:
    """`texts` with each word joined at a line-break hyphen (``a\\ufffeb``) written as the
    document writes it elsewhere: "сервис-ориентированными" keeps its hyphen when `evidence`
    (the document's text, or the lower-cased compounds found in it: `break_compounds`) holds
    that compound with a hyphen; "ориенти-рованными" is joined. The document is the only
    dictionary that knows its own compounds."""
    compounds = break_compounds(texts, evidence) if isinstance(evidence, str) else evidence
    out = []
    for text in texts:
        if "\ufffe" in text:
            text = "".join(piece + ("-" if a and b and f"{a}-{b}".lower() in compounds else "")
                           for piece, a, b in _broken_words(text))
        out.append(text)
    return out


def break_compounds(texts: list[str], evidence: str) -> set[str]:
    """The compounds broken at a line end in `texts` that `evidence` writes with a hyphen,
    lower-cased (`resolve_breaks`' dictionary): the words around each hyphen of `evidence`,
    so a document pays for its hyphens, not for its length times its breaks."""
    wanted = {f"{a}-{b}".lower() for t in texts if "\ufffe" in t for _p, a, b in _broken_words(t) if a and b}
    if not wanted or "-" not in evidence:
        return set()
    found = set()
    pieces = evidence.split("-")
    for left, right in zip(pieces, pieces[1:], strict=False):
        b = _WORD_START_RE.match(right)
        a = _WORD_END_RE.search(left[-60:]) if b else None
        if a and f"{a.group()}-{b.group()}".lower() in wanted:
            found.add(f"{a.group()}-{b.group()}".lower())
    return found


def _page_lines(text: str) -> list[str]:
    """One page's text as stripped lines. PDFium marks a hyphen at a line break with U+FFFE:
    between lower-case letters the word is joined and the mark kept for `resolve_breaks` (a
    hyphenated compound keeps its hyphen); any other mark is a hyphen. PDFium ends a line with
    CR LF; a lone CR is a word separator of some Word exports ("word\\t\\r\\xa0word"), not a
    line break."""
    text = _LONE_CR_RE.sub(" ", text)
    if "\ufffe" in text:  # most pages have none: two scans saved
        # joined breaks wait as U+FFFF (a noncharacter no text layer holds) while the others
        # become hyphens, then take the mark `resolve_breaks` reads
        text = _WORD_BREAK_RE.sub("\uffff", text)
        text = _BREAK_HYPHEN_RE.sub("-", text).replace("\uffff", "\ufffe")
    text = fix_text_layer(text)
    # lone CRs are gone (above), so the line ends left are CR LF and LF: str methods split
    # there as the regex `\r\n|\r|\n` did, in a fifth of its time. A stripped line that is long
    # or holds no space is one `collapse_letter_spacing` returns as it is: it is not called.
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    return [ln if len(ln) > MAX_SPACED_LINE_CHARS or " " not in ln else collapse_letter_spacing(ln) for ln in lines]


def _edge_key(line: str) -> str:
    return _DIGITS_RE.sub("#", line.lower()).strip()


def _remove_headers_footers(pages: list[list[str]]) -> list[list[str]]:
    """Drop running heads / feet (see module docstring) and bare page numbers."""
    counts: Counter[str] = Counter()
    page_edges: list[dict[str, str]] = [{} for _ in pages]  # per page: edge line -> its key
    for index, lines in enumerate(pages if len(pages) >= REPEAT_MIN_PAGES else ()):  # fewer: nothing repeats
        non_empty = [ln for ln in lines if ln]
        page_edges[index] = edges = {ln: _edge_key(ln) for ln in non_empty[:_EDGE_LINES] + non_empty[-_EDGE_LINES:]}
        counts.update(set(edges.values()))
    threshold = max(REPEAT_MIN_PAGES, (len(pages) + 1) // 2)
    # a one-character line repeated is furniture when it is a sign ("!" drawn by a logo
    # font), not a digit or a letter (matrix brackets, enumerations)
    repeated = ({k for k, c in counts.items() if c >= threshold and (len(k) > 1 or not (k.isalnum() or k == "#"))}
                if len(pages) >= REPEAT_MIN_PAGES else set())
    cleaned = []
    for lines, edges in zip(pages, page_edges, strict=True):
        cleaned.append(
            [
                ln
                for ln in lines
                if not _is_page_number(ln) and not (ln in edges and edges[ln] in repeated)
            ]
        )
    return cleaned


def _join_lines(lines: list[str]) -> str:
    """Lines to paragraphs: a line-end hyphen before a lower-case word is joined; a break is a
    paragraph when the previous line ends a sentence well short of the usual line length, or
    the line is a short heading."""
    lengths = [len(ln) for ln in lines if len(ln) > 20]
    typical = statistics.median(lengths) if lengths else 60

    def marks(line: str) -> tuple[bool, bool]:
        """(ends a sentence, `_looks_like_heading`) of a line, the sentence end read once."""
        end = _ends_sentence(line)
        return end, _looks_like_heading(line, typical, end)

    out: list[str] = []
    prev_end = prev_heading = False  # the marks of out[-1]
    for line in lines:
        if not line:
            continue
        if out:
            prev = out[-1]
            if prev.endswith("-") and len(prev) > 1 and prev[-2].isalpha() and prev[-2].islower() and line[:1].islower():
                out[-1] = prev[:-1] + line
                prev_end, prev_heading = marks(out[-1])
                continue
            line_end, line_heading = marks(line)
            short_end = prev_end and len(prev) < 0.75 * typical
            # a heading starts after a finished sentence and is followed by a capital (a short
            # line followed by a lower-case word is just a short wrapped line)
            heading = (line_heading and prev_end) or (prev_heading and not line[:1].islower())
            out.append("\n\n" if (short_end or heading) else "\n")
        else:
            line_end, line_heading = marks(line)
        out.append(line)
        prev_end, prev_heading = line_end, line_heading
    return "".join(out)


def _looks_like_heading(line: str, typical: float = 80.0, ends_sentence: bool | None = None) -> bool:
    """Short, unpunctuated, capitalized: a section heading (relative to the usual line length,
    so the lines of a narrow column are not all headings). `ends_sentence`: whether
    `_SENTENCE_END_RE` finds the line's sentence end, when the caller has read it already."""
    if ends_sentence is None:
        ends_sentence = _ends_sentence(line)
    return 0 < len(line) < min(60, 0.7 * typical) and not ends_sentence and line[:1].isupper() and len(line.split()) <= 8


ABSTRACT_BEFORE_REFERENCES_PAGES = 4
"""Pages before the reference list searched for abstract headings (a thesis's abstracts in
several languages after its conclusion)."""


def _references_page(pages: list[list[str]]) -> int | None:
    """Index of the page holding the last reference-list heading past the first 30 % of the
    pages (as `_cut_references` decides on lines), or None."""
    for index in range(len(pages) - 1, int(len(pages) * _REFS_MIN_POSITION) - 1, -1):
        if any(_REFERENCES_RE.match(ln) for ln in pages[index]):
            return index
    return None


def _cut_references(lines: list[str]) -> tuple[list[str], bool]:
    """Lines before the last reference-list heading past the first 30 % of the text."""
    start = int(len(lines) * _REFS_MIN_POSITION)
    for i in range(len(lines) - 1, start - 1, -1):
        if _REFERENCES_RE.match(lines[i]):
            return lines[:i], True
    return lines, False


_LABEL_CLOSE_RE = re.compile(r"\s*(?:[:：.]|$)")


def _is_abstract_end(line: str, heading_text: str) -> bool:
    stop = _STOP_RE.match(line)
    # a lower-case line continues a sentence ("received chemoprophylaxis."), unless the word
    # stands as a label ("keywords: ...", "received")
    if stop and (not line.lstrip()[:1].islower() or _LABEL_CLOSE_RE.match(line, stop.end())):
        return True
    if _FOOTNOTE_LINE_RE.match(line):
        return True
    if _NUMBERED_HEADING_RE.match(line) and _looks_like_heading(re.sub(_NUMBER_PREFIX, "", line)):
        return True
    # an abstract in another language starts ("Resumo" ... "Abstract")
    hit = _heading_at(line)
    return hit is not None and (hit[1] != "" or line.strip().lower() != heading_text.lower())


def _heading_at(line: str) -> tuple[str, str] | None:
    """(heading as printed, text glued after it) when `line` starts an abstract: the heading
    alone (also letter-spaced, "A B S T R A C T" / "摘 要"), or glued to the first sentence
    ("Abstract: We ...", "ABSTRACT We ...", "摘要：本文 ...")."""
    if not _may_start_heading(line):
        return None
    stripped = line.strip()
    if len(stripped) <= 40:
        compact = stripped.replace(" ", "") if _LETTER_SPACED_RE.match(stripped) else stripped
        if _ABSTRACT_ALONE_RE.match(compact):
            return stripped, ""
    glued = _ABSTRACT_GLUED_RE.match(line) or _ABSTRACT_UPPER_GLUED_RE.match(line)
    # a short line is a heading glued to text only when a separator says so ("ABSTRACT | The
    # use of the term" in a narrow column); else it is a sentence that starts with the word
    if glued and (len(line) > 40 or (re.search(r"[:|：]\s*$", line[: glued.end()]) and len(line[glued.end():]) >= 12)):
        return line[: glued.end()], line[glued.end():]
    return None


# Structured abstracts printed without an "Abstract" heading (SciELO, PAHO, medical
# journals): the objective label opens the abstract and a methods label follows within a few
# lines. Labels stay in the text, as printed ("Objetivos. Con el propósito ...").
_OBJECTIVE_WORDS = (
    r"objetivos?|objective?s?|purpose|aims?|background|context|contexto|fundamentos?|antecedentes|"
    r"introdu[cç][ãa]o|introducci[óo]n|objectifs?|contexte|ziele?|hintergrund|fragestellung|obiettiv[oi]|scopo|"
    r"premessa|cel(?: pracy)?|wst[eę]p|цель|мета|актуальность|amaç|doel(?:stelling)?|achtergrond|tujuan|latar belakang"
)
_METHODS_WORDS = (
    r"m[ée]todos?|methods?|methodology|materials? and methods|material(?:es)? y m[ée]todos|"
    r"materiais e m[ée]todos|m[ée]thodes?|methoden|metodi|metod[ay]|методы|методи|yöntem|metode|"
    r"design|diseño|delineamento|desenho|study design|participants|setting"
)
_OBJECTIVE_LABEL_RE = re.compile(rf"^\s*(?:{_OBJECTIVE_WORDS})\s*(?:[.:：]|\s[-–—])\s*\S", re.IGNORECASE)
_METHODS_LABEL_RE = re.compile(rf"^\s*(?:{_METHODS_WORDS})\s*(?:[.:：]|\s[-–—])", re.IGNORECASE)
# a methods label run into the text after the previous section's last sentence, as some
# publishers set a structured abstract as one paragraph ("... were examined. Methods. Focus
# groups ..."): after a sentence's end, closed by a full stop or colon, capitalized as a
# label (`_inline_methods_label`)
_INLINE_METHODS_LABEL_RE = re.compile(rf"[.!?]\s+((?:{_METHODS_WORDS})\s*[.:：]\s)", re.IGNORECASE)
# the same labels alone on their line, as boxed structured abstracts print them ("Objective")
_BARE_OBJECTIVE_RE = re.compile(rf"^\s*(?:{_OBJECTIVE_WORDS})\s*[.:：]?\s*$", re.IGNORECASE)
_BARE_METHODS_RE = re.compile(rf"^\s*(?:{_METHODS_WORDS})\s*[.:：]?\s*$", re.IGNORECASE)
_may_start_objective = start_gate(first_characters(_OBJECTIVE_WORDS))  # before `_OBJECTIVE_LABEL_RE`
STRUCTURED_LOOKAHEAD = 25
"""Lines after an objective label within which a methods label must follow."""


MAX_FIRST_SECTION_CHARS = 400
"""A structured abstract cut after its first section has a sentence or two there; a longer
block (an abstract whose labels the lexicon does not know) is complete, and what follows it
is the paper."""
CONTINUATION_LOOKAHEAD = 40
"""Lines after a one-section structured abstract within which its methods label may resume it."""


def _structured_continuation(lines: list[str], body: list[str], j: int) -> tuple[list[str], int]:
    """(the rest of a structured abstract, where it ends) when `body` is only its first section
    (a bare objective label, its text and maybe page furniture; no methods label) and the
    methods label follows alone within
    `CONTINUATION_LOOKAHEAD` lines: a boxed abstract that the text layer interleaves with the
    other column or the next page's text ("Objective ... patients." | running head, body
    text | "Methods ..."). The rest runs to the abstract's end or the next methods label
    (the body's own "MÉTODOS" section). ([], j) otherwise."""
    if not body or not _BARE_OBJECTIVE_RE.match(body[0]) or sum(map(len, body)) > MAX_FIRST_SECTION_CHARS or any(
            _BARE_METHODS_RE.match(ln) or _METHODS_LABEL_RE.match(ln) for ln in body):
        return [], j
    start = next((k for k in range(j, min(len(lines), j + CONTINUATION_LOOKAHEAD)) if _BARE_METHODS_RE.match(lines[k])), None)
    if start is None:
        return [], j
    rest, k = [lines[start]], start + 1
    while k < len(lines) and len(rest) < 60:
        line = lines[k]
        if line and (_is_abstract_end(line, "") or _BARE_METHODS_RE.match(line)):
            break
        if line:
            rest.append(line)
        k += 1
    return rest, k


def _inline_methods_label(line: str) -> bool:
    """Whether a methods label capitalized as a label follows a sentence's end in `line`."""
    return any(m.group(1)[0].isupper() for m in _INLINE_METHODS_LABEL_RE.finditer(line))


def _structured_start(lines: list[str], i: int) -> bool:
    """Whether `lines[i]` opens a structured abstract that has no heading (see above): a
    methods label opens one of the next lines, or is run into one of them after a sentence."""
    if not _may_start_objective(lines[i]) or not _OBJECTIVE_LABEL_RE.match(lines[i]):
        return False
    following = lines[i:i + 1 + STRUCTURED_LOOKAHEAD]
    return any(_METHODS_LABEL_RE.match(ln) for ln in following[1:]) or any(map(_inline_methods_label, following))


_DOT_LEADER_RE = re.compile(r"(?:\.\s?){4,}|…{2,}|\s\d{1,3}\s*$")


def _has_dot_leader(line: str) -> bool:
    """`_DOT_LEADER_RE.search(line)`, asked only of a line that holds what one of its branches
    needs: four full stops, an ellipsis, or a digit last before white space (`\\d` is
    `str.isdecimal`, `\\s` what `rstrip` strips); most lines of an abstract hold none."""
    if line.count(".") < 4 and "…" not in line and not line.rstrip()[-1:].isdecimal():
        return False
    return _DOT_LEADER_RE.search(line) is not None


# A heading printed at the end of the previous line in the text layer ("... Kim** 요 약",
# "... 높인다. Abstract"): after a non-letter (sentence end, footnote star, digit), a
# capitalized Latin heading word or a CJK / Hangul one, letter-spaced or not.
_TRAILING_HEADING_RE = re.compile(
    r"(?<=[^\w\s])\s+((?:Abstract|ABSTRACT|Summary|SUMMARY|Resumo|RESUMO|Resumen|RESUMEN|R[ée]sum[ée]|RÉSUMÉ|"
    r"Zusammenfassung|Streszczenie|Аннотация|АННОТАЦИЯ|Анотація|Реферат|РЕФЕРАТ)"
    r"|(?:摘\s?要|要\s?旨|초\s?록|요\s?약))\s*[:.：]?\s*$"
    r"|(?<=\S)\s+((?:摘\s?要|要\s?旨|초\s?록|요\s?약))\s*[:：]?\s*$"
)
_KEYWORDS_RE = re.compile(rf"^\s*(?:{_KEYWORD_WORDS})(?!\w)", re.IGNORECASE)
_is_keywords_line = gated_match(_KEYWORDS_RE, first_characters(_KEYWORD_WORDS))
"""`_KEYWORDS_RE.match(line) is not None`, most lines passed over by their first character."""
KEYWORDS_ABSTRACT_PAGES = 3
"""Pages (from the start) where a paragraph right above a keywords line is taken as an
unlabelled abstract."""


# Every match of `_TRAILING_HEADING_RE` ends the line with one of these (before an optional
# colon or full stop): a line that does not is passed over without trying the regex at each
# of its positions (a tenth of the PDF rules' time went there).
_TRAILING_HEADING_ENDS = ("Abstract", "ABSTRACT", "Summary", "SUMMARY", "Resumo", "RESUMO", "Resumen", "RESUMEN",
                          "sumé", "sume", "RÉSUMÉ", "Zusammenfassung", "Streszczenie", "Аннотация", "АННОТАЦИЯ",
                          "Анотація", "Реферат", "РЕФЕРАТ", "要", "旨", "록", "약")


_TRAILING_HEADING_LAST = frozenset(end[-1] for end in _TRAILING_HEADING_ENDS) | {":", ".", "："}


def _may_end_with_heading(line: str) -> bool:
    """False when `_TRAILING_HEADING_RE` cannot match `line` (a necessary test, not a sufficient one).
    A line ending with a character no heading word (nor its colon or full stop) ends with, and
    not white space, is answered by that character."""
    last = line[-1:]
    if last not in _TRAILING_HEADING_LAST and not last.isspace():
        return False
    end = line.rstrip()
    if end[-1:] in (":", ".", "："):
        end = end[:-1].rstrip()
    return end.endswith(_TRAILING_HEADING_ENDS)


def _split_trailing_headings(lines: list[str]) -> list[str]:
    """Lines with a heading glued to the end of the previous line moved to a line of its own."""
    out: list[str] = []
    for line in lines:
        m = _TRAILING_HEADING_RE.search(line) if len(line) > 3 and _may_end_with_heading(line) else None
        if m and line[: m.start()].strip():
            out += [line[: m.start()].rstrip(), (m.group(1) or m.group(2)).strip()]
        else:
            out.append(line)
    return out


def _abstract_before_keywords(lines: list[str]) -> str:
    """The unlabelled paragraph right above the first keywords line ("Keywords: ...",
    "KEYWORDS"), or "": many journals print the abstract under the authors without a heading
    (the caller drops it when it repeats an abstract found by its heading). The paragraph runs up
    from the keywords line while lines are near the usual line length (a short line above it
    is an affiliation, an e-mail or a title)."""
    for k, line in enumerate(lines):
        if not _is_keywords_line(line):
            continue
        lengths = [len(ln) for ln in lines if len(ln) > 20]  # only for the first keywords line
        typical = statistics.median(lengths) if lengths else 60
        body: list[str] = []
        i = k - 1
        while i >= 0 and len(body) < 60:
            ln = lines[i]
            if not ln:
                i -= 1
                continue
            if _heading_at(ln) or _STOP_RE.match(ln) or _not_continuation(ln) or _FOOTNOTE_LINE_RE.match(ln):
                break
            if len(ln) < 0.6 * typical and body:
                break
            body.append(ln)
            i -= 1
        body.reverse()
        text = clean_abstract(_join_lines(body))
        if len(body) >= 3 and len(text) >= 3 * MIN_ABSTRACT_CHARS and not _DOT_LEADER_RE.search(text):
            return text
        return ""
    return ""


MAX_KEYWORD_LINES = 4


def _after_keywords(lines: list[str], k: int) -> int:
    """Index of the line after the keywords line `lines[k]` and its continuation lines (up to
    `MAX_KEYWORD_LINES` in all, the last one ending with a full stop or none)."""
    end = k
    while end < len(lines) and end - k < MAX_KEYWORD_LINES:
        end += 1
        if _ends_sentence(lines[end - 1]) or not lines[end - 1]:
            break
    return end


class FoundAbstract(NamedTuple):
    """One abstract found under a heading: its text, the heading word ("" when unlabelled),
    and whether it was cut at `MAX_ABSTRACT_WORDS` instead of ending at a heading, keywords or
    a footnote (then what follows its first language run may be the body: `documents`)."""

    text: str
    heading: str
    capped: bool = False


def _find_abstracts(lines: list[str], limit: int = 4) -> list[FoundAbstract]:
    """Every abstract in `lines` (`FoundAbstract`), in document order (see the module
    docstring): a bilingual paper prints two or three, a thesis prints them after its cover
    and before or after its contents. A heading whose text is a table of contents (dot
    leaders, page numbers) or that repeats an abstract already found is skipped."""
    lines = _split_trailing_headings(lines)
    found: list[FoundAbstract] = []
    seen: list[str] = []
    headless_end = -10  # where the last abstract found without a heading ended
    i = 0
    while i < len(lines) and len(found) < limit:
        hit = _heading_at(lines[i])
        if hit is not None and not hit[1] and i - headless_end <= 3:
            # the heading of the headless abstract just read, printed after it (a sidebar
            # label that comes later in the text layer): what follows it is the body
            hit, headless_end = None, -10
        elif hit is None and _structured_start(lines, i):
            hit = ("", lines[i])
        if hit is None:
            i += 1
            continue
        heading, first = hit
        heading_word = heading.strip().rstrip(":.：—–- ").strip()
        body = [first] if first else []
        words = len(first.split())
        j = i + 1
        capped = False
        while j < len(lines):
            nxt = lines[j]
            if nxt:
                if _is_keywords_line(nxt) and len(" ".join(body)) < MIN_ABSTRACT_CHARS:
                    # keywords printed first, under the heading (a Ukrainian or Russian
                    # "реферат" opens with the work's size and its keywords, as its standard
                    # asks): they are part of it as printed, and the abstract goes on after
                    end = _after_keywords(lines, j)
                    body += [ln for ln in lines[j:end] if ln]
                    j = end
                    continue
                if _is_abstract_end(nxt, heading_word):
                    break
                body.append(nxt)
                words += len(nxt.split()) + (0 if nxt.isascii() else len(_WIDE_CHAR_RE.findall(nxt)) // 2)
                if words >= MAX_ABSTRACT_WORDS:
                    j += 1
                    capped = True
                    break
            j += 1
        if not capped:
            rest, j = _structured_continuation(lines, body, j)
            if rest:  # what the text layer put between the two parts (a running head) goes
                while len(body) > 1 and not _ends_sentence(body[-1]):
                    body.pop()
                body += rest
        leaders = sum(map(_has_dot_leader, body))
        text = clean_abstract(_join_lines(body))
        key = word_chars(text)[:200]
        if len(text) >= MIN_ABSTRACT_CHARS and leaders <= len(body) // 4 and not any(key[:80] in k for k in seen):
            found.append(FoundAbstract(text, heading_word, capped))
            seen.append(key)
            headless_end = j if not heading else -10
            i = j
        else:
            i += 1
    return found


def _find_abstract(lines: list[str]) -> tuple[str, str | None]:
    """(first abstract, heading as found) from `lines`, or ("", None)."""
    found = _find_abstracts(lines, limit=1)
    return (found[0].text, found[0].heading) if found else ("", None)


# Glyph boxes read per first-page line: every glyph of a short line (a title line, where one
# size change matters) or of a line with a spacing accent, a spread sample of a long one.
_BOX_ALL = 48
_BOX_SAMPLE = 16


SIZE_LINES_MAX_CHARS = 20_000
"""Characters of a page `_first_page_lines_with_size` reads: a title is at the top."""


def _first_page_lines_with_size(textpage: Any, text: str | None = None) -> list[tuple[str, float, float]]:
    """(line, median glyph height, top y) for the first page: the font-size signal that finds
    a title. Loose char boxes give the font's height, independent of the glyph's shape.
    Fragments that PDFium reports as separate lines but that sit on one baseline in one size
    (a word processor that places every word, or tab-separated words) are one visual line.
    `text`: the page's whole text already read by the caller, one code point per character
    (`len(text) == count_chars()`), not read again."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    lines: list[tuple[str, float, float]] = []
    n = min(textpage.count_chars(), SIZE_LINES_MAX_CHARS)
    # The extractor's hottest loop (thousands of glyphs a first page, two PDFium calls each
    # through ctypes): read the page's characters once, then take boxes of at most
    # `_BOX_SAMPLE` glyphs spread over a line -- a line's median height and top do not need
    # every glyph -- and of every glyph only on short lines and lines with an accent to place.
    raw, rect = textpage.raw, pdfium_c.FS_RECTF()
    get_unicode, get_box, rect_ref = pdfium_c.FPDFText_GetUnicode, _loose_char_box(), ctypes.byref(rect)
    text_all = (text[:n] if text is not None else textpage.get_text_range(0, n)) if n else ""
    halves = False  # a character outside the BMP is two PDFium characters, read as two halves
    if len(text_all) != n:  # surrogate pairs or generated characters: read them one by one
        text_all = "".join(chr(get_unicode(raw, i)) for i in range(n))
        halves = SURROGATE_RE.search(text_all) is not None
    # where the page's glyphs (non-space characters) are: glyph j of the page is at
    # `glyph_at[j]`, and line k holds glyphs [line_first[k], line_end[k]), so a line's glyphs
    # are a slice and a spread sample a few lookups (all of it computed in C, `_glyph_layout`)
    segments = _LINE_BREAK_RE.split(text_all)
    glyph_at, line_first, line_end = _glyph_layout(text_all, segments)
    # the checks a line needs only when the page holds the characters they look for
    page_accents = _has_accent(text_all)
    page_fix = page_accents or _may_need_layer_fix(text_all)
    page_encoding = choose_encoding(text_all) if page_fix else None
    start = 0
    for segment, first, end in zip(segments, line_first, line_end, strict=True):
        start, line_start = start + len(segment) + 1, start
        if first == end:  # a blank line: no glyph, no size
            continue
        accents = page_accents and _has_accent(segment)
        sampled = _sampled_glyphs(glyph_at, first, end, accents)
        heights: list[float] = []
        tops: list[float] = []
        boxes = {}
        if accents:
            for i in sampled:
                get_box(raw, i, rect_ref)
                heights.append(rect.top - rect.bottom)
                tops.append(rect.top)
                boxes[i] = (rect.left, rect.right)
        else:
            add_height, add_top = heights.append, tops.append
            for i in sampled:
                get_box(raw, i, rect_ref)
                top = rect.top
                add_height(top - rect.bottom)
                add_top(top)
        if accents:
            spans = [boxes.get(line_start + k, (0.0, 0.0)) for k in range(len(segment))]
            segment = _compose_accents(list(segment), spans)
        if halves:  # a line holding a character outside the BMP: its halves joined
            segment = join_surrogates(segment)
        text = collapse_letter_spacing((fix_text_layer(segment, page_encoding) if page_fix else segment).strip())
        if text:
            height, top = _median_rounded(heights), max(tops)
            if lines and abs(lines[-1][1] - height) <= 0.6 and abs(lines[-1][2] - top) <= 0.3 * height:
                lines[-1] = (f"{lines[-1][0]} {text}", lines[-1][1], lines[-1][2])
            else:
                lines.append((text, height, top))
    return lines


def _metadata_text(doc: Any, key: str) -> str:
    """A metadata value of `doc` read as pypdfium2's `get_metadata_value` reads it, a UTF-16
    half without its partner left out: that method decodes strictly, and one such half in the
    Info dictionary's Title (a broken PDF writer's) raised out of the extractor, losing the
    whole PDF's text for a field it may well not use."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    name = (key + "\x00").encode("utf-8")
    n_bytes = pdfium_c.FPDF_GetMetaText(doc, name, None, 0)
    buffer = ctypes.create_string_buffer(n_bytes)
    pdfium_c.FPDF_GetMetaText(doc, name, buffer, n_bytes)
    return buffer.raw[:max(n_bytes - 2, 0)].decode("utf-16-le", "ignore")


def _sampled_glyphs(glyph_at: list[int], first: int, end: int, every: bool) -> Sequence[int]:
    """Positions of the glyphs a line's size is read from, the line being the page's glyphs
    [first, end) (`glyph_at[j]`: where glyph j is): all of them when `every` or the line is
    short (`_BOX_ALL`), else `_BOX_SAMPLE` spread over it, glyphs number
    int(k * n / _BOX_SAMPLE) of the line."""
    if every or end - first <= _BOX_ALL:
        return glyph_at[first:end]
    return _spread_sample(end - first)(glyph_at[first:end])


@functools.cache
def _spread_sample(n: int) -> Callable[[list[int]], tuple[int, ...]]:
    """Picks items int(k * n / _BOX_SAMPLE), k < `_BOX_SAMPLE`, of an n-item list (one
    `itemgetter` per length, so a line's sample is taken in C)."""
    step = n / _BOX_SAMPLE
    return operator.itemgetter(*(int(k * step) for k in range(_BOX_SAMPLE)))


@functools.cache
def _glyph_table() -> Any:
    """For each code point up to U+3001, whether it is a glyph (not `str.isspace`); U+3000 is
    the last space of Unicode, so every code point from U+3001 on is one (the last entry)."""
    return np.array([not chr(c).isspace() for c in range(0x3001)] + [True], dtype=bool)


def _glyph_layout(text: str, segments: list[str]) -> tuple[list[int], list[int], list[int]]:
    """Where the glyphs (non-space characters) of `text` are, `text` being `segments` joined by
    one line-break character each: (glyph_at, first, end), glyph j at `glyph_at[j]` and the
    glyphs of segment k numbered [first[k], end[k]). Done in numpy: a Python pass over a
    page's characters or words cost a fifth of the first page's time."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    glyph_at = _glyph_table().take(codes, mode="clip").nonzero()[0]  # clipped: U+3001 and above
    lengths = np.fromiter(map(len, segments), dtype=np.int64, count=len(segments))
    bounds = (lengths + 1).cumsum() - 1  # where each segment ends
    first_end = glyph_at.searchsorted(np.concatenate((bounds - lengths, bounds))).tolist()
    return glyph_at.tolist(), first_end[:len(segments)], first_end[len(segments):]


@functools.cache
def _loose_char_box() -> Callable[..., int]:
    """PDFium's `FPDFText_GetLooseCharBox(textpage, index, rect*)` without ctypes' argument
    conversion: pypdfium2's binding declares `argtypes`, so every call converts its three
    arguments through their types' `from_param` (~0.5 µs a call against ~0.26 µs without,
    at ~800 calls a first page). The caller passes exactly the C types the function takes:
    the text page's own pointer, an int, and a `byref` to an `FS_RECTF`."""
    import ctypes

    import pypdfium2.raw as pdfium_c

    address = ctypes.cast(pdfium_c.FPDFText_GetLooseCharBox, ctypes.c_void_p).value
    return ctypes.CFUNCTYPE(ctypes.c_int)(address)


_LINE_BREAK_RE = re.compile(r"[\r\n]")


def _median_rounded(values: list[float]) -> float:
    """The median of the values rounded to 0.1 (a glyph height), rounding only the one or two
    middle values: rounding is monotonic, so the sorted rounded list has them in the same
    places -- a million fewer `round` calls on a bench's first pages, the same result."""
    ordered = sorted(values)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return round(ordered[half], 1)
    return (round(ordered[half - 1], 1) + round(ordered[half], 1)) / 2


# Spacing accents that TeX (and some word processors) draw as a separate glyph over the
# letter: the text layer gives "Econom´ıa" or even "PREDICCION ´" (the accent last on the
# line), and the letter under the accent's box is the one it belongs to.
_SPACING_ACCENTS = {"´": "\u0301", "`": "\u0300", "˜": "\u0303", "¨": "\u0308", "ˆ": "\u0302", "ˇ": "\u030c",
                    "¸": "\u0327", "˘": "\u0306", "˚": "\u030a", "˙": "\u0307", "˝": "\u030b", "˛": "\u0328"}
_ACCENT_RE = re.compile("[" + re.escape("".join(_SPACING_ACCENTS)) + "]")


def _has_accent(text: str) -> bool:
    """`text` holds a spacing accent (a regex scan, as `_has_fix_accent`: `isdisjoint` would
    make a string object of every character of a non-Latin page)."""
    return _ACCENT_RE.search(text) is not None


def _compose_accents(chars: list[str], spans: list[tuple[float, float]]) -> str:
    """One line's characters with each spacing accent put on the letter whose box lies under
    it (by horizontal overlap) and composed (NFC), "ı" + acute becoming "í"."""
    if not any(ch in _SPACING_ACCENTS for ch in chars):
        return "".join(chars)
    import unicodedata

    out = list(chars)
    for k, ch in enumerate(chars):
        if ch not in _SPACING_ACCENTS or spans[k] == (0.0, 0.0):
            continue
        middle = (spans[k][0] + spans[k][1]) / 2
        under = [j for j, (a, b) in enumerate(spans)
                 if j != k and chars[j].isalpha() and a - 0.5 <= middle <= b + 0.5]
        if not under:
            continue
        j = min(under, key=lambda j: abs((spans[j][0] + spans[j][1]) / 2 - middle))
        base = "i" if out[j] == "ı" else "j" if out[j] == "ȷ" else out[j]
        out[j] = unicodedata.normalize("NFC", base + _SPACING_ACCENTS[ch])
        out[k] = ""
    return re.sub(r" {2,}", " ", "".join(out))


_ALEF_PAIR_RE = re.compile("([\u0622\u0623\u0625\u0627])([\u0622\u0623\u0625\u0627])\u0644")
_ARABIC_LETTER_RE = re.compile("[\u0600-\u06ff]")
_LATIN_LETTER_RE = re.compile("[A-Za-z]")
_MIRRORED_LATIN_RE = re.compile(r"\(([A-Za-z0-9][^()\n]{0,80}?)\s?\(")
_FIX_ACCENT_CHARS = "´˜¨ˆˇ˘˚˙˝"  # the spacing accents `fix_text_layer` composes with the letter after
_FIX_ACCENT_RE = re.compile(f"[{_FIX_ACCENT_CHARS}]")
_ACCENT_BEFORE_RE = re.compile(f"([{_FIX_ACCENT_CHARS}])([A-Za-zıȷ])")
# the accents that hang below a letter come after it in the text layer ("a˛" for "ą", "c¸" for "ç")
_BELOW_ACCENTS = "˛¸"
_ACCENT_AFTER_RE = re.compile(f"([A-Za-z])([{_BELOW_ACCENTS}])")


def _compose_after(match: re.Match[str]) -> str:
    import unicodedata

    composed = unicodedata.normalize("NFC", match.group(1) + _SPACING_ACCENTS[match.group(2)])
    return composed if len(composed) == 1 else match.group()


def _compose_before(match: re.Match[str]) -> str:
    import unicodedata

    base = {"ı": "i", "ȷ": "j"}.get(match.group(2), match.group(2))
    return unicodedata.normalize("NFC", base + _SPACING_ACCENTS[match.group(1)])


# The three conditions under which `fix_text_layer` repairs anything; `_may_need_layer_fix`
# asks them of a whole page once, so its lines can skip the repair.
def _has_alef(text: str) -> bool:
    return "\u0627" in text or "\u0622" in text or "\u0623" in text or "\u0625" in text


def _may_be_mirrored(text: str) -> bool:
    return ("(" in text or ")" in text) and _ARABIC_LETTER_RE.search(text) is not None


_ANY_FIX_ACCENT_RE = re.compile(f"[{_FIX_ACCENT_CHARS}{_BELOW_ACCENTS}]")


def _has_fix_accent(text: str) -> bool:
    # a regex scan, not `isdisjoint`, which makes a string object of every character
    return _ANY_FIX_ACCENT_RE.search(text) is not None


# Every character the repairs of `fix_text_layer` look for, in one class: an Arabic letter (an
# alef, a letter beside a bracket), a spacing accent, a legacy sign, an Arabic presentation
# form. A text holding none (a page of most languages) is left as it is after one scan.
_LAYER_FIX_CHAR_RE = re.compile(f"[\u0600-\u06ff{_FIX_ACCENT_CHARS}{_BELOW_ACCENTS}{LEGACY_SIGNS}\ufb50-\ufdff\ufe70-\ufeff]")


def _may_need_layer_fix(text: str) -> bool:
    """False when `fix_text_layer` leaves `text` and every part of it unchanged: each repair
    needs a character this looks for (an alef, a bracket with an Arabic letter, a spacing
    accent, a sign inside a word, an Arabic presentation form)."""
    return _LAYER_FIX_CHAR_RE.search(text) is not None and (_has_alef(text) or _may_be_mirrored(text) or _has_fix_accent(text) or legacy_signs(text) > 0
            or has_presentation_forms(text))


_DECIDE = "decide"


def fix_text_layer(text: str, encoding: str | None = _DECIDE) -> str:
    """Repairs of broken text layers:

    * lines in a legacy 8-bit font encoding (TCVN3 Vietnamese, LaTeX T1) read as the letters
      they draw (`legacy_fonts`); `encoding` is the one chosen for the page when `text` is
      one of its lines, else it is chosen from `text` itself;
    * Arabic-script lines in presentation forms read as letters in reading order
      (`presentation_forms`);
    * the Arabic lam-alef ligature that Word exports as alef before lam ("االلكتروني" for
      "الالكتروني", "آالینده" for "آلاینده"): two alefs in a row never occur in Arabic or
      Persian spelling;
    * brackets in right-to-left lines, which the text layer gives as drawn (mirrored):
      ")گلیوما(" is "(گلیوما)", and a Latin run inside comes out as ")ATCS )";
    * a TeX spacing accent before its letter ("te´orica", "Econom´ıa") composed with it, and
      an ogonek or cedilla after its letter ("a˛", "c¸": they hang below it).
    """
    if encoding in (_DECIDE, None) and _LAYER_FIX_CHAR_RE.search(text) is None:
        return text  # nothing any repair reads (the repairs' own checks below are five scans)
    text = read_presentation_forms(text)  # returns at once without presentation forms
    if encoding == _DECIDE:
        encoding = choose_encoding(text)
    if encoding is not None:
        text = decode_text(text, encoding)
    if _has_alef(text):
        text = _ALEF_PAIR_RE.sub("\\1\u0644\\2", text)
    if _may_be_mirrored(text):
        lines = text.split("\n")
        for k, line in enumerate(lines):
            if ("(" in line or ")" in line) and len(_ARABIC_LETTER_RE.findall(line)) > len(_LATIN_LETTER_RE.findall(line)):
                line = line.translate(_MIRROR)
                lines[k] = _MIRRORED_LATIN_RE.sub(r"(\1)", line)
        text = "\n".join(lines)
    if _has_fix_accent(text):
        text = _ACCENT_BEFORE_RE.sub(_compose_before, text)
        text = _ACCENT_AFTER_RE.sub(_compose_after, text)
    return text


_MIRROR = str.maketrans("()", ")(")


# A cover-page label that introduces the title of a thesis or report ("на тему:", "Temat:",
# "Thema:", "عنوان:"): the lines after it are the title, whatever their size.
_TOPIC_LABEL_RE = re.compile(
    r"^\s*(?:на тему|тема|on the (?:topic|subject)|topic|temat(?: pracy)?|thema|tema|titolo|titre|t[íi]tulo|"
    r"title|başlık|konu|عنوان|موضوع|題目|题目|论文题目|論文題目|제목|판 ?제)\s*[:：]?\s*$",
    re.IGNORECASE,
)
# Lines that are never a title: a city and year ("Київ – 2022", "Poznań 2016"), a lone year.
_PLACE_YEAR_RE = re.compile(r"^\s*(?:[^\W\d]+[\s,.–—-]*){0,3}(?:19|20)\d{2}(?:\s*[/–-]\s*(?:19|20)?\d{2,4})?\s*\.?$")
# Every match of _PLACE_YEAR_RE holds a year; searching for one first is cheap, the full
# pattern backtracks through the ways of cutting a line's first words.
_YEAR_RE = re.compile(r"(?:19|20)\d{2}")
MAX_TITLE_LINES = 4


# `_NOT_TITLE_LINE_RE` is a long case-insensitive alternation tried at every position of a
# line (~65 µs a line); most lines of a first page contain none of its words. Every match
# contains one of these lower-case pieces: where a piece is a whole alternative of the
# pattern its presence is a match (`_NOT_TITLE_SURE`); the others (word boundaries, anchors,
# classes around them) leave the answer to the regex (`_NOT_TITLE_MAYBE`).
_NOT_TITLE_SURE = (
    "journal", "vol.", "volume", "doi", "http:", "https:", "www.", "©", "copyright", "open access",
    "research article", "original article", "review article", "artigo original", "proceedings", "published",
    "received", "accepted", "universi", "department", "@", "masterarbeit", "bachelorarbeit", "diplomarbeit",
    "dissertation", "skripsi", "faculdade", "grado en", "kwalifikac", "кваліфікаційна", "дипломна",
    "выпускная", "курсовая", "毕业论文", "學位論文", "学位论文", "卒業論文", "إعداد", "إشراف", "جامعة", "دانشگاه",
    "університет", "университет", "uniwersytet", "üniversite", "trabajo de fin", "fin de grado",
    "trabalho de conclus", "arxiv:", "digital repository", "dettaglio tesi", "summary sheet",
)
_NOT_TITLE_MAYBE = (
    "issn", "thesis", "tesi", "tese", "thèse", "these", "praca ", "facult", "fakult", "робота", "работа", "졸업",
    "پایان", "p.", "anno ", "editorial", "template",
)


def _case_variants(pattern: str) -> frozenset[str]:
    """Characters that a case-insensitive regex matches to a letter of `pattern` although
    their `lower()` is another letter ("ı" for "i", "ſ" for "s"): a line holding one is
    checked by the regex itself."""
    try:
        from re._casefix import _EXTRA_CASES  # CPython's table of such letters
    except ImportError:  # another Python: every line goes to the regex
        return frozenset(pattern.lower())
    return frozenset(chr(x) for ch in set(pattern.lower()) for x in _EXTRA_CASES.get(ord(ch), ()))


_NOT_TITLE_VARIANTS = _case_variants(_NOT_TITLE_LINE_RE.pattern)


def _any_piece_re(pieces: tuple[str, ...]) -> re.Pattern[str]:
    """A regex that finds any of `pieces` in a string (case-sensitive): the pieces as a trie
    ("vol." and "volume" share "vol"), so each position of the line costs a few one-letter
    tests instead of a test per piece. A piece that another one starts with ends its branch:
    where the longer one occurs, the shorter does too."""

    def trie(words: list[str]) -> str:
        by_first: dict[str, list[str]] = {}
        for word in words:
            by_first.setdefault(word[0], []).append(word[1:])
        branches = []
        for first, rests in sorted(by_first.items()):
            if "" in rests:
                branches.append(re.escape(first))
            elif len(rests) == 1:
                branches.append(re.escape(first + rests[0]))
            else:
                branches.append(f"{re.escape(first)}(?:{trie(rests)})")
        return "|".join(branches)

    if "" in pieces:  # the empty piece is in every line
        return re.compile("")
    return re.compile(trie(sorted(set(pieces))) if pieces else "(?!)")


_NOT_TITLE_SURE_RE = _any_piece_re(_NOT_TITLE_SURE)
_NOT_CONTINUATION_PIECES = ("doi", "http:", "https:", "www.", "©", "@")  # `_NOT_CONTINUATION_RE`'s alternatives
_NOT_CONTINUATION_VARIANTS = _case_variants(_NOT_CONTINUATION_RE.pattern)
_NOT_TITLE_MAYBE_RE = _any_piece_re(_NOT_TITLE_MAYBE)


def _not_title_line(text: str) -> bool:
    """`_NOT_TITLE_LINE_RE.search(text) is not None`, mostly without running the regex. The
    pieces are looked up in `text.lower()`, which matches the regex's case-insensitive
    comparison letter by letter unless lowering changed the length ("İ") or the line holds a
    letter the regex equates with another ("ı" with "i"): then the regex decides."""
    low = text.lower()
    if len(low) == len(text) and _NOT_TITLE_VARIANTS.isdisjoint(low):
        if _NOT_TITLE_SURE_RE.search(low):
            return True
        if not _NOT_TITLE_MAYBE_RE.search(low):
            return False
    return _NOT_TITLE_LINE_RE.search(text) is not None


def _not_continuation(text: str) -> bool:
    """`_NOT_CONTINUATION_RE.search(text) is not None`, by substring tests on the lower-cased
    line when lowering matches the regex's case-insensitive comparison (as `_not_title_line`):
    six scans in C instead of the regex's case-folded alternation at every position."""
    low = text.lower()
    if len(low) == len(text) and _NOT_CONTINUATION_VARIANTS.isdisjoint(low):
        return any(piece in low for piece in _NOT_CONTINUATION_PIECES)
    return _NOT_CONTINUATION_RE.search(text) is not None


# An author list: two or more names closed by affiliation markers and separated by commas
# ("Lee* , Ryu* , Kim", "Silva¹, Souza², Lima"; one such pair may be "A*, IDA*" or "H¹, L²"), or
# a line opened by a footnote marker (an affiliation; a superscript digit may open "¹H NMR").
_AUTHOR_LIST_RE = re.compile(r"[^\W\d_]{2,}[*†‡§¶⁎¹²³⁴⁵⁶⁷⁸⁹]+\s*,\s*[^\W\d_]")
_MARKER_LINE_RE = re.compile(r"^\s*(?:\*{1,3}|[†‡§¶])\s*[^\W\d_]")  # not "¹H NMR", "¹³C-labelled"
# Every match of `_AUTHOR_LIST_RE` holds a marker then a comma: a line without one (most lines)
# is passed over without the regex, which backtracks through every word of the line.
_MARKER_COMMA_RE = re.compile(r"[*†‡§¶⁎¹²³⁴⁵⁶⁷⁸⁹]\s*,")


def _is_author_list(text: str) -> bool:
    """Whether a line is an author list: two or more names closed by affiliation markers
    (`_AUTHOR_LIST_RE`), the regex asked only of a line holding a marker then a comma."""
    return _MARKER_COMMA_RE.search(text) is not None and len(_AUTHOR_LIST_RE.findall(text)) >= 2


def _title_line_ok(text: str) -> bool:
    """A line that may be part of a title: some letters, no journal / cover chrome, not a
    section label (Keywords, Abstract), not a place-and-year line, not an author list or an
    affiliation opened by its marker."""
    return (
        has_letters(text, 4)
        and not _STOP_RE.match(text)
        and not _MARKER_LINE_RE.match(text)
        and not _is_author_list(text)
        and not (_YEAR_RE.search(text) and _PLACE_YEAR_RE.match(text))
        and not _NUMBERED_HEADING_RE.match(text)
        and _heading_at(text) is None
        and not _not_title_line(text)
    )


def _title_blocks(lines: list[tuple[str, float, float]]) -> list[tuple[list[str], float]]:
    """Runs of title-like lines in one font size and a regular line spacing, as (lines,
    size): the first gap may be up to 2.2 line heights (theses set titles double-spaced), and
    a later gap much wider than the first starts a new block (a translated title set in the
    same size below the original)."""
    blocks: list[tuple[list[str], float]] = []
    k = 0
    while k < len(lines):
        text, size, top = lines[k]
        if not _title_line_ok(text):
            k += 1
            continue
        block, first_gap, prev_top = [text], None, top
        k += 1
        while k < len(lines) and len(block) < 2 * MAX_TITLE_LINES:
            t, h, y = lines[k]
            gap = prev_top - y
            if abs(h - size) > 0.6 or gap <= 0 or gap > 2.2 * size or _not_continuation(t):
                break
            if first_gap is not None and gap > 1.35 * first_gap + 1:
                break
            # a lower-case or letterless line continues; any other must itself read as a title line
            if not (t[:1].islower() or not has_letters(t, 4)) and not _title_line_ok(t):
                break
            first_gap = gap if first_gap is None else first_gap
            block.append(t)
            prev_top = y
            k += 1
        blocks.append((_cut_at_pipe(block), size))
    return blocks


_WIDE_CHAR_RE = re.compile("[\u3040-\u9fff\uac00-\ud7af]")  # kana, CJK, Hangul: a word each two


def _cut_at_pipe(block: list[str]) -> list[str]:
    """A block holding a parallel title glued with " | " ("... CONSTITUCIONAIS | JUDICIAL
    MEDIATION ...") cut before the pipe, when at least 15 characters precede it."""
    seen = 0
    for k, line in enumerate(block):
        cut = line.find(" | ")
        if cut >= 0 and seen + cut >= 15:
            return block[:k] + ([line[:cut]] if line[:cut].strip() else [])
        seen += len(line)
    return block


def _split_by_language(block: list[str]) -> list[list[str]]:
    """A block whose lines change language part-way (a title and its translation set alike)
    as its parts: the first split point where both sides are reliably in different languages;
    in a sentence-case title a line starting with a capital after lower-case continuations also
    starts a new part."""
    from openmsd_build.core.language import UND, detect_language

    if len(block) < 2:
        return [block]
    for cut in range(1, len(block)):
        if block[cut][:1].isupper() and any(line[:1].islower() for line in block[1:cut]):
            return [block[:cut], *_split_by_language(block[cut:])]
    for cut in range(1, len(block)):
        # a line starting lower-case continues the title; a lone word is too little to tell
        if block[cut][:1].islower() or min(len(" ".join(block[:cut]).split()), len(" ".join(block[cut:]).split())) < 2:
            continue
        # each detection asked only when the ones before it leave the answer open (CLD3 is
        # most of a title's cost)
        head, head_prob, head_ok = detect_language(" ".join(block[:cut]))
        if head == UND or head_prob < 0.7:
            continue
        tail, tail_prob, tail_ok = detect_language(" ".join(block[cut:]))
        if tail != UND and head != tail and tail_prob >= 0.7 and (head_ok or tail_ok):
            whole = detect_language(" ".join(block))
            if whole[0] in (head, tail) or not whole[2]:
                return [block[:cut], *_split_by_language(block[cut:])]
    return [block]


MAX_TITLE_WORDS = 35
"""Titles run to about 30 words (a long Portuguese title with its subtitle); a block longer
than this is a paragraph set in the title's size."""


def _reads_as_prose(lines: list[str]) -> bool:
    """Whether a title candidate is running text (a paragraph set in the title's size): longer
    than any title. (A full stop at its end says nothing: some journals end titles with one.)"""
    return _words(lines) > MAX_TITLE_WORDS


def _title_text(lines: list[str]) -> str:
    """Joined title lines (at most `MAX_TITLE_LINES`), cleaned."""
    return clean_title(" ".join(lines[:MAX_TITLE_LINES]))


def _block_runs(lines: list[tuple[str, float, float]]) -> list[tuple[int, int, float]]:
    """(start, end, largest size) of the runs of `lines` that no title block crosses. A block
    (`_title_blocks`) goes on only to the next line, only within 0.6 of its first line's size
    and only down the page: it never joins two neighbours whose sizes differ by more than
    1.2 (1.25 here, clear of float rounding) or whose second is not below the first. At such a
    line the scan starts afresh whatever came before, so the blocks of `lines` are the blocks
    of its runs, one run after the other."""
    runs = []
    start, largest = 0, 0.0
    for k, (_text, size, top) in enumerate(lines):
        if k > start and (abs(size - lines[k - 1][1]) > 1.25 or lines[k - 1][2] - top <= 0):
            runs.append((start, k, largest))
            start = k
        largest = size if k == start else max(largest, size)
    if lines:
        runs.append((start, len(lines), largest))
    return runs


class _TitleBlocksBySize:
    """The title blocks of a page (`_title_blocks`), found a run (`_block_runs`) at a time,
    the runs with the largest lines first: the title is chosen among the largest blocks, so the
    body's paragraphs, set smaller, are seldom read line by line (`_title_line_ok` on every
    line was most of the title's cost). A block is never larger than its run's largest line,
    which bounds the blocks not found yet (`bound`)."""

    def __init__(self, lines: list[tuple[str, float, float]]) -> None:
        self._lines = lines
        self._todo = sorted(_block_runs(lines), key=lambda run: -run[2])  # stable: ties in page order
        self._done = 0
        self._found: list[tuple[int, int, list[str], int, float]] = []  # (run start, rank, block, words, size)

    def bound(self) -> float:
        """The largest size a block not found yet may have (-inf when all are found)."""
        return self._todo[self._done][2] if self._done < len(self._todo) else -math.inf

    def _find_next(self) -> bool:
        """Find the blocks of the next run; False when none is left."""
        if self._done == len(self._todo):
            return False
        start, end, _largest = self._todo[self._done]
        self._done += 1
        self._found += [(start, rank, block, _words(block), size)
                        for rank, (block, size) in enumerate(_title_blocks(self._lines[start:end]))]
        return True

    def find_down_to(self, size: float) -> None:
        """Find every block of at least `size`."""
        while self.bound() >= size:
            self._find_next()

    def largest(self, keep: Callable[[int, float], bool]) -> float | None:
        """The largest size among the blocks that `keep(words, size)` keeps, None when it
        keeps none."""
        while True:
            sizes = [size for *_k, words, size in self._found if keep(words, size)]
            if sizes and max(sizes) >= self.bound():
                return max(sizes)
            if not self._find_next():
                return max(sizes) if sizes else None

    def in_order(self) -> list[tuple[list[str], int, float]]:
        """The blocks found, in page order, as (lines, words, size)."""
        return [(block, words, size) for _s, _r, block, words, size in sorted(self._found, key=lambda f: f[:2])]


def _title_from_font(lines: list[tuple[str, float, float]],
                     body_language: str | None | Callable[[], str | None] = None) -> str:
    """The title on page one: the lines after a cover-page topic label ("на тему:") if there is
    one; else the title blocks (`_title_blocks`, split where the language changes) in the
    largest font (within 0.6 pt, preferring blocks of three words or more, since a one- or
    two-word giant line is a logo), the first in the body's language when there is one."""
    for k, (text, _size, _top) in enumerate(lines[:-1]):
        if _TOPIC_LABEL_RE.match(text):
            after = _title_blocks(lines[k + 1:k + 1 + 2 * MAX_TITLE_LINES])
            if after and after[0][0] and lines[k + 1][0] == after[0][0][0]:
                return _title_text(_split_by_language(after[0][0])[0])
    # a one- or two-word block is a logo or a label; a block (after splitting by language)
    # longer than a title is a paragraph set in a large size: the next size is tried
    blocks = _TitleBlocksBySize(lines)
    keep_all = blocks.largest(lambda words, _s: words >= 3) is None  # no wordy block: every block
    ceiling = math.inf  # the sizes tried and failed are this large or larger
    for _attempt in range(3):
        size = blocks.largest(lambda words, s, below=ceiling: (keep_all or words >= 3) and s < below)
        if size is None:
            return ""
        blocks.find_down_to(size - 0.6)
        top = [b for b, words, s in blocks.in_order() if (keep_all or words >= 3) and size - 0.6 <= s < ceiling]
        parts = [part for b in top for part in _split_by_language(b)
                 if len(part) <= MAX_TITLE_LINES and not _reads_as_prose(part)]
        if parts:
            break
        ceiling = size - 0.6
    else:
        return ""
    if len(parts) > 1 and callable(body_language):  # asked only when there is a choice
        body_language = body_language()
    chosen = parts[0]
    if body_language and len(parts) > 1:
        from openmsd_build.core.language import detect_language

        chosen = next((part for part in parts if detect_language(" ".join(part))[0] == body_language), chosen)
    return "" if _below_author_list(lines, chosen) else _title_text(chosen)


def _below_author_list(lines: list[tuple[str, float, float]], block: list[str]) -> bool:
    """Whether `block` starts below page one's author list (`_is_author_list`) in a size no
    larger than the list's. A title is
    printed above its authors; a line of their size below them is an affiliation, an address
    or the abstract, which is what the largest-font rule falls back on when the title is not in
    the text layer (drawn as an image or as paths) or every line has one size."""
    authors = next((k for k, (text, _s, _t) in enumerate(lines) if _is_author_list(text)), None)
    if authors is None:
        return False
    start = next((k for k, (text, _s, _t) in enumerate(lines) if text.startswith(block[0])), None)
    return start is not None and start > authors and lines[start][1] <= lines[authors][1] + 0.6


def _body_language(pages: list[list[str]]) -> str | None:
    """The language of the body (a slice from the middle of the text, past the front matter
    and before the references), or None when CLD3 is not reliable: used to pick, among
    titles printed in two languages, the one the paper is written in."""
    from openmsd_build.core.language import UND, detect_language

    middle = pages[len(pages) // 3: len(pages) // 3 + 2] if len(pages) > 2 else pages
    sample = " ".join(ln for lines in middle for ln in lines)[:2000]
    language, _prob, reliable = detect_language(None, sample)
    return language if language != UND and reliable else None


_squash = word_chars  # a text's letters and digits, lower-cased: how two printings are compared


COVER_MAX_WORDS = 25
"""A first page with at most this many words is a cover (journal, series, publisher), not the
article's title page."""


def _words(lines: list[str]) -> int:
    text = " ".join(lines)
    return len(text.split()) + len(_WIDE_CHAR_RE.findall(text)) // 2


def _at_most_words(lines: list[str], limit: int) -> bool:
    """`_words(lines) <= limit`, the wide characters counted only when the spaced words alone
    are few enough (a page of body text is decided by its first lines)."""
    words = 0
    for line in lines:  # the lines' words add up to the joined text's; a long page stops early
        words += len(line.split())
        if words > limit:
            return False
    return words + len(_WIDE_CHAR_RE.findall(" ".join(lines))) // 2 <= limit


def _title_above_abstract(doc: Any, pages: list[list[str]], abstract: str) -> str:
    """The title printed above the abstract on the page that holds it (after a cover page):
    that page's lines with their sizes, cut where the abstract's first words start (its
    heading is within the two lines before), through `_title_from_font`; "" when the
    abstract is not on a front page after the first or nothing above it reads as a title.
    `doc`: the PDF, still open (its page is loaded again, the file is not)."""
    head = _squash(abstract)[:60]
    if not head:
        return ""
    page_index = next((k for k in range(1, min(len(pages), ABSTRACT_FRONT_PAGES))
                       if head in _squash(" ".join(pages[k]))), None)
    if page_index is None:
        return ""
    page = doc[page_index]
    textpage = page.get_textpage()
    try:
        sized = _first_page_lines_with_size(textpage)
    finally:
        textpage.close()
        page.close()
    start = _squash(abstract)[:20]
    cut = next((k for k, (text, _s, _t) in enumerate(sized) if start and start in _squash(text)
                or _heading_at(text) is not None), None)
    if not cut:
        return ""
    return _title_from_font(sized[:cut])


class _FirstPage:
    """Page one for the title rules, which run last and only when a paper needs the title:
    its textpage is kept open until then, so the page is loaded once. A page of more than
    `KEEP_CHARS` characters (a text bomb: PDFium's text page costs memory per character)
    is not held while the rest of the PDF is read: its size lines are read at once, as they
    would be later, and the page is closed."""

    KEEP_CHARS = SIZE_LINES_MAX_CHARS  # past it the page holds more than its size lines read

    def __init__(self, page: Any, textpage: Any, chars: int, text: str | None) -> None:
        self.page, self.textpage, self.text = page, textpage, text
        self.lines: list[tuple[str, float, float]] | None = None
        if chars > self.KEEP_CHARS:
            self.lines = _first_page_lines_with_size(textpage, text)
            self.page = self.textpage = None  # closed by the caller, as any other page

    def holds(self, page: Any) -> bool:
        """Whether `page` is kept open here (the caller must not close it)."""
        return self.page is page

    def size_lines(self) -> list[tuple[str, float, float]]:
        """`_first_page_lines_with_size` of the page."""
        if self.lines is None:
            self.lines = _first_page_lines_with_size(self.textpage, self.text)
        return self.lines

    def close(self) -> None:
        if self.textpage is not None:
            self.textpage.close()
            self.page.close()
        self.page = self.textpage = None


def extract_pdf(data: bytes, max_pages: int = MAX_PAGES, titles: list[list[str] | None] | None = None
                ) -> dict[str, Any]:
    """Fields of one PDF: `{"title", "abstract", "content", "pdf_url": None,
    "language_hints": [], "rules", "n_pages"}` (missing fields None). Raises `PdfParseError`
    when PDFium cannot open the bytes (encrypted, not a PDF).

    `titles`: the `title_keys` of every paper the PDF is fetched for
    (`documents.printed_title_evidence`, one entry a paper). The content and abstracts are
    found first; the printed title (the first page's font sizes, the costliest rule after
    PDFium itself, the title rules and the cover-page rule) only when some paper needs it
    (`documents.printed_title_needed`); otherwise `title` is None and `rules["title"]`
    `TITLE_NOT_NEEDED`, and everything else is what a full
    extraction gives (the title is found last and reads nothing the rest writes). Without
    `titles` (the default: fidelity, `inspect`, tests) every PDF's title is looked for."""
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise PdfParseError(str(exc)) from exc
    rules: dict[str, Any] = {"title": None, "abstract": None, "content": None, "pdf_url": None, "language_hints": []}
    first: _FirstPage | None = None  # page one, for the title rules (open until then)
    try:
        n_pages = len(doc)
        pages: list[list[str]] = []
        budget = MAX_CONTENT_CHARS  # characters read over all pages (see `caps`)
        breaks = False  # whether any page has a line-break hyphen (`resolve_breaks`)
        for index in range(min(n_pages, max_pages)):
            if budget <= 0:
                rules["pages_capped"] = index
                break
            page = doc[index]
            textpage = page.get_textpage()
            try:
                chars = textpage.count_chars()
                count = min(chars, budget)
                budget -= count
                page_text = textpage.get_text_range(0, count) if count > 0 else ""
                breaks = breaks or "\ufffe" in page_text
                pages.append(_page_lines(page_text))
                if index == 0:  # the page's text read once: when whole, one character a code point
                    first = _FirstPage(page, textpage, chars, page_text if len(page_text) == chars else None)
            finally:
                if first is None or not first.holds(page):
                    textpage.close()
                    page.close()

        pages = _remove_headers_footers(pages)
        # the compounds the document writes with a hyphen decide each broken word
        # (`resolve_breaks`); a word's decision depends on that word alone, so the first
        # page's size lines are resolved with their own compounds when the title needs them
        # and the pages are the same whether it does or not
        hyphen_evidence = "\n".join(ln for lines in pages for ln in lines) if breaks else ""
        if breaks:
            compounds = break_compounds([ln for lines in pages for ln in lines], hyphen_evidence)
            pages = [resolve_breaks(lines, compounds) for lines in pages]

        found = _all_abstracts(pages)
        abstracts = [{"text": f.text, "rule": "abstract_heading", "heading": f.heading,
                      **({"capped": True} if f.capped else {})} for f in found]
        abstract = found[0].text if found else ""
        if abstract:
            rules["abstract"] = "abstract_heading"
            rules["abstract_heading"] = found[0].heading
        content = _content(pages, rules)

        # whether a paper needs the title is told by the content's start (its cap cuts far later)
        title = ""
        if titles is not None and not _title_needed(titles, content):
            rules["title"] = TITLE_NOT_NEEDED
        else:
            title = _printed_title(doc, first, pages, found, breaks, hyphen_evidence, rules)
    finally:
        if first is not None:
            first.close()
        doc.close()

    return cap_extraction({
        "title": title or None,
        "abstract": abstract or None,
        "abstracts": abstracts,
        "content": content or None,
        "pdf_url": None,
        "language_hints": [],
        "rules": rules,
        "n_pages": n_pages,
    })


def _all_abstracts(pages: list[list[str]]) -> list[FoundAbstract]:
    """Every abstract of the PDF, in order: headed ones in the front matter (a thesis puts
    them after its cover and contents), then in the pages just before the reference list (a
    thesis prints its abstracts after the conclusion) and the last pages (some journals print
    the English abstract at the end), then the unlabelled paragraph above a keywords line."""
    front = [ln for lines in pages[:ABSTRACT_FRONT_PAGES] for ln in lines]
    found = _find_abstracts(front)
    ref_page = _references_page(pages)
    tail_pages = set(range(max(ABSTRACT_FRONT_PAGES, len(pages) - ABSTRACT_TAIL_PAGES), len(pages)))
    if ref_page is not None:
        tail_pages |= set(range(max(ABSTRACT_FRONT_PAGES, ref_page - ABSTRACT_BEFORE_REFERENCES_PAGES), ref_page + 1))
    tail = [ln for index in sorted(tail_pages) for ln in pages[index]]
    if tail:
        found += _find_abstracts(tail, limit=3)
    unlabelled = _abstract_before_keywords([ln for lines in pages[:KEYWORDS_ABSTRACT_PAGES] for ln in lines])
    if unlabelled:
        head = _squash(unlabelled)[:200]
        if not any(head in _squash(f.text) for f in found):
            found.append(FoundAbstract(unlabelled, ""))
    return found


def _content(pages: list[list[str]], rules: dict[str, Any]) -> str:
    """The PDF's text: every page, the reference list cut and LaTeX source lines dropped; ""
    when shorter than `MIN_CONTENT_CHARS` (`rules` records the cut and the rule)."""
    body, cut = _cut_references([ln for lines in pages for ln in lines])
    body = [ln for ln in body if not is_tex_source_line(ln)]
    rules["references_cut"] = cut
    content = normalize_text(_join_lines(body))
    if len(content) >= MIN_CONTENT_CHARS:
        rules["content"] = "pdfium"
        return content
    return ""


def _title_needed(titles: list[list[str] | None], content: str) -> bool:
    """`documents.printed_title_needed` for any of the PDF's papers."""
    return any(printed_title_needed(keys, content) for keys in titles)


def _printed_title(doc: Any, first: _FirstPage | None, pages: list[list[str]],
                   found: list[FoundAbstract], breaks: bool, hyphen_evidence: str, rules: dict[str, Any]) -> str:
    """The PDF's title (`rules["title"]` set): its metadata `Title` when it looks like a
    title printed on page one, unless the printed title in the body's language differs; else
    the first page's largest-font title (`_title_from_font`); else a plausible metadata
    title; on a cover page, the title printed above the abstract (`_title_above_abstract`).
    `first`: page one (None when the PDF has no page)."""
    import pypdfium2 as pdfium

    metadata_title = ""
    try:
        metadata_title = clean_title(doc.get_metadata_value("Title"))
    except (KeyError, pdfium.PdfiumError):
        pass
    except UnicodeDecodeError:  # a UTF-16 half without its partner: the rest is still the title
        metadata_title = clean_title(_metadata_text(doc, "Title"))
    size_lines = first.size_lines() if first is not None else []
    if breaks:
        texts = [t for t, _s, _y in size_lines]
        size_lines = list(zip(resolve_breaks(texts, hyphen_evidence), [s for _t, s, _y in size_lines],
                              [y for _t, _s, y in size_lines], strict=True))

    # the body's language (CLD3 on a slice of the body) is found only when a rule below
    # needs it: most PDFs have one title block and no metadata title to weigh
    @functools.cache
    def body_language() -> str | None:
        return _body_language(pages)

    title = ""
    good_metadata = (
        len(metadata_title) >= 10 and len(metadata_title.split()) >= 2 and not _BAD_METADATA_TITLE_RE.search(metadata_title)
    )
    font_title = _title_from_font(size_lines, body_language)
    if good_metadata and _squash(metadata_title) in (_squash(" ".join(pages[0])) if pages else ""):
        title, rules["title"] = metadata_title, "pdf_metadata"
        # a metadata title in another language than the body (the English title of a
        # German paper printed under the original) gives way to the printed title in the
        # body's language
        if font_title and _squash(font_title) not in _squash(metadata_title) and body_language():
            from openmsd_build.core.language import detect_language

            meta_language = detect_language(metadata_title)[0]
            font_language = detect_language(font_title)[0]
            if meta_language != body_language() and font_language == body_language():
                title, rules["title"] = font_title, "largest_font"
    if not title:
        title = font_title
        rules["title"] = "largest_font" if title else None
    if not title and good_metadata:
        title, rules["title"] = metadata_title, "pdf_metadata"

    # a cover page (a journal issue's cover, a publisher's cover sheet: a few words on page one)
    # names the journal, not the article: the title is the one printed above the abstract,
    # on the page where the abstract is (the abstract is near the title, under it)
    if found and pages and _at_most_words(pages[0], COVER_MAX_WORDS):
        above = _title_above_abstract(doc, pages, found[0].text)
        if above and _squash(above) != _squash(title):
            title, rules["title"] = above, "title_above_abstract"
    return title
