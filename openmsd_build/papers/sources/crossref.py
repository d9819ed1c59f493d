"""Crossref work records (public data file items, JSON Lines, REST API) -> projected fields.

Crossref is the registrar's metadata: it is preferred for title, venue, year, type, subject
categories, the publisher's language field and the JATS abstract. Its `relation` entries
link versions of one work (preprint <-> article), which the split stage keeps together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openmsd_build.core.doi import try_normalize_doi
from openmsd_build.core.json_records import CROSSREF_LIST_KEYS, RecordError
from openmsd_build.core.textclean import clean_abstract, clean_title
from openmsd_build.papers.sources.common import as_list, as_year, doi_of, first_text, str_or_none, url_entry

SOURCE = "crossref"

# Where a file keeps its list of works: public data file, REST list response.
LIST_KEYS = CROSSREF_LIST_KEYS

# Crossref relation types that mean "another form of the same work". Only these are kept:
# they are what can leak a test paper into train (preprint of a test article, translation).
SAME_WORK_RELATIONS = frozenset(
    {
        "has-preprint", "is-preprint-of", "has-version", "is-version-of", "is-identical-to",
        "is-same-as", "has-manifestation", "is-manifestation-of", "has-translation",
        "is-translation-of", "replaces", "is-replaced-by", "is-variant-form-of", "is-original-form-of",
    }
)
_CONTENT_VERSION = {"vor": "publishedVersion", "am": "acceptedVersion", "tdm": None}
_DATE_FIELDS = ("issued", "published", "published-print", "published-online", "created")


def unwrap(record: Any) -> Any:
    """A REST single-work response is `{"status": "ok", "message": {...work}}`."""
    if isinstance(record, dict) and "DOI" not in record and isinstance(record.get("message"), dict):
        return record["message"]
    return record


def year_of(record: dict) -> int | None:
    for field in _DATE_FIELDS:
        parts = (record.get(field) or {}).get("date-parts") if isinstance(record.get(field), dict) else None
        if parts and isinstance(parts, list) and parts[0] and isinstance(parts[0], list):
            year = as_year(parts[0][0])
            if year:
                return year
    return None


def relations_of(record: dict) -> list[dict]:
    relation = record.get("relation")
    out: list[dict] = []
    if not isinstance(relation, dict):
        return out
    for rel_type in sorted(relation):
        if rel_type not in SAME_WORK_RELATIONS:
            continue
        entries = relation[rel_type]
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, dict) and _lower(entry.get("id-type")) == "doi":
                doi = try_normalize_doi(entry.get("id"))
                if doi:
                    out.append({"type": rel_type, "doi": doi})
    return out


def _lower(value: Any) -> str:
    """A field compared as lower-case text: "" when it is not text (a number or a list in a
    damaged record is that field's value lost, not the whole work: `str.lower` raised on it,
    and the work became a `parser_error` reject that the columnar reader kept)."""
    return value.lower() if isinstance(value, str) else ""


def license_of(record: dict) -> str | None:
    licenses = [lic for lic in as_list(record.get("license")) if isinstance(lic, dict) and lic.get("URL")]
    licenses.sort(key=lambda lic: lic.get("content-version") != "vor")
    return str_or_none(licenses[0]["URL"]) if licenses else None


def links_of(record: dict) -> list[dict]:
    """Full-text links deposited by the publisher (PDFs), then the DOI's landing page."""
    urls: list[dict] = []
    for position, link in enumerate(as_list(record.get("link"))):
        if not isinstance(link, dict):
            continue
        if _lower(link.get("content-type")) != "application/pdf":
            continue
        version = link.get("content-version")
        entry = url_entry(
            link.get("URL"), "pdf", SOURCE, "publisher", None,
            _CONTENT_VERSION.get(version) if isinstance(version, str) else None, preference=position,
        )
        if entry:
            urls.append(entry)
    resource = record.get("resource")
    primary = resource.get("primary") if isinstance(resource, dict) else None
    entry = url_entry(primary.get("URL") if isinstance(primary, dict) else None, "landing", SOURCE, "publisher",
                      preference=len(urls))
    if entry:
        urls.append(entry)
    return urls


# Distinct titles kept per work: a real work has one per language it was published in.
MAX_TITLES = 20


def all_titles(*lists: Any, clean: Callable[[str], str] = clean_title) -> list[str]:
    """Every distinct non-blank title of `title` and `original-title`, cleaned, in order
    (Crossref lists a paper's title in each language it was published with). At most
    `MAX_TITLES`; duplicates are found with a set, so a corrupt record listing millions of
    titles costs linear time, not quadratic. `clean` is `clean_title` (the columnar reader
    passes a memo of it, so a title it also needs alone is cleaned once)."""
    titles: list[str] = []
    seen: set[str] = set()
    for values in lists:
        for value in as_list(values) if not isinstance(values, str) else [values]:
            if len(titles) >= MAX_TITLES:
                return titles
            cleaned = clean(value) if isinstance(value, str) else ""
            if cleaned and cleaned not in seen:
                seen.add(cleaned)
                titles.append(cleaned)
    return titles


def parse_crossref(record: Any) -> dict:
    """Project one Crossref work; raises `RecordError` when it has no usable DOI."""
    record = unwrap(record)
    if not isinstance(record, dict):
        raise RecordError("not_an_object", type(record).__name__)
    title = clean_title(first_text(record.get("title"))) or None
    titles = all_titles(record.get("title"), record.get("original-title"))
    abstract = clean_abstract(record.get("abstract")) if isinstance(record.get("abstract"), str) else ""
    subjects = record.get("subject") if isinstance(record.get("subject"), list) else []
    return {
        "doi": doi_of(record.get("DOI")),
        "source": SOURCE,
        "title": title,
        "titles": titles,
        "abstract": abstract or None,
        "venue": str_or_none(first_text(record.get("container-title"))),
        "publisher": str_or_none(record.get("publisher")),
        "year": year_of(record),
        "type": str_or_none(record.get("type")),
        "categories": sorted({s.strip() for s in subjects if isinstance(s, str) and s.strip()}),
        "publisher_language": str_or_none(record.get("language")),
        "license": license_of(record),
        "is_oa": None,
        "urls": links_of(record),
        "relations": relations_of(record),
    }
