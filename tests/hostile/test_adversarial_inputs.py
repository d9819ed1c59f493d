"""Long and adversarial values: DOIs, titles, abstracts and CSV fields. Each case must end
(a per-test timeout of 60 s, which quadratic or backtracking code misses by orders of
magnitude: it took minutes; these run in milliseconds, and their speed is bench/'s business,
not a wall-clock assert), and over-long values must end as a counted truncation or a counted
reject, never a crash."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from openmsd_build.citations import opencitations as oc
from openmsd_build.core.doi import MAX_RAW_DOI_LENGTH, InvalidDOI, normalize_doi
from openmsd_build.core.textclean import clean_abstract, clean_title
from openmsd_build.papers.join import FIELD_CAPS, read_source_file

N = 200_000
HOSTILE_DOIS = [
    "10.1234/" + "a" * N,
    "(" * N + "10.1234/x",
    "10.1234/x" + ")" * N,
    "'" * N + "10.1234/x" + "." * N,
    "doi:" * (N // 4) + "10.1234/x",
    "https://doi.org/" * (N // 16) + "10.1234/x",
    "%25" * (N // 3) + "10.1234/x",
    "%" * N,
    "10.1234/" + "%2" * N,
    " " * N + "10.1234/x",
    "\u200b" * N + "10.1234/x",
    "10." + "1" * N,
    "10.1234" + ".1" * N + "/x",
]


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
@pytest.mark.parametrize("value", HOSTILE_DOIS, ids=lambda v: repr(v[:12]))
def test_long_doi_is_rejected_fast(value):
    with pytest.raises(InvalidDOI) as exc:
        normalize_doi(value)
    assert exc.value.reason == "doi_too_long"


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
@pytest.mark.parametrize("shape", ["(", "'", ".", "[", " ", "doi:", "%25"])
def test_doi_just_under_the_raw_cap_is_fast(shape):
    """Below the raw cap every step is linear: 1,000 worst-shaped values in well under 1 s."""
    value = (shape * MAX_RAW_DOI_LENGTH)[: MAX_RAW_DOI_LENGTH - 12] + "10.1234/x"
    for _ in range(1_000):
        try:
            normalize_doi(value)
        except InvalidDOI:
            pass


def test_doi_peeling_unchanged():
    """The linear strip functions keep the old results (checked against the quadratic
    version on 200k random strings while writing them; these are the interesting shapes)."""
    assert normalize_doi("((10.1234/x") == "10.1234/x"
    assert normalize_doi("'<doi:10.1002/(SICI)1097(199)3:1<1::AID>3.0.CO;2-#>.") == \
        "10.1002/(sici)1097(199)3:1<1::aid>3.0.co;2-#"
    assert normalize_doi("10.1234/a[b]].") == "10.1234/a[b]"
    assert normalize_doi("https://doi.org/10.1234%2Fx)") == "10.1234/x"
    with pytest.raises(InvalidDOI):
        normalize_doi("((10.1234/x))")  # balanced brackets are part of the value


HOSTILE_TEXT = [
    "<p " * 300_000,
    "<!--" * 250_000,
    "<![CDATA[" * 100_000,
    "<a " * 300_000,
    "&amp;" * 200_000,
    "<" + "a" * 1_000_000,
    "\n " * 500_000 + "x",
    "Abstract\n" * 100_000,
    "abstract" + " " * 1_000_000 + "x",
    "<jats:p>" + "x " * 500_000 + "</jats:p>",
]


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
@pytest.mark.parametrize("text", HOSTILE_TEXT, ids=lambda v: repr(v[:10]))
def test_markup_cleaning_is_linear(text):
    clean_title(text)
    clean_abstract(text)


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
@pytest.mark.parametrize("source", ["unpaywall", "crossref", "openalex"])
def test_giant_title_and_abstract_are_truncated_and_counted(tmp_path, source):
    title = "T " * 2_000_000  # 4 MB, under the 16 MiB record cap
    abstract = "<jats:p>" + "word " * 400_000 + "</jats:p>"
    record = {
        "unpaywall": {"doi": "10.1234/big", "title": title},
        "crossref": {"DOI": "10.1234/big", "title": [title], "abstract": abstract},
        "openalex": {"doi": "https://doi.org/10.1234/big", "title": title,
                     "abstract_inverted_index": {"word": list(range(400_000))}},
    }[source]
    row, counts = _one_record(tmp_path, record, source)
    assert len(row["title"]) <= FIELD_CAPS["title"]
    assert counts[f"truncated.{source}.title"] == 1
    if source != "unpaywall":
        assert len(row["abstract"]) <= FIELD_CAPS["abstract"]
        assert counts[f"truncated.{source}.abstract"] == 1


def _run_csv(path) -> tuple[Counter, list[dict], int]:
    total: Counter = Counter()
    rejects: list[dict] = []
    edges = 0
    for table, rej, counts in oc.parse_citation_file(str(path)):
        total.update(counts)
        rejects += rej
        edges += table.num_rows
    return total, rejects, edges


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
@pytest.mark.parametrize("bad_row,reason", [
    ('1,10.1234/a,"' + "x" * (oc.MAX_CSV_FIELD_CHARS + 10) + '"\n', "field_too_large"),
    ("1,10.1234/a," + "y" * (oc.MAX_CSV_LINE_CHARS + 10) + "\n", "line_too_long"),
    # an unterminated quote swallowed the file up to the field cap; it is now its line's reject
    ('1,10.1234/a,"' + "z\n" * (oc.MAX_CSV_FIELD_CHARS // 2 + 10), "unbalanced_quote"),
])
def test_enormous_csv_field_is_a_counted_reject(tmp_path, bad_row, reason):
    """A field over `csv.field_size_limit`, a physical line over the line cap, or an
    unterminated quote: a `malformed_row` reject with its own reason, and the rows after it
    are still read."""
    path = tmp_path / "c.csv"
    path.write_text("oci,citing,cited\n0,10.1234/before,10.1234/b\n" + bad_row + "2,10.1234/after,10.1234/c\n")
    total, rejects, edges = _run_csv(path)
    assert reason in {r["reason"] for r in rejects}
    assert total["rows_too_long"] >= (reason != "unbalanced_quote") and total["malformed_row"] >= 1
    assert edges == 2  # the rows before and after survive
    drops = ("rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "rows_parsed")
    assert total["rows_read"] == sum(total[k] for k in drops)
    assert len(rejects) + total["rejects_suppressed"] == total["malformed_row"] + total["bad_doi"]
    assert all(len(r["raw"] or "") <= 2001 for r in rejects)


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
def test_huge_id_field_within_caps_is_linear():
    """A 1 MiB citing field of 100k space-separated DOI-looking ids: linear, one bad_doi."""
    field = " ".join(["doi:" + "(" * 5 + "10.x"] * 100_000)[: oc.MAX_CSV_FIELD_CHARS]
    total: Counter = Counter()
    for _, _, counts in oc.parse_citation_rows(iter([["citing", "cited"], [field, "10.1234/b"]]), "mem"):
        total.update(counts)
    assert total["bad_doi"] == 1


def _one_record(tmp_path, record: dict, source: str) -> tuple[dict, Counter]:
    """`record` as the only line of a `source` file, read as the papers stage reads it: its
    projected row and the file's counts."""
    path = tmp_path / "one.jsonl"
    path.write_bytes(orjson.dumps(record) + b"\n")
    outputs = list(read_source_file(str(path), source, num_shards=1))
    (_, (_, table)), = [o for o in outputs if o[0] == "batch"]
    return table.to_pylist()[0], outputs[-1][1]


@pytest.mark.parametrize("source", ["unpaywall", "crossref"])
def test_every_string_in_a_list_field_is_capped(tmp_path, source):
    """Only `titles` entries were cut: a 1 MB URL, host_type or version (Unpaywall) and 1 MB
    categories (Crossref) went into papers/ whole, uncounted. Every string in a list's entries
    is now cut like a title; a URL too long to fetch is left out; each is counted."""
    huge = "x" * 1_048_576
    good = {"url": "https://a.example/p.pdf", "host_type": "repository", "version": "publishedVersion",
            "license": None, "url_for_pdf": None, "url_for_landing_page": "https://a.example/p"}
    record = {
        "unpaywall": {"doi": "10.1234/lists", "title": "T", "oa_locations": [
            good, {**good, "url": "https://a.example/" + huge, "url_for_landing_page": "https://b.example/q"},
            {**good, "url": "https://c.example/r", "host_type": huge, "version": huge}]},
        "crossref": {"DOI": "10.1234/lists", "title": ["T"], "subject": ["Biology", huge, "Z" + huge]},
    }[source]
    row, counts = _one_record(tmp_path, record, source)
    strings = [v for entry in row["urls"] for v in entry.values() if isinstance(v, str)] + list(row["categories"])
    assert strings and max(map(len, strings)) <= FIELD_CAPS["title"]
    if source == "unpaywall":
        assert counts["truncated.unpaywall.urls"] == 1
        assert not any(huge[:100] in u["url"] for u in row["urls"]) and len(row["urls"]) >= 2
    else:
        assert counts["truncated.crossref.categories"] == 1 and len(row["categories"]) == 3
