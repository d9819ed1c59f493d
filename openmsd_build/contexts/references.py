"""Reference lists from Crossref metadata files (pure: bytes in, rows out).

Why this stage reads the Crossref files itself: the papers stage projects a Crossref chunk on
the few columns a paper row needs and never materializes the `reference` arrays (that would
be most of its cost, `papers/sources/crossref_columnar.py`). Only this stage needs them, and
only their citing DOI, order, `key`, `DOI`, first author, year and `unstructured` text.

Shapes read: a public-data-file chunk `{"items": [work, ...]}`, a REST API answer
`{"message": work}` or `{"message": {"items": [...]}}`, a bare work, and JSON Lines of works
(`.jsonl`, `.jsonl.gz`); gzip is recognised by its magic bytes. A file that is none of these is
a reject (`crossref_unreadable`), counted with its bytes never quoted beyond an excerpt.

Counts: `crossref_files_read`, `crossref_works_read`, `crossref_works_bad_doi`,
`reference_lists_read` (works with a valid DOI and a non-empty `reference` array),
`references_read`, `references_truncated` (entries past `MAX_REFERENCES` of one work).
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson

from openmsd_build.core.doi import try_normalize_doi

MAX_REFERENCES = 5000
MAX_UNSTRUCTURED_CHARS = 600


class UnreadableFile(ValueError):
    """The file is not Crossref JSON in any shape this reader knows."""


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


def _works(data: bytes) -> Iterator[Any]:
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise UnreadableFile(f"bad gzip: {exc}") from None
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        lines = [line for line in data.splitlines() if line.strip()]
        try:
            works = [orjson.loads(line) for line in lines]
        except orjson.JSONDecodeError as exc:
            raise UnreadableFile(f"not JSON or JSON Lines: {exc}") from None
        yield from works
        return
    if isinstance(obj, dict) and isinstance(obj.get("message"), dict):
        obj = obj["message"]
    if isinstance(obj, dict) and isinstance(obj.get("items"), list):
        yield from obj["items"]
    elif isinstance(obj, dict) and "DOI" in obj:
        yield obj
    elif isinstance(obj, list):
        yield from obj
    else:
        raise UnreadableFile("JSON without works (no items, message or DOI)")


def reference_lists(data: bytes, counts: Counter) -> list[dict[str, Any]]:
    """`(doi, references)` rows of every work with a valid DOI and a non-empty reference list."""
    rows: list[dict[str, Any]] = []
    for work in _works(data):
        counts["crossref_works_read"] += 1
        if not isinstance(work, dict):
            counts["crossref_works_bad_doi"] += 1
            continue
        doi = try_normalize_doi(work.get("DOI"))
        if doi is None:
            counts["crossref_works_bad_doi"] += 1
            continue
        entries = work.get("reference")
        if not isinstance(entries, list) or not entries:
            continue
        counts["reference_lists_read"] += 1
        counts["references_read"] += min(len(entries), MAX_REFERENCES)
        counts["references_truncated"] += max(0, len(entries) - MAX_REFERENCES)
        refs = [reference_row(e, k + 1) for k, e in enumerate(entries[:MAX_REFERENCES])]
        rows.append({"doi": doi, "references": refs})
    return rows
