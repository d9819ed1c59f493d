"""The source parsers on real public records from ../shared/real-samples."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from openmsd_build.papers.join import read_source_file
from openmsd_build.papers.merge_reference import merge_records
from openmsd_build.papers.sources.crossref import parse_crossref
from openmsd_build.papers.sources.openalex import parse_openalex, rebuild_abstract
from openmsd_build.papers.sources.unpaywall import parse_unpaywall

TAG = re.compile(r"<[^>]+>")


def test_every_jats_abstract_of_the_public_data_file_chunk_is_cleaned(real_samples):
    path = real_samples / "crossref/files_as_found/oc_ds_converter__gzip_test_0.json.gz"
    items = json.loads(gzip.decompress(path.read_bytes()))["items"]
    with_jats = [it for it in items if "<jats:p" in (it.get("abstract") or "")]
    assert len(with_jats) >= 300  # the MANIFEST counts 389 JATS abstracts in this chunk
    for item in with_jats:
        paper = parse_crossref(item)
        abstract = paper["abstract"]
        assert abstract, item["DOI"]
        assert not TAG.search(abstract), (item["DOI"], abstract[:200])
        assert "jats:" not in abstract
        # the text of the first paragraph survives (the greedy-regex bug deleted it all)
        first_words = TAG.sub(" ", item["abstract"].split("<jats:p>", 1)[1]).split()[:3]
        first_words = [w for w in first_words if w.isalpha()]
        for word in first_words:
            assert word in abstract, (item["DOI"], word)
        assert not abstract.lower().startswith("abstract"), abstract[:40]


def _positions(inverted_index: dict) -> list[str]:
    """Independent rebuild: (position, word) pairs sorted by position."""
    return [w for _, w in sorted((p, w) for w, ps in inverted_index.items() for p in ps)]


def test_openalex_inverted_index_abstracts_rebuild_word_for_word(real_samples):
    lines = (real_samples / "openalex/parseland_eval_multilingual_works.unwrapped.jsonl").read_text().splitlines()
    works = [json.loads(line) for line in lines if line.strip()]
    with_index = [w for w in works if w.get("abstract_inverted_index")]
    assert len(with_index) >= 50
    for work in with_index:
        rebuilt = rebuild_abstract(work["abstract_inverted_index"])
        assert rebuilt.split(" ") == _positions(work["abstract_inverted_index"])


def test_openalex_rebuild_matches_crossref_jats_text_of_same_paper(real_samples):
    alex = json.loads((real_samples / "openalex/api_responses/10.7554_elife.01567.json").read_text())
    cross = json.loads((real_samples / "crossref/api_single_work_responses/10.7554_elife.01567.json").read_text())
    rebuilt = rebuild_abstract(alex["abstract_inverted_index"]).split()
    jats_words = parse_crossref(cross)["abstract"].split()
    assert rebuilt[:60] == jats_words[:60]


def test_every_unpaywall_snapshot_line_parses_with_its_oa_urls(real_samples):
    lines = gzip.decompress((real_samples / "unpaywall/ezunpaywall_snapshot.jsonl.gz").read_bytes()).splitlines()
    assert len(lines) == 2150
    for line in lines:
        record = json.loads(line)
        paper = parse_unpaywall(record)
        assert paper["doi"] == record["doi"].lower()
        expected = set()
        for loc in record.get("oa_locations") or []:
            for key in ("url_for_pdf", "url_for_landing_page"):
                if loc.get(key):
                    expected.add((loc[key], "pdf" if key == "url_for_pdf" else "landing"))
        assert {(u["url"], u["kind"]) for u in paper["urls"]} == expected
        if record.get("best_oa_location") and paper["urls"]:
            best = record["best_oa_location"]
            assert paper["urls"][0]["url"] in (best.get("url_for_pdf"), best.get("url_for_landing_page"))
        assert paper["is_oa"] == record["is_oa"]


def test_crossref_and_openalex_records_of_one_doi_merge_into_one_paper(real_samples):
    cross = parse_crossref(json.loads((real_samples / "crossref/api_single_work_responses/10.1007_s00120-007-1345-2.json").read_text()))
    alex = parse_openalex(json.loads((real_samples / "openalex/api_responses/10.1007_s00120-007-1345-2.json").read_text()))
    assert cross["doi"] == alex["doi"] == "10.1007/s00120-007-1345-2"
    cross["origin"], alex["origin"] = "crossref.json:#0", "openalex.json:#0"
    paper = merge_records([alex, cross])
    assert paper["sources"] == ["crossref", "openalex"]
    assert paper["n_records"] == 2
    assert paper["title"] == cross["title"] and paper["title_source"] == "crossref"
    assert paper["publisher_language"] == "de"  # OpenAlex and Crossref both say German
    # Crossref lists the title in German and in English: both are kept for cross-lingual pairs
    assert paper["titles"] == ["Penisverletzung durch eine Moulinette", "Penile injury caused by a Moulinette"]
    assert paper["year"] == cross["year"]
    assert {u["url"] for u in paper["urls"]} >= {u["url"] for u in alex["urls"]}
    # order of arrival does not change the merged row
    assert merge_records([cross, alex]) == paper


@pytest.mark.parametrize(
    "name",
    [
        "crossref/cassette_works_all.public_data_file_style.json.gz",
        "crossref/cassette_works_all.jsonl",
        "crossref/api_list_responses/rcrossref__sample=20.json",
        "crossref/api_single_work_responses/10.7717_peerj.1268.json",
        "crossref/files_as_found/fatcat__crossref-works.single.json",
    ],
)
def test_crossref_file_shapes_all_read(real_samples, name):
    outputs = list(read_source_file(str(real_samples / name), "crossref", num_shards=4))
    counts = [v for tag, v in outputs if tag == "counts"][0]
    records = [r for tag, (shard, batch) in ((t, v) for t, v in outputs if t == "batch") for r in batch.to_pylist()]
    rejects = [v for tag, v in outputs if tag == "reject"]
    assert records, name
    assert counts["read.crossref"] == len(records) + len(rejects)
    assert all(r["doi"] == r["doi"].lower() for r in records)


@pytest.mark.parametrize(
    "name",
    [
        "crossref/files_as_found/oc_ds_converter__gzip_test_0.json.gz",
        "crossref/cassette_works_all.public_data_file_style.json.gz",
    ],
)
def test_columnar_crossref_projection_equals_record_parser(real_samples, name):
    """The column-wise reader of public-data-file chunks gives exactly the records (and
    rejects) that `parse_crossref` gives one work at a time."""
    from openmsd_build.core.json_records import RecordError
    from openmsd_build.papers.sources import crossref_columnar

    data = gzip.decompress((real_samples / name).read_bytes())
    records, rejected = crossref_columnar.parse_chunk(data)
    expected, expected_rejects = [], []
    for index, item in enumerate(json.loads(data)["items"]):
        try:
            expected.append({**parse_crossref(item), "_index": index})
        except RecordError as exc:
            expected_rejects.append((index, exc.reason))
    assert records == expected
    assert [(i, r) for i, r, _ in rejected] == expected_rejects


def test_columnar_crossref_falls_back_on_other_shapes():
    from openmsd_build.papers.sources import crossref_columnar

    assert crossref_columnar.parse_chunk(b'{"message": {"DOI": "10.1/x"}}') is None
    assert crossref_columnar.parse_chunk(b'{"DOI": "10.1/x"}\n{"DOI": "10.1/y"}\n') is None
    assert crossref_columnar.parse_chunk(b'{"items": [{"DOI": "10.1/x", "issued": {"date-parts": [["x"]]}}]}') is None
    records, rejected = crossref_columnar.parse_chunk(
        b'{"items": [{"DOI": "10.1000/ABC", "title": ["T &amp; U"]}, {"title": ["no doi"]}, {"DOI": "nope"}]}'
    )
    assert [r["doi"] for r in records] == ["10.1000/abc"] and records[0]["title"] == "T & U"
    assert [(i, reason) for i, reason, _ in rejected] == [(1, "no_doi"), (2, "doi_malformed")]
