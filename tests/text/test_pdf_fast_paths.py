"""The PDF rules' fast paths answer exactly as the regexes they stand in front of.

`_not_title_line` looks pieces up in the lower-cased line before (or instead of) running
`_NOT_TITLE_LINE_RE`, and `_title_line_ok` asks for a year before `_PLACE_YEAR_RE`; both are
there for speed only, so on every line -- real first pages, and lines built around every
piece in every casing, including letters that case-insensitive matching treats specially
("İ", "ı", "ſ", the Kelvin sign, Cyrillic variants) -- they must agree with the plain regex.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from openmsd_build.text.extract import pdf as P

_SPECIAL = ["İ", "ı", "ſ", "\u212a", "ᲀ", "ᲄ", "Σ", "ß", "ǅ"]


def _reference_title_line_ok(text: str) -> bool:
    """`_title_line_ok` written plainly, without the fast paths."""
    return (
        sum(ch.isalpha() for ch in text) >= 4
        and not P._FOOTNOTE_LINE_RE.match(text)
        and not P._AUTHOR_LIST_RE.search(text)
        and not P._NOT_TITLE_LINE_RE.search(text)
        and not P._STOP_RE.match(text)
        and P._heading_at(text) is None
        and not P._PLACE_YEAR_RE.match(text)
        and not P._NUMBERED_HEADING_RE.match(text)
    )


def _variants(piece: str, rng: random.Random) -> list[str]:
    out = [piece, piece.upper(), piece.title(), piece.swapcase()]
    for _ in range(3):
        chars = list(piece)
        k = rng.randrange(len(chars))
        chars[k] = rng.choice(_SPECIAL + [chars[k].upper()])
        out.append("".join(chars))
    out.append(piece.replace("i", "ı").replace("s", "ſ").replace("k", "\u212a").replace("в", "ᲀ"))
    out.append(piece.upper().replace("I", "İ"))
    return out


def _synthetic_lines() -> list[str]:
    rng = random.Random(11)
    pieces = list(P._NOT_TITLE_SURE + P._NOT_TITLE_MAYBE) + [
        "pp. 12", "p.3", "anno IV", "anno 3", "Editorial", "thèse", "these", "fakultät", "facultad", "faculté",
        "졸업 논문", "پایان نامه", "praca magisterska", "работа", "Kyiv 2022", "Poznań, 2016", "1999", "2021/22",
        "ISSN", "the thesis", "protesis", "agrotese", "group.", "help. 5", "volcano", "https://x", "http:",
    ]
    contexts = ["{}", "A study of {} in roses", "{} and more", "x{}x", "({})", "{}.", "  {}  ", "Title — {}",
                "Mapping the {}", "{} 2020", "Lviv – {}"]
    lines = []
    for piece in pieces:
        for variant in _variants(piece, rng):
            for context in contexts:
                lines.append(context.format(variant))
    return lines


def _real_first_pages(root: Path) -> list[list[tuple[str, float, float]]]:
    """The first page of every PDF below `root` as (line, size, top)."""
    import pypdfium2 as pdfium

    pages = []
    for path in sorted(root.rglob("*.pdf")):
        try:
            doc = pdfium.PdfDocument(path.read_bytes())
        except pdfium.PdfiumError:
            continue
        try:
            pages.append(P._first_page_lines_with_size(doc[0].get_textpage()))
        finally:
            doc.close()
    return pages


def _real_first_page_lines(root: Path) -> list[str]:
    return [text for page in _real_first_pages(root) for text, _size, _top in page]


# Each check runs on the built lines and, apart, on the real first pages (skipped, with the
# reason, without ../shared/real-samples; failed in CI), never on a corpus that silently
# shrinks when the samples are missing.
@pytest.fixture(scope="module", params=["built", "real"])
def lines(request) -> list[str]:
    if request.param == "built":
        return _synthetic_lines()
    real = _real_first_page_lines(request.getfixturevalue("real_samples"))
    assert len(real) > 500  # the real samples' PDFs have ~1,000 first-page lines
    return real


def test_not_title_line_agrees_with_the_regex(lines: list[str]) -> None:
    assert len(lines) > 500
    disagree = [t for t in lines if P._not_title_line(t) != (P._NOT_TITLE_LINE_RE.search(t) is not None)]
    assert disagree == []
    # the corpus exercises all three answers: sure piece, regex, and no piece at all
    assert any(P._NOT_TITLE_LINE_RE.search(t) for t in lines) and any(not P._NOT_TITLE_LINE_RE.search(t) for t in lines)


def test_title_line_ok_agrees_with_its_plain_definition(lines: list[str]) -> None:
    disagree = [t for t in lines if P._title_line_ok(t) != _reference_title_line_ok(t)]
    assert disagree == []
    assert any(P._title_line_ok(t) for t in lines) and not all(P._title_line_ok(t) for t in lines)


def test_a_text_layer_fix_is_skipped_only_where_it_changes_nothing() -> None:
    """`_may_need_layer_fix` lets the first page skip `fix_text_layer` on every line; it may
    say True for a text the fix leaves alone, never False for one the fix changes."""
    rng = random.Random(11)
    alphabet = "abcde ()\u0627\u0623\u0644\u0644\u0628\u062a´˜¨ˆˇ˘˚˙˝`¸ıeo\n"
    changed = 0
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        fixed = P.fix_text_layer(text)
        changed += fixed != text
        if not P._may_need_layer_fix(text):
            assert fixed == text, text
    assert changed > 1000  # the draw reaches every repair


def test_letter_spacing_precheck_decides_as_the_rule(lines: list[str], monkeypatch) -> None:
    """A line with four characters in a row without a space is never letter-spaced
    (`collapse_letter_spacing` returns it at once); random short lines of letters in groups
    of one to five, spaces, tabs, digits and punctuation, and the real first-page lines, get
    the answer of the rule with the precheck switched off."""
    import re

    from openmsd_build.core import textclean as T

    rng = random.Random(3)
    groups = ["a", "B", "ab", "CD", "EVI", "xyz", "abcd", "WORD", "é", "ΣΑ", "дж", "1", "a1", "-", "R.", "\t", "ſ"]
    drawn = []
    for _ in range(20_000):
        parts = [rng.choice(groups) for _ in range(rng.randint(1, 9))]
        drawn.append("".join(p + rng.choice([" ", " ", " ", "  ", ""]) for p in parts))
    for _ in range(5_000):  # lines of the kind that is collapsed, and near misses
        pool = rng.choice([["A", "B", "EV", "IEW", "R", "ABCD"], ["a", "b", "c", "d", "ab"], ["Д", "Ж", "ЕВ", "σ"]])
        drawn.append(" ".join(rng.choice(pool) for _ in range(rng.randint(2, 9))))
    drawn += lines
    got = [T.collapse_letter_spacing(line) for line in drawn]
    with monkeypatch.context() as patch:
        patch.setattr(T, "_FOUR_NON_SPACES_RE", re.compile(r"(?!)"))  # never matches: the rule alone
        want = [T.collapse_letter_spacing(line) for line in drawn]
    assert [line for line, a, b in zip(drawn, got, want, strict=True) if a != b] == []
    assert sum(a != line for line, a in zip(drawn, got, strict=True)) > 500  # the draw reaches the collapsing branch


def test_sampled_glyphs_are_the_glyphs_of_the_flat_definition() -> None:
    """A line's glyphs as a slice of the page's glyph positions, and the spread sample as
    lookups, pick the glyphs the definition names: all of a short line (or of one with an
    accent), else glyph number int(k * n / count) of the line's n."""
    rng = random.Random(5)
    for _ in range(3_000):
        words, pos = [], 0  # a page's words: (start, end) positions of non-space runs
        for _w in range(rng.randint(1, 40)):
            pos += rng.randint(1, 3)
            length = rng.randint(1, 12)
            words.append((pos, pos + length))
            pos += length
        glyph_at = list(itertools.chain.from_iterable(range(a, b) for a, b in words))
        first, last = sorted(rng.sample(range(len(words) + 1), 2))
        line = [i for a, b in words[first:last] for i in range(a, b)]  # the line's glyph positions
        g0 = sum(b - a for a, b in words[:first])
        every = rng.random() < 0.2
        got = P._sampled_glyphs(glyph_at, g0, g0 + len(line), every)
        if every or len(line) <= P._BOX_ALL:
            assert got == line
        else:
            assert list(got) == [line[k * len(line) // P._BOX_SAMPLE] for k in range(P._BOX_SAMPLE)]


def test_any_piece_re_finds_exactly_the_lines_holding_a_piece() -> None:
    pieces = ("vol.", "volume", "doi", "do", "universi", "university", "@", "p.", "ü", "毕业论文", "a|b", "x*")
    found = P._any_piece_re(pieces)
    rng = random.Random(3)
    alphabet = list("volume.dinrstyp@ü毕业论文 |*abx")
    texts = ["", "volum", "vol", "vo.l", "d o", "univers", "a|b", "x*", "x", "a b"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(20_000)]
    assert [found.search(t) is not None for t in texts] == [any(p in t for p in pieces) for t in texts]
    assert any(found.search(t) for t in texts) and not all(found.search(t) for t in texts)
    assert P._any_piece_re(()).search("anything") is None  # as any() of nothing
    assert P._any_piece_re(("", "x")).search("") is not None  # "" is in every string


def test_loose_char_box_without_argtypes_gives_pdfiums_boxes() -> None:
    """The bare function pointer reads the same boxes as pypdfium2's declared binding."""
    import ctypes

    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    from openmsd_build.sample.pdf import make_pdf

    doc = pdfium.PdfDocument(make_pdf([("title", "A Title Set Large"), ("meta", "Ana Lima, 2024"),
                                       ("para", "Some body text of a paper, long enough to wrap. " * 8)]))
    textpage = doc[0].get_textpage()
    assert textpage.count_chars() > 20
    bare, mine, theirs = P._loose_char_box(), pdfium_c.FS_RECTF(), pdfium_c.FS_RECTF()
    for i in range(textpage.count_chars()):
        assert bare(textpage.raw, i, ctypes.byref(mine)) == pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, i, theirs)
        assert (mine.left, mine.top, mine.right, mine.bottom) == (theirs.left, theirs.top, theirs.right, theirs.bottom)
    doc.close()


def test_not_continuation_agrees_with_the_regex(lines: list[str]) -> None:
    pieces = ["doi", "DOI:", "dOı", "http://x", "HTTPS:", "httpſ:", "www.", "WWW.", "©", "@", "İdoi"]
    built = lines + [f"{a} {p} {b}" for p in pieces for a, b in (("", ""), ("A", "b"), ("ı", "ſ"))]
    assert [P._not_continuation(t) for t in built] == [P._NOT_CONTINUATION_RE.search(t) is not None for t in built]
    assert any(P._not_continuation(t) for t in built) and not all(P._not_continuation(t) for t in built)


def test_heading_start_precheck_decides_as_the_rule(lines: list[str], monkeypatch) -> None:
    """`_heading_at` passes over a line whose first character cannot start a heading: the
    lines and headings in every casing and spacing get the answer of the rule without it."""

    headings = ["Abstract", "ABSTRACT: We study", "A B S T R A C T", "1. Summary", "I. Özet", "摘 要", "Resumo",
                "RÉSUMÉ Les", "ıntisari", "Аннотация", "0 Summary", "Zusammenfassung: Wir", "ſummary"]
    drawn = lines + [f"{pad}{h}{tail}" for h in headings for pad in ("", "  ", "\t")
                     for tail in ("", ".", " Text follows here in a sentence of some length.")]
    drawn += [h.lower() for h in drawn] + [h.upper() for h in drawn]
    got = [P._heading_at(t) for t in drawn]
    monkeypatch.setattr(P, "_may_start_heading", lambda _line: True)  # every line to the rule
    assert got == [P._heading_at(t) for t in drawn]
    assert sum(g is not None for g in got) > 50


def test_layer_fix_precheck_changes_nothing(monkeypatch) -> None:
    """`fix_text_layer` returns a text without any character its repairs read as it is: random
    texts over the characters each repair looks for get the answer of the full repair."""
    import re

    rng = random.Random(7)
    alphabet = "abcde ()\u0627\u0623\u0644\u0628\u062a´˜¨ˆˇ˘˚˙˝`¸˛ıeo\nªª©·\u0080\ufb50\ufefb\u00e9nghi"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(20_000)]
    texts += ["plain text (with brackets)", "Econom´ıa", "nghiªn cøu", ""]
    got = [P.fix_text_layer(t) for t in texts]
    monkeypatch.setattr(P, "_LAYER_FIX_CHAR_RE", re.compile(""))  # the precheck always says "maybe"
    assert got == [P.fix_text_layer(t) for t in texts]
    assert sum(g != t for g, t in zip(got, texts, strict=True)) > 1000  # the draw reaches the repairs


def test_glyph_layout_is_the_flat_definition() -> None:
    """Glyph positions and each line's glyph range, computed in numpy, are those of a pass over
    the characters: a glyph is a character that `str.isspace` is not (any script, U+3000 and
    no-break spaces included, lone surrogates too)."""
    rng = random.Random(9)
    alphabet = ["a", "Z", "é", "語", "\U0001d400", "\ud800", " ", "\t", "\xa0", "\u3000", "\u2009", "\x1c", "\r", "\n"]
    for _ in range(2_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        segments = P._LINE_BREAK_RE.split(text)
        glyph_at, first, end = P._glyph_layout(text, segments)
        assert glyph_at == [k for k, ch in enumerate(text) if not ch.isspace()]
        start = 0
        for segment, a, b in zip(segments, first, end, strict=True):
            assert glyph_at[a:b] == [start + k for k, ch in enumerate(segment) if not ch.isspace()]
            start += len(segment) + 1


def _reference_join_lines(lines: list[str]) -> str:
    """`_join_lines` as first written: every test asked where it is used."""
    import statistics

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
            short_end = P._SENTENCE_END_RE.search(prev) and len(prev) < 0.75 * typical
            heading = (P._looks_like_heading(line, typical) and bool(P._SENTENCE_END_RE.search(prev))) or (
                P._looks_like_heading(prev, typical) and not line[:1].islower())
            out.append("\n\n" if (short_end or heading) else "\n")
        out.append(line)
    return "".join(out)


def test_join_lines_reads_each_line_once_with_the_same_result() -> None:
    rng = random.Random(13)
    pool = ["Introduction", "1 Methods", "The results show that the method works well in practice.",
            "a short wrapped line", "end of a sentence.", "hyphen-", "continued here and there", "",
            "A much longer line of running text that goes on and on to fill the column width nicely,",
            "Results", "Ends with a colon:", "(Table 2)", "x-", "lower case start of text"]
    for _ in range(3_000):
        lines = [rng.choice(pool) for _ in range(rng.randint(0, 25))]
        assert P._join_lines(lines) == _reference_join_lines(lines)


def test_at_most_words_is_the_word_count_test() -> None:
    rng = random.Random(17)
    pool = ["word", "two words", "語語語語", "한국어", "a b c d e f", "", "x", " ", "\u3000y\u3000", "\tz "]
    for _ in range(3_000):
        lines = [rng.choice(pool) for _ in range(rng.randint(0, 12))]
        for limit in (3, 10, 25):
            assert P._at_most_words(lines, limit) == (P._words(lines) <= limit)


def test_word_chars_latin1_path_is_the_regex() -> None:
    import re

    from openmsd_build.core.textclean import word_chars

    rng = random.Random(19)
    alphabet = [chr(c) for c in range(256)] + ["ſ", "İ", "\u212a", "ß", "Σ", "ǅ", "ﬁ", "語"]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))) for _ in range(30_000)]
    assert [word_chars(t) for t in texts] == [re.sub(r"\W+", "", t.lower()) for t in texts]


def _reference_title_from_font(lines: list[tuple[str, float, float]]) -> str:
    """`_title_from_font` as first written (every block of the page found, then the largest
    chosen), without a body language."""
    for k, (text, _size, _top) in enumerate(lines[:-1]):
        if P._TOPIC_LABEL_RE.match(text):
            after = P._title_blocks(lines[k + 1:k + 1 + 2 * P.MAX_TITLE_LINES])
            if after and after[0][0] and lines[k + 1][0] == after[0][0][0]:
                return P._title_text(P._split_by_language(after[0][0])[0])
    blocks = P._title_blocks(lines)
    if not blocks:
        return ""
    wordy = [b for b in blocks if P._words(b[0]) >= 3] or blocks
    for _attempt in range(3):
        if not wordy:
            return ""
        size = max(s for _, s in wordy)
        top = [b for b, s in wordy if s >= size - 0.6]
        parts = [part for b in top for part in P._split_by_language(b)
                 if len(part) <= P.MAX_TITLE_LINES and not P._reads_as_prose(part)]
        if parts:
            return "" if P._below_author_list(lines, parts[0]) else P._title_text(parts[0])
        wordy = [(b, s) for b, s in wordy if s < size - 0.6]
    return ""


def _drawn_pages(rng: random.Random, count: int) -> list[list[tuple[str, float, float]]]:
    """First pages of lines (text, size, top): sizes a little or much apart, tops going down
    the page with columns starting again at the top, texts of every kind the title rules tell
    apart (title-like, lower-case continuations, chrome, author lists, logos, long prose)."""
    texts = ["A Study of Soil Carbon in Dry Forests", "and its effects on growth", "Journal of Ecology",
             "Ana Silva¹, Carlos Souza², Maria Lima³", "LOGO", "Abstract", "Keywords: soil", "Kyiv 2022",
             "on the long-term dynamics", "Estudo do carbono do solo em florestas secas", "1 Introduction",
             " ".join(["word"] * 40), "doi:10.1/x", "Research Article", "Two Words", "x"]
    sizes = [9.0, 9.5, 10.0, 10.6, 11.2, 12.0, 14.0, 14.4, 16.0, 18.0, 24.0]
    pages = []
    for _ in range(count):
        top, lines = 800.0, []
        for _k in range(rng.randint(0, 30)):
            size = rng.choice(sizes)
            top = 800.0 if rng.random() < 0.08 else top - rng.choice([0.0, 0.8, 1.0, 1.2, 2.0, 3.0]) * size
            lines.append((rng.choice(texts), size, top))
        pages.append(lines)
    return pages


def test_title_blocks_found_largest_first_choose_as_all_blocks() -> None:
    """Blocks found run by run, largest first (`_TitleBlocksBySize`), give the title that all of
    the page's blocks give; the runs' blocks, one run after the other, are the page's blocks."""
    rng = random.Random(23)
    pages = _drawn_pages(rng, 3_000)
    titled = 0
    for lines in pages:
        assert [b for start, end, _ in P._block_runs(lines) for b in P._title_blocks(lines[start:end])] == \
            P._title_blocks(lines)
        want = _reference_title_from_font(lines)
        assert P._title_from_font(lines) == want, lines
        titled += bool(want)
    assert titled > 1_000


def test_title_blocks_found_largest_first_on_real_first_pages(real_samples: Path) -> None:
    pages = _real_first_pages(real_samples)
    assert len(pages) > 20
    for lines in pages:
        for cut in (len(lines), 12, 30):
            assert P._title_from_font(lines[:cut]) == _reference_title_from_font(lines[:cut])


def _line_draw(seed: int, pieces: list[str], n: int = 20_000) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) for _ in range(n)]


def test_line_start_gates_agree_with_their_regexes(lines: list[str]) -> None:
    """The keyword, objective and page-number checks pass a line over by its first or last
    character before the regex: every line gets the regex's answer."""
    import re

    pieces = ["Keywords", "KEY WORDS", "palavras-chave", "Ключевые слова", "关键词", "Objective", "OBJETIVO.", "Aims:",
              "Цель", "Page ", "p. ", "Seite ", "стр.", "12", "٣", "² ", " of 9", "/", " ", "\t", "\u3000", "\n", "ſ",
              "\u212a", "ı", "İ", ":", " text", "x", "-"]
    drawn = lines + _line_draw(21, pieces) + list(pieces)
    for label in ("Objective", "OBJETIVOS", "aims", "Цель", "ſcopo", "\u212aontext", "İntroducción", "Background"):
        for pad, sep in (("", ":"), (" ", "."), ("\t", " -"), ("", "")):
            drawn += [f"{pad}{label}{sep} text of the first section", "more text", f"{pad}Methods{sep} we did"]
            drawn += [f"{pad}{label}{sep} text.", f"was done. Methods{sep} we did", f"we did. methods{sep} no label"]
    keywords = [P._is_keywords_line(t) for t in drawn]
    assert keywords == [P._KEYWORDS_RE.match(t) is not None for t in drawn]
    assert [P._is_page_number(t) for t in drawn] == [P._PAGE_NUMBER_RE.match(t) is not None for t in drawn]
    assert [P._ends_sentence(t) for t in drawn + ["a.\n", "a\n", ".\n\n", "\n"]] == [
        P._SENTENCE_END_RE.search(t) is not None for t in drawn + ["a.\n", "a\n", ".\n\n", "\n"]]
    assert sum(keywords) > 500 and sum(map(P._is_page_number, drawn)) > 200
    # `_structured_start` with its gate and without (every line to the regex)
    starts = [P._structured_start(drawn, i) for i in range(len(drawn))]
    objective = re.compile(P._OBJECTIVE_LABEL_RE.pattern, re.IGNORECASE)
    assert [objective.match(t) is not None and (any(P._METHODS_LABEL_RE.match(ln) for ln in drawn[i + 1:i + 26])
                                                 or any(map(P._inline_methods_label, drawn[i:i + 26])))
            for i, t in enumerate(drawn)] == starts
    assert sum(starts) > 20


def test_page_lines_collapse_only_the_lines_the_rule_would_change() -> None:
    """`_page_lines` calls `collapse_letter_spacing` only on short lines holding a space: the
    lines it skips are the ones the rule returns as they are."""
    from openmsd_build.core.textclean import collapse_letter_spacing

    pieces = ["A B S T R A C T", "R EVI EW", "摘 要", "word", " ", "  ", "\t", "x" * 40, "ab", "\u00a0", "\r\n", "\n"]
    for text in _line_draw(22, pieces, 5_000):
        plain = [collapse_letter_spacing(line.strip()) for line in P.fix_text_layer(text).replace("\r\n", "\n").split("\n")]
        if "\r" not in text.replace("\r\n", "") and "\ufffe" not in text:
            assert P._page_lines(text) == plain, repr(text)


def test_dot_leaders_and_trailing_headings_are_asked_only_where_they_can_be(lines: list[str]) -> None:
    """A line without four full stops, an ellipsis or a final digit has no dot leader; a line
    ending with a character no heading word ends with has no heading glued to its end."""
    pieces = ["Contents", ". ", ".", "..", "…", "……", " 12", "3", "٣", " ", "\t", "\n", "x", "Abstract", "RÉSUMÉ", "sumé",
              "要", "약", "Реферат", ":", "：", "word", "。"]
    drawn = lines + _line_draw(23, pieces)
    leaders = [P._has_dot_leader(t) for t in drawn]
    assert leaders == [P._DOT_LEADER_RE.search(t) is not None for t in drawn]
    assert sum(leaders) > 1000
    for t in drawn:
        end = t.rstrip()
        if end[-1:] in (":", ".", "："):
            end = end[:-1].rstrip()
        assert P._may_end_with_heading(t) == end.endswith(P._TRAILING_HEADING_ENDS), repr(t)
        if P._TRAILING_HEADING_RE.search(t):
            assert P._may_end_with_heading(t), repr(t)
    assert sum(map(P._may_end_with_heading, drawn)) > 1000
