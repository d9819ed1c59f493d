"""In-text citations for the sample's full texts and the Crossref reference lists behind them.

Why apart from the generator's other draws: every draw here comes from its own RNG
(`citation_rng`, seeded by the sample's seed and the paper), never from the paper's text or
metadata RNGs, so adding citations left every other byte of the sample as it was drawn before
(only the paragraphs that carry a marker, and the Crossref records that gained a `reference`
array, differ).

A paper's page reference list (`N. Family I. et al. (year). https://doi.org/...`, drawn by the
generator) is what its Crossref `reference` array deposits, in the same order, so a numeric
marker `[n]` and an author-year marker `(Family et al., year)` both point at one entry.
Deposits vary as in the real Crossref: about 15% of citing papers deposit no list; an entry
has `DOI` + `author` + `year` (72%), `DOI` + `unstructured` only (10%), or no DOI (18%).
Markers: numeric `[3, 7]` / ranges `[3–5]` (fullwidth `［3，7］` in half of the CJK papers) or
author-year `(Smith et al., 2019; Lee, 2020)` (Cyrillic names `(Иванов и др., 2019)` in half of
the Russian papers, whose deposited authors are then Cyrillic too).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

CJK = frozenset({"zh", "ja", "ko"})
_CYRILLIC = {"Smith": "Смит", "Müller": "Мюллер", "Martin": "Мартин", "García": "Гарсия", "Rossi": "Росси",
             "Wang": "Ван", "Sato": "Сато", "Kim": "Ким", "Ivanov": "Иванов", "Silva": "Силва"}
_FAMILIES = tuple(_CYRILLIC)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|[\u3002\uff01\uff1f]")


@dataclass(frozen=True)
class Entry:
    """One entry of a paper's reference list."""

    family: str
    initial: str
    year: int
    doi: str


def citation_rng(seed: int, i: int) -> random.Random:
    return random.Random(f"openmsd-sample-citations:{seed}:{i}")


def tail_entries(rng: random.Random, dois: list[str], start: int, year: int) -> list[Entry]:
    """Entries past the page's printed list (the page prints the first 40)."""
    return [Entry(rng.choice(_FAMILIES), chr(65 + rng.randrange(26)), rng.randint(1990, year), doi)
            for doi in dois[start:]]


def _style(rng: random.Random, lang: str) -> str:
    if lang in CJK:
        return "fullwidth" if rng.random() < 0.5 else "numeric"
    if lang == "ru":
        return "cyrillic" if rng.random() < 0.5 else "numeric"
    return "numeric" if rng.random() < 0.55 else "author_year"


def _family(entry: Entry, style: str) -> str:
    return _CYRILLIC[entry.family] if style == "cyrillic" else entry.family


def reference_array(rng: random.Random, entries: list[Entry], style: str, citing_doi: str) -> list[dict[str, Any]]:
    """The Crossref `reference` array deposited for `entries`."""
    out = []
    for k, e in enumerate(entries):
        ref: dict[str, Any] = {"key": f"{citing_doi}-ref{k + 1}"}
        u = rng.random()
        unstructured = f"{_family(e, style)} {e.initial}. et al. ({e.year}) Article {k + 1}."
        if u < 0.72:
            ref |= {"DOI": e.doi, "doi-asserted-by": "crossref", "author": _family(e, style), "year": str(e.year)}
        elif u < 0.82:
            ref |= {"DOI": e.doi, "doi-asserted-by": "publisher", "unstructured": unstructured}
        elif u < 0.91:
            ref |= {"author": _family(e, style), "year": str(e.year), "unstructured": unstructured}
        else:
            ref |= {"unstructured": unstructured}
        out.append(ref)
    return out


def _numeric_marker(numbers: list[int], fullwidth: bool) -> str:
    numbers = sorted(set(numbers))
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [f"{r[0]}\u2013{r[-1]}" if len(r) >= 3 else ", ".join(map(str, r)) for r in runs]
    body = ", ".join(parts)
    return f"\uff3b{body.replace(', ', '，')}\uff3d" if fullwidth else f"[{body}]"


def _author_year_marker(entries: list[Entry], style: str, rng: random.Random) -> str:
    items = []
    for e in entries:
        if style == "cyrillic":
            items.append(f"{_family(e, style)}{' и др.' if rng.random() < 0.6 else ''}, {e.year}")
        else:
            items.append(f"{e.family}{' et al.' if rng.random() < 0.6 else ''}, {e.year}")
    return f"({'; '.join(items)})"


def cite_paragraphs(rng: random.Random, paragraphs: list[str], entries: list[Entry], lang: str,
                    style: str) -> tuple[list[str], list[list[str]]]:
    """Paragraphs with markers inserted before some sentence ends, and the DOIs each marker
    group cites (in insertion order), for the truth file."""
    groups: list[list[str]] = []
    cited_paragraphs = []
    for paragraph in paragraphs:
        ends = [m.start() for m in _SENTENCE_END.finditer(paragraph)]
        chosen = sorted(rng.sample(ends, min(len(ends), rng.choice((0, 1, 1, 2)))), reverse=True)
        for end in chosen:
            picks = sorted(rng.sample(range(len(entries)), min(len(entries), rng.choice((1, 1, 2, 2, 3)))))
            if style in ("numeric", "fullwidth") and len(picks) == 2 and picks[0] + 3 < len(entries) and rng.random() < 0.3:
                picks = list(range(picks[0], picks[0] + 3))  # a range
            if style in ("numeric", "fullwidth"):
                marker = _numeric_marker([k + 1 for k in picks], style == "fullwidth")
            else:
                marker = _author_year_marker([entries[k] for k in picks], style, rng)
            space = "" if lang in CJK else " "
            paragraph = paragraph[:end] + space + marker + paragraph[end:]
            groups.append([entries[k].doi for k in picks])
        cited_paragraphs.append(paragraph)
    return cited_paragraphs, groups


def plan_citations(seed: int, i: int, lang: str, year: int, dois: list[str], printed: list[tuple[str, str, int]],
                   paragraphs: list[str], citing_doi: str) -> tuple[list[str], list[dict] | None, list[list[str]]]:
    """For a paper citing `dois` (page list `printed` = (family, initial, year) of the first
    entries): its paragraphs with markers, its Crossref `reference` array (None: not
    deposited) and the truth of its marker groups."""
    if not dois:
        return paragraphs, None, []
    rng = citation_rng(seed, i)
    entries = [Entry(f, ini, y, d) for (f, ini, y), d in zip(printed, dois, strict=False)]
    entries += tail_entries(rng, dois, len(entries), year)
    style = _style(rng, lang)
    deposited = rng.random() >= 0.15
    array = reference_array(rng, entries, style, citing_doi) if deposited else None
    cited, groups = cite_paragraphs(rng, paragraphs, entries[: len(printed)] or entries, lang, style)
    return cited, array, groups
