"""Merging the source records of one DOI into one `papers` row, with a fixed precedence.

Precedence per field (first non-empty wins; ties inside one source go to the record with the
most filled fields, then the smallest origin `file:line`, so the result never depends on the
order a runner delivers records in):

| field                         | order                                  | why                              |
|-------------------------------|----------------------------------------|----------------------------------|
| title, titles, venue, year, type | crossref, openalex, unpaywall       | the registrar's metadata first   |
| abstract                      | crossref (JATS), openalex (inv. index) | Unpaywall has none               |
| publisher                     | crossref, unpaywall, openalex          |                                  |
| categories                    | crossref `subject`                     | the paper's 340 categories       |
| publisher_language            | crossref, openalex                     | kept beside detected language    |
| license, is_oa                | unpaywall, openalex, crossref          | OA status is Unpaywall's subject |
| urls                          | unpaywall, openalex, crossref; deduped | ranked for fetching              |
| relations                     | union (crossref)                       | versions of one work             |

`urls` and `relations` are unions over all the DOI's records, so they are capped again on
the merged row (`caps.MERGED_LIST_CAPS`: the first 100 URLs by rank, the first 100 relations
in (type, DOI) order): one DOI repeated in many records must not make one huge row.

An abstract under `paratext.MIN_METADATA_ABSTRACT_TOKENS` tokens is not an abstract and is
passed over; `paratext` flags a record that is not a paper (`paratext.paratext_reason`).
"""

from __future__ import annotations

from collections.abc import Iterable

from openmsd_build.papers.caps import MERGED_LIST_CAPS
from openmsd_build.papers.paratext import abstract_long_enough, paratext_reason
from openmsd_build.papers.sources.registry import precedence

# Generated from the source registry's ranks (the table above states the result).
SOURCE_ORDER = precedence("*")
_PRECEDENCE: dict[str, tuple[str, ...]] = {
    f: precedence(f)
    for f in ("title", "titles", "abstract", "venue", "year", "type", "publisher", "categories",
              "publisher_language", "license", "is_oa")
}
_URL_SOURCE_ORDER = precedence("urls")
_FILLED_FIELDS = ("title", "abstract", "venue", "year", "type", "urls", "categories")


def completeness(record: dict) -> int:
    """How many of the main fields a record fills (the tie-break inside one source)."""
    return sum(1 for f in _FILLED_FIELDS if record.get(f) not in (None, "", []))


def _is_empty(value: object) -> bool:
    return value is None or value == "" or value == []


def merge_records(records: Iterable[dict]) -> dict:
    """One `papers` row from all projected records of one DOI (any sources, duplicates too).

    Records carry `origin` (`file:line`) for the deterministic tie-break. `n_records` counts
    the records merged, so the stage can reconcile: read = written + rejected + merged."""
    records = list(records)
    if not records:
        raise ValueError("merge_records needs at least one record")
    by_source: dict[str, list[dict]] = {}
    for rec in records:
        by_source.setdefault(rec["source"], []).append(rec)
    for recs in by_source.values():
        recs.sort(key=lambda r: (-completeness(r), r.get("origin") or ""))

    def pick(field: str) -> tuple[object, str | None]:
        for source in _PRECEDENCE[field]:
            for rec in by_source.get(source, ()):
                if not _is_empty(rec.get(field)) and (field != "abstract" or abstract_long_enough(rec[field])):
                    return rec[field], source
        return None, None

    row: dict = {"doi": records[0]["doi"]}
    for field in _PRECEDENCE:
        value, source = pick(field)
        row[field] = value
        if field in ("title", "abstract"):
            row[f"{field}_source"] = source
    row["categories"] = row["categories"] or []
    row["titles"] = row["titles"] or []
    # unions over every record of the DOI: capped again here (`caps.MERGED_LIST_CAPS`)
    row["urls"] = _rank_urls(by_source)[: MERGED_LIST_CAPS["urls"]]
    row["relations"] = _union_relations(records, row["doi"])[: MERGED_LIST_CAPS["relations"]]
    row["sources"] = [s for s in SOURCE_ORDER if s in by_source]
    row["n_records"] = len(records)
    row["paratext"] = paratext_reason(row["doi"], row["title"], row["type"])
    return row


def _rank_urls(by_source: dict[str, list[dict]]) -> list[dict]:
    """All sources' OA URLs, deduplicated by URL, ranked: Unpaywall's order first (it ranks
    by best location and version), then OpenAlex's, then Crossref's publisher links."""
    seen: set[str] = set()
    ranked: list[dict] = []
    for source in _URL_SOURCE_ORDER:
        for rec in by_source.get(source, ()):
            for entry in sorted(rec.get("urls") or [], key=lambda e: e.get("rank") or 0):
                key = entry["url"].strip()
                if key in seen:
                    continue
                seen.add(key)
                ranked.append({**entry, "rank": len(ranked)})
    return ranked


def _union_relations(records: list[dict], doi: str) -> list[dict]:
    pairs = {(r["type"], r["doi"]) for rec in records for r in rec.get("relations") or [] if r["doi"] != doi}
    return [{"type": t, "doi": d} for t, d in sorted(pairs)]
