"""The general rules behind the multilingual fidelity round, pinned on small made-up inputs
(no sample file): title blocks on a cover page, headless and unlabelled abstracts, headings
glued to other lines, broken text layers, inline abstract labels on landing pages, and one
paragraph holding two languages."""

from __future__ import annotations

from openmsd_build.text.documents import build_document
from openmsd_build.text.extract.landing import extract_landing
from openmsd_build.text.extract.pdf import (
    _abstract_before_keywords,
    _compose_accents,
    _find_abstracts,
    _split_trailing_headings,
    _title_from_font,
    fix_text_layer,
)

DE = ("Unter Rückgriff auf vergleichend erschlossene Regelungsmodelle und auf soziologische Einsichten in "
      "Arbeitsbeziehungen wird nach funktionalen Äquivalenten im Arbeitsrecht gefragt und dabei die Schutzfunktion "
      "des österreichischen Arbeitsrechts untersucht.")
EN = ("Drawing on comparative labor law models and sociological insights into labour relations, the article asks "
      "for functional equivalents in labor law and traces the protective function of Austrian labour law.")


def test_title_block_joins_double_spaced_lines_and_stops_at_the_translation() -> None:
    lines = [
        ("Journal of Things, vol. 3", 9.0, 800.0),
        ("Sosyoekonomik ve Sosyokültürel Değişkenler Açısından PISA", 18.8, 673.8),
        ("Matematik Sonuçlarının Karşılaştırılması", 18.8, 657.0),
        ("The Comparative Assessment of the Results of PISA Mathematical", 18.8, 623.4),
        ("Literacy in terms of Socio-Economic and Socio-Cultural Variables", 18.8, 606.6),
        ("Ayhan AYDIN", 16.1, 573.3),
    ]
    assert _title_from_font(lines) == "Sosyoekonomik ve Sosyokültürel Değişkenler Açısından PISA Matematik Sonuçlarının Karşılaştırılması"
    double = [("Die Rolle der „echten Frau“: Wie rechte", 18.3, 600.4), ("Instagrammerinnen eine anti-feministische", 18.3, 564.2),
              ("Identität erzählen", 18.3, 527.7), ("Masterarbeit im Fach Digital Humanities", 11.2, 490.4)]
    assert _title_from_font(double).endswith("Identität erzählen")


def test_title_in_the_body_language_wins_over_a_translation_printed_first() -> None:
    lines = [("Electronic voting system based on", 18.8, 485.2), ("BlockChain technology", 18.8, 458.4),
             ("Sistema de votación electrónica basado en la tecnología", 18.8, 411.5), ("de cadenas de bloques", 18.8, 385.5)]
    assert _title_from_font(lines, "es").startswith("Sistema de votación")
    assert _title_from_font(lines, None).startswith("Electronic voting")


def test_cover_page_topic_label_and_place_year_lines() -> None:
    lines = [("Київ – 2022", 12.8, 63.6), ("Кваліфікаційна робота", 14.3, 674.8), ("на тему:", 12.8, 592.7),
             ("РОЗРОБКА PYTHON-ПАКЕТУ ДЛЯ НАВЧАННЯ МОДЕЛЕЙ З", 12.1, 569.1),
             ("ВИКОРИСТАННЯМ МЕТОДУ SVM", 12.1, 551.0), ("Виконав", 12.8, 499.4)]
    assert _title_from_font(lines) == "РОЗРОБКА PYTHON-ПАКЕТУ ДЛЯ НАВЧАННЯ МОДЕЛЕЙ З ВИКОРИСТАННЯМ МЕТОДУ SVM"


def test_no_title_below_the_author_list_in_their_size() -> None:
    """A page whose title is not in its text layer: the first title-like line below the
    authors is their affiliation, not a title; a title above them, or set larger below them,
    is still found."""
    page = [("Proceedings of the Spring Meeting 2024", 9.0, 790.0),
            ("Mina Park* , Joon Kim* , Sora LeeO", 9.0, 672.0),
            ("*Hanbit Technical College, Computing Section", 9.0, 660.0),
            ("OHanbit Technical College, Computing Section", 9.0, 648.0),
            ("e-mail: mina@hanbit.example*", 9.0, 634.0)]
    assert _title_from_font(page) == ""
    titled = [page[0], ("Privacy Features for a Small Social Network", 9.0, 700.0), *page[1:]]
    assert _title_from_font(titled) == "Privacy Features for a Small Social Network"
    larger = [*page[:4], ("Privacy Features for a Small Social Network", 16.0, 600.0)]
    assert _title_from_font(larger) == "Privacy Features for a Small Social Network"


def test_parallel_title_after_a_pipe_is_cut() -> None:
    lines = [("MEDIAÇÃO JUDICIAL NO BRASIL: BREVES NOTAS", 14.3, 545.9),
             ("CONCEITUAIS | JUDICIAL MEDIATION IN BRAZIL", 14.3, 533.9), ("Body text here", 10.0, 500.0)]
    assert _title_from_font(lines) == "MEDIAÇÃO JUDICIAL NO BRASIL: BREVES NOTAS CONCEITUAIS"


def test_structured_abstract_without_heading_and_its_late_heading() -> None:
    lines = ["Objetivos. Con el propósito de explorar las variables que pudieran tener mayor impacto sobre los índices.",
             "Métodos. Se inspeccionaron 187 domicilios en los que se determinó el índice de viviendas.",
             "Conclusiones. Se concluye que la temperatura alta puede reducir el número de criaderos.",
             "RESUMEN", "Los índices larvarios han sido empleados durante más de 60 años para estimar poblaciones del mosquito."]
    found = _find_abstracts(lines)
    assert len(found) == 1 and found[0][0].startswith("Objetivos. Con el propósito")


def test_headings_glued_to_lines_and_unlabelled_abstract_above_keywords() -> None:
    assert _split_trailing_headings(["Heemin Choi** and HeeYoul Kim** 요 약", "높인다. Abstract", "in this abstract"]) == [
        "Heemin Choi** and HeeYoul Kim**", "요 약", "높인다.", "Abstract", "in this abstract"]
    found = _find_abstracts(["ABSTRACT | The use of the term", EN, "KEYWORDS | Mediation."])
    assert found and found[0][0].startswith("The use of the term")
    text = f"{EN} {EN}"
    paragraph = [text[i:i + 90] for i in range(0, len(text), 90)]
    lines = ["Historisieren und/oder überwinden?", "jane@uni.example", *paragraph, "KEYWORDS", "apriori, foucault"]
    assert _abstract_before_keywords(lines).startswith("Drawing on comparative")


def test_broken_text_layers_are_repaired() -> None:
    assert fix_text_layer("االلكتروني") == "الالكتروني"
    assert fix_text_layer("کنترل ترافیک )ATCS )ارائه") == "کنترل ترافیک (ATCS)ارائه"
    assert fix_text_layer("te´orica Econom´ıa") == "teórica Economía"
    chars = list("PREDICCION ´")
    spans = [(float(10 * k), float(10 * k + 9)) for k in range(len(chars))]
    spans[-1] = (82.0, 87.0)  # the accent drawn over the second "O" (x 80..89)
    spans[-2] = (0.0, 0.0)
    assert _compose_accents(chars, spans).strip() == "PREDICCIÓN"


def test_inline_label_abstract_on_a_page_without_meta_tags() -> None:
    text = "本文以系统的发掘、搜集和考证中国25史与相关的史料为基础，对中国文明诞生以来科技奖励活动和理论进行了比较全面系统的研究。" * 3
    page = f"<html><head><title>研究 - 知网</title></head><body><p><label>摘要：</label><span>{text}</span><span><a>更多</a></span></p></body></html>"
    result = extract_landing(page, with_content=False)
    assert result["abstract"] == text


def test_one_paragraph_in_two_languages_is_two_abstracts() -> None:
    doc, _ = build_document({"doi": "10.1/p", "title": "Soziologische Bemerkungen"},
                            [{"kind": "pdf", "url": "u", "abstract": f"{DE} {EN}"}])
    assert [a["language"] for a in doc["abstracts"]] == ["de", "en"]


# An abstract heading of each language that one source's list knew and another's did not
# (Greek, Czech, Hungarian, Catalan, Vietnamese, Indonesian, Japanese): one vocabulary
# (`textclean.ABSTRACT_LABELS`) heads an abstract on a landing page, in a PDF and at the
# start of a metadata abstract alike.
LABELLED = {
    "Περίληψη": "Η εργασία εξετάζει τη σχέση της οικονομικής ανάπτυξης με την εκπαίδευση στις περιφέρειες της χώρας. " * 2,
    "Abstrakt": "Práce se zabývá vztahem hospodářského růstu a vzdělávání v regionech České republiky a jeho vývojem. " * 2,
    "Absztrakt": "A tanulmány a gazdasági növekedés és az oktatás kapcsolatát vizsgálja a magyar régiókban hosszabb távon. " * 2,
    "Resum": "Aquest treball estudia la relació entre el creixement econòmic i l'educació a les regions catalanes durant anys. " * 2,
    "Tóm tắt": "Bài báo nghiên cứu mối quan hệ giữa tăng trưởng kinh tế và giáo dục tại các tỉnh của Việt Nam trong nhiều năm. " * 2,
    "Intisari": "Penelitian ini mengkaji hubungan antara pertumbuhan ekonomi dan pendidikan di berbagai provinsi Indonesia. " * 2,
    "要約": "本研究では、地域における経済成長と教育の関係を長期的なデータを用いて分析し、その政策的な含意について検討した。" * 2,
}


def test_one_abstract_vocabulary_for_pages_pdfs_and_metadata() -> None:
    from openmsd_build.core.textclean import clean_abstract

    for label, text in LABELLED.items():
        text = text.strip()
        page = (f"<html><head><title>Paper</title></head><body><h1>A paper</h1><h2>{label}</h2><p>{text}</p>"
                "<h2>References</h2><p>One reference.</p></body></html>")
        assert extract_landing(page, with_content=False)["abstract"] == text, label
        [found] = _find_abstracts(["A paper", "Someone", label, text, "1. Introduction", "Body text."])
        assert found.text.startswith(text[:40]) and found.heading == label, label
        assert clean_abstract(f"{label}: {text}") == text, label
