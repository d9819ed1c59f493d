"""Unpaywall snapshot records (JSON Lines, one work per line) -> projected paper fields.

Unpaywall contributes OA locations (PDF and landing-page URLs with host type, licence and
version), the OA flag and fallback bibliographic fields. It has no abstracts.
"""

from __future__ import annotations

from typing import Any

from openmsd_build.core.textclean import clean_title
from openmsd_build.papers.sources.common import as_list, as_year, doi_of, str_or_none, url_entry
from openmsd_build.papers.sources.records import RecordError

SOURCE = "unpaywall"
_VERSION_ORDER = {"publishedVersion": 0, "acceptedVersion": 1, "submittedVersion": 2}


def oa_urls(record: dict) -> list[dict]:
    """The record's OA URLs, best location first; within a location the PDF comes before
    the landing page. Preference: is_best, then version (published first), then listing order."""
    locations = as_list(record.get("oa_locations"))
    if not locations and isinstance(record.get("best_oa_location"), dict):
        locations = [record["best_oa_location"]]
    best = record.get("best_oa_location") if isinstance(record.get("best_oa_location"), dict) else {}
    ordered = sorted(
        (loc for loc in locations if isinstance(loc, dict)),
        key=lambda loc: (
            not (loc.get("is_best") or (best and loc.get("url") == best.get("url"))),
            _VERSION_ORDER.get(loc.get("version") or "", 3),
        ),
    )
    urls: list[dict] = []
    for position, loc in enumerate(ordered):
        for kind, key in (("pdf", "url_for_pdf"), ("landing", "url_for_landing_page")):
            entry = url_entry(
                loc.get(key), kind, SOURCE, loc.get("host_type"), loc.get("license"), loc.get("version"),
                preference=position * 2 + (kind == "landing"),
            )
            if entry:
                urls.append(entry)
    return urls


def parse_unpaywall(record: Any) -> dict:
    """Project one Unpaywall record; raises `RecordError` when it has no usable DOI."""
    if not isinstance(record, dict):
        raise RecordError("not_an_object", type(record).__name__)
    best = record.get("best_oa_location") if isinstance(record.get("best_oa_location"), dict) else {}
    return {
        "doi": doi_of(record.get("doi")),
        "source": SOURCE,
        "title": clean_title(str_or_none(record.get("title"))) or None,  # one cleaning for every source
        "titles": [],
        "abstract": None,
        "venue": str_or_none(record.get("journal_name")),
        "publisher": str_or_none(record.get("publisher")),
        "year": as_year(record.get("year")),
        "type": str_or_none(record.get("genre")),
        "categories": [],
        "publisher_language": None,
        "license": str_or_none(best.get("license")) if best else None,
        "is_oa": record.get("is_oa") if isinstance(record.get("is_oa"), bool) else None,
        "urls": oa_urls(record),
        "relations": [],
    }
