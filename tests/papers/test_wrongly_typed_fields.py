"""A damaged record whose optional nested field has the wrong type (a number where text is
expected, a list where a string or an object is) loses that field, not the whole work: the
record parsers raised on it (`str.lower` of a number, a dict lookup of a list, `.get` of a
list) and the work became a `parser_error` reject, while the columnar Crossref reader kept
the same work (its module docstring promises the two never differ in keeping a good record)."""

from __future__ import annotations

import gzip
import json

import pytest

from openmsd_build.papers import join
from openmsd_build.papers.sources.crossref import parse_crossref
from openmsd_build.papers.sources.openalex import parse_openalex

PDF = {"URL": "https://example.org/a.pdf", "content-type": "application/pdf"}

CROSSREF_DAMAGE = {
    "content_type_number": {"link": [{"URL": "https://example.org/a.pdf", "content-type": 5}]},
    "content_version_list": {"link": [dict(PDF, **{"content-version": ["vor"]})]},
    "relation_id_type_number": {"relation": {"has-preprint": [{"id-type": 1, "id": "10.1000/pre"}]}},
    "resource_primary_list": {"resource": {"primary": ["https://example.org/landing"]}},
    "resource_primary_string": {"resource": {"primary": "https://example.org/landing"}},
}


def _work(doi: str, **extra) -> dict:
    return {"DOI": doi, "title": ["A work with one damaged field"], "type": "journal-article", **extra}


@pytest.mark.parametrize("name", sorted(CROSSREF_DAMAGE))
def test_crossref_wrongly_typed_field_keeps_the_work(name):
    record = parse_crossref(_work("10.1000/damaged", **CROSSREF_DAMAGE[name]))
    assert record["doi"] == "10.1000/damaged"
    assert record["title"] == "A work with one damaged field"


def test_crossref_content_version_list_keeps_the_pdf_without_a_version():
    urls = parse_crossref(_work("10.1000/v", **CROSSREF_DAMAGE["content_version_list"]))["urls"]
    assert [(u["url"], u["kind"], u["version"]) for u in urls] == [("https://example.org/a.pdf", "pdf", None)]


@pytest.mark.parametrize("suffix", [".jsonl", ".json.gz"])
@pytest.mark.parametrize("name", sorted(CROSSREF_DAMAGE))
def test_crossref_file_keeps_a_work_with_a_wrongly_typed_field(tmp_path, name, suffix):
    """Through the function the stage runs per file: a JSON Lines file (record parser) and a
    public-data-file chunk (columnar reader, or its record-parser fallback) keep every work."""
    works = [_work("10.1000/good.1"), _work("10.1000/damaged", **CROSSREF_DAMAGE[name]), _work("10.1000/good.2")]
    path = tmp_path / f"works{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(w) + "\n" for w in works))
    else:
        path.write_bytes(gzip.compress(json.dumps({"items": works}).encode()))
    outputs = list(join.read_source_file(str(path), "crossref", 2))
    dois = sorted(doi for tag, value in outputs if tag == "batch" for doi in value[1].column("doi").to_pylist())
    counts = next(value for tag, value in outputs if tag == "counts")
    assert dois == ["10.1000/damaged", "10.1000/good.1", "10.1000/good.2"]
    assert not any(key.startswith("rejected.") for key in counts), counts


@pytest.mark.parametrize("version", [["publishedVersion"], {"v": 1}, 3])
def test_openalex_location_version_not_text_ranks_as_unknown(version):
    record = parse_openalex({
        "doi": "https://doi.org/10.1000/OA", "title": "T",
        "locations": [{"is_oa": True, "version": version, "pdf_url": "https://a.org/x.pdf"},
                      {"is_oa": True, "version": "publishedVersion", "pdf_url": "https://b.org/x.pdf"}],
    })
    assert record["doi"] == "10.1000/oa"
    assert [u["url"] for u in record["urls"]] == ["https://b.org/x.pdf", "https://a.org/x.pdf"]
