"""Language identification on real multilingual titles and abstracts (OpenAlex works, a
Portuguese SciELO PDF) and normalization of publisher language fields."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from openmsd_build.core.language import (
    MIN_PROBABILITY,
    detect_language,
    get_detector,
    map_cld3_code,
    normalize_language_code,
)


def abstract_text(inverted: dict[str, list[int]]) -> str:
    """OpenAlex abstract_inverted_index back to text: words sorted by position."""
    return " ".join(word for _, word in sorted((pos, word) for word, positions in inverted.items() for pos in positions))


@pytest.fixture(scope="module")
def openalex_works(real_samples: Path) -> list[dict]:
    path = real_samples / "openalex" / "parseland_eval_multilingual_works.unwrapped.jsonl"
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_agreement_with_openalex_language(openalex_works: list[dict]) -> None:
    works = [w for w in openalex_works if w.get("abstract_inverted_index") and w.get("language") and w.get("title")]
    assert len(works) >= 50
    agree = sum(detect_language(w["title"], abstract_text(w["abstract_inverted_index"]))[0] == w["language"] for w in works)
    # 72/83 measured. Nearly every disagreement is a German or Portuguese paper whose abstract
    # is in English (OpenAlex labels the paper by its title; CLD3 on title + abstract, the
    # OpenMSD definition, sees mostly English), so 90 % is not reachable without changing
    # the definition; see test_title_language_when_abstract_is_english.
    assert agree / len(works) >= 0.85, f"{agree}/{len(works)}"


def test_title_language_when_abstract_is_english(openalex_works: list[dict]) -> None:
    """The disagreements above are English abstracts, not detector errors."""
    for work in openalex_works:
        if not work.get("abstract_inverted_index") or work.get("language") not in ("de", "pt"):
            continue
        abstract = abstract_text(work["abstract_inverted_index"])
        code, _, _ = detect_language(work["title"], abstract)
        if code != work["language"] and len(abstract) > 300:
            assert detect_language(None, abstract)[0] == "en", work["title"]


@pytest.mark.parametrize("lang", ["de", "fr", "pt"])
def test_spot_check_languages(openalex_works: list[dict], lang: str) -> None:
    """Titles of de / fr / pt works (longer than 40 characters) are detected as such, and
    whenever title + abstract is, the probability is above the und threshold."""
    works = [w for w in openalex_works if w.get("language") == lang and len(w.get("title") or "") > 40]
    assert len(works) >= 5
    # OpenAlex's labels are noisy here (a Spanish and an English title are labelled "fr"),
    # so titles alone are held to 60 %; measured de 32/36, fr 9/15, pt 12/13.
    assert sum(detect_language(w["title"])[0] == lang for w in works) >= 0.6 * len(works)
    for work in works:
        if work.get("abstract_inverted_index"):
            code, prob, reliable = detect_language(work["title"], abstract_text(work["abstract_inverted_index"]))
            if code == lang:
                assert prob >= MIN_PROBABILITY and isinstance(reliable, bool), work["title"]


def test_arabic_and_cjk() -> None:
    arabic = "دراسة انتشار الأمراض المعدية بين الأطفال في المدارس الابتدائية وتأثير التطعيم على معدلات الإصابة"
    assert detect_language(arabic)[0] == "ar"
    assert detect_language("基于深度学习的图像分割方法研究", "本文提出了一种新的图像分割方法，并在多个数据集上进行了实验验证。")[0] == "zh"


# structured abstracts of the demo sample with English section headings: CLD3 alone answered
# "mr", "ne", "sv" and "und" (a Chinese abstract as Marathi, an Arabic one as Swedish), which
# `export --recipe` then paired as cross-lingual title-abstract examples
HEADED_ABSTRACTS = [
    ("zh", "Background\n\n尽管已有大量研究，海岸泥沙输运与可持续城市交通之间的关系仍不清楚。本文分析了海岸泥沙输运及其与"
           "可持续城市交通的关系。\n\nResults\n\n我们采用高分辨率卫星影像的方法，共纳入1371名研究对象。与基线相比，主要指标"
           "提高了32%。该模型解释了观测数据中的大部分变异。"),
    ("zh", "Background\n\n本文分析了城市生活垃圾管理及其与地下水硝酸盐污染的关系。我们采用高分辨率卫星影像的方法，共纳入832名"
           "研究对象。\n\nResults\n\n两组之间未发现显著差异。结果表明，城市生活垃圾管理与地下水硝酸盐污染之间存在显著相关性。"),
    ("ar", "Background\n\nهدفت هذه الدراسة إلى فحص تأثير الصحة النفسية لطلاب الجامعات على تلوث المياه الجوفية بالنترات."
           "\n\nResults\n\nيجمع المنهج المتبع بين محاكاة الديناميكا الجزيئية وتحليل مفصل لموضوع تلوث المياه الجوفية "
           "بالنترات. فسّر النموذج معظم التباين الملاحظ في البيانات."),
    ("ko", "Background\n\n본 연구에서는 1050개 지역에서 그린 수소 생산의 수준을 정량적으로 평가하였다. 이 모형은 관찰된 변동의 "
           "대부분을 설명하였다.\n\nResults\n\n두 집단 간에 유의한 차이는 발견되지 않았다. 이러한 결과를 확인하기 위해 더 큰 "
           "표본을 이용한 추가 연구가 필요하다."),
]


@pytest.mark.parametrize(("lang", "text"), HEADED_ABSTRACTS)
def test_latin_headings_do_not_relabel_another_script(lang: str, text: str) -> None:
    code, prob, reliable = detect_language(None, text)
    assert (code, reliable) == (lang, True) and prob > 0.9


def test_never_a_language_of_another_script() -> None:
    # a text written in one script gets one of its languages or "und", whatever CLD3 says
    from openmsd_build.core import language

    class Misled:
        def FindLanguage(self, text: str):  # noqa: N802 (gcld3's name)
            return type("R", (), {"language": "sv", "probability": 0.99, "is_reliable": True})()

    code, _, reliable = language._detect_prepared("本文分析了城市生活垃圾管理及其与地下水硝酸盐污染的关系", Misled())
    assert (code, reliable) == ("und", False)
    # Latin text and Latin answers are left alone
    assert detect_language("Über die Wirkung", "Die Studie untersucht die Wirkung der Düngung auf den Ertrag.")[0] == "de"


def test_portuguese_pdf_is_pt(real_samples: Path) -> None:
    from openmsd_build.text.extract.pdf import extract_pdf

    result = extract_pdf((real_samples / "pdf" / "scms-upload__rsp_v38n1_18446.pdf").read_bytes())
    code, prob, reliable = detect_language(result["title"], result["abstract"])
    assert (code, reliable) == ("pt", True) and prob > 0.9
    english = extract_pdf((real_samples / "pdf" / "scms-upload__rsp_v38n1_en_18446.pdf").read_bytes())
    assert detect_language(english["title"], english["abstract"])[0] == "en"


def test_empty_and_short_text_is_und() -> None:
    # CLD3 itself answers "ja", reliable, for an empty string
    assert detect_language("", "") == ("und", 0.0, False)
    assert detect_language(None, None) == ("und", 0.0, False)
    assert detect_language("a", "b") == ("und", 0.0, False)
    assert detect_language("https://doi.org/10.1234/abc.def", "x@y.org") == ("und", 0.0, False)


def test_code_mapping() -> None:
    assert map_cld3_code("iw") == "he" and map_cld3_code("jw") == "jv" and map_cld3_code("fil") == "tl"
    assert map_cld3_code("zh-Latn") == "und" and map_cld3_code("und") == "und"
    assert map_cld3_code("ceb") == "ceb"
    assert 0 < MIN_PROBABILITY < 1


def test_normalize_language_code() -> None:
    cases = {
        "en": "en", "EN": "en", "eng": "en", "en-US": "en", "en_GB": "en", "English": "en",
        "ger": "de", "deu": "de", "Deutsch": "de", "pt-BR": "pt", "por": "pt", "fre": "fr",
        "zh-Hans": "zh", "chi": "zh", "iw": "he", "in": "id", "ji": "yi", " ES ": "es",
        "und": None, "mul": None, "": None, None: None, "klingon": None, "xx-yy": None,
    }
    for value, expected in cases.items():
        assert normalize_language_code(value) == expected, value


def test_detector_is_per_thread_and_module_pickles() -> None:
    import threading

    import openmsd_build.core.language as language

    main = get_detector()
    assert get_detector() is main
    other = []
    thread = threading.Thread(target=lambda: other.append(get_detector()))
    thread.start()
    thread.join()
    assert other[0] is not main
    assert pickle.loads(pickle.dumps(language.detect_language)) is language.detect_language



def test_a_lone_surrogate_is_no_crash() -> None:
    """CLD3's binding encodes the text to UTF-8, and a lone surrogate cannot be encoded: it
    raised TypeError, which stopped enrich, export or text on one such record (only the
    papers stage rejects them upstream). It is read as "?", through the memo and with a
    caller's detector alike, in the title or the abstract."""
    german = "Über die Wirkung der Temperatur auf das Wachstum von Pflanzen in alpinen Regionen"
    russian = "Влияние температуры на рост растений в высокогорных районах Кавказа"
    for text in (german, russian):
        broken, read_as = (text[:20] + mark + text[20:] for mark in ("\ud800", "?"))
        expected = detect_language(read_as)
        assert expected[0] == detect_language(text)[0] != "und", text
        assert detect_language(broken) == expected, text
        assert detect_language(broken, detector=get_detector()) == expected, text
        assert detect_language("\udfff", text)[0] == expected[0], text
    assert detect_language("\ud800" * 20) == ("und", 0.0, False)
