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
* title: PDF metadata `Title` when it looks like a title (not a file name, not "untitled")
  and appears on the first page; otherwise the first-page lines set in the largest font
  (journal banners and "Research Article" labels skipped); otherwise a plausible metadata title.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from typing import Any

from openmsd_build.core.textclean import clean_abstract, clean_title, normalize_text

MAX_PAGES = 300
"""Pages read per PDF: enough for any paper or thesis body, bounded for a 5,000-page scan."""
MAX_ABSTRACT_WORDS = 600
ABSTRACT_FRONT_PAGES = 12
"""Pages searched for abstract headings from the start: a thesis has a cover, a declaration,
acknowledgements and contents before its abstracts."""
ABSTRACT_TAIL_PAGES = 2
MIN_ABSTRACT_CHARS = 100
MIN_CONTENT_CHARS = 300
REPEAT_MIN_PAGES = 3
_EDGE_LINES = 4
_REFS_MIN_POSITION = 0.3

_ABSTRACT_WORDS = (
    r"abstract|summary|resumo|resumen|r[ée]sum[ée]|zusammenfassung|kurzfassung|riassunto|sommario|"
    r"samenvatting|streszczenie|abstrakt|аннотация|анотація|резюме|реферат|摘\s?要|要\s?旨|要\s?約|抄\s?録|초\s?록|요\s?약|"
    r"özet|öz|ملخص|الملخص|چکیده|abstrak|intisari|sammanfattning|sammendrag|tiivistelmä|souhrn|absztrakt|"
    r"περίληψη|tóm tắt|บทคัดย่อ|सारांश|extended summary"
)
# "Abstract" alone on its line (":" / "." allowed), or glued to the first sentence.
_ABSTRACT_ALONE_RE = re.compile(rf"^\s*(?:{_ABSTRACT_WORDS})\s*[:.：]?\s*$", re.IGNORECASE)
_ABSTRACT_GLUED_RE = re.compile(
    rf"^\s*(?:{_ABSTRACT_WORDS})\s*(?:[:.：—–-]\s*|\s+(?=[A-ZÀ-ÝА-ЯЁІЇЄ]))(?=\S)", re.IGNORECASE
)
_ABSTRACT_UPPER_GLUED_RE = re.compile(r"^\s*(?:ABSTRACT|RESUMO|RESUMEN|RÉSUMÉ|SUMMARY|ZUSAMMENFASSUNG|RIASSUNTO)\s+(?=\S)")
# A letter-spaced line ("A B S T R A C T", "R E S U M O"): every token one or two letters.
_LETTER_SPACED_RE = re.compile(r"^(?:\w{1,2} ){2,}\w{1,2}\s*[:.：]?$")
# Headings that end an abstract (alone on their line, or "Keywords: ..." glued).
_STOP_WORDS = (
    r"key\s?words?|index terms|palavras[- ]chave|descritores|palabras clave|descriptores|mots[- ]cl[ée]s|"
    r"schl[üu]sselw[öo]rter|stichw[öo]rter|parole chiave|s[łl]owa kluczowe|trefwoorden|kata kunci|"
    r"anahtar kelimeler|ключевые слова|ключові слова|关键词|關鍵詞|キーワード|주제어|الكلمات المفتاحية|"
    r"introduction|introdu[çc][ãa]o|introducci[óo]n|einleitung|einf[üu]hrung|introduzione|wprowadzenie|"
    r"inleiding|giri[şs]|pendahuluan|введение|вступ|引言|前言|はじめに|서론|مقدمة|background and aims|"
    r"jel classification|msc|ams subject classification|citation|copyright|©|received|correspondence|"
    r"\*\s*correspond|how to cite|article history|highlights|graphical abstract|contents"
)
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
_DIGITS_RE = re.compile(r"\d+")
_SENTENCE_END_RE = re.compile(r"[.!?:;)\]。！？]$")
_BAD_METADATA_TITLE_RE = re.compile(
    r"\.(?:pdf|docx?|p65|indd|qxd|tex|dvi|rtf|ps)\b|^untitled|^microsoft word|^title$|^\s*$|^[\w-]+$|template|"
    r"^(?:doi|http|www)",
    re.IGNORECASE,
)
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
    r"^editorial$|arxiv:|digital repository|dettaglio tesi|template$|summary sheet",
    re.IGNORECASE,
)

_NOT_CONTINUATION_RE = re.compile(r"doi|https?:|www\.|©|@", re.IGNORECASE)


class PdfParseError(ValueError):
    """PDFium could not open the bytes as a PDF (reported as `parse_error`)."""


def _page_lines(text: str) -> list[str]:
    """One page's text as stripped lines, U+FFFE word-break hyphens resolved."""
    # PDFium sometimes keeps the line break after the U+FFFE hyphen and sometimes drops it.
    text = re.sub(r"(?<=[a-zà-ÿа-я])\ufffe\s*(?:\r?\n)?\s*(?=[a-zà-ÿа-я])", "", text)
    text = re.sub(r"\ufffe\s*(?:\r?\n)?\s*", "-", text)
    return [line.strip() for line in re.split(r"\r\n|\r|\n", text)]


def _edge_key(line: str) -> str:
    return _DIGITS_RE.sub("#", line.lower()).strip()


def _remove_headers_footers(pages: list[list[str]]) -> list[list[str]]:
    """Drop running heads / feet (see module docstring) and bare page numbers."""
    counts: Counter[str] = Counter()
    for lines in pages:
        non_empty = [ln for ln in lines if ln]
        edges = set(non_empty[:_EDGE_LINES] + non_empty[-_EDGE_LINES:])
        counts.update({_edge_key(ln) for ln in edges})
    threshold = max(REPEAT_MIN_PAGES, (len(pages) + 1) // 2)
    repeated = {k for k, c in counts.items() if c >= threshold and len(k) > 1} if len(pages) >= REPEAT_MIN_PAGES else set()
    cleaned = []
    for lines in pages:
        non_empty = [ln for ln in lines if ln]
        edges = set(non_empty[:_EDGE_LINES] + non_empty[-_EDGE_LINES:])
        cleaned.append(
            [
                ln
                for ln in lines
                if not _PAGE_NUMBER_RE.match(ln) and not (ln in edges and _edge_key(ln) in repeated)
            ]
        )
    return cleaned


def _join_lines(lines: list[str]) -> str:
    """Lines to paragraphs: a line-end hyphen before a lower-case word is joined; a break is a
    paragraph when the previous line ends a sentence well short of the usual line length, or
    the line is a short heading."""
    lengths = [len(ln) for ln in lines if len(ln) > 20]
    typical = statistics.median(lengths) if lengths else 60
    out: list[str] = []
    for line in lines:
        if not line:
            continue
        if out:
            prev = out[-1]
            if prev.endswith("-") and len(prev) > 1 and prev[-2].isalpha() and prev[-2].islower() and line[:1].islower():
                out[-1] = prev[:-1] + line
                continue
            short_end = _SENTENCE_END_RE.search(prev) and len(prev) < 0.75 * typical
            # a heading starts after a finished sentence and is followed by a capital (a short
            # line followed by a lower-case word is just a short wrapped line)
            heading = (_looks_like_heading(line, typical) and bool(_SENTENCE_END_RE.search(prev))) or (
                _looks_like_heading(prev, typical) and not line[:1].islower()
            )
            out.append("\n\n" if (short_end or heading) else "\n")
        out.append(line)
    return "".join(out)


def _looks_like_heading(line: str, typical: float = 80.0) -> bool:
    """Short, unpunctuated, capitalized: a section heading (relative to the usual line length,
    so the lines of a narrow column are not all headings)."""
    return (
        0 < len(line) < min(60, 0.7 * typical)
        and not _SENTENCE_END_RE.search(line)
        and line[:1].isupper()
        and len(line.split()) <= 8
    )


def _cut_references(lines: list[str]) -> tuple[list[str], bool]:
    """Lines before the last reference-list heading past the first 30 % of the text."""
    start = int(len(lines) * _REFS_MIN_POSITION)
    for i in range(len(lines) - 1, start - 1, -1):
        if _REFERENCES_RE.match(lines[i]):
            return lines[:i], True
    return lines, False


def _is_abstract_end(line: str, heading_text: str) -> bool:
    if _STOP_RE.match(line):
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
    stripped = line.strip()
    if len(stripped) <= 40:
        compact = stripped.replace(" ", "") if _LETTER_SPACED_RE.match(stripped) else stripped
        if _ABSTRACT_ALONE_RE.match(compact):
            return stripped, ""
    glued = _ABSTRACT_GLUED_RE.match(line) or _ABSTRACT_UPPER_GLUED_RE.match(line)
    if glued and len(line) > 40:
        return line[: glued.end()], line[glued.end():]
    return None


_DOT_LEADER_RE = re.compile(r"(?:\.\s?){4,}|…{2,}|\s\d{1,3}\s*$")


def _find_abstracts(lines: list[str], limit: int = 4) -> list[tuple[str, str]]:
    """Every abstract in `lines` as (text, heading word), in document order (see the module
    docstring): a bilingual paper prints two or three, a thesis prints them after its cover
    and before or after its contents. A heading whose text is a table of contents (dot
    leaders, page numbers) or that repeats an abstract already found is skipped."""
    found: list[tuple[str, str]] = []
    seen: list[str] = []
    i = 0
    while i < len(lines) and len(found) < limit:
        hit = _heading_at(lines[i])
        if hit is None:
            i += 1
            continue
        heading, first = hit
        heading_word = heading.strip().rstrip(":.：—–- ").strip()
        body = [first] if first else []
        words = len(first.split())
        j = i + 1
        while j < len(lines):
            nxt = lines[j]
            if nxt:
                if _is_abstract_end(nxt, heading_word):
                    break
                body.append(nxt)
                words += len(nxt.split()) + sum(1 for ch in nxt if "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af") // 2
                if words >= MAX_ABSTRACT_WORDS:
                    j += 1
                    break
            j += 1
        leaders = sum(1 for ln in body if _DOT_LEADER_RE.search(ln))
        text = clean_abstract(_join_lines(body))
        key = re.sub(r"\W+", "", text.lower())[:200]
        if len(text) >= MIN_ABSTRACT_CHARS and leaders <= len(body) // 4 and not any(key[:80] in k for k in seen):
            found.append((text, heading_word))
            seen.append(key)
            i = j
        else:
            i += 1
    return found


def _find_abstract(lines: list[str]) -> tuple[str, str | None]:
    """(first abstract, heading as found) from `lines`, or ("", None)."""
    found = _find_abstracts(lines, limit=1)
    return found[0] if found else ("", None)


def _first_page_lines_with_size(textpage: Any) -> list[tuple[str, float, float]]:
    """(line, median glyph height, top y) for the first page: the font-size signal that finds
    a title. Loose char boxes give the font's height, independent of the glyph's shape."""
    import pypdfium2.raw as pdfium_c

    lines: list[tuple[str, float, float]] = []
    chars: list[str] = []
    heights: list[float] = []
    tops: list[float] = []
    n = min(textpage.count_chars(), 20_000)
    for i in range(n + 1):
        ch = chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i)) if i < n else "\n"
        if ch in "\r\n":
            text = "".join(chars).strip()
            if text and heights:
                lines.append((text, statistics.median(heights), max(tops)))
            chars, heights, tops = [], [], []
            continue
        chars.append(ch)
        if not ch.isspace():
            _left, bottom, _right, top = textpage.get_charbox(i, loose=True)
            heights.append(round(top - bottom, 1))
            tops.append(top)
    return lines


def _title_from_font(lines: list[tuple[str, float, float]]) -> str:
    """The first block of lines in the largest font on page one (at most 4 lines, broken at a
    vertical gap, since a translated title often follows in the same size)."""
    candidates = [
        (k, ln)
        for k, ln in enumerate(lines)
        if sum(ch.isalpha() for ch in ln[0]) >= 4 and not _NOT_TITLE_LINE_RE.search(ln[0])
    ]
    if not candidates:
        return ""
    size = max(ln[1] for _, ln in candidates)
    start = next(k for k, ln in candidates if ln[1] >= size - 0.6)
    block = [lines[start]]
    sentence_case = False
    for text, height, top in lines[start + 1 : start + 4]:
        prev_top = block[-1][2]
        if abs(height - size) > 0.6 or (prev_top - top) > 1.8 * size or _NOT_CONTINUATION_RE.search(text):
            break
        # in a sentence-case title the continuation lines start lower-case, so a capital
        # starts something else (the translated title of a bilingual SciELO paper)
        if sentence_case and text[:1].isupper():
            break
        sentence_case = sentence_case or text[:1].islower()
        block.append((text, height, top))
    return clean_title(" ".join(t for t, _, _ in block))


def _squash(text: str) -> str:
    return re.sub(r"\W+", "", text.lower())


def extract_pdf(data: bytes, max_pages: int = MAX_PAGES) -> dict[str, Any]:
    """Fields of one PDF: `{"title", "abstract", "content", "pdf_url": None,
    "language_hints": [], "rules", "n_pages"}` (missing fields None). Raises `PdfParseError`
    when PDFium cannot open the bytes (encrypted, not a PDF)."""
    import pypdfium2 as pdfium

    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise PdfParseError(str(exc)) from exc
    rules: dict[str, Any] = {"title": None, "abstract": None, "content": None, "pdf_url": None, "language_hints": []}
    try:
        n_pages = len(doc)
        metadata_title = ""
        try:
            metadata_title = clean_title(doc.get_metadata_value("Title"))
        except (KeyError, pdfium.PdfiumError):
            pass
        pages: list[list[str]] = []
        size_lines: list[tuple[str, float, float]] = []
        for index in range(min(n_pages, max_pages)):
            page = doc[index]
            textpage = page.get_textpage()
            try:
                pages.append(_page_lines(textpage.get_text_range()))
                if index == 0:
                    size_lines = _first_page_lines_with_size(textpage)
            finally:
                textpage.close()
                page.close()
    finally:
        doc.close()

    pages = _remove_headers_footers(pages)
    first_page_squashed = _squash(" ".join(pages[0])) if pages else ""

    # title
    title = ""
    good_metadata = (
        len(metadata_title) >= 10 and len(metadata_title.split()) >= 2 and not _BAD_METADATA_TITLE_RE.search(metadata_title)
    )
    if good_metadata and _squash(metadata_title) in first_page_squashed:
        title, rules["title"] = metadata_title, "pdf_metadata"
    if not title:
        title = _title_from_font(size_lines)
        rules["title"] = "largest_font" if title else None
    if not title and good_metadata:
        title, rules["title"] = metadata_title, "pdf_metadata"

    # abstracts: front matter (a thesis puts them after its cover and contents) and the last
    # pages (some journals print the English abstract at the end)
    front = [ln for lines in pages[:ABSTRACT_FRONT_PAGES] for ln in lines]
    tail = [ln for lines in pages[max(ABSTRACT_FRONT_PAGES, len(pages) - ABSTRACT_TAIL_PAGES):] for ln in lines]
    found = _find_abstracts(front) + (_find_abstracts(tail, limit=1) if tail else [])
    abstracts = [{"text": text, "rule": "abstract_heading", "heading": heading} for text, heading in found]
    abstract = found[0][0] if found else ""
    if abstract:
        rules["abstract"] = "abstract_heading"
        rules["abstract_heading"] = found[0][1]

    # content: every page, references cut
    all_lines = [ln for lines in pages for ln in lines]
    body, cut = _cut_references(all_lines)
    rules["references_cut"] = cut
    content = normalize_text(_join_lines(body))
    if len(content) >= MIN_CONTENT_CHARS:
        rules["content"] = "pdfium"
    else:
        content = ""

    return {
        "title": title or None,
        "abstract": abstract or None,
        "abstracts": abstracts,
        "content": content or None,
        "pdf_url": None,
        "language_hints": [],
        "rules": rules,
        "n_pages": n_pages,
    }
