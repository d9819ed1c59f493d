"""The archive index built in parallel and joined in the pipeline answers exactly as the
whole-archive `WarcBackend`: index rows, redirect rounds, and the text stage's replay and
resume on a generated sample."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from archive_samples import (
    REDIRECT_URLS,
    add_papers,
    fetch_rows,
    page,
    record_lengths,
    reference_mismatches,
    write_redirect_warcs,
)

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import DOCUMENTS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch import FetchConfig, WarcBackend, read_record
from openmsd_build.text.fetch.archive_join import advance, chain_index, lookup_key, new_units, redirect_target, rounds
from openmsd_build.text.fetch.testing import LocalServer, respond
from openmsd_build.text.fetch.warc_index import index_warc_file, latest_row

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]


def _index(paths: list[str]) -> dict[str, dict]:
    by_url: dict[str, list[dict]] = {}
    for path in paths:
        for row in index_warc_file(path):
            by_url.setdefault(row["url"], []).append(row)
    return {url: latest_row(rows) for url, rows in by_url.items()}


def test_index_rows_equal_backend_index(tmp_path):
    paths = write_redirect_warcs(tmp_path / "warc")
    backend = WarcBackend(paths)
    index = _index(paths)
    assert {url: (r["warc_file"], r["offset"]) for url, r in index.items()} == backend.index
    assert index["http://f.example/twice"]["warc_file"] == paths[1]  # the later file wins
    for row in index.values():
        # the byte range is one whole record: read alone, it is what an offset read gives
        with open(row["warc_file"], "rb") as fh:
            fh.seek(row["offset"])
            alone = read_record(io.BytesIO(fh.read(row["length"])), 0)
        by_offset = read_record(row["warc_file"], row["offset"])
        assert (alone.status, alone.headers, alone.body) == (by_offset.status, by_offset.headers, by_offset.body)
        assert row["status"] == by_offset.status
        assert row["location"] == (by_offset.headers.get("location") if 300 <= row["status"] < 400 else None)


def _resolve(url: str, index: dict[str, dict]) -> dict:
    """The pipeline's rounds in plain Python: round 1 against the whole index, later
    rounds against the hop index only (rows some redirect points to)."""
    hops = {t: index[t] for r in index.values() if (t := redirect_target(r)) and t in index}
    (unit,) = new_units([{"url": url, "doi": "10.1/x"}])
    for n in range(rounds()):
        unit, resolved = advance(unit, (index if n == 0 else hops).get(lookup_key(unit)))
        if resolved:
            return unit
    raise AssertionError("unresolved after the last round")


def test_join_rounds_replay_as_whole_index(tmp_path):
    paths = write_redirect_warcs(tmp_path / "warc")
    backend, index = WarcBackend(paths), _index(paths)
    for url in REDIRECT_URLS:
        unit = _resolve(url, index)
        expected, got = backend.fetch(url), WarcBackend([], index=chain_index(unit)).fetch(url)
        assert (got.status, got.error, got.final_url, got.body, got.content_type, got.fetched_at) == (
            expected.status, expected.error, expected.final_url, expected.body, expected.content_type,
            expected.fetched_at), url
        assert unit["complete"] == (url in backend), url
    assert backend.fetch("http://e.example/0").error == "too_many_redirects"
    assert backend.fetch("http://e.example/3").ok
    assert "http://c.example/" not in backend


@pytest.fixture(scope="module")
def sample_build(tmp_path_factory) -> Path:
    """`openmsd-build sample --papers 200` and its papers stage, plus one paper per
    redirect case (their WARCs under `redirects/`)."""
    root = tmp_path_factory.mktemp("warc-index")
    assert main(["sample", "--out", str(root / "inputs"), "--papers", "200", "--seed", "7"]) == 0
    assert main(["papers", "--out", str(root / "build"), "--unpaywall", str(root / "inputs/unpaywall/*.jsonl.gz"),
                 "--crossref", str(root / "inputs/crossref/*.json.gz"), *FNAPI]) == 0
    write_redirect_warcs(root / "redirects")
    add_papers(root / "build", REDIRECT_URLS)
    return root


def test_replay_from_joined_index_equals_backend(sample_build, tmp_path):
    out = tmp_path / "out"
    (out / "papers").mkdir(parents=True)
    for part in (sample_build / "build" / "papers").glob("*.parquet"):
        (out / "papers" / part.name).write_bytes(part.read_bytes())
    warcs = sorted(str(p) for p in (sample_build / "inputs" / "warc").glob("*.warc.gz")) + sorted(
        str(p) for p in (sample_build / "redirects").glob("*.warc.gz"))
    counts = run_text(str(out), "warc:" + ",".join(warcs), FNAPI)
    rows = fetch_rows(out)
    assert reference_mismatches(rows, WarcBackend(warcs)) == []
    # a replay's row gives the record's byte range, as a live fetch's does (its length was
    # always empty): read alone, the range is the record an offset read gives
    archived = [r for r in rows if r["warc_offset"] is not None]
    assert len(archived) > 100 and all(r["warc_length"] for r in archived)
    for row in archived[:: len(archived) // 20]:
        with open(row["warc_file"], "rb") as fh:
            fh.seek(row["warc_offset"])
            alone = read_record(io.BytesIO(fh.read(row["warc_length"])), 0)
        by_offset = read_record(row["warc_file"], row["warc_offset"])
        assert (alone.status, alone.headers, alone.body) == (by_offset.status, by_offset.headers, by_offset.body)
    by_url = {r["url"]: r for r in rows}
    assert by_url["http://e.example/0"]["error"] == "too_many_redirects"
    assert by_url["http://c.example/"]["error"] == "not_in_archive" and by_url["http://c.example/"]["status"] == 301
    assert by_url["http://a.example/x"]["error"] is None
    assert counts["archive.files_indexed"] == len(warcs)
    assert counts["archive.records_indexed"] == sum(1 for w in warcs for _ in index_warc_file(w))
    docs = {r["doi"]: r for r in parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()}
    assert docs["10.9999/redirect-0"]["title"] == "Roses of the archive"
    assert docs["10.9999/redirect-1"]["title"] == "Roses of the archive"
    assert docs["10.9999/redirect-7"]["title"] == "The newer copy of the page"
    assert "10.9999/redirect-5" not in docs and docs["10.9999/redirect-6"]["title"] == "Seven hops away"


def test_http_resume_follows_archived_redirects(tmp_path):
    routes = {
        "/robots.txt": lambda h, s: respond(h, 404, b""),
        "/moved": lambda h, s: respond(h, 301, b"", headers={"Location": "/page"}),
        "/page": lambda h, s: respond(h, 200, page("A page behind a redirect")),
        "/away": lambda h, s: respond(h, 302, b"", headers={"Location": "/gone"}),
        "/gone": lambda h, s: respond(h, 404, b"gone"),
    }
    config = FetchConfig(allow_networks=("127.0.0.0/8",), per_host_rate=None, max_retries=0, read_timeout=10)
    with LocalServer(routes) as server:
        out = tmp_path / "out"
        add_papers(out, [server.url("/moved"), server.url("/away"), server.url("/page")])
        run_text(str(out), "http", FNAPI, config)
        first = fetch_rows(out)
        server.reset()
        again = run_text(str(out), "http", FNAPI, config)
        assert [h.path for h in server.hits if h.path != "/robots.txt"] == []
        assert again["fetch.resumed"] == 3
        assert again["archive.files_indexed"] == 1
    volatile = ("fetched_at", "warc_file", "warc_offset", "warc_length", "attempts")
    strip = lambda rows: [{k: v for k, v in r.items() if k not in volatile} for r in rows]  # noqa: E731
    assert strip(fetch_rows(out)) == strip(first)
    # a resumed row gives the length of the record it names, as the live row did (it was empty)
    lengths = record_lengths(sorted(str(p) for p in (out / "warc").glob("*.warc.gz")))
    for rows in (first, fetch_rows(out)):
        assert [r["warc_length"] for r in rows] == [lengths[(r["warc_file"], r["warc_offset"])] for r in rows]
    docs = parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()
    assert {d["title"] for d in docs} == {"A page behind a redirect"}
