"""Small helpers the source parsers share (first non-empty value, years, URL entries)."""

from __future__ import annotations

from typing import Any

from openmsd_build.core.doi import InvalidDOI, normalize_doi
from openmsd_build.core.json_records import RecordError


def doi_of(value: Any) -> str:
    """Normalized DOI of a record's DOI field, or `RecordError` (no_doi / bad DOI reason)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise RecordError("no_doi")
    try:
        return normalize_doi(value)
    except InvalidDOI as exc:
        raise RecordError(exc.reason, str(value)[:200]) from None


def as_list(value: Any) -> list:
    """`value` when it is a list, else [] (a list field holding `true` or `3` in a corrupt
    record must not raise while iterating)."""
    return value if isinstance(value, list) else []


def first_text(value: Any) -> str | None:
    """First non-blank string of a string or a list of strings (Crossref uses lists)."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list):
        for v in value:
            if isinstance(v, str) and v.strip():
                return v
    return None


def as_year(value: Any) -> int | None:
    try:
        year = int(value)
    except (TypeError, ValueError):
        return None
    return year if 1000 <= year <= 2200 else None


def str_or_none(value: Any) -> str | None:
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return None


def url_entry(url: Any, kind: str, source: str, host_type: Any = None, license: Any = None,
              version: Any = None, preference: int = 0) -> dict | None:
    """An OA location entry for the `urls` column, or None for a missing/non-HTTP URL.

    `preference` orders entries before ranking (lower is tried earlier)."""
    url = str_or_none(url)
    if not url or not url.lower().startswith(("http://", "https://")):
        return None
    return {
        "url": url,
        "kind": kind,
        "host_type": str_or_none(host_type),
        "license": str_or_none(license),
        "version": str_or_none(version),
        "source": source,
        "rank": preference,
    }
