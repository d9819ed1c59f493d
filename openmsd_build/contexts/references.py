"""Reference lists from Crossref metadata files (pure: bytes in, rows out).

Why this stage reads the Crossref files itself: the papers stage projects a Crossref chunk on
the few columns a paper row needs and never materializes the `reference` arrays (that would
be most of its cost, `papers/sources/crossref_columnar.py`). Only this stage needs them, and
only their citing DOI, order, `key`, `DOI`, first author, year and `unstructured` text.

Shapes read: a public-data-file chunk `{"items": [work, ...]}`, a REST API answer
`{"message": work}` or `{"message": {"items": [...]}}`, a bare work or a list of works, and
JSON Lines of works, gzip or plain, by the reader the papers stage uses
(`core.json_records`): the same caps on decompressed sizes, and a damaged file costs its
damaged records only (a malformed work or line is one failure, its neighbours are kept; a
file cut short keeps the lines before the cut). Each failure, and each work whose DOI is not
a DOI, is a reject.

Counts: `crossref_files_read`, `crossref_works_read`, `crossref_works_bad_doi`,
`crossref_rejected.<reason>` (records that could not be read: `invalid_json`,
`truncated_gzip`, `file_too_large`, ...), `reference_lists_read` (works with a valid DOI and a
non-empty `reference` array), `references_read`, `references_truncated` (entries past
`MAX_REFERENCES` of one work). A row keeps how many entries the work deposited (`listed`), so
a numeric marker past the kept entries but within the deposited list is told apart from one
past the list's end (`resolve.PAST_CAP`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from openmsd_build.core.doi import try_normalize_doi
from openmsd_build.core.json_records import CROSSREF_LIST_KEYS, Item, iter_json_documents
from openmsd_build.core.rejects import RejectBudget

MAX_REFERENCES = 5000
MAX_UNSTRUCTURED_CHARS = 600


def _text(value: Any, cap: int = 300) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    value = " ".join(value.split())
    return value[:cap] or None


def reference_row(entry: Any, order: int) -> dict[str, Any]:
    """One `reference` entry as a row of `schemas.REFERENCE_STRUCT` (order is 1-based)."""
    entry = entry if isinstance(entry, dict) else {}
    return {
        "order": order,
        "key": _text(entry.get("key")),
        "doi": try_normalize_doi(entry.get("DOI")) if entry.get("DOI") else None,
        "author": _text(entry.get("author"), 120),
        "year": _text(entry.get("year"), 20),
        "unstructured": _text(entry.get("unstructured"), MAX_UNSTRUCTURED_CHARS),
    }


def reference_lists(items: Iterable[Item], counts: Counter) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """(`(doi, references)` rows of every work with a valid DOI and a non-empty reference list,
    `(reason, origin, detail)` of every record that could not be used) of one file's items
    (`read_items`). A file gives at most `MAX_REJECTS_PER_FILE` reject rows, as in the papers
    stage; the failures past them are counted (`rejects_suppressed`) but not listed."""
    rows: list[dict[str, Any]] = []
    failures: list[tuple[str, str, str]] = []
    budget = RejectBudget()

    def fail(reason: str, origin: str, detail: str) -> None:
        if budget.take():
            failures.append((reason, origin, detail))
        else:
            counts["rejects_suppressed"] += 1

    for item in items:
        if item.reason is not None:
            counts[f"crossref_rejected.{item.reason}"] += 1
            fail(f"crossref_{item.reason}", item.origin, item.detail or "")
            continue
        work = item.obj
        if isinstance(work, dict) and "DOI" not in work and isinstance(work.get("message"), dict):
            work = work["message"]  # one REST API answer
        counts["crossref_works_read"] += 1
        doi = try_normalize_doi(work.get("DOI")) if isinstance(work, dict) else None
        if doi is None:
            counts["crossref_works_bad_doi"] += 1
            shown = repr(work.get("DOI"))[:120] if isinstance(work, dict) else type(work).__name__
            fail("crossref_work_bad_doi", item.origin, f"DOI {shown}")
            continue
        entries = work.get("reference")
        if not isinstance(entries, list) or not entries:
            continue
        counts["reference_lists_read"] += 1
        counts["references_read"] += min(len(entries), MAX_REFERENCES)
        counts["references_truncated"] += max(0, len(entries) - MAX_REFERENCES)
        refs = [reference_row(e, k + 1) for k, e in enumerate(entries[:MAX_REFERENCES])]
        rows.append({"doi": doi, "references": refs, "listed": len(entries)})
    return rows, failures


def longest_lists(rows: Iterable[tuple[str, list, int]], counts: Counter) -> dict[str, tuple[list, int]]:
    """`(doi, references, listed)` rows -> a DOI's reference list and its deposited length; a
    DOI listed twice (in two files) keeps its longest list (`reference_lists_duplicate`)."""
    lists: dict[str, tuple[list, int]] = {}
    for doi, references, listed in rows:
        if doi in lists:
            counts["reference_lists_duplicate"] += 1
            if listed <= lists[doi][1]:
                continue
        lists[doi] = references, listed
    return lists


def lists_of_files(paths: Iterable[str], counts: Counter | None = None) -> dict[str, tuple[list, int]]:
    """Every reference list of some Crossref files by citing DOI, as the stage keeps them
    (`longest_lists`). For scripts that look at lists outside the pipeline (`bench/contexts_*.py`)."""
    counts = Counter() if counts is None else counts
    rows = ((row["doi"], row["references"], row["listed"]) for path in paths
            for row in reference_lists(read_items(path), counts)[0])
    return longest_lists(rows, counts)


def read_items(path: str) -> Iterator[Item]:
    """The records of one Crossref file, or the failures in their place."""
    return iter_json_documents(path, CROSSREF_LIST_KEYS)
