"""Text layers that need reading before any rule can use them (legacy 8-bit font encodings,
hyphens at line breaks) and the precision rules of `abstracts` (a block that ran past its end,
a heading printed twice, a reference list): small made-up inputs, plus the real PDFs that show
each class in ../shared/real-samples."""

from __future__ import annotations

import pytest

from openmsd_build.text.documents import abstract_entries, looks_like_bibliography, wrong_abstract_reason
from openmsd_build.text.extract.legacy_fonts import choose_encoding, decode_line, decode_text, legacy_signs
from openmsd_build.text.extract.pdf import (
    _ABSTRACT_ALONE_RE,
    _reads_as_prose,
    _title_line_ok,
    extract_pdf,
    resolve_breaks,
)

TCVN3_TITLE = "nghiªn cøu ¶nh h-ëng cña chÕ ®é c¾t ®Õn ®é nh¸m bÒ mÆt\nkhi mµi trßn ngoµi thÐp"
VI_TITLE = "nghiên cứu ảnh hưởng của chế độ cắt đến độ nhám bề mặt\nkhi mài tròn ngoài thép"
EN = ("This study evaluates the use of the h-index as a measure of the bibliographic impact of the "
      "scientific production of Brazilian researchers, comparing three different data sources and results. ")
DE = ("Seit dem Ende des siebzehnten Jahrhunderts etablierte sich in zahlreichen Territorien des Alten Reichs "
      "eine neue Gattung periodischer Schriften, die Staatskalender, Adresskalender und Amtshandbücher. ")
REFERENCES = ("Chang, Chung-Yuan. 1971. Original Teachings of Ch'an Buddhism. New York: Pantheon Books. "
              "Dumoulin, Heinrich. 1988. Zen Buddhism: A History. New York: Macmillan. "
              "Yampolsky, Philip B. 1967. The Platform Sutra of the Sixth Patriarch. New York: Columbia University Press. "
              "McRae, John R. 2003. Seeing through Zen. Berkeley: University of California Press. "
              "Faure, Bernard. 1991. The Rhetoric of Immediacy: A Cultural Critique of Chan/Zen Buddhism. "
              "Princeton: Princeton University Press.")


def test_a_tcvn3_line_reads_as_the_vietnamese_it_draws() -> None:
    page = f"{TCVN3_TITLE}\nTóm tắt: Mài thường được chọn là nguyên công gia công lần cuối các bề mặt."
    assert legacy_signs(page) >= 2
    assert choose_encoding(page) == "tcvn3"
    decoded = decode_text(page, "tcvn3")
    assert decoded.split("\n")[:2] == VI_TITLE.split("\n")
    assert decoded.split("\n")[2] == page.split("\n")[2]  # a Unicode line is left alone


def test_t1_reads_central_european_letters() -> None:
    assert decode_line("Zakon o za²titi okoli²a i ºivotinja ¢e biti", "t1") == "Zakon o zaštiti okoliša i životinja će biti"
    assert choose_encoding("Zakon o za²titi okoli²a i ºivotinja u Republici Hrvatskoj ¢e biti donesen") == "t1"


@pytest.mark.parametrize("text", [
    "La col·lecció de la intel·ligència artificial i la col·laboració entre universitats catalanes",
    "Se aplicaron 50 mg·kg-1 de fertilizante y 12 μmol·m-2·s-1 de luz\nLa dosis de 5 mg·L-1 de cobre redujo el crecimiento",
    "Es wurden 5 mg·kg-1 Körpergewicht verabreicht und die Werte gemessen",
    "la «laïcité»dans la république française et ses «valeurs»dans l'école publique",
    "A 1ª edição da revista nº 3 foi publicada em 2019 pela editora da universidade",
    "Copyright © 2020 the authors; published under CC BY 4.0 «open access» terms",
    "te´orica e Econom´ıa: a TeX spacing accent is the accent repair's, not an encoding",
])
def test_real_orthographies_are_not_read_as_a_legacy_encoding(text: str) -> None:
    assert choose_encoding(text) is None


def test_a_tcvn3_page_reads_its_lines_without_a_sign_inside_a_word_and_leaves_hyphens_of_words() -> None:
    decoded = decode_text(f"{TCVN3_TITLE}\nKü thuËt ®iÖn tö\nWi-Fi và e-mail", "tcvn3").split("\n")
    assert decoded[2] == "Kỹ thuật điện tử"
    assert decoded[3] == "Wi-Fi và e-mail"  # no TCVN3 code in it: kept as it is
    assert decode_line("h-ëng e-mail", "tcvn3") == "hưởng e-mail"


def test_a_line_break_hyphen_keeps_a_compound_the_document_writes_with_one() -> None:
    evidence = "архитектура сервис-ориентированных приложений; данные ориентированы на пользователя"
    lines = ["управления сервис\ufffeориентированными научными", "ориенти\ufffeрованными", "plain"]
    assert resolve_breaks(lines, evidence + " сервис-ориентированными") == [
        "управления сервис-ориентированными научными", "ориентированными", "plain"]
    assert resolve_breaks(["сервис\ufffeориентированными"], "no evidence here") == ["сервисориентированными"]


def test_a_heading_numbered_as_the_first_section_opens_an_abstract() -> None:
    for heading in ("I. Özet", "1. Abstract", "0 Summary", "Resumo"):
        assert _ABSTRACT_ALONE_RE.match(heading), heading
    for heading in ("7. Summary", "III. Resumo", "2 Abstract"):
        assert not _ABSTRACT_ALONE_RE.match(heading), heading


def test_author_lists_affiliations_and_prose_are_not_titles() -> None:
    assert not _title_line_ok("이수정* , 류경록* , 이승예O")
    assert not _title_line_ok("Soojung Lee* , GyeoungRok Ryu* , SeungYe Lee")
    assert not _title_line_ok("Ana Silva¹, Carlos Souza², Maria Lima³")
    assert not _title_line_ok("*Dept. of Computer Science, Inha Technical College")
    for title in ("Retriever: Arama Amaçlı RAG Modülü", "¹H NMR spectroscopic study of hydrogen bonding in water",
                  "Comparing A*, IDA* and RBFS on sliding-tile puzzles", "Regularity of solutions in H¹, L² and BMO spaces"):
        assert _title_line_ok(title), title
    assert _reads_as_prose(["In this paper we present a new method for the analysis of data and results, " * 3])
    assert not _reads_as_prose(["Efeitos do Treinamento Aeróbico sobre a Função Cognitiva de Idosos Saudáveis."])
    assert not _reads_as_prose(["A short title."])


ABSTRACT_LINE = ("Abstract. This paper studies the equation in detail and gives its solutions for all real "
                 "values of the parameter.")


def _pdf_titled(info_title: str) -> bytes:
    """One page holding an abstract in 10 pt (no title printed), whose Info dictionary's Title is `info_title`."""
    from pdf_bytes import pdf_file

    content = b"BT /F1 10 Tf 72 700 Td (" + ABSTRACT_LINE.encode("latin-1") + b") Tj ET"
    return pdf_file([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Title <FEFF" + info_title.encode("utf-16-be").hex().upper().encode() + b"> >>",
    ], info=6)


@pytest.mark.parametrize("name", ["\\\u2013 (1).hwp", "final version 2.odt", "Manuscript_v3 final.wpd",
                                  "Talk slides Lisbon.pptx", "Rev 2 of the paper.DOCX"])
def test_a_metadata_title_that_is_a_file_name_is_no_title(name) -> None:
    """A PDF's Info Title is often the name of the file it was made from; the word processors'
    formats are a class (a Korean conference PDF's was "\\\u2013 (1).hwp"), not one extension."""
    assert extract_pdf(_pdf_titled(name), titles=[None])["title"] in (None, ""), name


def test_a_metadata_title_naming_a_format_inside_it_is_kept() -> None:
    for title in ("Mining the pages of Wikipedia for word senses", "Key exchange over noisy channels",
                  "Listening data from Last.fm and the pages users keep"):
        assert extract_pdf(_pdf_titled(title), titles=[None])["title"] == title, title  # from the Info Title alone


def test_a_reference_list_is_not_an_abstract() -> None:
    assert looks_like_bibliography(REFERENCES)
    assert wrong_abstract_reason(REFERENCES) == "bibliography"
    cited = ("The theoretical framework is based on Oreg's resistance to change theory (2003), Bass's leadership "
             "theory (1990), Bandura's self-efficacy theory (2007) and Peplau and Perlman's loneliness theory (1982).")
    assert not looks_like_bibliography(cited)
    history = ("Industrialisation in Latin America began late. The first wave came in 1924. Chile, Argentina and "
               "Uruguay then built tariffs after the crash of 1929. Argentina, Brazil and Mexico had import "
               "substitution by 1940. The state led investment until the debt crisis of 1982.")
    assert not looks_like_bibliography(history)


def _entries(items: list[dict]) -> tuple[list[dict], list[tuple[str, str]]]:
    return abstract_entries({"doi": "10.1/x", "title": "T"}, [{"kind": "pdf", "url": "u", "abstracts": items}])


def test_a_block_cut_at_the_word_cap_keeps_only_its_first_language_run() -> None:
    block = f"{EN * 4}\n\n{DE * 4}"
    kept, dropped = _entries([{"text": block, "rule": "abstract_heading", "heading": "Abstract", "capped": True}])
    assert [e["language"] for e in kept] == ["en"] and dropped == [("pdf", "ran_past_end")]
    kept, dropped = _entries([{"text": block, "rule": "abstract_heading", "heading": "Abstract"}])
    assert sorted(e["language"] for e in kept) == ["de", "en"] and not dropped  # a bilingual block that ended


def test_a_paragraph_holding_an_abstract_and_its_translation_is_split_between_them() -> None:
    kept, dropped = _entries([{"text": (DE * 3 + EN * 3).strip(), "rule": "abstract_heading", "heading": "Abstract"}])
    assert [(e["language"], e["text"]) for e in kept] == [("de", (DE * 3).strip()), ("en", (EN * 3).strip())]
    assert not dropped


def test_a_one_language_paragraph_is_not_read_sentence_by_sentence(monkeypatch) -> None:
    """Its start and its end agree, so CLD3 reads those two, not each of its sentence pairs."""
    import openmsd_build.text.documents as documents

    texts: list[str] = []
    detect = documents.detect_language

    def counted(title, text=None):
        texts.append(text)
        return detect(title, text)

    monkeypatch.setattr(documents, "detect_language", counted)
    paragraph = (EN * 8).strip()
    assert documents._split_paragraph(paragraph) == [paragraph]
    assert len(texts) == 2
    assert documents._split_paragraph((DE * 4 + EN * 4).strip()) == [(DE * 4).strip(), (EN * 4).strip()]


def test_a_long_paragraph_split_by_language_keeps_all_its_text() -> None:
    """Sentences are looked for in the paragraph's first `SPLIT_SCAN_CHARS` characters; what
    comes after them ends the second part instead of being lost."""
    import openmsd_build.text.documents as documents

    english = "This " + EN.strip().rstrip(".").replace(". ", ", ") + ", "
    paragraph = (DE * 8).strip() + " " + (english * (documents.SPLIT_SCAN_CHARS // len(english) + 3)).strip() + "."
    assert len(paragraph) > documents.SPLIT_SCAN_CHARS
    parts = documents._split_paragraph(paragraph)
    assert parts == [(DE * 8).strip(), paragraph[len((DE * 8).strip()) + 1:]]


def test_an_abstract_printed_again_is_not_read_again_unless_it_holds_more(monkeypatch) -> None:
    """The metadata's abstract printed again on the landing page and in the PDF is split into
    languages once (and a copy word for word not even cleaned and checked again); a repeat that
    goes on into another language still gives that language."""
    import openmsd_build.text.documents as documents

    read: list[str] = []
    runs, reasons = documents._language_runs, documents.wrong_abstract_reason
    monkeypatch.setattr(documents, "_language_runs", lambda text: read.append(text) or runs(text))
    checked: list[str] = []
    monkeypatch.setattr(documents, "wrong_abstract_reason", lambda text, title="": checked.append(text) or reasons(text, title))
    abstract = (EN * 3).strip()
    paper = {"doi": "10.1/x", "title": "T", "abstract": abstract}
    again = [{"kind": "landing", "url": "u", "abstract": abstract},
             {"kind": "pdf", "url": "p", "abstracts": [{"text": f"{abstract}\n", "rule": "abstract_heading"}]}]
    kept, dropped = documents.abstract_entries(paper, again)
    assert [e["source"] for e in kept] == ["metadata"] and not dropped
    assert read == [abstract]
    assert len(checked) == 2  # the landing page's copy, word for word the metadata's, is not checked again
    more = [{"kind": "pdf", "url": "p", "abstracts": [{"text": f"{abstract}\n\n{(DE * 3).strip()}",
                                                       "rule": "abstract_heading"}]}]
    kept, dropped = documents.abstract_entries(paper, more)
    assert [(e["source"], e["language"]) for e in kept] == [("metadata", "en"), ("pdf", "de")] and not dropped


def test_a_heading_printed_twice_in_one_language_gives_one_abstract() -> None:
    later = ("Users open the web application with their student number and password, then connect a wallet "
             "and vote; the contract records each ballot and the page shows the running totals to everyone. ")
    kept, dropped = _entries([{"text": EN * 2, "rule": "abstract_heading", "heading": "Summary"},
                              {"text": later * 2, "rule": "abstract_heading", "heading": "SUMMARY"}])
    assert [e["text"][:20] for e in kept] == [EN[:20]] and dropped == [("pdf", "repeated_heading")]


def test_a_reference_list_the_block_ran_into_is_dropped() -> None:
    kept, dropped = _entries([{"text": f"{EN * 3}\n\n{REFERENCES}", "rule": "abstract_heading", "heading": "Abstract"}])
    assert [e["text"] for e in kept] == [(EN * 3).strip()] and dropped == [("pdf", "bibliography")]


def test_real_pdfs_of_each_class(real_sample) -> None:
    grinding = extract_pdf(real_sample("multilingual-journals/uneti-tapchikhcn__2016-11-grinding.pdf").read_bytes())
    assert grinding["title"].lower().startswith("nghiên cứu ảnh hưởng của chế độ cắt")
    ru = extract_pdf(real_sample("multilingual-journals/docs_extractor__demo_ru7.pdf").read_bytes())
    assert "сервис-ориентированными" in ru["title"]
    tr = extract_pdf(real_sample("multilingual-journals/tamerbayr__makale.pdf").read_bytes())
    assert tr["abstract"].startswith("Bu çalışma, hassas alanlarda")


def test_a_keywords_label_run_into_the_last_paragraph_is_cut_with_what_follows() -> None:
    from openmsd_build.core.textclean import clean_abstract

    head = ("So education on climate change should be integrated in the teaching and learning of subjects, "
            "and this article designs a biology lesson that does it.")
    deposit = f"{head} Keywords Education on Climate Change; Teaching and Learning Biology References 1. Hoành (2003)."
    assert clean_abstract(deposit) == head
    assert clean_abstract(f"{head} KEYWORDS: climate; biology") == head
    kept = f"{head} Keywords were extracted from each lesson; their counts follow."  # a sentence, not a label
    assert clean_abstract(kept) == kept
    # a tail longer than the abstract is cut when it is a reference list
    references = " ".join(f"{k}. Trần Văn An ({2000 + k}), Dạy học tích hợp, Nxb Giáo dục, Hà Nội." for k in range(1, 9))
    assert clean_abstract(f"{head} Keywords Climate Change; Biology References {references}") == head
    thesis = ("Обсяг роботи 30 сторінок, 13 ілюстрацій. Ключові слова: SVM, класифікація. " + "Об'єктом роботи є метод. " * 20)
    assert clean_abstract(thesis) == thesis.strip()  # keywords early, the body after them: kept whole


AR = "يقدم هذا التقرير إطار عمل يعتمد على تقنية البلوك تشين لتحسين نظام التصويت الالكتروني في الجامعات العربية"


def _as_drawn(logical: str) -> str:
    """`logical` as a presentation-form text layer stores it: isolated forms, drawing order."""
    import unicodedata

    from openmsd_build.text.extract.presentation_forms import turn_line

    def form(ch: str) -> str:
        try:
            return unicodedata.lookup(unicodedata.name(ch) + " ISOLATED FORM")
        except (KeyError, ValueError):
            return ch

    return turn_line("".join(form(ch) for ch in logical))


def test_presentation_forms_in_drawing_order_read_as_letters_in_reading_order() -> None:
    from openmsd_build.text.extract.pdf import fix_text_layer
    from openmsd_build.text.extract.presentation_forms import read_presentation_forms, turn_line

    drawn = _as_drawn(AR)
    assert drawn != AR and read_presentation_forms(drawn) == AR
    fa = "این پژوهش در سال ۱۳۹۸ در دانشگاه تهران با مشارکت دانشجویان رشته‌های مختلف انجام شد"
    assert read_presentation_forms(_as_drawn(fa)).replace("\u200c", "") == fa.replace("\u200c", "")  # digits keep their order
    assert fix_text_layer(f"Title line\n{drawn}").split("\n") == ["Title line", AR]
    assert read_presentation_forms(AR) == AR  # letters already: nothing to do
    mixed = "نظام 2019 BlockChain التصويت"
    assert turn_line(turn_line(mixed)) == mixed and "2019 BlockChain" in turn_line(mixed)


def test_accents_that_hang_below_a_letter_compose_with_the_letter_before() -> None:
    from openmsd_build.text.extract.pdf import fix_text_layer

    assert fix_text_layer("sa˛d i wie˛zi, franc¸ais, te´orica") == "sąd i więzi, français, teórica"
    assert fix_text_layer("x¸ 3˛") == "x¸ 3˛"  # no composed letter exists: left as it is


def test_furniture_under_an_abstract_is_cut() -> None:
    from openmsd_build.core.textclean import clean_abstract

    body = "Turbulence in a conducting plasma can amplify seed magnetic fields, as the simulations show."
    page = (f"{body}\n\nReceived 26 September 2018\n\nDOI:https://doi.org/10.1103/PhysRevLett.122.145901\n\n"
            "© 2019 American Physical Society\n\nPhysics Subject Headings (PhySH)\n\nDynamo theory\n\nPlasma turbulence")
    assert clean_abstract(page) == body
    two = f"{body}\n\nA second paragraph closes the abstract with its own finding, stated plainly."
    assert clean_abstract(two) == two  # prose paragraphs stay
    for last in ("Published evidence on this question has been scarce, and this study fills the gap.",
                 "Copyright law, we argue, must adapt", "Trial registration: ClinicalTrials.gov NCT01234567",
                 "Conclusion: the intervention is effective and safe", "यह अध्ययन महत्वपूर्ण है।", "สรุปผลการศึกษา"):
        assert clean_abstract(f"{body}\n\n{last}") == f"{body}\n\n{last}", last  # one short last paragraph stays
    assert clean_abstract(f"{body}\n\nReceived 26 September 2018") == body
    assert clean_abstract(f"{body}\n\nAmtshandbücher im Alten Reich\n\nBilanz eines Forschungsprojekts") == body


def test_another_papers_abstract_boxes_on_a_landing_page_are_not_the_papers() -> None:
    from openmsd_build.text.extract.landing import extract_landing

    own = "We compute the potential energy curve of the chromium dimer with a new perturbation treatment. " * 3
    other = "A reinvestigation of several isotopic species by cavity ringdown yields a new frequency value. " * 3
    page = (f"<html><head><title>T</title></head><body><article><div class='abstract author'><p>{own}</p></div>"
            f"<section id='preview-section-cited-by'><ul><li><div class='abstract reference-abstract'>{other}</div>"
            f"</li></ul></section><div class='related-articles'><div class='abstract'>{other}</div></div>"
            "</article></body></html>")
    texts = [a["text"] for a in extract_landing(page.encode(), "https://example.org/a")["abstracts"]]
    assert texts and all(t.startswith("We compute") for t in texts)
    # the paper's own abstract in a tab list or under a page-wide "related" class is kept
    for body, wrapper in (("<body>", "<ul class='tab-content'><li><div class='abstract'>{}</div></li></ul>"),
                          ("<body class='single-post has-related-posts'>", "<div class='abstract'>{}</div>")):
        html = f"<html><head><title>T</title></head>{body}<article>{wrapper.format(own)}</article></body></html>"
        assert [a["text"][:10] for a in extract_landing(html.encode(), "https://example.org/a")["abstracts"]] == [own[:10]]
    html = (f"<html><body><h2>Abstract</h2><p>{own}</p><div class='references'><ol><li><h4>Abstract</h4>"
            f"<p>{other}</p></li></ol></div></body></html>")
    texts = [a["text"] for a in extract_landing(html.encode(), "https://example.org/a")["abstracts"]]
    assert texts and all(t.startswith("We compute") for t in texts)


def test_a_boxed_structured_abstract_resumes_after_the_text_the_layer_put_inside_it() -> None:
    from openmsd_build.text.extract.pdf import _find_abstracts

    lines = ["Abstract", "Objective", "To detect tuberculosis disease among contacts of patients.",
             "Controle de comunicantes", "Caldeira ZMR et al", "INTRODUÇÃO", "O controle de comunicantes tem papel",
             "importante na identificação de casos.", "Methods", "Cross-sectional study with 184 child contacts;",
             "received chemoprophylaxis when infected.", "Conclusions", "Contact control must be emphasized.",
             "MÉTODOS", "Estudo descritivo, transversal."]
    found = _find_abstracts(lines)
    assert len(found) == 1
    text = found[0].text
    assert text.startswith("Objective") and "Cross-sectional study" in text and "received chemoprophylaxis" in text
    assert "Contact control must be emphasized." in text
    assert "Caldeira" not in text and "Estudo descritivo" not in text and "O controle" not in text


def test_a_one_character_line_on_every_page_edge_is_furniture() -> None:
    from openmsd_build.text.extract.pdf import _remove_headers_footers

    pages = [["!", f"Text of page {k} that says something different each time {'x' * k}."] for k in range(5)]
    assert all(lines[0] != "!" for lines in _remove_headers_footers(pages))
    letters = [["a", f"Text of page {k} that says something different each time {'x' * k}."] for k in range(5)]
    assert all(lines[0] == "a" for lines in _remove_headers_footers(letters))  # an enumeration, not furniture
