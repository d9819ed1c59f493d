"""OpenAlex work records (snapshot JSON Lines, API responses) -> projected paper fields.

Unpaywall no longer publishes public snapshots and OpenAlex carries its OA locations, so an
OpenAlex works snapshot can stand in for (or add to) Unpaywall. Its abstracts come as an
inverted index (word -> positions) that is rebuilt here word for word, in order.
"""

from __future__ import annotations

from typing import Any

from openmsd_build.core.json_records import RecordError
from openmsd_build.core.textclean import clean_abstract, clean_title
from openmsd_build.papers.caps import MAX_ABSTRACT_CHARS
from openmsd_build.papers.sources.common import as_list, as_year, doi_of, str_or_none, url_entry

SOURCE = "openalex"
LIST_KEYS = (("results",),)
_VERSION_ORDER = {"publishedVersion": 0, "acceptedVersion": 1, "submittedVersion": 2}


def rebuild_abstract(inverted_index: Any, max_chars: int = MAX_ABSTRACT_CHARS) -> str | None:
    """Words placed at their positions and joined by spaces. Positions that no word claims
    are skipped; a position claimed twice keeps the first word listed (deterministic).

    The text is bounded while it is built, not after: a word of 1 MB listed at 10,000
    positions is a 50 KB record that would expand to 10 GB. Words are joined in position
    order until the text is longer than `max_chars` (it stops at `max_chars + 1`, so the
    field cap downstream still sees and counts the cut); the positions themselves are
    bounded by the record's own size caps (`records.MAX_NODES_PER_RECORD`)."""
    if not isinstance(inverted_index, dict) or not inverted_index:
        return None
    placed: dict[int, str] = {}
    for word, positions in inverted_index.items():
        if not isinstance(positions, list):
            continue
        for pos in positions:
            if isinstance(pos, int) and pos >= 0 and pos not in placed:
                placed[pos] = word
    if not placed:
        return None
    parts: list[str] = []
    size = -1
    for pos in sorted(placed):
        word = placed[pos]
        size += len(word) + 1
        if size > max_chars:
            parts.append(word[: len(word) - (size - max_chars) + 1])
            break
        parts.append(word)
    return " ".join(parts)


def unwrap(record: Any) -> Any:
    """Accept captures that wrap a work as `{"openalex_response": {...}}`."""
    if isinstance(record, dict) and "openalex_response" in record and "id" not in record:
        return record["openalex_response"]
    return record


def oa_urls(record: dict) -> list[dict]:
    best = record.get("best_oa_location") if isinstance(record.get("best_oa_location"), dict) else None
    locations = [loc for loc in as_list(record.get("locations")) if isinstance(loc, dict) and loc.get("is_oa")]
    if best and best not in locations:
        locations.insert(0, best)
    # a version that is not text (a list in a damaged record) ranks as unknown, as in Unpaywall's
    # reader: a dict lookup of a list raised, and the whole work was a `parser_error` reject
    locations.sort(key=lambda loc: (loc is not best and loc != best,
                                    _VERSION_ORDER.get(v, 3) if isinstance(v := loc.get("version"), str) else 3))
    urls: list[dict] = []
    for position, loc in enumerate(locations):
        source = loc.get("source") if isinstance(loc.get("source"), dict) else {}
        host_type = "repository" if source.get("type") == "repository" else ("publisher" if source else None)
        for kind, key in (("pdf", "pdf_url"), ("landing", "landing_page_url")):
            entry = url_entry(
                loc.get(key), kind, SOURCE, host_type, loc.get("license"), loc.get("version"),
                preference=position * 2 + (kind == "landing"),
            )
            if entry:
                urls.append(entry)
    return urls


def parse_openalex(record: Any) -> dict:
    """Project one OpenAlex work; raises `RecordError` when it has no DOI (OpenAlex also
    lists works without DOIs, which this DOI-keyed build cannot join)."""
    record = unwrap(record)
    if not isinstance(record, dict):
        raise RecordError("not_an_object", type(record).__name__)
    primary = record.get("primary_location") if isinstance(record.get("primary_location"), dict) else {}
    source = primary.get("source") if isinstance(primary.get("source"), dict) else {}
    best = record.get("best_oa_location") if isinstance(record.get("best_oa_location"), dict) else {}
    open_access = record.get("open_access") if isinstance(record.get("open_access"), dict) else {}
    abstract = rebuild_abstract(record.get("abstract_inverted_index"))
    return {
        "doi": doi_of(record.get("doi")),
        "source": SOURCE,
        "title": clean_title(str_or_none(record.get("title")) or str_or_none(record.get("display_name"))) or None,
        "titles": [],
        "abstract": clean_abstract(abstract) or None if abstract else None,
        "venue": str_or_none(source.get("display_name")),
        "publisher": str_or_none(source.get("host_organization_name")),
        "year": as_year(record.get("publication_year")),
        "type": str_or_none(record.get("type_crossref") or record.get("type")),
        "categories": [],
        "publisher_language": str_or_none(record.get("language")),
        "license": str_or_none(best.get("license")) if best else None,
        "is_oa": open_access.get("is_oa") if isinstance(open_access.get("is_oa"), bool) else None,
        "urls": oa_urls(record),
        "relations": [],
    }
