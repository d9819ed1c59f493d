"""The evidence a document is built with (the paper's metadata title against what was fetched),
the provenance columns (which rule produced the kept title and abstracts), and the precision
rules of abstracts: an entry of `abstracts` must be an abstract, and when unsure it is left out
with a counted reason."""

from __future__ import annotations

from openmsd_build.text.documents import (
    build_document,
    extraction_title_match,
    title_similarity,
    wrong_abstract_reason,
)
from openmsd_build.text.extract.pdf import _find_abstracts

PT = ("Este estudo avalia a utilização do índice-h como medida do impacto bibliográfico da produção "
      "científica de pesquisadores brasileiros, comparando três fontes de dados diferentes e seus resultados.")
EN = ("This study evaluates the use of the h-index as a measure of the bibliographic impact of the "
      "scientific production of Brazilian researchers, comparing three different data sources and results.")
EN_BODY = " ".join(["The survey of forest soils in the northern valleys measured carbon, nitrogen and the "
                    "microbial biomass of every plot twice a year, and the results were compared across sites."] * 20)
TITLE = "Soil microbial biomass in the northern valleys"


def test_title_similarity_ignores_case_spacing_and_subtitles() -> None:
    assert title_similarity("Soil <i>microbial</i> biomass", "SOIL MICROBIAL BIOMASS") == 1.0
    assert title_similarity(TITLE, TITLE + ": a survey") == 1.0
    assert title_similarity("基于多通道LSTM的不平衡情绪分类方法", "基于多通道LSTM的不平衡情绪分类") == 1.0
    assert title_similarity(TITLE, "Freedom, Security & Justice: European Legal Studies") < 0.3
    assert title_similarity("", TITLE) == 0.0


def test_title_match_is_one_when_the_document_prints_the_metadata_title() -> None:
    extraction = {"kind": "pdf", "title": "Journal of Valleys", "content": f"Journal of Valleys\n{TITLE}\n{EN_BODY}"}
    assert extraction_title_match([TITLE], extraction) == 1.0
    assert extraction_title_match([], extraction) is None
    row, outcome = build_document({"doi": "10.1/a", "title": TITLE}, [extraction])
    assert outcome == "kept" and row["title_match"] == 1.0
    assert row["title"] == TITLE and row["title_rule"] == "metadata"


def test_title_words_count_only_together() -> None:
    """Another paper holds most of a title's common words somewhere in its first pages: that
    is no evidence of the title, and the document is another text. The same words printed
    together (a title broken by a line break and a hyphen) still are."""
    title = "Different effects of the analysis of forest soils in northern regions"
    scattered = "\n".join([
        "Different colonies of wetland birds were counted along the coast during three breeding seasons, and "
        "each nest was visited weekly by two observers who recorded clutch size, hatching and fledging success.",
        "The effects of tidal flooding on nest survival were strong in low marshes, where most clutches were lost "
        "to spring tides, while nests placed on higher ground survived at rates close to those of earlier studies.",
        "Our analysis follows the logistic exposure method, which accounts for the days each nest was observed and "
        "allows survival to vary with nest height, vegetation cover, date and the age of the clutch or brood.",
        "The forest edge near the upper marsh held predators such as foxes and crows, and nests within fifty "
        "metres of it failed more often, which suggests that edges concentrate predation on ground nesting birds.",
        "Soils of the upper marsh were sandier and drained faster after high water, which may explain why the "
        "vegetation there was taller and why birds preferred it when they built their nests late in the season."])
    other = {"kind": "pdf", "url": "u", "title": "A study of wetland birds", "content": scattered}
    assert extraction_title_match([title], other) < 0.5  # 5 of its 7 words, never two together
    # printed with a footnote number inside: not the title's squashed letters, its words together
    marked = {"kind": "pdf", "url": "u", "title": "", "content": "Different effects of the analysis of forest "
              "soils1 in\nnorthern regions\n" + scattered}
    assert extraction_title_match([title], marked) == 1.0
    dropped: list[tuple[str, str]] = []
    row, outcome = build_document({"doi": "10.1/w", "title": title}, [other], dropped)
    assert row is None and outcome == "title_mismatch" and dropped == [("pdf", "title_mismatch_content")]


def test_another_text_in_the_same_language_gives_no_text_and_is_counted() -> None:
    other = {"kind": "pdf", "url": "u", "title": "Front matter of volume 12", "abstract": EN,
             "abstracts": [{"text": EN, "rule": "abstract_heading", "heading": "Abstract"}], "content": EN_BODY}
    dropped: list[tuple[str, str]] = []
    title = "Quantum error correction with cat qubits in cavities and what they tell us about coherence"
    row, outcome = build_document({"doi": "10.1/b", "title": title}, [other], dropped)
    assert row is None and outcome == "title_mismatch"
    assert ("pdf", "title_mismatch") in dropped


def test_another_text_is_only_declared_when_the_languages_are_sure() -> None:
    # a short metadata title CLD3 cannot place: the document is kept (precision of the rule)
    other = {"kind": "pdf", "url": "u", "title": "Front matter of volume 12", "content": EN_BODY}
    row, outcome = build_document({"doi": "10.1/b2", "title": "Quantum error correction with cat qubits"}, [other])
    assert outcome == "kept" and row["title_match"] < 0.5


def test_a_front_page_printing_another_papers_doi_is_another_text(real_samples) -> None:
    """A file saved under the wrong paper (here EFSA's opinion as a Rosa karyotype paper, as a
    user's `--fetch local:` folder may hold it) was kept as that paper's abstract and text: its
    title agrees at 0.17, but CLD3 cannot place the short metadata title, so the language rule
    was unsure. The PDF's front page prints its own DOI, of another registrant, and the
    paper's DOI is nowhere in it: that is evidence enough, unless the metadata title is reliably
    in another language (a translation prints its own DOI). Its own paper keeps it; a page that
    prints the paper's registrant, or no DOI, is still used when unsure."""
    from openmsd_build.text.extract.pdf import extract_pdf

    pdf = (real_samples / "pdf" / "crminer__10.2903_j.efsa.2014.3550.pdf").read_bytes()
    efsa = {**extract_pdf(pdf), "kind": "pdf", "url": "file:///papers/10.3897_compcytogen.v10i4.9536.pdf"}
    rosa = {"doi": "10.3897/compcytogen.v10i4.9536", "title": "Towards a FISH-based karyotype of Rosa L. (Rosaceae)"}
    dropped: list[tuple[str, str]] = []
    row, outcome = build_document(rosa, [efsa], dropped)
    assert (row, outcome) == (None, "title_mismatch") and ("pdf", "title_mismatch_content") in dropped
    own = {"doi": "10.2903/j.efsa.2014.3550", "title": efsa["title"]}
    assert build_document(own, [efsa])[1] == "kept"
    # the same registrant (a correction's DOI, the paper's own cut at a line end), or no DOI: unsure, used
    same = {**efsa, "content": efsa["content"].replace("10.2903/j.efsa.2014.3550", "10.3897/compcytogen.v10i4.95")}
    assert build_document(rosa, [same])[1] == "kept"
    bare = {**efsa, "content": efsa["content"].replace("doi:10.2903/j.efsa.2014.3550", "")}
    assert build_document(rosa, [bare])[1] == "kept"
    # a translation prints its own DOI: metadata reliably in another language keeps it
    russian = {"doi": "10.31857/s0000000000000001", "title": "Эндогенный оборот формальдегида у человека в сравнении "
               "с экзогенным поступлением из пищевых источников"}
    assert build_document(russian, [efsa])[1] == "kept"
    # a page without a title of its own is never another text (`main_text_needed` relies on it)
    assert build_document(rosa, [{**efsa, "title": None}])[1] == "kept"


def test_a_translated_metadata_title_is_not_taken_for_another_text() -> None:
    body = " ".join([PT] * 12)
    doc = {"kind": "pdf", "url": "u", "title": "Diferenças entre as medidas do índice-h", "content": body,
           "abstracts": [{"text": PT, "rule": "abstract_heading", "heading": "Resumo"}], "rules": {"title": "largest_font"}}
    row, outcome = build_document({"doi": "10.1/c", "title": "Differences between h-index measures of Brazilian researchers"},
                                  [doc])
    assert outcome == "kept" and row["title_match"] < 0.5
    assert row["abstract"] == PT and row["abstract_rule"] == "abstract_heading:Resumo"
    assert row["abstract_rules"] == ["abstract_heading:Resumo"]


def test_rules_of_page_titles_and_unlabelled_abstracts_are_recorded() -> None:
    page = {"kind": "landing", "url": "u", "title": TITLE, "rules": {"title": "citation_title"},
            "abstracts": [{"text": EN, "rule": "citation_abstract"}], "content": None}
    pdf = {"kind": "pdf", "url": "p", "abstracts": [{"text": PT, "rule": "abstract_heading", "heading": ""}]}
    row, _ = build_document({"doi": "10.1/d"}, [page, pdf])
    assert row["title_rule"] == "citation_title" and row["title_match"] is None
    assert row["abstract_rules"] == ["citation_abstract", "unlabelled"]


def test_a_short_part_of_another_language_is_not_an_abstract() -> None:
    epigraph = "The consciousness of loving and being loved brings a warmth and a richness to life. Oscar Wilde"
    italian = " ".join(["Il presente documento descrive il lavoro svolto durante il periodo di stage presso "
                        "l'azienda, con la progettazione di una base di dati a grafo per una applicazione antifrode."] * 3)
    dropped: list[tuple[str, str]] = []
    row, _ = build_document({"doi": "10.1/e"}, [{"kind": "pdf", "url": "u", "abstract": f"{italian}\n\n{epigraph}"}], dropped)
    assert [a["language"] for a in row["abstracts"]] == ["it"]
    assert ("pdf", "split_part_short") in dropped
    # a translation about as long as the abstract stays (a 34-word German and 33-word English pair)
    row, _ = build_document({"doi": "10.1/f"}, [{"kind": "pdf", "url": "u", "abstract": f"{PT}\n\n{EN}"}])
    assert [a["language"] for a in row["abstracts"]] == ["pt", "en"]


def test_a_numbered_list_of_sections_is_a_table_of_contents() -> None:
    text = ("1. Does the Directive protect indigenous peoples' right to food? – 2. The limited scope ratione materiae "
            "of the Directive – 3. The definition of adverse impacts – 4. Concluding remarks on future prospects.")
    assert wrong_abstract_reason(text) == "table_of_contents"
    assert wrong_abstract_reason("In 1. the first group and 2. the second group were compared; 3. none.") is None


def test_pdf_abstract_ends_at_front_matter_headings_and_footnotes() -> None:
    for stop in ("Ringraziamenti", "Acknowledgements", "Indice", "Elenco delle figure", "Agradecimentos", "Danksagung",
                 "Anahtar Sözcükler: PISA", "* Ricercatrice in Diritto internazionale, Università di Milano",
                 "Kulcsszavak: oktatás", "Palabras-clave: salud"):
        found = _find_abstracts(["Title", "Abstract", EN, EN, stop, "Text that is not the abstract at all."])
        assert found and found[0][0] == f"{EN} {EN}", stop


def test_keywords_printed_first_under_the_heading_do_not_end_the_abstract() -> None:
    lines = ["РЕФЕРАТ", "Обсяг роботи 30 сторінок, 13 ілюстрацій.", "Ключові слова: SVM, КЛАСИФІКАЦІЯ,",
             "HINGE LOSS, SCIKIT-LEARN.", "Об’єктом роботи є субградієнтний метод, недиференційовна опукла функція",
             "втрат hinge loss, яка фігурує в контексті задачі бінарної класифікації методом опорних векторів."]
    found = _find_abstracts(lines)
    assert found and found[0][0].startswith("Обсяг роботи") and "SCIKIT" in found[0][0] and "Об’єктом роботи" in found[0][0]


def test_a_cover_page_gives_way_to_the_title_above_the_abstract(real_samples) -> None:
    # a journal issue's cover (journal name, class, year: a dozen words), its masthead and
    # contents come before the article: the title is the one printed above the abstract
    from openmsd_build.text.extract.pdf import extract_pdf

    path = real_samples / "pdf-multilingual" / "mpilhlt__10.26321_a.facchinetti.01.2025.05.pdf"
    result = extract_pdf(path.read_bytes())
    assert result["rules"]["title"] == "title_above_abstract"
    assert result["title"].startswith("DOES THE EU CORPORATE SUSTAINABILITY DUE DILIGENCE DIRECTIVE")


FR = ("Du point de vue de la création, c'est-à-dire du point de vue de ce qui relie la diversité de ce que je fais, "
      "il y a une relation au vivant, à l'imaginaire et au contemporain que cet essai cherche à décrire.")
EN_FR = ("From the point of view of creation, that is to say from the point of view of what connects the diversity "
         "of what I do, there is a relationship to the living, the imaginary and the contemporary.")


def test_a_page_body_agreeing_with_the_publisher_tag_outweighs_an_english_title() -> None:
    body = " ".join([FR.replace("Du point", "Le point")] * 15)
    page = {"kind": "landing", "url": "u", "title": "How can a place enter our skin down to the very verb of us",
            "abstracts": [{"text": EN_FR, "rule": "citation_abstract"}, {"text": FR, "rule": "citation_abstract"}],
            "content": body, "language_hints": ["fr"]}
    row, _ = build_document({"doi": "10.1/g"}, [page])
    assert row["language"] == "fr" and row["abstract"] == FR
    # without the publisher's tag the page text alone does not decide (it may be the interface)
    row, _ = build_document({"doi": "10.1/h"}, [{**page, "language_hints": []}])
    assert row["language"] == "en"


def test_a_damaged_text_layer_is_refused_with_a_reason() -> None:
    from openmsd_build.core.textclean import text_layer_damage

    glyphs = " ".join("\ue001\ue002\ue003\ue004" for _ in range(40))
    assert text_layer_damage(glyphs) == "private_use_glyphs"
    assert text_layer_damage("Ã©tude de la rÃ©gion prÃ¨s de la cÃ´te") == "utf8_read_as_latin1"
    assert text_layer_damage("!\"#$%&'()*+,-./0123 456789:;<=>?@[]^_`{|}~!\"#$%&") == "symbols_not_letters"
    assert text_layer_damage("The value x = 3.5 ± 0.2 (p < 0.05) was 12% higher than the 2019 data [1-3].") is None
    assert text_layer_damage(EN) is None and text_layer_damage(PT) is None
    dropped: list[tuple[str, str]] = []
    pdf = {"kind": "pdf", "url": "u", "title": "\ue001\ue002\ue003 \ue004\ue005\ue006 \ue007\ue008\ue009\ue00a",
           "abstracts": [{"text": glyphs, "rule": "abstract_heading", "heading": "Abstract"}, {"text": EN}],
           "content": glyphs * 30}
    row, outcome = build_document({"doi": "10.1/i"}, [pdf], dropped)
    assert outcome == "kept" and row["title"] is None and row["abstract"] == EN and row["content"] is None
    assert {reason for _, reason in dropped} == {"text_layer_damaged", "title_text_layer_damaged",
                                                 "content_text_layer_damaged"}


def test_damage_counts_in_c_agree_with_the_per_character_tests() -> None:
    """`text_layer_damage` counts visible and alphanumeric characters with `str.split` and a
    regex: on every code point they agree with `str.isspace` and `str.isalnum`, so the
    damage signs are what the per-character definition gives."""
    import sys

    from openmsd_build.core.textclean import _NOT_ALNUM_RE

    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        ch = chr(code)
        assert (len(f"a{ch}b".split()) == 2) == ch.isspace(), hex(code)
        assert (_NOT_ALNUM_RE.sub("", ch) == ch) == ch.isalnum(), hex(code)


def test_damage_signs_of_ascii_text_are_those_of_the_general_rule() -> None:
    """The ASCII path of `text_layer_damage` (bytes deleted by `translate`) answers as the
    general one on texts of control characters, symbols and letters."""
    import random

    from openmsd_build.core import textclean

    rng = random.Random(7)
    alphabet = [chr(c) for c in range(128)]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        expected = textclean.text_layer_damage(text + "\u00a0")  # one non-ASCII space: the general path
        assert textclean.text_layer_damage(text) == expected, repr(text)


def test_ascii_titles_squash_as_the_general_rule() -> None:
    """`_squash_title`'s ASCII path (bytes lower-cased and deleted) and the head's words
    lower-cased first give what NFKC, case folding and the regex give."""
    import random
    import re
    import unicodedata

    from openmsd_build.text.documents import _TITLE_WORD_RE, _squash_title

    rng = random.Random(11)
    for _ in range(5000):
        text = "".join(chr(rng.randrange(128)) for _ in range(rng.randint(0, 40)))
        assert _squash_title(text) == re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", text).casefold())
        assert set(_TITLE_WORD_RE.findall(text.lower())) == {w.casefold() for w in _TITLE_WORD_RE.findall(text)}


def test_the_body_language_is_read_from_a_bounded_slice(monkeypatch) -> None:
    """A body's language is asked of `BODY_SAMPLE_CHARS` characters: a third of the way in when
    the body is long (past the front matter, often in English), from the start otherwise."""
    from openmsd_build.text import documents

    asked: list[str] = []
    monkeypatch.setattr(documents, "detect_language", lambda _title, text=None: asked.append(text) or ("de", 0.9, True))
    long_body = "Front matter in English. " * 200 + "Die Ergebnisse der Messungen zeigen. " * 400
    assert documents._sample_language(long_body) == ("de", True)
    start = len(long_body) // 3
    assert asked == [long_body[start:start + documents.BODY_SAMPLE_CHARS]]
    short_body = "Die Ergebnisse der Messungen zeigen. " * 100  # under 3 * LANGUAGE_TEXT_CHARS: from the start
    documents._sample_language(short_body)
    assert asked[-1] == short_body[:documents.BODY_SAMPLE_CHARS]
    assert documents.BODY_SAMPLE_CHARS <= documents.LANGUAGE_TEXT_CHARS


def test_a_body_that_outweighs_its_abstract_labels_the_paper_from_the_same_sample(monkeypatch) -> None:
    """A German PDF body with only an English abstract: the paper is German, and its label
    is CLD3's answer on the very slice the body's language was read from (`_body_sample`),
    so the two never disagree and the second ask is the memo's."""
    from openmsd_build.text import documents

    asked: list[str | None] = []
    real = documents.detect_language
    monkeypatch.setattr(documents, "detect_language",
                        lambda title, text=None: asked.append(text) or real(title, text))
    sentences = ["Die Untersuchung der Waldböden in den nördlichen Tälern hat Kohlenstoff und Stickstoff gemessen.",
                 "Die mikrobielle Biomasse jeder Fläche wurde zweimal im Jahr bestimmt und verglichen.",
                 "Die Ergebnisse zeigen deutliche Unterschiede zwischen den Standorten und den Jahreszeiten.",
                 "Wir diskutieren die Bedeutung dieser Befunde für die Bewirtschaftung der Wälder."]
    body = " ".join(sentences[k % 4] for k in range(160))
    pdf = {"kind": "pdf", "url": "p", "title": TITLE, "abstracts": [{"text": EN, "rule": "abstract_heading"}],
           "content": body}
    row, outcome = build_document({"doi": "10.1/de", "title": TITLE}, [pdf])
    assert outcome == "kept" and row["content_source"] == "pdf" and row["abstract"] == EN
    assert row["language"] == "de"
    sample = documents._body_sample(body)
    assert asked[-1] == sample and asked.count(sample) == 2  # the body's language, then the label
    assert (row["language"], row["language_prob"], row["language_reliable"]) == real(None, sample)


def test_a_title_half_found_by_its_function_words_is_no_evidence():
    """A manifest mapped a urology paper to a German thesis: "durch" and "eine", found together
    in any German text, were half of "Penisverletzung durch eine Moulinette", and half was
    enough (0.5), so the thesis became the paper's text. Short words the text repeats are the
    language's, and half of a title is no evidence; a title whose own words are found
    together still is."""
    from openmsd_build.text.documents import TITLE_MATCH_MIN, _word_coverage

    thesis = ("Die Arbeit untersucht, wie durch eine Analyse von Beiträgen und durch eine Auswertung der Kommentare "
              "eine Haltung entsteht, die durch eine Gruppe getragen wird. ") * 6
    title = "Penisverletzung durch eine Moulinette"
    assert _word_coverage(title, thesis) < TITLE_MATCH_MIN
    assert _word_coverage(title, "Fallbericht: Moulinette und eine Penisverletzung durch Unfall. " + thesis) >= 0.75
    # short topic words the paper's own text repeats are still its title's words
    maize = "Uptake of water by the roots of maize. " + "Water, maize and roots were measured again. " * 10
    assert _word_coverage("Water uptake by maize roots", maize) == 1.0
    # half the words, none of them common: still no evidence; most of them is
    assert _word_coverage("Nitrate groundwater farmers climate", "nitrate in groundwater") < TITLE_MATCH_MIN
    assert _word_coverage("Nitrate groundwater farmers climate", "groundwater nitrate of farmers") == 0.75
