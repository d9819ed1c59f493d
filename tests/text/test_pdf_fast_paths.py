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


def _real_first_page_lines(root: Path) -> list[str]:
    import pypdfium2 as pdfium

    lines = []
    for path in sorted(root.rglob("*.pdf")):
        try:
            doc = pdfium.PdfDocument(path.read_bytes())
        except pdfium.PdfiumError:
            continue
        try:
            textpage = doc[0].get_textpage()
            lines += [text for text, _size, _top in P._first_page_lines_with_size(textpage)]
        finally:
            doc.close()
    return lines


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
            assert got == [line[k * len(line) // P._BOX_SAMPLE] for k in range(P._BOX_SAMPLE)]


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
