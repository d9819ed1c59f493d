"""Stages on `gs://` paths, end to end against a local Cloud Storage emulator (not a mock).

The emulator (`gcp-storage-emulator`, in memory) serves the GCS JSON API on a free
127.0.0.1 port inside the test process; google-cloud-storage, and therefore Beam's GCS
filesystem, talks to it because `STORAGE_EMULATOR_HOST` is set. The commands of a test run
through the real CLI in one subprocess (bounded by a timeout) with `--no_auth`.

Beam 2.77's GCS filesystem does not look at `--no_auth` (only the Dataflow client does): in
a process without Google credentials its first GCS call retries `google.auth.default()`
with backoff for about 20 s and then connects anonymously, which is what the emulator
needs. The credentials are cached per process, hence one subprocess for several commands.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("gcp_storage_emulator")
storage = pytest.importorskip("google.cloud.storage")

BUCKET = "openmsd-test"
CLI_TIMEOUT = 240
pytestmark = pytest.mark.timeout(900)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    """(env, client): a running emulator with one bucket holding the sample's inputs."""
    from gcp_storage_emulator.server import create_server

    port = _free_port()
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    host = f"http://127.0.0.1:{port}"
    old = os.environ.get("STORAGE_EMULATOR_HOST")
    os.environ["STORAGE_EMULATOR_HOST"] = host
    try:
        sample = tmp_path_factory.mktemp("gcs-sample")
        _cli(["sample", "--out", str(sample), "--papers", "120", "--seed", "3"], env=os.environ.copy())
        client = storage.Client.create_anonymous_client()
        bucket = client.bucket(BUCKET)
        for path in sorted(sample.rglob("*")):
            if path.is_file():
                bucket.blob("inputs/" + path.relative_to(sample).as_posix()).upload_from_filename(str(path))
        env = os.environ.copy()
        yield env, client, sample
    finally:
        if old is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = old
        server.stop()


_DRIVER = """
import json, sys
from openmsd_build.cli import main
for argv in json.loads(sys.argv[1]):
    print(">>> openmsd-build " + " ".join(argv), flush=True)
    code = main(argv)
    if code:
        sys.exit(code)
"""


def _cli(*commands: list[str], env: dict, timeout: int = CLI_TIMEOUT) -> subprocess.CompletedProcess:
    """Run CLI commands in order in one fresh process; fail with its output."""
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(list(commands))],
        env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert proc.returncode == 0, f"failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


def _read_gcs_table(client, prefix: str) -> pa.Table:
    blobs = sorted(
        (b for b in client.list_blobs(BUCKET, prefix=prefix) if b.name.endswith(".parquet")), key=lambda b: b.name
    )
    assert blobs, f"no Parquet under gs://{BUCKET}/{prefix}"
    return pa.concat_tables([pq.read_table(io.BytesIO(b.download_as_bytes())) for b in blobs])


def test_papers_and_text_read_and_write_gs(emulator, tmp_path):
    env, client, sample = emulator
    out = f"gs://{BUCKET}/build"
    gcs = ["--no_auth", "--project=emulator"]
    local = tmp_path / "local"
    proc = _cli(
        ["papers", "--out", out, "--unpaywall", f"gs://{BUCKET}/inputs/unpaywall/*.jsonl.gz",
         "--crossref", f"gs://{BUCKET}/inputs/crossref/*.json.gz", *gcs],
        # the next stage reads gs:// Parquet (ReadFromParquetBatched) and replays a gs:// WARC
        ["text", "--out", out, "--fetch", f"warc:gs://{BUCKET}/inputs/warc/*.warc.gz", *gcs],
        # the same stage on local paths, for comparison
        ["papers", "--out", str(local), "--unpaywall", str(sample / "unpaywall" / "*.jsonl.gz"),
         "--crossref", str(sample / "crossref" / "*.json.gz")],
        env=env,
    )
    assert "papers: read" in proc.stdout
    papers = _read_gcs_table(client, "build/papers/")
    assert papers.num_rows == 120
    names = {b.name for b in client.list_blobs(BUCKET, prefix="build/")}
    assert {"build/_stats/papers.json", "build/_stats/text.json"} <= names
    assert not any(n.endswith(".tmp") for n in names)
    local_papers = pa.concat_tables([pq.read_table(p) for p in sorted((local / "papers").glob("*.parquet"))])
    assert papers.sort_by("doi").to_pylist() == local_papers.sort_by("doi").to_pylist()
    documents = _read_gcs_table(client, "build/documents/")
    assert documents.num_rows > 0
    assert set(documents.column("doi").to_pylist()) <= set(papers.column("doi").to_pylist())
    assert _read_gcs_table(client, "build/fetch/").num_rows > 0


def test_release_and_reconstruct_on_gs(emulator):
    env, client, _ = emulator
    out, release, rebuilt = (f"gs://{BUCKET}/{name}" for name in ("build2", "release", "rebuilt"))
    gcs = ["--no_auth", "--project=emulator"]
    inputs = ["--unpaywall", f"gs://{BUCKET}/inputs/unpaywall/*.jsonl.gz",
              "--crossref", f"gs://{BUCKET}/inputs/crossref/*.json.gz"]
    proc = _cli(
        ["papers", "--out", out, *inputs, *gcs],
        ["text", "--out", out, "--fetch", "none", *gcs],
        ["release", out, "--to", release, "--allow-partial", *gcs],
        ["reconstruct", release, *inputs, "--fetch", "none", "--out", rebuilt, *gcs],
        env=env,
    )
    names = {b.name for b in client.list_blobs(BUCKET, prefix="release/")}
    assert {"release/MANIFEST.json", "release/SHA256SUMS"} <= names
    manifest = json.loads(client.bucket(BUCKET).blob("release/MANIFEST.json").download_as_bytes())
    listed = {f["path"]: f["sha256"] for f in manifest["files"]}
    for name in names - {"release/MANIFEST.json", "release/SHA256SUMS"}:
        data = client.bucket(BUCKET).blob(name).download_as_bytes()
        assert hashlib.sha256(data).hexdigest() == listed[name[len("release/"):]]
    assert "recovered" in proc.stdout
    recovery = json.loads(client.bucket(BUCKET).blob("rebuilt/reconstruct/recovery.json").download_as_bytes())
    none = recovery["rates"]["none"]
    assert none["title"]["expected"] > 0
    assert all(f["recovered"] == f["expected"] for f in none.values())


def test_run_into_a_gs_build_and_not_into_someone_elses_folder(emulator):
    """On GCS a folder is no object: `run` took every gs:// build for a folder that is not a
    build (no `_stats/` object) holding `_stats/papers.json`, and refused every re-run; and a
    gs:// folder holding someone's report/ was not seen at all."""
    env, client, _ = emulator
    inputs = ["--unpaywall", f"gs://{BUCKET}/inputs/unpaywall/*.jsonl.gz", "--fetch", "none", "--to-stage", "papers",
              "--no_auth", "--project=emulator"]
    out = f"gs://{BUCKET}/rerun"
    _cli(["run", "--out", out, *inputs], ["run", "--out", out, *inputs], env=env)
    assert {"rerun/_stats/papers.json"} <= {b.name for b in client.list_blobs(BUCKET, prefix="rerun/")}
    client.bucket(BUCKET).blob("project/report/notes.txt").upload_from_string(b"mine")
    proc = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps([["run", "--out", f"gs://{BUCKET}/project",
                                                                        *inputs]])],
                          env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT)
    assert proc.returncode == 2 and "is not a build (no _stats/) but holds report" in proc.stderr, proc.stderr[-2000:]
    assert client.bucket(BUCKET).blob("project/report/notes.txt").exists()


def test_export_to_gs_holds_the_large_pools(emulator, tmp_path):
    """`export --dest gs://...` wrote every table but no `large_pool/` (pools, benchmark and
    their card), silently: `export.json` said `large_pool: null` as if evaluate-pools had not run."""
    from openmsd_build.cli import main
    from openmsd_build.evaluate.synthetic import synthetic_build

    env, client, _ = emulator
    out = str(tmp_path / "build")
    synthetic_build(out, 300, seed=3)
    assert main(["evaluate-pools", "--out", out, "--split", "idt", "--pool-sizes", "100", "--resamples", "1",
                 "--max-queries", "5", "--no-tune", "--benchmark-queries", "3"]) == 0
    local = sorted(p.relative_to(tmp_path / "build" / "evaluation" / "large_pool").as_posix()
                   for p in (tmp_path / "build" / "evaluation" / "large_pool").rglob("*")
                   if p.is_file() and p.parts[-2] != "large_pool")
    _cli(["export", "--out", out, "--dest", f"gs://{BUCKET}/exported"], env=env)
    names = {b.name for b in client.list_blobs(BUCKET, prefix="exported/large_pool/")}
    assert {f"exported/large_pool/{name}" for name in local} | {"exported/large_pool/README.md"} == names
    summary = json.loads(client.bucket(BUCKET).blob("exported/export.json").download_as_bytes())
    assert summary["large_pool"]["splits"] == ["idt"]
    pool = next(n for n in names if n.endswith("resample=0.parquet"))
    assert pq.read_table(io.BytesIO(client.bucket(BUCKET).blob(pool).download_as_bytes())).equals(
        pq.read_table(tmp_path / "build" / "evaluation" / "large_pool" / pool[len("exported/large_pool/"):]))
