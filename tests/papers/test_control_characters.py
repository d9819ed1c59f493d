"""Control characters (NUL, BEL, ESC, ... : C0 and C1) in the short metadata text fields --
`type`, `venue`, `publisher`, `license`, `publisher_language`, `categories` and the licence,
host type and version of each URL -- are removed where every record of every source and
reader becomes a table (`join.projected_table`). They were kept as given (titles and
abstracts are cleaned by `textclean`): a type `journal-issue\\x00` escaped the paratext flag
and outranked another source's clean type, a licence `cc-by\\x00` was another licence in
every count, and a value of controls alone was kept as a non-empty value. Checked through
the `papers` command on both Crossref readers (the columnar public-data-file one and the
record parser of JSON Lines), which must give the same rows."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.papers import join
from openmsd_build.papers.join import clean_short_text

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]

UNPAYWALL = [
    {"doi": "10.1000/u1", "title": "An Unpaywall work", "journal_name": "J\x00ournal of Tests",
     "publisher": "Pub\x07lisher", "genre": "journal-article\x00", "year": 2020, "is_oa": True,
     "best_oa_location": {"license": "cc-by\x00", "url_for_pdf": "https://a.org/x.pdf"},
     "oa_locations": [{"url_for_pdf": "https://a.org/x.pdf", "license": "cc-by\x1b", "host_type": "repo\x00sitory",
                       "version": "publishedVersion\x07"}]},
    # only the type is damaged here: Crossref's type wins the merge, but it is controls alone
    {"doi": "10.1000/c2", "title": "Fallback", "genre": "journal-article"},
]
CROSSREF = [
    {"DOI": "10.1000/c1", "title": ["A Crossref work"], "type": "journal-article\x07",
     "container-title": ["Ve\x1bnue\nof Tests"], "publisher": "P\x00ress\uffff", "language": "en\x00",
     "subject": ["Phys\x00ics", "\x07", "Physics", "Math\x85"],
     "license": [{"URL": "http://creativecommons.org/licenses/by/4.0/\x00", "content-version": "vor"}]},
    {"DOI": "10.1000/c2", "title": ["Controls alone"], "type": "\x00\x07", "container-title": ["\x1b"],
     "language": "\x00"},
    {"DOI": "10.1000/c3", "title": ["A whole issue"], "type": "journal-issue\x00"},
]
OPENALEX = [
    {"doi": "https://doi.org/10.1000/o1", "title": "An OpenAlex work", "type": "article\x00", "language": "de\x07",
     "primary_location": {"source": {"display_name": "Z\x00eitschrift", "host_organization_name": "H\x07ost"}},
     "best_oa_location": {"license": "cc-by\x1b[31m", "pdf_url": "https://o.org/x.pdf", "is_oa": True,
                          "version": "acceptedVersion\x00"}},
]

EXPECTED = {
    "10.1000/u1": {"type": "journal-article", "venue": "Journal of Tests", "publisher": "Publisher",
                   "license": "cc-by", "categories": [], "publisher_language": None,
                   "urls": [("cc-by", "repository", "publishedVersion")], "paratext": None},
    "10.1000/c1": {"type": "journal-article", "venue": "Venue of Tests", "publisher": "Press",
                   "license": "http://creativecommons.org/licenses/by/4.0/", "categories": ["Math", "Physics"],
                   "publisher_language": "en", "urls": [], "paratext": None},
    # Crossref's type of controls alone is no type: Unpaywall's is taken
    "10.1000/c2": {"type": "journal-article", "venue": None, "publisher": None, "license": None,
                   "categories": [], "publisher_language": None, "urls": [], "paratext": None},
    "10.1000/c3": {"type": "journal-issue", "venue": None, "publisher": None, "license": None,
                   "categories": [], "publisher_language": None, "urls": [], "paratext": "issue"},
    "10.1000/o1": {"type": "article", "venue": "Zeitschrift", "publisher": "Host", "license": "cc-by",
                   "categories": [], "publisher_language": "de",
                   "urls": [("cc-by", None, "acceptedVersion")], "paratext": None},
}


def _write_inputs(tmp_path, crossref_suffix: str) -> list[str]:
    (tmp_path / "unpaywall.jsonl").write_text("".join(json.dumps(r) + "\n" for r in UNPAYWALL))
    (tmp_path / "openalex.jsonl").write_text("".join(json.dumps(r) + "\n" for r in OPENALEX))
    crossref = tmp_path / f"crossref{crossref_suffix}"
    if crossref_suffix == ".json.gz":  # a public-data-file chunk: the columnar reader
        crossref.write_bytes(gzip.compress(json.dumps({"items": CROSSREF}).encode()))
    else:  # JSON Lines: the record parser
        crossref.write_text("".join(json.dumps(r) + "\n" for r in CROSSREF))
    return ["--unpaywall", str(tmp_path / "unpaywall.jsonl"), "--crossref", str(crossref),
            "--openalex", str(tmp_path / "openalex.jsonl")]


def _rows(out) -> dict[str, dict]:
    table = parquet_io.read_table(layout.papers_dir(str(out)))
    return {row["doi"]: row for row in table.to_pylist()}


@pytest.mark.parametrize("crossref_suffix", [".json.gz", ".jsonl"])
def test_papers_command_removes_control_characters_from_metadata_fields(tmp_path, crossref_suffix):
    out = tmp_path / "build"
    assert main(["papers", "--out", str(out), *_write_inputs(tmp_path, crossref_suffix), *FNAPI]) == 0
    rows = _rows(out)
    assert sorted(rows) == sorted(EXPECTED)
    for doi, expected in EXPECTED.items():
        row = rows[doi]
        got = {name: row[name] for name in expected if name != "urls"}
        got["urls"] = [(u["license"], u["host_type"], u["version"]) for u in row["urls"]]
        assert got == expected, doi
    counts = json.loads((out / "_stats" / "papers.json").read_text())["counts"]
    assert counts["controls_removed.crossref.type"] == 3
    assert counts["controls_removed.crossref.categories"] == 1
    assert counts["controls_removed.unpaywall.urls"] == 1 and counts["controls_removed.openalex.urls"] == 1
    # nothing is dropped for it: read = written + rejected + merged_records
    read = sum(v for k, v in counts.items() if k.startswith("read."))
    assert read == 6 and counts["written"] == 5 and counts["merged_records"] == 1
    assert not any(k.startswith("rejected.") for k in counts)


def test_both_crossref_readers_give_the_same_cleaned_records(tmp_path):
    """The columnar reader and the record parser go through the same cleaning."""
    chunk = tmp_path / "c.json.gz"
    chunk.write_bytes(gzip.compress(json.dumps({"items": CROSSREF}).encode()))
    lines = tmp_path / "c.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in CROSSREF))

    def records(path):
        rows = [row for tag, value in join.read_source_file(str(path), "crossref", 1) if tag == "batch"
                for row in value[1].to_pylist()]
        return sorted(({k: v for k, v in row.items() if k != "origin"} for row in rows), key=lambda r: r["doi"])

    columnar, by_record = records(chunk), records(lines)
    assert columnar == by_record
    assert [r["type"] for r in columnar] == ["journal-article", None, "journal-issue"]


@pytest.mark.parametrize("value,expected", [
    ("journal-article", "journal-article"),
    ("Revista de F\u00edsica", "Revista de F\u00edsica"),
    ("a\u00a0b", "a\u00a0b"),  # not printable, but no control: left as it is
    ("cc-by\x00", "cc-by"),
    ("\x00\x07\x1b", None),
    ("Venue\nof\tTests", "Venue of Tests"),
    ("Venue \n of Tests", "Venue of Tests"),
    ("A\x9fB\x7fC", "ABC"),
    # a terminal's colour codes go whole (deleting the ESC alone left "cc-by[31m"), a
    # noncharacter (U+FFFF, U+FDD0, a plane's last code points) goes, an unfinished code keeps its text
    ("cc-by\x1b[31m", "cc-by"),
    ("\x1b[1;32mElsevier\x1b[0m BV", "Elsevier BV"),
    ("Journal\uffff", "Journal"),
    ("Jour\ufdd0nal\U0010ffff", "Journal"),
    ("cc-by\x1b[", "cc-by["),
    (None, None),
])
def test_clean_short_text(value, expected):
    assert clean_short_text(value) == expected


def test_a_batch_without_controls_is_not_rewritten(monkeypatch):
    """The gate is one scan per column: a clean batch never reaches the per-record cleaner."""
    monkeypatch.setattr(join, "_clean_controls", lambda *a: pytest.fail("cleaned a clean batch"))
    record = {"doi": "10.1/x", "source": "crossref", "origin": "f:1", "title": "T", "titles": ["T"],
              "abstract": None, "venue": "V", "publisher": "P", "year": 2020, "type": "journal-article",
              "categories": ["Physics"], "publisher_language": "en", "license": "cc-by", "is_oa": None,
              "urls": [{"url": "https://a.org/x", "kind": "pdf", "host_type": "publisher", "license": "cc-by",
                        "version": None, "source": "crossref", "rank": 0}], "relations": []}
    counts: Counter = Counter()
    assert join.projected_table([record], "crossref", counts).num_rows == 1 and not counts
