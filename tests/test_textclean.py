"""Text cleaning: JATS/HTML/MathML markup, whitespace, abstract headings, token counts."""

import pytest

from openmsd_build.core.textclean import clean_abstract, clean_title, count_tokens, normalize_text, strip_markup


def test_jats_abstract_keeps_text_and_paragraphs_and_drops_heading():
    raw = (
        "<jats:sec><jats:title>Abstract</jats:title><jats:p>We study <jats:italic>x</jats:italic> in"
        " <jats:sub>2</jats:sub>D.</jats:p><jats:p>Second &amp; last.</jats:p></jats:sec>"
    )
    assert clean_abstract(raw) == "We study x in 2D.\n\nSecond & last."


def test_greedy_regex_bug_is_absent():
    # "</?jats:.+>" deleted everything between the first and last tag
    assert clean_abstract("<jats:p>Keep <jats:bold>all</jats:bold> of this.</jats:p>") == "Keep all of this."


def test_mathml_title_keeps_math_text():
    title = 'Bounds for <mml:math xmlns:mml="x"><mml:msup><mml:mi>n</mml:mi><mml:mn>2</mml:mn></mml:msup></mml:math> sums'
    assert clean_title(title) == "Bounds for n2 sums"  # inline tags leave no space inside a token


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("plain title", "plain title"),
        ("  many   spaces  ", "many spaces"),
        ("tab\tand\u00a0nbsp", "tab and nbsp"),
        ("zero\u200bwidth", "zerowidth"),
        ("cafe\u0301", "caf\u00e9"),  # NFC
        ("line\nwrapped\n\nnew paragraph", "line wrapped\n\nnew paragraph"),
        # noncharacters are no text; a terminal's colour codes go whole, not only their ESC
        ("A title\uffff of \ufdd0things\U0001fffe", "A title of things"),
        ("Red \x1b[31mtext\x1b[0m and \x1b]0;window\x07done", "Red text and done"),
        ("an ESC alone\x1b, an unfinished \x1b[", "an ESC alone, an unfinished ["),
        ("an ESC before \x1b[ and \x1b[12] text, \x1b[3~a key", "an ESC before [ and [12] text, a key"),
        # C1 0x9B is cp1252's "›" read as Latin-1, before a word: only the control goes
        ("\x9bAbstract and \x9b31m", "Abstract and 31m"),
    ],
)
def test_normalize_text(raw, expected):
    assert normalize_text(raw) == expected


def test_fast_and_slow_paths_agree_on_one_line_text():
    for text in ["a  b", " x ", "ünïcödé  text", "日本語 の テキスト"]:
        assert normalize_text(text) == normalize_text(text + "\u200b")


def test_escaped_tags_and_leading_abstract_prefix():
    assert strip_markup("&lt;i&gt;Escaped&lt;/i&gt; tags") == "Escaped tags"
    assert clean_abstract("Abstract: The text.") == "The text."
    assert clean_abstract("ABSTRACT We show things.") == "We show things."
    assert clean_abstract("Resumo\nO texto em português.") == "O texto em português."


def test_count_tokens_counts_cjk_characters():
    assert count_tokens("deep learning 深度学习") == 2 + 4
    assert count_tokens("") == 0


def test_ligature_sites_are_the_words_next_to_a_ligature() -> None:
    """`_ligature_sites` (a regex over the text) names exactly the spaces the per-word test
    `parts[k].endswith(ligature) or parts[k + 1].startswith("ff")` names, in order: random
    texts of ligature pieces, letters, digits, punctuation and single or double spaces."""
    import random

    from openmsd_build.core import textclean as T

    rng = random.Random(1)
    pieces = ["fi", "ff", "fl", "ffi", "ffl", "f", "i", " ", " ", " ", "  ", "a", "e", "c", "x", "Th", "1", "(", "é"]
    found = 0
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        parts = text.split(" ")
        want = [k for k in range(len(parts) - 1) if parts[k].endswith(T._LIGATURES) or parts[k + 1].startswith("ff")]
        assert T._ligature_sites(text, parts) == want, text
        found += len(want)
    assert found > 10_000


_ABSTRACT = "We study X in 2,000 sites of a large basin.\n\nWe find that Y explains most of X."


@pytest.mark.parametrize("tail", [
    "\n\nKeywords: a; b; c",
    "\n\nKey words: a, b\n\nAbbreviations: X, x",
    "\n\nPALAVRAS-CHAVE: a; b",
    "\n\n关键词：甲；乙",
])
def test_a_keywords_paragraph_under_the_abstract_is_cut_with_what_follows(tail):
    assert clean_abstract(_ABSTRACT + tail) == _ABSTRACT
    html = "".join(f"<p>{p}</p>" for p in (_ABSTRACT + tail).split("\n\n"))
    assert clean_abstract(html) == _ABSTRACT


@pytest.mark.parametrize("raw", [
    "Keywords: a first paragraph that is all there is.",
    "Keywords are important in our study of X.\n\nWe find Y.",
    "We study X.\n\nKeywords play a role in Y.",
    "Extent: 30 pages.\n\nKeywords: a; b.\n\nThe aim of the work is X; the method is Y; the result is Z.",
])
def test_the_keywords_word_inside_the_text_is_kept(raw):
    assert clean_abstract(raw) == strip_markup(raw, keep_paragraphs=True).strip()


def test_a_length_floor_is_fair_to_cjk_text():
    from openmsd_build.core.textclean import weighted_length

    japanese = "本稿では、気候リスクの認知と湿地の生物多様性との関係について検討した。二つの群の間に有意な差は見られなかった。"
    assert len(japanese) < 100 <= weighted_length(japanese)
    assert weighted_length("Too short to be an abstract.") == len("Too short to be an abstract.")


@pytest.mark.timeout(30)  # a hang guard: the keywords search was cubic in a run of blank lines
def test_a_long_run_of_blank_lines_is_searched_in_linear_time():
    from openmsd_build.core.textclean import _without_keywords

    text = "We study X." + "\n" * 200_000 + "We find Y."
    assert _without_keywords(text) == text
    assert _without_keywords(text + "\n\nKeywords: a") == text


def test_ascii_token_count_is_the_regex_count() -> None:
    """`count_tokens` counts an ASCII text's words in bytes: the same count as `\\w+`."""
    import random
    import re

    rng = random.Random(3)
    alphabet = "ab_Z09 \t\n.,;-'\"()\x00\x7f"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
        assert count_tokens(text) == len(re.findall(r"\w+", text)), repr(text)


def test_ascii_letter_counts_and_word_keys_are_the_general_ones() -> None:
    """`count_letters` and `word_chars` do ASCII text in bytes: the same answers as
    `str.isalpha` per character and `re.sub(r"\\W+", "", text.lower())`."""
    import random
    import re

    from openmsd_build.core.textclean import count_letters, word_chars

    rng = random.Random(5)
    for _ in range(5000):
        text = "".join(chr(rng.randrange(128)) for _ in range(rng.randint(0, 40)))
        assert count_letters(text) == sum(map(str.isalpha, text))
        assert word_chars(text) == re.sub(r"\W+", "", text.lower())
    assert count_letters("Ärger über 12 Öfen") == 13 and word_chars("Ärger_über, 12!") == "ärger_über12"


def test_a_title_of_nothing_visible_is_no_title() -> None:
    """Titles of zero-width joiners, tag characters, bidi overrides, combining marks or emoji
    alone were kept (title_rule metadata, 0 tokens) and their papers paired; tag characters
    and overrides inside a real title stayed in it."""
    for invisible in ("\u200c\u200d\u2060\u200c", "\U000e0048\U000e0069\U000e0064\U000e0065", "\u202e\u202d",
                      "\ufe0f\ufe0f", "\u0301\u0302", "\U0001f9ec\U0001f52c", "---"):
        assert clean_title(invisible) == "", repr(invisible)
    assert clean_title("Title\U000e0041\U000e0042 hidden tags") == "Title hidden tags"
    assert clean_title("\u202eecnerefni lacitsitats\u202c") == "ecnerefni lacitsitats"
    for kept in ("Über Flüsse", "مقدمة", "蛋白质折叠", "2020", "π", "\ue001\ue002 glyphs"):
        assert clean_title(kept) == kept
