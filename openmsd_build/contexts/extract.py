"""One document's citation contexts (pure): sentences -> markers -> resolved DOIs.

`iter_document_contexts` is the whole per-document rule of the stage (`document_contexts`:
the same, all rows at once); the Beam DoFn only feeds it documents joined with their
reference lists. Counters it adds (the stage reconciles them):

* `sentences_seen = sentences_with_markers + sentences_without_markers + sentences_too_long`
  (a "sentence" over `MAX_SENTENCE_CHARS` is a PDF layout failure, not scanned);
* `markers_found = markers_resolved + Σ markers_unresolved.<reason>` (`resolve.REASONS`), also
  per style: `markers_found.<style>`, `markers_resolved.<style>`; `markers_method.<method>`;
* `sentences_with_markers = contexts_written + contexts_without_doi` (a context is written when
  at least one of its markers resolved to a DOI);
* `reference_section_cut`: documents whose text was cut at a references heading (the list
  itself is full of author-year look-alikes);
* `contexts_written = contexts_language_sentence + contexts_language_document`: a context's
  `language` is the sentence's own (CLD3 on the sentence without its markers, when reliable:
  a quoted English sentence in a Russian paper is English; another language than the
  document's only at probability >= 0.95), else the document's;
  `contexts_language_differs` counts sentences in another language than their document.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from itertools import combinations
from typing import Any

from openmsd_build.contexts.markers import Marker, find_markers
from openmsd_build.contexts.resolve import SELF_REFERENCE, Reference, ReferenceIndex
from openmsd_build.contexts.sentences import split_sentences
from openmsd_build.core.language import UND, detect_language

MAX_SENTENCE_CHARS = 2000
MAX_COCITED = 50  # a sentence citing more distinct DOIs gives no pairs (counted)
# A sentence is said to be in another language than its document only on strong evidence: one
# sentence is little text for CLD3 (German sentences of the demo read as Luxembourgish at 0.73).
MIN_OTHER_LANGUAGE_PROBABILITY = 0.95
_REFERENCES_HEADING = re.compile(
    r"(?im)^[ \t]*(?:\d+\.?[ \t]*)?(?:references(?: and notes)?|bibliography|literature cited|works cited|"
    r"literatur(?:verzeichnis)?|références(?: bibliographiques)?|bibliographie|referencias(?: bibliográficas)?|"
    r"bibliografía|referências(?: bibliográficas)?|bibliografia|riferimenti bibliografici|список литературы|"
    r"литература|参考文献|引用文献|參考文獻|참고문헌|kaynaklar|kaynakça|daftar pustaka|literatuur|"
    r"piśmiennictwo|bibliografie)[ \t]*:?[ \t]*$")


def cut_reference_section(text: str) -> tuple[str, bool]:
    """The text before its last references heading when that heading sits in the second half."""
    headings = list(_REFERENCES_HEADING.finditer(text))
    last = headings[-1] if headings else None
    if last is not None and last.start() > len(text) // 2:
        return text[: last.start()], True
    return text, False


def as_references(rows: list[dict] | None) -> list[Reference]:
    return [Reference(r["order"], r.get("key"), r.get("doi"), r.get("author"), r.get("year"), r.get("unstructured"))
            for r in rows or ()]


def sentence_language(sentence: str, markers: list[Marker], document_language: str | None) -> tuple[str | None, bool]:
    """(language, detected on the sentence itself?): CLD3 on the sentence with its markers cut
    out (a Latin-script author name is not evidence of a Cyrillic sentence's language), kept
    when reliable, and when it differs from the document's only with a probability of at least
    `MIN_OTHER_LANGUAGE_PROBABILITY`; else the document's language."""
    text, last = [], 0
    for m in sorted(markers, key=lambda m: m.start):
        if m.start >= last:
            text.append(sentence[last:m.start])
            last = m.end
    text.append(sentence[last:])
    language, probability, reliable = detect_language(None, " ".join(text))
    if reliable and language != UND and (language == document_language
                                         or probability >= MIN_OTHER_LANGUAGE_PROBABILITY):
        return language, True
    return document_language, False


def document_contexts(doi: str, content: str, language: str | None, references: list[dict] | None,
                      counts: Counter, listed: int | None = None) -> tuple[list[dict[str, Any]], Counter]:
    """The document's context rows (schema CONTEXTS) and its co-citation instances, summed:
    `(doi_a, doi_b)` with doi_a < doi_b -> the sentences citing both. Summed here, a document
    holds at most one entry per pair of its references: as a list of instances, 20,000
    sentences citing the same 50 papers (500 KB of text) held 24.5M tuples, 6.2 GB. `listed`: how many entries
    the work deposited, when `references` holds only the first of them. All rows at once: the
    stage takes them from `iter_document_contexts` instead, a piece at a time."""
    pairs: Counter = Counter()
    rows = list(iter_document_contexts(doi, content, language, references, counts, pairs, listed))
    return rows, pairs


def iter_document_contexts(doi: str, content: str, language: str | None, references: list[dict] | None,
                           counts: Counter, pairs: Counter, listed: int | None = None) -> Iterator[dict[str, Any]]:
    """`document_contexts` as a generator: the rows in sentence order, the co-citation
    instances summed into `pairs` and the counters into `counts` as it goes (both complete once
    it is exhausted). Why: a row holds a dict per marker, so a 5 MB text of sentences citing
    50 references each was 1.15 GB of rows as one list; the stage writes them away as they come."""
    index = ReferenceIndex(as_references(references), listed)
    text, cut = cut_reference_section(content)
    counts["reference_section_cut"] += cut
    for position, sentence in enumerate(split_sentences(text)):
        counts["sentences_seen"] += 1
        if len(sentence) > MAX_SENTENCE_CHARS:
            counts["sentences_too_long"] += 1
            continue
        markers = find_markers(sentence)
        if not markers:
            counts["sentences_without_markers"] += 1
            continue
        counts["sentences_with_markers"] += 1
        entries, cited = [], []
        for marker in markers:
            resolution = index.resolve(marker)
            if resolution.doi is not None and resolution.doi == doi:  # its own list names the paper: no
                # citation (the citations stage drops such an edge as a self-citation), no CCS pair
                resolution = replace(resolution, reason=SELF_REFERENCE)
            ref = resolution.reference
            counts["markers_found"] += 1
            counts[f"markers_found.{marker.style}"] += 1
            if resolution.method:
                counts[f"markers_method.{resolution.method}"] += 1
            if resolution.reason:
                counts[f"markers_unresolved.{resolution.reason}"] += 1
            else:
                counts["markers_resolved"] += 1
                counts[f"markers_resolved.{marker.style}"] += 1
                if resolution.doi not in cited:
                    cited.append(resolution.doi)
            entries.append({
                "start": marker.start, "end": marker.end, "text": sentence[marker.start: marker.end],
                "style": marker.style, "number": marker.number, "surname": marker.surname, "year": marker.year,
                "suffix": marker.suffix, "reference_order": ref.order if ref else None,
                "reference_key": ref.key if ref else None, "cited_doi": resolution.doi,
                "method": resolution.method, "reason": resolution.reason,
            })
        if not cited:
            counts["contexts_without_doi"] += 1
            continue
        counts["contexts_written"] += 1
        own, detected = sentence_language(sentence, markers, language)
        counts["contexts_language_sentence" if detected else "contexts_language_document"] += 1
        counts["contexts_language_differs"] += own != language
        if len(cited) > MAX_COCITED:
            counts["ccs_sentences_over_cap"] += 1
        elif len(cited) > 1:
            counts["ccs_sentences"] += 1
            pairs.update(tuple(sorted(p)) for p in combinations(cited, 2))
            counts["ccs_instances"] += len(cited) * (len(cited) - 1) // 2
        yield {"citing_doi": doi, "sentence_index": position, "sentence": sentence, "language": own,
               "cited_dois": cited, "markers": entries, "n_markers": len(entries),
               "n_resolved": sum(e["cited_doi"] is not None for e in entries)}
