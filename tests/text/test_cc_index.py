"""`--fetch cc-index:GLOB`: a Common Crawl columnar-index extract (Parquet) joined with the
planned URLs, records range-read from the WARCs it names, gives the same documents and
`fetch/` rows as `warc:` replay of the same WARCs — locally and on gs:// (a local Cloud
Storage emulator, as in tests/core/test_gcs_emulator.py)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from archive_samples import REDIRECT_URLS, add_papers, fetch_rows, write_cc_index, write_redirect_warcs

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.schemas import DOCUMENTS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch.warc_index import fill_location, index_warc_file, needs_location, read_cc_index

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]
CRAWL = "crawl-data/CC-MAIN-2099-01/segments/1/warc"


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Path:
    """A 200-paper sample's papers plus redirect cases; its WARCs laid out as in Common
    Crawl's bucket under `cc/`, and two index extracts of them (with and without
    `fetch_redirect`) under `index/` and `index-noredirect/`."""
    root = tmp_path_factory.mktemp("cc-index")
    assert main(["sample", "--out", str(root / "inputs"), "--papers", "200", "--seed", "11"]) == 0
    assert main(["papers", "--out", str(root / "build"), "--unpaywall", str(root / "inputs/unpaywall/*.jsonl.gz"),
                 "--crossref", str(root / "inputs/crossref/*.json.gz"), *FNAPI]) == 0
    add_papers(root / "build", REDIRECT_URLS)
    bucket = root / "cc" / CRAWL
    bucket.mkdir(parents=True)
    for warc in (root / "inputs" / "warc").glob("*.warc.gz"):
        shutil.copy(warc, bucket / warc.name)
    write_redirect_warcs(bucket)
    warcs = sorted(str(p) for p in bucket.glob("*.warc.gz"))
    write_cc_index(warcs, root / "cc", root / "index" / "part-0.parquet", with_redirects=True)
    write_cc_index(warcs, root / "cc", root / "index-noredirect" / "part-0.parquet", with_redirects=False)
    return root


def _fresh(crawl: Path, out: Path) -> Path:
    (out / "papers").mkdir(parents=True)
    for part in (crawl / "build" / "papers").glob("*.parquet"):
        (out / "papers" / part.name).write_bytes(part.read_bytes())
    return out


def _documents(out: Path | str) -> list[dict]:
    return sorted(parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist(),
                  key=lambda r: r["doi"])


def _warcs(crawl: Path) -> list[str]:
    return sorted(str(p) for p in (crawl / "cc" / CRAWL).glob("*.warc.gz"))


def test_cc_index_rows_equal_warc_index_rows(crawl):
    from openmsd_build.text.fetch.warc_index import latest_row

    # a URL archived twice: the extract keeps its latest row (as the join would pick it)
    latest: dict[str, list] = {}
    for r in (r for w in _warcs(crawl) for r in index_warc_file(w)):
        latest.setdefault(r["url"], []).append(r)
    by_scan = sorted((latest_row(rs) for rs in latest.values()), key=lambda r: (r["warc_file"], r["offset"]))
    assert len(by_scan) < sum(map(len, latest.values()))  # the sample has such a URL
    for folder in ("index", "index-noredirect"):
        rows = list(read_cc_index(str(crawl / folder / "part-0.parquet"), str(crawl / "cc")))
        rows = [fill_location(r) if needs_location(r) else r for r in rows]
        rows.sort(key=lambda r: (r["warc_file"], r["offset"]))
        strip = lambda rs: [{k: v for k, v in r.items() if k != "content_type"} for r in rs]  # noqa: E731
        assert strip(rows) == strip(by_scan), folder
        assert any(r["location"] for r in rows)


@pytest.fixture(scope="module")
def warc_replay(crawl, tmp_path_factory) -> Path:
    out = _fresh(crawl, tmp_path_factory.mktemp("warc-replay") / "out")
    run_text(str(out), "warc:" + ",".join(_warcs(crawl)), FNAPI)
    return out


@pytest.mark.parametrize("folder", ["index", "index-noredirect"])
def test_cc_index_equals_warc_replay(crawl, warc_replay, tmp_path, folder):
    out = _fresh(crawl, tmp_path / "out")
    counts = run_text(str(out), f"cc-index:{crawl / folder}/*.parquet", FNAPI, warc_prefix=str(crawl / "cc"))
    assert _documents(out) == _documents(warc_replay)
    assert fetch_rows(out) == fetch_rows(warc_replay)
    assert len(_documents(out)) > 100
    assert counts["archive.records_indexed"] + counts.get("archive.index_rows_superseded", 0) == sum(
        1 for w in _warcs(crawl) for _ in index_warc_file(w))
    assert (counts.get("archive.locations_read", 0) > 0) == (folder == "index-noredirect")


def test_cc_index_flags_fail_before_the_run(crawl, tmp_path):
    out = _fresh(crawl, tmp_path / "out")
    bad = tmp_path / "bad.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"url": ["http://a/"], "warc_filename": ["x.warc.gz"]}), bad)
    with pytest.raises(UserError, match="warc_record_offset"):
        run_text(str(out), f"cc-index:{bad}", FNAPI)
    with pytest.raises(UserError, match="matches no file"):
        run_text(str(out), f"cc-index:{tmp_path}/nothing-*.parquet", FNAPI)
    with pytest.raises(UserError, match="--warc-prefix"):
        run_text(str(out), "warc:" + _warcs(crawl)[0], FNAPI, warc_prefix="/data")


def test_reconstruct_from_a_cc_index_extract(crawl, warc_replay, tmp_path):
    """`reconstruct --fetch cc-index:GLOB` takes `--warc-prefix` as `text` does: without
    it the extract's `warc_filename`s (relative to the crawl's bucket) could only be read from
    the current folder, so a release could not be rebuilt from Common Crawl."""
    assert main(["release", str(warc_replay), "--to", str(tmp_path / "rel"), "--allow-partial", *FNAPI]) == 0
    out = tmp_path / "rebuilt"
    assert main(["reconstruct", str(tmp_path / "rel"), "--out", str(out),
                 "--unpaywall", str(crawl / "inputs/unpaywall/*.jsonl.gz"),
                 "--crossref", str(crawl / "inputs/crossref/*.json.gz"),
                 "--fetch", f"cc-index:{crawl / 'index'}/*.parquet", "--warc-prefix", str(crawl / "cc"), *FNAPI]) == 0
    # the papers added for the redirect cases are in no snapshot: the rest is rebuilt whole
    expected = [d for d in _documents(warc_replay) if not d["doi"].startswith("10.9999/redirect-")]
    assert len(expected) > 100 and _documents(out) == expected
    counts = json.loads((out / "reconstruct" / "recovery.json").read_text())["counts"]
    assert counts["none.document.recovered"] == len(expected)


# --- the same on gs:// ---------------------------------------------------------------------

BUCKET = "openmsd-cc-test"
_DRIVER = """
import json, sys
from openmsd_build.cli import main
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    if code:
        sys.exit(code)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(900)
def test_cc_index_on_gcs_emulator(crawl, warc_replay, tmp_path):
    """Index extract and WARCs on gs://; the stage lists, reads the Parquet and range-reads
    records through Beam's GCS filesystem (one CLI process: see tests/core/test_gcs_emulator.py
    for why, and for --no_auth)."""
    pytest.importorskip("gcp_storage_emulator")
    storage = pytest.importorskip("google.cloud.storage")
    from gcp_storage_emulator.server import create_server

    port = _free_port()
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    try:
        env = {**os.environ, "STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}"}
        os.environ["STORAGE_EMULATOR_HOST"] = env["STORAGE_EMULATOR_HOST"]
        try:
            bucket = storage.Client.create_anonymous_client().bucket(BUCKET)
            for path in sorted((crawl / "cc").rglob("*.warc.gz")) + [crawl / "index-noredirect" / "part-0.parquet"]:
                name = "index/part-0.parquet" if path.suffix == ".parquet" else "cc/" + path.relative_to(crawl / "cc").as_posix()
                bucket.blob(name).upload_from_filename(str(path))
        finally:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        out = _fresh(crawl, tmp_path / "out")
        argv = ["text", "--out", str(out), "--fetch", f"cc-index:gs://{BUCKET}/index/*.parquet",
                "--warc-prefix", f"gs://{BUCKET}/cc", "--no_auth", "--project=emulator"]
        proc = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps([argv])], env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    finally:
        server.stop()
    assert _documents(out) == _documents(warc_replay)
    local_prefix = str(crawl / "cc")
    rows = fetch_rows(out)
    assert any(r["warc_file"] for r in rows)
    for row in rows:
        if row["warc_file"]:
            assert row["warc_file"].startswith(f"gs://{BUCKET}/cc/")
            row["warc_file"] = local_prefix + row["warc_file"][len(f"gs://{BUCKET}/cc"):]
    assert rows == fetch_rows(warc_replay)


def test_an_infinite_number_or_a_url_listed_millions_of_times(tmp_path):
    """An extract whose offset, length or status column is float and holds inf stopped
    reading the file at that row (OverflowError read as damage: every later row lost); an
    extract listing one URL 2M times made 2M Beam elements grouped under one key (5 GB,
    165 s). The row is skipped as incomplete; a URL listed again in a batch keeps its latest row."""
    from collections import Counter

    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 200_000
    url = "https://example.org/paper"
    table = pa.table({
        "url": ["https://example.org/inf"] + [url] * n + ["https://example.org/last"],
        "warc_filename": ["crawl/a.warc.gz"] * (n + 2),
        "warc_record_offset": [float("inf")] + [float(k * 10) for k in range(n)] + [5.0],
        "warc_record_length": [100.0] * (n + 2),
        "fetch_status": [200.0] * (n + 2),
        "content_mime_type": ["text/html"] * (n + 2),
    })
    path = tmp_path / "index.parquet"
    pq.write_table(table, path)
    counts: Counter = Counter()
    rows = list(read_cc_index(str(path), str(tmp_path), counts))
    assert counts["archive.index_rows_incomplete"] == 1
    by_url: dict[str, list] = {}
    for row in rows:
        by_url.setdefault(row["url"], []).append(row)
    assert sorted(by_url) == ["https://example.org/last", url]
    assert len(by_url[url]) <= n // 65_536 + 2  # one per batch at most
    assert max(r["offset"] for r in by_url[url]) == (n - 1) * 10  # the latest row is among them
    assert counts["archive.index_rows_superseded"] == n - len(by_url[url])
