"""The column-wise Crossref reader agrees with the record parser on generated chunks."""

from __future__ import annotations

import gzip
import json

from openmsd_build.core.textclean import clean_title
from openmsd_build.papers.sources import crossref_columnar
from openmsd_build.papers.sources.crossref import parse_crossref
from openmsd_build.sample.generator import generate


def test_generated_chunk_projects_like_the_record_parser(tmp_path):
    generate(str(tmp_path), papers=400, seed=3, warc=False, workers=1)
    for path in sorted((tmp_path / "crossref").glob("*.json.gz")):
        data = gzip.decompress(path.read_bytes())
        records, rejected = crossref_columnar.parse_chunk(data)
        items = json.loads(data)["items"]
        assert rejected == []
        assert records == [{**parse_crossref(item), "_index": i} for i, item in enumerate(items)]
        assert any(r["abstract"] for r in records) and any(r["relations"] for r in records)


def test_a_plain_title_with_a_split_ligature_is_repaired_as_the_record_parser_does():
    """A printable-ASCII title is kept as it is without calling the cleaner, except when it
    holds a ligature split by a PDF-born text layer ("scientifi c"): cleaning repairs it, and
    the columnar `title` must be the same as the record parser's and as `titles[0]`."""
    items = [
        {"DOI": "10.1000/a", "title": ["A scientifi c method for fi nancial data"]},
        {"DOI": "10.1000/b", "title": ["Signifi cant fl uctuations in the data"]},
        {"DOI": "10.1000/c", "title": ["Plain title, nothing to repair"]},
    ]
    records, rejected = crossref_columnar.parse_chunk(json.dumps({"items": items}).encode())
    assert rejected == []
    assert records == [{**parse_crossref(item), "_index": i} for i, item in enumerate(items)]
    assert [r["title"] for r in records] == [clean_title(item["title"][0]) for item in items]
    assert records[0]["title"] == "A scientific method for financial data"
    assert all(r["title"] == r["titles"][0] for r in records)


# --------------------------------------------------------------------------- fuzzed equivalence
# The columnar reader earns its place by speed (papers stage at 1M papers: 233 s -> 193 s,
# bench/README.md); it must never give other records than the record parser. Hypothesis
# builds chunks of items with the fields and shapes Crossref serves (and ones it should not):
# DOIs in several spellings, markup in titles, JATS abstracts, missing and null fields,
# empty lists. Wherever the columnar reader accepts a chunk, it must agree record for record.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from openmsd_build.core.json_records import RecordError  # noqa: E402

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_markup = st.sampled_from(["", "<i>x</i> ", "CO<sub>2</sub> ", "&amp; ", "<jats:p>", "  ", "scientifi c ", "diff erent "])
_doi = st.one_of(
    st.builds(lambda n, s: f"10.{n}/{s}", st.integers(1000, 99999), st.from_regex(r"[A-Za-z0-9.()_-]{1,12}", fullmatch=True)),
    st.builds(lambda n: f"https://doi.org/10.{n}/ABC", st.integers(1000, 99999)),
    st.sampled_from(["", "not a doi", "10.1/", None]),
)
_item = st.fixed_dictionaries(
    {"DOI": _doi},
    optional={
        "title": st.lists(st.builds(lambda m, t: m + t, _markup, _text), max_size=2),
        "original-title": st.lists(_text, max_size=2),
        "abstract": st.one_of(st.none(), st.builds(lambda t: f"<jats:p>{t}</jats:p>", _text)),
        "container-title": st.lists(_text, max_size=2),
        "publisher": st.one_of(st.none(), _text),
        "type": st.sampled_from(["journal-article", "posted-content", "book-chapter"]),
        "language": st.sampled_from(["en", "pt", "zh", "", None]),
        "subject": st.lists(_text, max_size=3),
        "issued": st.fixed_dictionaries({"date-parts": st.lists(st.lists(st.integers(1900, 2030), min_size=1,
                                                                         max_size=3), min_size=1, max_size=1)}),
        "link": st.lists(st.fixed_dictionaries({"URL": st.sampled_from(["https://example.org/a.pdf", "ftp://x"]),
                                                "content-type": st.sampled_from(["application/pdf", "text/html",
                                                                                 "unspecified"])}), max_size=2),
    },
)


def _reference(items: list[dict]) -> tuple[list[dict], list[tuple[int, str]]]:
    records, rejected = [], []
    for i, item in enumerate(items):
        try:
            records.append({**parse_crossref(item), "_index": i})
        except RecordError as exc:
            rejected.append((i, exc.reason))
    return records, rejected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_item, min_size=1, max_size=8))
def test_fuzzed_chunks_project_like_the_record_parser(items: list[dict]) -> None:
    result = crossref_columnar.parse_chunk(json.dumps({"items": items}).encode("utf-8"))
    if result is None:  # the columnar reader declined the chunk: the record parser takes it
        return
    records, rejected = result
    expected_records, expected_rejected = _reference(items)
    assert records == expected_records
    assert [(i, reason) for i, reason, _ in rejected] == expected_rejected


def test_surrogate_escapes_are_read_by_the_reference(tmp_path):
    """polars read a lone `\\ud800` as a NUL character and kept the work, which the reference
    (orjson) rejects as invalid JSON; whether a work was kept depended on which reader its
    chunk took. A chunk with a lone surrogate escape now takes the reference (a reject); a pair
    (an emoji) is read by polars as the character it encodes, as the reference reads it."""
    from openmsd_build.cli import main
    from openmsd_build.core import layout, parquet_io
    from openmsd_build.schemas import PAPERS

    lone = b'{"items":[{"DOI":"10.1234/surr","title":["Lone \\ud800 surrogate"]},{"DOI":"10.1234/ok","title":["Fine"]}]}'
    pair = b'{"items":[{"DOI":"10.1234/emoji","title":["Smile \\ud83d\\ude00 please"]}]}'
    assert crossref_columnar.read_items(lone) is None and crossref_columnar.read_items(pair) is not None
    assert crossref_columnar.read_items(b'{"items":[{"DOI":"10.1/x","title":["low \\udc00 alone"]}]}') is None
    assert crossref_columnar.read_items(b'{"items":[{"DOI":"10.1234/ok","title":["Fine \\u00e9"]}]}') is not None
    (tmp_path / "lone.json").write_bytes(lone)
    (tmp_path / "pair.json").write_bytes(pair)
    out = tmp_path / "out"
    assert main(["papers", "--out", str(out), "--crossref", str(tmp_path / "lone.json"),
                 "--crossref", str(tmp_path / "pair.json")]) == 0
    rows = {r["doi"]: r["title"] for r in parquet_io.read_table(layout.papers_dir(str(out)), schema=PAPERS).to_pylist()}
    assert rows == {"10.1234/ok": "Fine", "10.1234/emoji": "Smile \U0001F600 please"}


def test_the_lone_surrogate_scan_is_the_plain_rule() -> None:
    """`_SURROGATE_ESCAPE` is written with `\\u` first in both branches so the regex engine
    skips to the next escape in C (a branch opened by a lookbehind was tried at every byte:
    a third of the stage's CPU on Crossref chunks); its matches are the plain rule's, a high
    escape not followed by a low one or a low one not after a high one."""
    import random
    import re

    from openmsd_build.papers.sources.crossref_columnar import _SURROGATE_ESCAPE

    plain = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                       rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
    rng = random.Random(5)
    pieces = [b"\\ud83d", b"\\ude00", b"\\uD800", b"\\uDC00", b"\\uDBFF", b"\\udfff", b"\\u00e9", b"\\u", b"d8",
              b"x", b"\\", b"\\\\ud800", b"dc00", b"a b"]
    for _ in range(50_000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert [m.span() for m in _SURROGATE_ESCAPE.finditer(text)] == [m.span() for m in plain.finditer(text)], text
