"""Round 3 of the text-fidelity issue, pinned on small made-up inputs: ligatures (glyphs, and
ligatures lost as a space, with the false joins a rule could make), letter-spaced lines, LaTeX
source, breadcrumb lines, and the same metadata abstract on two DOIs (the pure rule and the
text stage's Beam step, with its counts)."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from openmsd_build.core.beam_io import COUNTS_TAG
from openmsd_build.core.textclean import (
    clean_abstract,
    collapse_letter_spacing,
    is_breadcrumb_line,
    is_tex_source_line,
    normalize_text,
    repair_ligatures,
)
from openmsd_build.text.beam import SHARED_TAG, DropSharedAbstracts, MetadataDocuments
from openmsd_build.text.documents import SHARED_ABSTRACT, build_document, drop_shared_abstract, shared_abstract_key
from openmsd_build.text.extract.landing import clean_content

EN = ("Drawing on comparative labor law models and sociological insights into labour relations, the article asks "
      "for functional equivalents in labor law and traces the protective function of Austrian labour law.")


@pytest.mark.parametrize(("broken", "fixed"), [
    ("ﬁrst ﬂow of eﬀects", "first flow of effects"),
    ("scientifi c publications", "scientific publications"),
    ("crisis fi nanciera", "crisis financiera"),
    ("signi fi cant and speci fi c", "signi ficant and speci fic"),  # short text: left fragments kept
    ("e ffective and e ff ective", "effective and effective"),
    ("su ffi cient", "sufficient"),
    ("(fi nanciera) “signifi cativas”", "(financiera) “significativas”"),
    ("researchers’ scientifi c work was quantifi ed", "researchers’ scientific work was quantified"),
])
def test_lost_ligatures_are_rejoined(broken: str, fixed: str) -> None:
    assert repair_ligatures(broken) == fixed


@pytest.mark.parametrize("text", [
    "staff members take off the cliff",   # words ending in "ff"
    "i filosofi greci",                   # an Italian plural in "-fi"
    "I filosofi e i geografi antichi e gli storiografi greci",
    "Vgl. S. 71 ff und S. 90 ff.",        # German "und folgende"
    "add 2 fl oz of water",
    "Institut fr ffentliches Recht",      # a lost umlaut, not a ligature
    "ve ffms x",                          # code
    "the first fish in a field",
])
def test_no_false_ligature_joins(text: str) -> None:
    assert repair_ligatures(text) == text


def test_fragments_before_a_lone_ligature_join_only_on_the_texts_evidence() -> None:
    long_text = "We show signi fi cant and speci fi c e ff ects of the fi rst fi eld in de fi ned models. " * 12
    fixed = normalize_text(long_text)
    assert "significant and specific effects of the first field in de fined" in fixed  # "de": a word


@pytest.mark.timeout(60)  # a hang guard: quadratic repair of ~0.9 MB takes hours, linear milliseconds
def test_ligature_repair_is_linear() -> None:
    text = "staff took off the scientifi c work and the fi rst fish. " * 16_000
    fixed = normalize_text(text)
    assert fixed.count("scientific work") == fixed.count("first fish") == 16_000


@pytest.mark.parametrize(("line", "collapsed"), [
    ("R EVI EW", "REVIEW"),
    ("A B S T R A C T", "ABSTRACT"),
    ("A R T I C L E  I N F O", "ARTICLE INFO"),
    ("a c t i v i t y", "activity"),
    ("参 考 文 献", "参考文献"),
    ("참 고 문 헌", "참고문헌"),
])
def test_letter_spaced_lines_collapse(line: str, collapsed: str) -> None:
    assert collapse_letter_spacing(line) == collapsed


@pytest.mark.parametrize("line", ["DNA RNA", "k I g k", "br x x fin x x", "시 더 많은", "I O", "USA UK EU",
                                  "A sentence with a b c in it"])
def test_lines_that_are_not_letter_spaced_stay(line: str) -> None:
    assert collapse_letter_spacing(line) == line


def test_tex_source_lines_and_preambles() -> None:
    assert is_tex_source_line(r"\documentclass[12pt]{minimal}")
    assert is_tex_source_line(r"\begin{equation}")
    assert is_tex_source_line(r"where \alpha = \frac{\beta}{\gamma} \cdot x")
    assert not is_tex_source_line(r'sb.append("\n\nCELLS\n");')
    assert not is_tex_source_line(r"The cost of \$5 is fine")
    springer = (r"<jats:p>The rate \documentclass[12pt]{minimal} \usepackage{amsmath} \usepackage{wasysym} "
                r"\usepackage{amsfonts} \setlength{\oddsidemargin}{-69pt} \begin{document}$$\alpha$$\end{document} "
                r"α is high in most of the samples we measured across the three sites.</jats:p>")
    cleaned = clean_abstract(springer)
    assert "documentclass" not in cleaned and "usepackage" not in cleaned and r"$$\alpha$$" in cleaned


def test_breadcrumbs_and_site_chrome_leave_page_content() -> None:
    assert is_breadcrumb_line("Computer Science > Digital Libraries")
    assert is_breadcrumb_line("Home › Journals › Vol. 3 No. 2 (2018)")
    for line in ("S > 0", "N > M", "x > 0 and y > 0", "Cell > innerCellList",
                 "Brossard, Nicole. 2010. « Où écrire ? » Conférence Resaris."):
        assert not is_breadcrumb_line(line)
    body = "\n".join(["Computer Science > Digital Libraries", "Skip to main content", "R EVI EW", EN * 3])
    assert clean_content(body).split("\n\n") == ["REVIEW", EN * 3]


# --- the same metadata abstract on two DOIs ------------------------------------------------------

def _paper(doi: str, abstract: str, source: str = "openalex", title: str = "Labour law") -> dict:
    return {"doi": doi, "title": title, "abstract": abstract, "abstract_source": source}


def test_shared_abstract_key_only_for_metadata_abstracts() -> None:
    row, _ = build_document(_paper("10.1/a", EN))
    again, _ = build_document(_paper("10.1/b", EN.upper().replace(",", " ,")))
    assert shared_abstract_key(row) == shared_abstract_key(again) is not None
    page, _ = build_document({"doi": "10.1/c", "title": "T"}, [{"kind": "landing", "url": "u", "abstract": EN}])
    assert page["abstract_source"] == "landing" and shared_abstract_key(page) is None


def test_shared_abstract_falls_back_to_the_page_abstract_or_drops_the_paper() -> None:
    other = ("Der Beitrag untersucht die Schutzfunktion des österreichischen Arbeitsrechts im Vergleich mit "
             "anderen Regelungsmodellen und fragt nach funktionalen Äquivalenten in den Arbeitsbeziehungen.")
    row, _ = build_document(_paper("10.1/a", EN), [{"kind": "landing", "url": "u", "abstract": other}])
    changed, outcome = drop_shared_abstract(row)
    assert outcome == "kept" and changed["abstract"] == other and changed["abstract_source"] == "landing"
    assert changed["language"] == "de" and [a["source"] for a in changed["abstracts"]] == ["landing"]
    alone, _ = build_document(_paper("10.1/b", EN))
    assert drop_shared_abstract(alone) == (None, SHARED_ABSTRACT)


def test_beam_step_drops_shared_abstracts_and_counts_them() -> None:
    import pyarrow as pa

    papers = pa.Table.from_pylist([
        _paper("10.1/a", EN), _paper("10.1/b", EN, "crossref"), _paper("10.1/c", EN.replace("Austrian", "German")),
        _paper("10.1/d", "In: Scriptorium, Tome 22, 1968, pp. 3-12, and more words to pass the minimum length here."),
    ])
    with beam.Pipeline() as p:
        docs = p | beam.Create([papers]) | beam.ParDo(MetadataDocuments(2)).with_outputs(COUNTS_TAG, SHARED_TAG, main="docs")
        checked = (docs[SHARED_TAG] | beam.GroupByKey()
                   | beam.ParDo(DropSharedAbstracts()).with_outputs(COUNTS_TAG, main="rows"))
        assert_that(checked.rows | beam.Map(lambda r: r["doi"]), equal_to(["10.1/c"]), label="kept")
        totals = ((docs[COUNTS_TAG], checked[COUNTS_TAG]) | beam.Flatten()
                  | beam.CombineGlobally(lambda cs: {k: sum(c.get(k, 0) for c in cs) for c in cs for k in c}))
        assert_that(totals | beam.Map(lambda c: (
            c["papers"], c["documents.kept"], c[f"documents.{SHARED_ABSTRACT}"], c["documents.abstract_wrong"],
            c[f"abstracts_wrong.{SHARED_ABSTRACT}"], c["abstracts_wrong.citation"],
            c[f"abstracts_wrong_by_source.crossref.{SHARED_ABSTRACT}"])),
            equal_to([(4, 1, 2, 1, 2, 1, 1)]), label="counts")
