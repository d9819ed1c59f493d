"""Fuzzing the metadata readers (Unpaywall, Crossref, OpenAlex) and their file layer.

Properties: a record parser returns a projected dict with a normalized DOI or raises
`RecordError` with a reason — never anything else; a file reader never raises, never hangs,
and every item it yields is accounted for (read = records in batches + rejects).
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from corrupt import CORRUPTIONS, gzip_bomb
from harness import account_source_file, deadline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openmsd_build.core import json_records as records_mod
from openmsd_build.core.json_records import RecordError
from openmsd_build.papers.sources.crossref import parse_crossref
from openmsd_build.papers.sources.openalex import parse_openalex
from openmsd_build.papers.sources.unpaywall import parse_unpaywall

PARSERS = {"unpaywall": parse_unpaywall, "crossref": parse_crossref, "openalex": parse_openalex}
FIELDS = (
    "doi", "DOI", "title", "display_name", "abstract", "abstract_inverted_index", "journal_name", "publisher",
    "year", "publication_year", "genre", "type", "type_crossref", "subject", "language", "license", "link",
    "resource", "relation", "issued", "published", "created", "container-title", "oa_locations",
    "best_oa_location", "locations", "primary_location", "open_access", "is_oa", "message", "openalex_response",
    "id", "url", "url_for_pdf", "url_for_landing_page", "host_type", "version", "is_best", "content-type", "URL",
    "content-version", "date-parts", "id-type", "has-preprint", "is-preprint-of", "primary", "source", "pdf_url",
    "landing_page_url",
)
DOIS = st.sampled_from(["10.1234/abc", "https://doi.org/10.5555/X(Y)", "doi:10.1/é", "10.", "", " 10.1/a\n", "x"])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40) | DOIS
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8),
                                                                inner, max_size=6),
    max_leaves=40,
)
records = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=12)
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(parse, record) -> None:
    with deadline(5):
        try:
            out = parse(record)
        except RecordError as exc:
            assert exc.reason and isinstance(exc.reason, str)
            return
    assert isinstance(out["doi"], str) and out["doi"].startswith("10.")
    assert isinstance(out["urls"], list) and all(u["url"].startswith(("http://", "https://")) for u in out["urls"])
    assert isinstance(out["categories"], list) and isinstance(out["relations"], list)


@pytest.mark.parametrize("source", sorted(PARSERS))
@FUZZ
@given(record=records | json_values)
def test_record_parsers_never_raise_anything_but_record_error(source, record):
    _check(PARSERS[source], record)


@pytest.mark.parametrize("source", sorted(PARSERS))
@FUZZ
@given(record=records, doi=DOIS)
def test_record_parsers_with_a_doi(source, record, doi):
    record = {**record, "doi": doi, "DOI": doi}
    _check(PARSERS[source], record)


def _real_files(real_samples: Path) -> dict[str, list[Path]]:
    return {
        "unpaywall": sorted((real_samples / "unpaywall").glob("ezunpaywall_fake*.jsonl.gz")),
        "crossref": [real_samples / "crossref" / "files_as_found" / "oc_ds_converter__gzip_test_0.json.gz",
                     real_samples / "crossref" / "cassette_works_all.public_data_file_style.json.gz"],
        "openalex": sorted((real_samples / "openalex" / "parseland_eval_shards").glob("*.ndjson.gz"))[:2],
    }


@pytest.mark.parametrize("source", ["unpaywall", "crossref", "openalex"])
def test_real_files_read_cleanly_and_reconcile(real_samples, source):
    for path in _real_files(real_samples)[source]:
        with deadline(60):
            acc = account_source_file(str(path), source)
        assert acc["read"] > 0 and acc["records"] > 0, (path, acc)


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
@pytest.mark.parametrize("source", ["unpaywall", "crossref", "openalex"])
def test_corrupted_real_files_are_accounted_for(real_samples, tmp_path, source, name):
    """Each real file, corrupted 3 ways per kind (seeded): no exception, no hang, every
    yielded item is a record or a reject with a reason."""
    corrupt = CORRUPTIONS[name]
    for path in _real_files(real_samples)[source][:1]:
        original = path.read_bytes()
        for seed in range(3):
            bad = tmp_path / f"{name}-{seed}-{path.name}"
            bad.write_bytes(corrupt(original, random.Random(seed)))
            with deadline(60):
                account_source_file(str(bad), source)


@pytest.mark.parametrize("source", ["unpaywall", "crossref"])
def test_truncated_gzip_keeps_records_before_the_cut(real_samples, tmp_path, source):
    path = _real_files(real_samples)[source][0]
    data = path.read_bytes()
    full = account_source_file(str(path), source)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    acc = account_source_file(str(cut), source)
    assert acc["rejects"] >= 1 and "truncated_gzip" in acc["reasons"], acc
    # line by line, or the whole works of a document before the cut: they survive
    assert 0 < acc["records"] < full["records"], (acc, full)


@pytest.mark.parametrize("source", ["unpaywall", "crossref", "openalex"])
def test_hypothesis_bytes_as_input_file(tmp_path, source):
    """Arbitrary bytes (plain and gzip) as a whole input file."""

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.binary(max_size=2048) | st.text(max_size=600).map(lambda s: s.encode("utf-8", "surrogatepass")),
           gz=st.booleans())
    def run(data, gz):
        path = tmp_path / "f.json.gz"
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        with deadline(10):
            account_source_file(str(path), source)

    run()


@pytest.mark.parametrize("source", ["unpaywall", "crossref"])
def test_compression_bomb_of_blank_lines(tmp_path, source):
    """4 MiB of newlines in 4 KiB of gzip: read in bounded time, nothing invented."""
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip_bomb(4 << 20, newlines=True))
    with deadline(60):
        acc = account_source_file(str(bomb), source)
    assert acc["records"] == 0


@pytest.mark.parametrize("source", ["unpaywall", "crossref"])
def test_compression_bomb_one_endless_line_is_capped(tmp_path, monkeypatch, source):
    """A gzip that inflates to one line bigger than the record cap becomes a reject
    (`record_too_large` / `file_too_large`) instead of being held in memory whole."""
    monkeypatch.setattr(records_mod, "MAX_RECORD_BYTES", 4 << 20)
    monkeypatch.setattr(records_mod, "MAX_DOCUMENT_BYTES", 16 << 20)
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b'{"doi": "10.1234/ok"}\n', mtime=0) + gzip_bomb(64 << 20, newlines=False)
                     + gzip.compress(b'\n{"doi": "10.1234/after"}\n', mtime=0))
    with deadline(60):
        acc = account_source_file(str(bomb), source)
    assert set(acc["reasons"]) <= {"record_too_large", "file_too_large"} and acc["rejects"] >= 1, acc
    if source == "unpaywall":
        assert acc["records"] == 2  # the records on both sides of the giant line survive


def test_regression_openalex_non_string_title():
    """Found by fuzzing: `{"title": 1.0}` raised TypeError in clean_title (one bad OpenAlex
    record killed its whole file's DoFn). Fixed in sources/openalex.py."""
    out = parse_openalex({"doi": "10.1234/x", "title": 1.0, "display_name": ["a"]})
    assert out["doi"] == "10.1234/x" and out["title"] is None
    assert parse_openalex({"doi": "10.1234/x", "title": None, "display_name": "Shown"})["title"] == "Shown"


def test_regression_unexpected_parser_exception_is_a_reject(tmp_path, monkeypatch):
    """A parser bug (any exception, not only RecordError) costs one record: the item becomes
    a `parser_error` reject and the rest of the file is read (paper_join.read_source_file)."""
    from openmsd_build.papers import join as paper_join

    def flaky(record):
        if record.get("doi") == "10.1234/boom":
            raise TypeError("bug")
        return parse_unpaywall(record)

    monkeypatch.setitem(paper_join._PARSERS, "unpaywall", flaky)
    path = tmp_path / "u.jsonl"
    path.write_text('{"doi": "10.1234/a"}\n{"doi": "10.1234/boom"}\n{"doi": "10.1234/b"}\n')
    acc = account_source_file(str(path), "unpaywall")
    assert acc == {"read": 3, "records": 2, "rejects": 1, "reasons": {"parser_error": 1}}


def test_failures_past_the_reject_cap_are_counted(tmp_path):
    """A file whose every line is broken (a bit-flipped snapshot) fails more records than
    `MAX_REJECTS_PER_FILE`: the first ones become reject rows, the rest are counted as
    `rejects_suppressed`, and read = records + reject rows + suppressed still holds (the
    soak's fuzz round found the harness ignoring them)."""
    from openmsd_build.core.rejects import MAX_REJECTS_PER_FILE

    broken = 25
    path = tmp_path / "u.jsonl"
    path.write_text('{"doi": "10.1234/a"}\n' + "{not json\n" * (MAX_REJECTS_PER_FILE + broken) + '{"doi": "10.1234/b"}\n')
    acc = account_source_file(str(path), "unpaywall")
    assert acc == {"read": MAX_REJECTS_PER_FILE + broken + 2, "records": 2, "rejects": MAX_REJECTS_PER_FILE,
                   "reasons": {"invalid_json": MAX_REJECTS_PER_FILE}, "suppressed": broken}


@pytest.mark.parametrize("compressed", [False, True])
def test_a_byte_order_mark_costs_no_record(tmp_path, compressed):
    """Files saved by Windows editors start with a UTF-8 byte order mark, which JSON parsers
    refuse: the first line of a JSON Lines snapshot, or a whole Crossref document, was lost."""
    bom = b"\xef\xbb\xbf"
    lines = bom + b'{"doi": "10.1234/a"}\r\n{"doi": "10.1234/b"}\r\n'
    works = bom + b'{"items": [{"DOI": "10.1234/c", "title": ["C"]}, {"DOI": "10.1234/d", "title": ["D"]}]}'
    for name, data, source in (("u.jsonl", lines, "unpaywall"), ("c.json", works, "crossref")):
        path = tmp_path / (name + (".gz" if compressed else ""))
        path.write_bytes(gzip.compress(data) if compressed else data)
        assert account_source_file(str(path), source) == {"read": 2, "records": 2, "rejects": 0, "reasons": {}}, name


@pytest.mark.parametrize("field", ["oa_locations", "license", "link", "locations"])
@pytest.mark.parametrize("source", sorted(PARSERS))
def test_regression_list_fields_holding_scalars(source, field):
    """Found by fuzzing: `{"oa_locations": true}` (Unpaywall), `"link": 3` / `"license": 3`
    (Crossref) and `"locations": 1` (OpenAlex) raised TypeError while iterating. Fixed with
    `sources.common.as_list`."""
    for value in (True, 3, 1.5, "x"):
        out = PARSERS[source]({"doi": "10.1234/x", "DOI": "10.1234/x", field: value})
        assert out["doi"] == "10.1234/x" and out["urls"] == [] or source == "crossref"
