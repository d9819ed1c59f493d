"""Resolve citation markers to the citing paper's reference list (pure).

A reference list is the Crossref record's `reference` array in its deposited order
(`Reference.order` is 1-based). A numeric marker `n` is the reference at position `n`
(`number_position`). An author-year marker is matched by the first author's surname (the
last word of `markers.normalize_name`, so particles and accents do not matter; a deposited
author is also found by its first word, for corporate authors) and the year:

* `author_year` — exactly one reference has that first author and year (a suffix `2014b`
  picks the reference whose year carries that suffix when the list writes suffixes);
* `author_year_suffix_order` — several references share author and year, none written with a
  suffix, and the marker has one: the suffix letter picks them in list order (a = first);
* `author_year_unstructured` — the one candidate is an entry without an `author` field whose
  `unstructured` text names the surname before the year (or before its first ". " when the
  year is deposited apart), with that year.

Candidates are the entries of both kinds together, so an entry deposited without an author
never loses to a namesake that has one: two candidates and no suffix to choose by is
`author_year_ambiguous`, unless both are one DOI.

Unresolved markers carry one reason (the stage counts them, `REASONS`): `no_reference_list`,
`number_out_of_range`, `reference_past_cap` (the number is within the deposited list but past
the entries kept of it, `references.MAX_REFERENCES`), `author_year_ambiguous` (several candidates, nothing to choose by),
`author_year_no_match`, `reference_without_doi` (the marker found its reference, which has
no DOI: the method is kept, the cited DOI is null), and `self_reference` (the reference is the
citing paper's own DOI; set by `extract.document_contexts`, which knows that DOI).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from openmsd_build.contexts.markers import Marker, normalize_name

SELF_REFERENCE = "self_reference"  # the reference is the citing paper itself (`extract.document_contexts`)
PAST_CAP = "reference_past_cap"
REASONS = ("no_reference_list", "number_out_of_range", PAST_CAP, "author_year_ambiguous", "author_year_no_match",
           "reference_without_doi", SELF_REFERENCE)
_YEAR = re.compile(r"(?<!\d)(1[6-9]\d\d|20\d\d)([a-z])?(?![\da-z])")


@dataclass(frozen=True)
class Reference:
    """One entry of a reference list; `author` is the first author's surname as deposited."""

    order: int
    key: str | None = None
    doi: str | None = None
    author: str | None = None
    year: str | None = None
    unstructured: str | None = None


@dataclass(frozen=True)
class Resolution:
    reference: Reference | None
    method: str | None
    reason: str | None  # None when resolved to a DOI

    @property
    def doi(self) -> str | None:
        return self.reference.doi if self.reference is not None and self.reason is None else None


_PARTICLES = frozenset("van von der den de da di du la le dos das del della ten ter al el".split())


def _surname_key(name: str | None) -> str | None:
    words = normalize_name(name or "").split()
    return words[-1] if words else None


def _author_keys(author: str | None) -> set[str]:
    """The words a deposited first author is found by: the last ("van der Berg" -> "berg") and
    the first that is not a particle, for corporate authors cited by their first word
    ("EFSA ANS Panel (...)" is cited as "EFSA")."""
    words = normalize_name(author or "").split()
    return {words[-1], next((w for w in words if w not in _PARTICLES), words[-1])} if words else set()


def _year_parts(value: str | None) -> tuple[int, str | None] | None:
    match = _YEAR.search(value or "")
    return (int(match.group(1)), match.group(2)) if match else None


def _names_part(unstructured: str) -> str:
    """Where an unstructured reference names its authors: before its year, or, when the year
    is deposited apart and the text has none, before the first ". " (the names end there:
    "Smith J. A title. Journal."), at most 200 characters."""
    year = _YEAR.search(unstructured)
    if year is not None:
        return unstructured[: year.start()]
    stop = unstructured.find(". ")
    return unstructured[: stop if 0 <= stop < 200 else 200]


class ReferenceIndex:
    """A reference list prepared for resolving the markers of one document; `listed` is how
    many entries the work deposited when only the first of them were kept (None: all were)."""

    def __init__(self, references: list[Reference], listed: int | None = None):
        self.references = references
        self.listed = len(references) if listed is None else listed
        self.by_author: dict[tuple[str, int], list[tuple[Reference, str | None]]] = defaultdict(list)
        self.unstructured: dict[int, list[tuple[Reference, str, str | None]]] = defaultdict(list)  # by year
        self._resolved: dict[tuple, Resolution] = {}  # a document repeats its markers
        for ref in references:
            keys = _author_keys(ref.author)
            year = _year_parts(ref.year) or (_year_parts(ref.unstructured) if not ref.author else None)
            if keys and year:
                for key in sorted(keys):
                    self.by_author[(key, year[0])].append((ref, year[1]))
            elif not ref.author and ref.unstructured and year:
                self.unstructured[year[0]].append((ref, f" {normalize_name(_names_part(ref.unstructured))} ", year[1]))

    def resolve(self, marker: Marker) -> Resolution:
        """The marker's reference, or why not; one answer per distinct marker (its number, or
        its surname, year and suffix), so a document citing one work a hundred thousand times
        against thousands of references costs one search, not one per marker."""
        key = (marker.number, marker.surname, marker.year, marker.suffix)
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = self._resolve(marker)
        return found

    def _resolve(self, marker: Marker) -> Resolution:
        if not self.references:
            return Resolution(None, None, "no_reference_list")
        if marker.number is not None:
            if not 1 <= marker.number <= len(self.references):
                past_cap = len(self.references) < marker.number <= self.listed
                return Resolution(None, None, PAST_CAP if past_cap else "number_out_of_range")
            return _found(self.references[marker.number - 1], "number_position")
        return self._author_year(marker)

    def candidates(self, marker: Marker) -> list[tuple[Reference, str | None, str]]:
        """Every entry that may be the marker's: `(reference, year suffix, method)` in list order,
        by the deposited first author, or by the `unstructured` text of entries without one."""
        surname = _surname_key(marker.surname)
        if surname is None or marker.year is None:
            return []
        found = [(ref, suffix, "author_year") for ref, suffix in self.by_author.get((surname, marker.year), [])]
        needle = " " + " ".join(normalize_name(marker.surname or "").split()) + " "
        found += [(ref, suffix, "author_year_unstructured") for ref, head, suffix in self.unstructured.get(marker.year, ())
                  if needle in head]
        return sorted(found, key=lambda c: c[0].order)

    def _author_year(self, marker: Marker) -> Resolution:
        candidates = self.candidates(marker)
        if not candidates:
            return Resolution(None, None, "author_year_no_match")
        if len(candidates) == 1:
            return _found(candidates[0][0], candidates[0][2])
        if marker.suffix:
            suffixed = [c for c in candidates if c[1] == marker.suffix]
            if len(suffixed) == 1:
                return _found(suffixed[0][0], suffixed[0][2])
            index = ord(marker.suffix) - ord("a")
            if all(c[1] is None for c in candidates) and 0 <= index < len(candidates):
                return _found(candidates[index][0], "author_year_suffix_order")
            return Resolution(None, None, "author_year_ambiguous")
        return _one_doi([c[0] for c in candidates], candidates[0][2])


def _found(ref: Reference, method: str) -> Resolution:
    return Resolution(ref, method, None if ref.doi else "reference_without_doi")


def _one_doi(candidates: list[Reference], method: str) -> Resolution:
    """Several candidates: resolved only when they are one work (the same DOI deposited twice)."""
    dois = {ref.doi for ref in candidates}
    if len(dois) == 1 and None not in dois:
        return _found(candidates[0], method)
    return Resolution(None, None, "author_year_ambiguous")
