"""Fuzzing the OpenCitations CSV parser and the DOI normalizer it relies on.

Properties: parsing never raises and never hangs; every data row read is accounted for
(`rows_read = rows_unrecognized_file + malformed_row + bad_doi + no_doi + rows_parsed`),
every parsed row leaves as exactly one edge, and every dropped row that should be rejected
is (malformed_row + bad_doi + files_unrecognized = rejects). `normalize_doi` returns a
printable, UTF-8-encodable fixpoint or raises `InvalidDOI`.
"""

from __future__ import annotations

import csv
import gzip
import io
import random
from collections import Counter

import pytest
from corrupt import CORRUPTIONS
from harness import deadline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openmsd_build.citations.opencitations import parse_citation_file, parse_citation_rows
from openmsd_build.core.doi import InvalidDOI, normalize_doi

DROPS = ("rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "rows_parsed")
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                      HealthCheck.function_scoped_fixture])


def _account(batches) -> Counter:
    total: Counter = Counter()
    edges = rejects = 0
    for table, rej, counts in batches:
        total.update(counts)
        edges += table.num_rows
        rejects += len(rej)
        for r in rej:
            assert r["reason"] and r["stage"] == "citations"
        for col in ("citing_doi", "cited_doi"):
            for doi in table.column(col).to_pylist():
                assert doi is None or normalize_doi(doi) == doi
    assert total["rows_read"] == sum(total[k] for k in DROPS), total
    assert total["input_lines"] == total["lines_parsed"], total  # no line lost before the parser
    assert edges == total["rows_parsed"], (edges, total)
    assert rejects == (total["malformed_row"] + total["bad_doi"] + total["files_unrecognized"]
                       + total["files_unreadable"]), (rejects, total)
    return total


ids = st.sampled_from(["10.1234/a", "doi:10.5555/B", "omid:br/0612", "omid:br/1 doi:10.1234/c pmid:1", "pmid:5",
                       "10.", "", " ", "doi:", "https://doi.org/10.1234/x%2"]) | st.text(max_size=20)
headers = st.sampled_from([["oci", "citing", "cited"], ["citing", "cited"], ["citing_id", "x", "cited_id"],
                           ["id", "citing", "cited"], ["oci", "snapshot"], []]) | st.lists(st.text(max_size=8), max_size=4)


@FUZZ
@given(header=headers, rows=st.lists(st.lists(ids, max_size=5), max_size=30), batch=st.integers(1, 7))
def test_rows_are_accounted_for(header, rows, batch):
    with deadline(10):
        _account(parse_citation_rows(iter([header, *rows]), "fuzz", batch_rows=batch))



@FUZZ
@given(data=st.binary(max_size=3000), suffix=st.just(".csv"))
def test_arbitrary_bytes_as_file(tmp_path, data, suffix):
    _bytes_as_file(tmp_path, data, suffix)


@FUZZ
@given(data=st.binary(max_size=3000), suffix=st.sampled_from([".csv.gz", ".zip"]))
def test_arbitrary_bytes_as_compressed_file(tmp_path, data, suffix):
    _bytes_as_file(tmp_path, data, suffix)


def _bytes_as_file(tmp_path, data, suffix):
    path = tmp_path / f"f{suffix}"
    path.write_bytes(gzip.compress(data, mtime=0) if suffix == ".csv.gz" else data)
    with deadline(10):
        try:
            _account(parse_citation_file(str(path)))
        except (EOFError, OSError, ValueError) as exc:  # noqa: F841
            pytest.fail(f"parse_citation_file raised on bad bytes ({suffix}): {type(exc).__name__}: {exc}")


def _real_csvs(real_samples):
    base = real_samples / "opencitations"
    return [base / "coci_rows_from_citecorp_api.csv", *sorted((base / "files_as_found").glob("*.csv"))]


def test_real_files_reconcile(real_samples):
    for path in _real_csvs(real_samples):
        total = _account(parse_citation_file(str(path)))
        assert total["rows_read"] > 0, path


@pytest.mark.parametrize("name", ["truncate", "bit_flips", "latin1", "utf16", "giant_field", "splice_binary",
                                  "bit_flips_plain", "truncate_plain"])
def test_corrupted_real_files(real_samples, tmp_path, name):
    """Corrupted real CSVs, plain and gzip-compressed: accounted for, never a crash."""
    failures = []
    for path in _real_csvs(real_samples):
        for seed in range(2):
            data = CORRUPTIONS[name](path.read_bytes(), random.Random(seed))
            for suffix, payload in ((".csv", data), (".csv.gz", gzip.compress(data, mtime=0))):
                bad = tmp_path / f"{path.stem}-{seed}{suffix}"
                bad.write_bytes(payload)
                with deadline(30):
                    try:
                        _account(parse_citation_file(str(bad)))
                    except AssertionError:
                        raise
                    except Exception as exc:  # noqa: BLE001 - collected and reported below
                        failures.append(f"{bad.name}: {type(exc).__name__}: {exc}"[:200])
    assert not failures, failures


def test_truncated_gzip_csv(real_samples, tmp_path):
    """A .csv.gz cut short (an interrupted download) must not kill the file's worker."""
    data = gzip.compress(_real_csvs(real_samples)[0].read_bytes(), mtime=0)
    bad = tmp_path / "cut.csv.gz"
    bad.write_bytes(data[: len(data) // 2])
    with deadline(30):
        _account(parse_citation_file(str(bad)))


@settings(max_examples=400, deadline=None)
@given(value=st.text(max_size=60) | st.sampled_from(["10.1234/a", "https://doi.org/10.1234/A%252F", "doi:10.1234/x."])
       .map(lambda s: s + "\ud800") | st.from_regex(r"(doi:|https://doi.org/)?10\.\d{4}/[\S]{1,20}", fullmatch=True))
def test_normalize_doi_fixpoint(value):
    try:
        doi = normalize_doi(value)
    except InvalidDOI as exc:
        assert exc.reason
        return
    assert normalize_doi(doi) == doi
    assert doi.isprintable() and doi.encode("utf-8")


def test_regression_doi_with_lone_surrogate_rejected():
    """Found by fuzzing: '10.1234/\\ud800' was accepted as a DOI, and a key that cannot be
    encoded as UTF-8 fails the Parquet write of a whole shard. Fixed in doi.py."""
    with pytest.raises(InvalidDOI):
        normalize_doi("10.1234/\ud800")


def test_csv_giant_field_in_header_and_rows():
    big = "x" * (1 << 20)
    rows = list(csv.reader(io.StringIO(f"oci,citing,cited\n1,10.1234/a,{big}\n2,{big},10.1234/b\n")))
    total = _account(parse_citation_rows(iter(rows), "giant"))
    assert total["bad_doi"] == 2
