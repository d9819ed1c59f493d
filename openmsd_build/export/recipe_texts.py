"""Per-example choices of a recipe: which text of a paper each side shows, how many copies.

Pure functions over one paper's texts (`PaperTexts`) and stable draws
(`core.hashing.unit_interval`, keyed by the example's ids, the part and the recipe's seed):
the same build and seed give the same choices on any machine, in any order, in any batch.
Nothing here depends on Python's `random` state or on the order rows arrive in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from openmsd_build.core.hashing import unit_interval

TITLE, ABSTRACT, SUMMARY, DOCUMENT = "title", "abstract", "summary", "document"


@dataclass
class PaperTexts:
    """A paper's texts by language: its own title and abstract in `language`, abstracts in
    other languages, the English summary of `enrich`, and its document text (the OpenMSD
    title + abstract, or the enriched format)."""

    doi: str
    language: str
    titles: dict[str, str] = field(default_factory=dict)
    abstracts: dict[str, tuple[str, str]] = field(default_factory=dict)  # lang -> (text, field name)
    document: str = ""
    # the recipe's languages removed every text it had / every title-abstract pair it had:
    # its candidates are counted `skipped_language`, not `skipped_no_text`
    language_removed_text: bool = False
    language_removed_pair: bool = False

    def languages(self) -> list[str]:
        """Every language the paper has a title or an abstract in, its own first, then sorted."""
        others = sorted((set(self.titles) | set(self.abstracts)) - {self.language})
        return ([self.language] if self.language in self.titles or self.language in self.abstracts else []) + others

    def other_languages(self) -> list[str]:
        return [lang for lang in self.languages() if lang != self.language]


def _clean(text: str | None) -> str:
    return (text or "").strip()


def paper_texts(doi: str, language: str | None, title: str | None, abstract: str | None,
                abstracts: list[dict] | None = None, summary: str | None = None, document: str = "",
                allowed: frozenset[str] | None = None) -> PaperTexts:
    """Collect a paper's texts. Other-language abstracts need a known detected language
    (not `und`) other than the paper's and a text that is not the kept abstract again; the
    summary is an English abstract of a non-English paper. `allowed` (a recipe's
    languages) drops the others."""
    lang = language or "und"
    paper = PaperTexts(doi=doi, language=lang, document=document)
    main_abstract = _clean(abstract)
    if _clean(title):
        paper.titles[lang] = _clean(title)
    if main_abstract:
        paper.abstracts[lang] = (main_abstract, ABSTRACT)
    for item in abstracts or []:
        other, text = item.get("language"), _clean(item.get("text"))
        if other and other not in ("und", lang) and text and text != main_abstract and other not in paper.abstracts:
            paper.abstracts[other] = (text, ABSTRACT)
    s = _clean(summary)
    if s and lang != "en" and "en" not in paper.abstracts:
        paper.abstracts["en"] = (s, SUMMARY)
    if allowed is not None:
        had_text, had_pair = bool(paper.titles or paper.abstracts), bool(paper.titles and paper.abstracts)
        paper.titles = {k: v for k, v in paper.titles.items() if k in allowed}
        paper.abstracts = {k: v for k, v in paper.abstracts.items() if k in allowed}
        paper.language_removed_text = had_text and not (paper.titles or paper.abstracts)
        paper.language_removed_pair = had_pair and not (paper.titles and paper.abstracts)
    return paper


@dataclass(frozen=True)
class Side:
    """The text one side of an example shows."""

    text: str
    language: str
    field: str  # title / abstract / summary / document
    other_language: bool  # a language other than the paper's own
    had_other: bool  # the paper had another language to choose (the choice's denominator)


def choose_side(paper: PaperTexts, key: str, seed: str, p_title: float, p_other: float) -> Side | None:
    """Another language with probability `p_other` when the paper has one (which one: a
    uniform draw), else its own; then in that language its title with probability
    `p_title` when it has both, else whichever it has. None when the paper has no text."""
    own = paper.language if (paper.language in paper.titles or paper.language in paper.abstracts) else None
    others = paper.other_languages()
    if own is None and not others:
        return None
    if others and (own is None or unit_interval(key + "|lang", seed) < p_other):
        lang = others[min(int(unit_interval(key + "|which", seed) * len(others)), len(others) - 1)]
    else:
        lang = own
    title = paper.titles.get(lang)
    abstract = paper.abstracts.get(lang)
    if title and abstract:
        use_title = unit_interval(key + "|field", seed) < p_title
    else:
        use_title = bool(title)
    text, name = (title, TITLE) if use_title else abstract
    return Side(text, lang, name, lang != paper.language, bool(others))


def document_side(paper: PaperTexts) -> Side | None:
    """The paper's document text (OpenMSD's title + abstract), or None when empty."""
    if not paper.document:
        return None
    return Side(paper.document, paper.language, DOCUMENT, False, False)


def copies(weight: float, key: str, seed: str) -> int:
    """floor(weight) copies, plus one with probability frac(weight) (a seeded draw)."""
    whole = math.floor(weight)
    frac = weight - whole
    return int(whole) + (1 if frac > 0 and unit_interval(key + "|copies", seed) < frac else 0)


@dataclass(frozen=True)
class TitleAbstract:
    """One (title, abstract) combination of a paper: languages and whether cross-lingual."""

    title: str
    abstract: str
    lang_title: str
    lang_abstract: str
    abstract_field: str

    @property
    def cross_lingual(self) -> bool:
        return self.lang_title != self.lang_abstract


def title_abstract_pairs(paper: PaperTexts) -> list[TitleAbstract]:
    """Every (title in language a, abstract in language b) the paper has, in language order."""
    out = []
    for lt in sorted(paper.titles):
        for la in sorted(paper.abstracts):
            text, name = paper.abstracts[la]
            out.append(TitleAbstract(paper.titles[lt], text, lt, la, name))
    return out
