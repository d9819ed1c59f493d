"""The fast paths of document building give exactly what the scans they skip would give.

Each fast path is a test that decides, before a regex or a normalization step runs, that it
cannot change or match the text. These tests draw many texts from alphabets full of the
characters the rules care about (line breaks, exotic spaces, controls, ligatures, combining
marks, CJK, digits, dots, year-like numbers, URL and DOI pieces) and check the decision
against the scan itself, so a fast path that skips a text the scan would have changed fails
here."""

from __future__ import annotations

import random
import re
import sys

import pytest

from openmsd_build.core import language, textclean
from openmsd_build.core.textclean import (
    ENTRY_YEAR_RE,
    alnum_only,
    is_normal_layout,
    looks_like_bibliography,
    normalize_text,
    text_layer_damage,
)
from openmsd_build.text import documents

_LAYOUT_ALPHABET = list("ab fi\n\n") + [" ", "\n", "\t", "\r", "\u00a0", "\u2009", "\u200b", "\ufeff", "\x00", "\x85",
                                          "\ufb01", "\u0301", "e", "中", "文", "ff", "ff ", " fi ", ".", "\u2028", "\x1c"]


def _texts(alphabet: list[str], n: int, seed: int, max_len: int = 40) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len))) for _ in range(n)]


def _slow_normalize(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(textclean, "text_layout", lambda _text: textclean.OTHER_LAYOUT)
        return normalize_text(text)


def test_normal_layout_means_normalize_text_only_repairs_ligatures(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = 0
    for text in _texts(_LAYOUT_ALPHABET, 30_000, seed=1) + _texts(list("ab c\n"), 5000, seed=2):
        if text and is_normal_layout(text):
            fast += 1
            assert _slow_normalize(text, monkeypatch) == textclean.repair_ligatures(text), repr(text)
        assert normalize_text(text) == _slow_normalize(text, monkeypatch), repr(text)
    assert fast > 500  # the fast path is taken, not only refused


def test_wrapped_layout_means_normalize_text_only_unwraps_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text in normal layout but for single line breaks (a PDF body joined by its lines) is
    only unwrapped: the draw favours lines of words, CJK characters and ligatures around
    single and double line breaks, with every character that sends a text the slow way."""
    alphabet = list("ab fi") + ["\n", "\n", "\n\n", "中", "文", "。", "é", "e\u0301", "ﬁ", " fi ", "ff ", "\u00a0", "\t", "\r",
                                "\u200b", "\x85", "\u2028", "  "]
    wrapped = 0
    for text in _texts(alphabet, 30_000, seed=4, max_len=30) + _texts(list("ab中\n"), 5000, seed=5):
        layout = textclean.text_layout(text) if text else None
        wrapped += layout == textclean.WRAPPED_LAYOUT
        assert normalize_text(text) == _slow_normalize(text, monkeypatch), repr(text)
        if layout == textclean.WRAPPED_LAYOUT:
            assert "\n" in text and not is_normal_layout(text)
    assert wrapped > 1000  # the fast path is taken, not only refused


def test_normalized_text_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `normalize_text` returns for ordinary pages and PDF bodies is normal layout, so
    a body normalized by its extractor is not scanned again by `build_document`."""
    raw = "A  title\r\n\r\nFirst paragraph\nwrapped here.\u00a0Next\tsentence.\n\n\n Second paragraph.  \n"
    out = normalize_text(raw)
    assert out == "A title\n\nFirst paragraph wrapped here. Next sentence.\n\nSecond paragraph."
    assert is_normal_layout(out)
    assert not is_normal_layout(raw)
    for bad in ("a  b", " a", "a ", "a\n", "a\nb", "a\n\n\nb", "a \n\nb", "a\n\n b", "a\u00a0b", "a\tb", "e\u0301"):
        assert not is_normal_layout(bad), repr(bad)


def test_alnum_only_is_the_regex() -> None:
    pattern = re.compile(r"[\W_]+")
    chunk = 4096
    for start in range(0, 0x30000, chunk):  # every code point of the BMP and beyond, surrogates included
        text = "".join(map(chr, range(start, start + chunk))) + " a_b-1 "
        assert alnum_only(text) == pattern.sub("", text), hex(start)
    for text in ("", "abc", "a b_c", "é—z", "x\ud835\udc00y", "\ud835\udc00", "中文 テスト", "١٢٣ abc"):
        assert alnum_only(text) == pattern.sub("", text), repr(text)


def test_text_layer_damage_single_scan_matches_the_four_counts() -> None:
    alphabet = list("abc def ") + ["\ue000", "\ufffd", "\x01", "\x9f", "Ã", "\u00a9", "Â", "\u00a0", "â", "€", "™", "—", "-", "#"]
    for text in _texts(alphabet, 20_000, seed=3, max_len=80):
        visible = sum(map(len, text.split()))
        expected = None
        if visible >= 4:
            if len(re.findall("[\ue000-\uf8ff]", text)) * 20 > visible:
                expected = "private_use_glyphs"
            elif text.count("\ufffd") * 30 > visible:
                expected = "replacement_characters"
            elif len(re.findall("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", text)) * 30 > visible:
                expected = "control_characters"
            elif visible >= 12 and len(re.findall("[ÃÂ][\u0080-\u00bf]|â€", text)) * 40 > visible:
                expected = "utf8_read_as_latin1"
            elif visible >= 40 and len(re.sub(r"[\W_]+", "", text)) * 3 < visible:
                expected = "symbols_not_letters"
        assert text_layer_damage(text) == expected, repr(text)


def test_bibliography_prefilter_never_hides_three_years() -> None:
    alphabet = ["1", "2", "0", "5", "9", "6", "(", ")", ".", ",", ";", " ", "\n", "a", "Smith, J. "]
    for text in _texts(alphabet, 20_000, seed=4, max_len=60):
        if sum(text.count(s) for s in textclean._YEAR_STARTS) < textclean.BIBLIOGRAPHY_MIN_ENTRIES:
            assert len(ENTRY_YEAR_RE.findall(text)) < textclean.BIBLIOGRAPHY_MIN_ENTRIES, repr(text)
    refs = "Smith, J. (2019). One. Lee, K. (2018). Two. Park, H. (2017). Three. Chen, L. (2016). Four."
    assert looks_like_bibliography(refs)


@pytest.mark.parametrize(("regex", "pieces", "every", "alphabet"), [
    (documents._CHROME_RE, documents._CHROME_WORDS, False,
     ["Sign", " in", "COOKIE", "s", "javascript", "log", " ", "in", "Download ", "pdf", "x", "click", " here", "computer science >"]),
    (documents._TOC_RE, documents._TOC_PIECES, False, [".", " ", "\t", "\n", "\x1c", "…", "a", ". ", ".\x0b"]),
])
def test_may_hold_is_true_wherever_the_regex_matches(regex: re.Pattern, pieces: tuple[str, ...], every: bool,
                                                     alphabet: list[str]) -> None:
    skipped = 0
    for text in _texts(alphabet, 20_000, seed=5, max_len=30):
        if not documents._may_hold(text, pieces, every=every):
            skipped += 1
            assert regex.search(text) is None, repr(text)
    assert skipped > 100
    assert documents._may_hold("ſign in \u2026", pieces, every=every)  # not ASCII: always scanned


def test_enumerated_sections_prefilter() -> None:
    """Without "1.", "2." and "3." an ASCII text cannot open as the list 1, 2, 3."""
    alphabet = ["1", "2", "3", "01", ".", " ", ";", "\n", "A", "b", "12", "\t", "- "]
    skipped = 0
    for text in _texts(alphabet, 30_000, seed=7, max_len=30):
        numbers = [int(n) for n in documents._ENUMERATED_RE.findall(text[:3000])]
        if not documents._may_hold(text, documents._ENUMERATED_PIECES, every=True):
            skipped += 1
            assert numbers[:3] != [1, 2, 3], repr(text)
        assert documents._enumerated_sections(text) == (numbers[:3] == [1, 2, 3])
    assert skipped > 100
    assert documents._enumerated_sections("Contents; 1. Does the Directive apply – 2. The scope – 3. Remedies")
    assert documents._enumerated_sections("\u0661. Arabic digits – 2. as the regex reads them – 3. too")


_URL_REFERENCE = re.compile(r"(?:https?://|www\.|doi:\s*10\.|\b10\.\d{4,9}/)\S*", re.IGNORECASE)


def test_url_regex_is_the_case_insensitive_one() -> None:
    """`language._URL_RE` spells out the case-insensitive pattern: each letter's class holds
    exactly the characters a case-insensitive regex takes for it, and both give the same
    substitutions."""
    every_char = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    classes = {"h": "hH", "t": "tT", "p": "pP", "s": "sSſ", "w": "wW", "d": "dD", "o": "oO", "i": "iIİı"}
    for letter, chars in classes.items():
        assert sorted(re.findall(letter, every_char, re.IGNORECASE)) == sorted(chars), letter
    alphabet = ["h", "H", "ttp", "TTP", "s", "ſ", "://", "w", "W", "ww", "WW", ".", "d", "D", "o", "i", "İ", "ı", ":", " ", "\n",
                "10", "1", "0", "2345", "/", "x", "_", "a1", "é"]
    for text in _texts(alphabet, 40_000, seed=9, max_len=20):
        assert language._URL_RE.sub(" ", text) == _URL_REFERENCE.sub(" ", text), repr(text)


def test_url_prefilter_never_hides_a_url() -> None:
    alphabet = ["http", "HTTPS", "s", "://", ":/", "www", "WWW", ".", "doi", "DOİ", "doı", ":", " ", "10", "1", "0", "2345",
                "/", "x", "\n", "@"]
    for text in _texts(alphabet, 30_000, seed=6, max_len=25):
        if not text.strip():
            continue
        expected = _URL_REFERENCE.sub(" ", text).strip()
        if "@" in expected:
            expected = language._EMAIL_RE.sub(" ", expected).strip()
        assert language._prepare(None, text) == expected, repr(text)


def test_squash_title_unchanged() -> None:
    pattern = re.compile(r"[\W_]+")
    import unicodedata

    for text in ("Ａ Study — of “things”", "Über die Straße", "ﬁnite ﬁelds", "İstanbul ſtudies", "中文 标题：研究", "a_b"):
        assert documents._squash_title(text) == pattern.sub("", unicodedata.normalize("NFKC", text).casefold())
    assert documents._squash_title("A Study: of Things!") == "astudyofthings"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_count_tokens_is_the_regex_count() -> None:
    """Tokens counted on bytes (non-ASCII text without CJK) are the `\\w+` runs."""
    cjk = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
    alphabet = ["a", "b", " ", "é", "—", "’", "_", "1", "٣", "\u0301", "ß", "\n", "ﬁ", "-", "Ω", "\ud800", "x\u00a0y", "中", "한"]
    for text in _texts(alphabet, 20_000, seed=8, max_len=30):
        expected = len(re.findall(r"\w+", cjk.sub(" ", text))) + len(cjk.findall(text))
        assert textclean.count_tokens(text) == expected, repr(text)


def test_split_hint_regex_matches_where_the_two_branch_one_does() -> None:
    """`_SPLIT_HINT_RE` (starting with "f") finds a hint in the same texts as the plain
    two-branch regex, and each text it matches holds one of `SPLIT_HINT_PIECES` (which the
    Crossref reader uses to leave other titles alone)."""
    reference = re.compile(r"(?:ff|fi|fl) [^\W\d_A-Z]| ff[^\W\d_]")
    alphabet = ["f", "i", "l", " ", "a", "A", "1", "_", "é", "É", "ff", " ff", "fi ", "\n", "ß"]
    for text in _texts(alphabet, 40_000, seed=12, max_len=12):
        found = textclean._SPLIT_HINT_RE.search(text) is not None
        assert found == (reference.search(text) is not None), repr(text)
        assert not found or any(piece in text for piece in textclean.SPLIT_HINT_PIECES)


def test_node_text_in_place_equals_the_copy() -> None:
    """`_node_text` serializes an element with nothing to strip in place (no tail) and gives
    what the copy without its tail gives; one with a script is copied and stripped."""
    import copy

    import lxml.etree
    import lxml.html

    from openmsd_build.core.textclean import strip_markup
    from openmsd_build.text.extract.landing import _node_text, parse_html

    tree = parse_html("<html><body><div id='a'><p>One &amp; <i>two</i></p><p>Three</p></div>tail text"
                      "<div id='b'><p>Four</p><script>var x;</script><button>Go</button></div>after</body></html>")
    for node in tree.iter("div"):
        clone = copy.deepcopy(node)
        clone.tail = None
        lxml.etree.strip_elements(clone, "script", "style", "noscript", "button", "svg", "math", with_tail=False)
        assert _node_text(node) == strip_markup(lxml.html.tostring(clone, encoding="unicode"))
    a, b = tree.iter("div")
    assert _node_text(a) == "One & two\n\nThree" and "tail" not in _node_text(a)
    assert _node_text(b) == "Four" and b.find("script") is not None  # the page itself is untouched


def test_visible_chars_is_the_split_count() -> None:
    alphabet = ["a", " ", "\t", "\n", "\x1c", "\x85", "\u00a0", "\u2003", "\u2028", "\u3000", "é", "中", "\ud800", "\x00", "—"]
    for text in _texts(alphabet, 20_000, seed=10, max_len=30):
        assert textclean.visible_chars(text) == sum(map(len, text.split())), repr(text)
    every_space = "".join(c for c in map(chr, range(0x110000)) if c.isspace())
    assert textclean.visible_chars(every_space + "ab") == 2


def test_word_positions_are_the_regex_words_found() -> None:
    """`_word_positions(words, text)` of an ASCII text (searched with `str.find`) is where
    `_TITLE_WORD_RE` finds one of the words, case-folded, in any text."""
    alphabet = ["data", "base", "database", " ", "-", "s", "1", "_", "mod", "el", "model", ".", "x", "é", "Data"]
    probes = ["data", "base", "database", "databases", "model", "models", "mode", "datab", "ata", "dataé", "ünï"]
    rng = random.Random(11)
    for text in _texts(alphabet, 5000, seed=11, max_len=12):
        words = set(rng.sample(probes, rng.randint(1, 4)))
        want = [(m.start(), m.group().casefold()) for m in documents._TITLE_WORD_RE.finditer(text)
                if m.group().casefold() in words]
        assert documents._word_positions(words, text) == want, (text, words)


def test_same_words_is_the_key_comparison() -> None:
    alphabet = ["a", "B", " ", "-", "_", "1", "é", "İ", "ß", "\u0301", "中", ".", "ab"]
    rng = random.Random(13)
    texts = _texts(alphabet, 20_000, seed=13, max_len=10)
    for text in texts:
        title = rng.choice(texts) if rng.random() < 0.5 else text.upper()
        assert documents._same_words(text, title) == (textclean.word_chars(text) == textclean.word_chars(title)), (text, title)


def test_title_printed_looks_at_the_start_first_with_the_answer_of_the_whole_text() -> None:
    """`_title_printed` squashes the start of a text (cut before a space) before the whole:
    texts of letters, spaces, combining marks, compatibility characters (ligatures, no-break
    spaces, full-width letters), Hangul jamo and letters that case-fold to two get the answer
    of squashing the whole text, on both sides of the cut."""
    rng = random.Random(8)
    alphabet = ["a", "b", "T", " ", " ", "e\u0301", "\u0301", "\u0327", "\ufb01", "\u00a0", "\uff21", "\u1100", "\u1161",
                "\u11a8", "\u00df", "\u0130", "\u00b4", "-", "中", "\u212b", "Ǆ"]
    titles_pool = ["ab", "ta", "fi", "ss", "가", "aé", "i̇", "tab", "b中", "dž"]
    hits = near_cut = 0
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        titles = rng.sample(titles_pool, rng.randint(1, 3))
        squashed = [documents._squash_title(t) for t in titles]
        head = documents._squash_title(text)
        want = bool(head) and any(t in head for t in squashed)
        for cut_at in (0, 5, 20, 10_000):  # the start squashed first, or (10,000) not at all
            documents.TITLE_PREFIX_CHARS, saved = cut_at, documents.TITLE_PREFIX_CHARS
            try:
                assert documents._title_printed(squashed, text) == want, (text, titles, cut_at)
            finally:
                documents.TITLE_PREFIX_CHARS = saved
        hits += want
        near_cut += " " in text[5:]
    assert 2000 < hits < 18_000 and near_cut > 10_000  # both answers, and texts that are cut


def test_extraction_title_match_is_the_best_of_both_measures() -> None:
    """With the similarity of the printed title at 1.0 the words of the text are not read: the
    answer is what the plain definition (the best of both measures over all titles) gives."""
    def plain(titles: list[str], extraction: dict) -> float | None:
        found = extraction.get("title") or ""
        text = (extraction.get("content") or "")[:documents.MATCH_TEXT_CHARS]
        if not titles or (not found and not text):
            return None
        head = documents._squash_title(text)
        if head and any(documents._squash_title(t) in head for t in titles):
            return 1.0
        return max(max(documents.title_similarity(t, found) if found else 0.0, together(t, text)) for t in titles)

    def together(title: str, text: str) -> float:
        """The most of the title's words in any window of the text, every window tried."""
        words = {w.casefold() for w in documents._TITLE_WORD_RE.findall(title)}
        if len(words) < 3:
            return 0.0
        span = max(documents.TITLE_WINDOW_FACTOR * len(title), documents.TITLE_WINDOW_MIN_CHARS)
        hits = [(m.start(), m.group().casefold()) for m in documents._TITLE_WORD_RE.finditer(text)
                if m.group().casefold() in words]
        # short words the text repeats count only beside one it does not
        common = {w for w in words if len(w) <= documents.COMMON_WORD_CHARS
                  and sum(h == w for _, h in hits) >= documents.COMMON_WORD_TIMES}
        windows = [{w for p, w in hits if start <= p <= start + span} for start, _ in hits]
        best = max((len(found) for found in windows if found - common), default=0)
        if 2 * best <= len(words):  # half of them or fewer: no evidence
            return round(min(best / len(words), documents.TITLE_MATCH_MIN - 0.0001), 4)
        return round(best / len(words), 4)

    rng = random.Random(9)
    words = ["deep", "learning", "river", "sediment", "dynamics", "Über", "Flüsse", "model", "the", "of", "Ünïcode"]
    for _ in range(3_000):
        titles = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(0, 2))]
        found = rng.choice(["", *titles, " ".join(rng.choice(words) for _ in range(4))]) if titles else ""
        content = " ".join(rng.choice(words) for _ in range(rng.randint(0, 400)))
        extraction = {"title": found, "content": content}
        assert documents.extraction_title_match(titles, extraction) == plain(titles, extraction), (titles, found)


def test_line_breaks_at_the_ends_leave_the_rest_to_its_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Line breaks before and after a text in normal or wrapped layout (what is left when a
    heading line is cut off an abstract) are dropped and the rest takes its fast path: the
    result is the full normalization's."""
    cores = _texts(list("ab fi") + ["\n", "\n\n", "中", "\u0301", "ﬁ", "é"], 5000, seed=6, max_len=20)
    fast = 0
    for k, core in enumerate(cores):
        text = "\n" * (k % 4) + core + "\n" * ((k // 4) % 3)
        stripped = text.strip("\n")
        fast += bool(stripped) and text != stripped and textclean.text_layout(stripped) != textclean.OTHER_LAYOUT
        assert normalize_text(text) == _slow_normalize(text, monkeypatch), repr(text)
    assert fast > 1000


def test_count_letters_and_the_alnum_share_are_the_plain_counts() -> None:
    """`count_letters` counts ASCII letters as bytes and asks the other characters one by one
    only when they are not all letters; `_few_alnum` decides from the ASCII letters and digits
    when they suffice. Both give the plain counts on texts of every kind of character."""
    alphabet = ["a", "Z", "7", " ", "-", "é", "ñ", "—", "«", "中", "٣", "²", "ß", "\ud800", "\U0001d400", "\u0301", "_", "…"]
    for seed, weights in ((10, None), (11, [9] * 4 + [1] * 14)):
        rng = random.Random(seed)
        for _ in range(20_000):
            text = "".join(rng.choices(alphabet, weights=weights, k=rng.randint(0, 60)))
            assert textclean.count_letters(text) == sum(map(str.isalpha, text)), repr(text)
            visible = sum(map(len, text.split()))
            assert textclean._few_alnum(text, visible) == (len(alnum_only(text)) * 3 < visible), repr(text)
