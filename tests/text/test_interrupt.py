"""Ctrl-C stops the text stage promptly, leaves the previous outputs as they were, and the
next run resumes from the WARC files the interrupted one archived (nothing fetched twice).

`openmsd-build text --fetch http` runs as a subprocess in its own session against a slow
127.0.0.1 server; SIGINT goes to the whole process group, as a terminal's Ctrl-C does (so
the extraction child gets it too)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from openmsd_build.core import layout, parquet_io, staging
from openmsd_build.schemas import PAPERS
from openmsd_build.text.fetch.testing import LocalServer, respond

N_PAPERS = 40
PAGE = (
    b'<html lang="en"><head><meta name="citation_title" content="Interrupted fetching of landing pages">'
    b'<meta name="citation_abstract" content="' + b"An abstract long enough to keep this paper as a document. " * 3
    + b'"></head><body><p>' + b"Body text of the landing page. " * 50 + b"</p></body></html>"
)


def _paper(doi: str, url: str) -> dict:
    return {
        "doi": doi, "title": None, "abstract": None, "abstract_source": None, "categories": [],
        "sources": ["unpaywall"], "n_records": 1, "relations": [],
        "urls": [{"url": url, "kind": "landing", "host_type": "repository", "license": None, "version": None,
                  "source": "unpaywall", "rank": 0}],
    }


def _text_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "openmsd_build.cli", "text", "--out", str(out), "--fetch", "http",
            "--allow-network", "127.0.0.0/8", "--no-robots", "--host-shards", "1", "--rate-per-host", "1000",
            "--no-follow-pdf"]


def _sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_sigint_stops_text_promptly_keeps_outputs_and_rerun_resumes(tmp_path: Path) -> None:
    slow = threading.Event()
    slow.set()

    def page(handler, server) -> None:
        if slow.is_set():
            time.sleep(0.3)
        respond(handler, 200, PAGE)

    out = tmp_path / "build"
    with LocalServer(default=page) as server:
        rows = [_paper(f"10.1/p{i:02d}", server.url(f"/landing/{i}")) for i in range(N_PAPERS)]
        parquet_io.write_table(parquet_io.table_from_rows(rows, PAPERS), parquet_io.part_path(str(out / "papers"), 0, 1))
        # the "previous good run": its outputs must survive the interrupted one byte for byte
        previous = {"documents/part-00000-of-00001.parquet": b"previous documents",
                    "fetch/part-00000-of-00001.parquet": b"previous fetch rows",
                    "_stats/text.json": b'{"counts": {"documents.kept": 1}}'}
        for rel, data in previous.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(data)
        kept = {rel: data for rel, data in _snapshot(out).items() if not rel.startswith("warc/")}

        # faulthandler: a stage that does not stop can be made to print every thread's stack.
        # SIGINT at its default, as under a terminal: a shell without job control starts
        # background commands with SIGINT ignored, and Python then never raises KeyboardInterrupt.
        process = subprocess.Popen(_text_command(out), start_new_session=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"},
                                   preexec_fn=_sigint_as_in_a_terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60  # Beam's start-up, then a few slow pages
            while len(server.hits) < 3 and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.05)
            assert process.poll() is None, process.communicate()[1].decode()[-2000:]
            time.sleep(0.5)
            interrupted = time.monotonic()
            os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole group
            try:
                process.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGABRT)  # faulthandler prints where each thread waits
                stderr = process.communicate(timeout=30)[1].decode(errors="replace")
                pytest.fail(f"the stage did not stop within 10 s of SIGINT; its threads:\n{stderr[-8000:]}")
            stopped_after = time.monotonic() - interrupted
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        hits_before = len(server.hits)
        print(f"SIGINT -> exit: {stopped_after:.2f} s, exit status {process.returncode}, {hits_before} pages fetched")
        assert process.returncode != 0
        assert stopped_after < 10
        assert hits_before < N_PAPERS  # it really stopped early
        assert {rel: data for rel, data in _snapshot(out).items() if not rel.startswith("warc/")} == kept
        assert not (out / staging.TMP_DIR).exists()
        archived = list((out / "warc").glob("*.warc.gz"))
        assert archived  # what was fetched before the interrupt is in the resume store

        # the re-run completes and serves the archived pages from warc/ instead of refetching
        slow.clear()
        rerun = subprocess.run(_text_command(out), capture_output=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    counts = json.loads((out / "_stats" / "text.json").read_text())["counts"]
    assert counts["papers"] == N_PAPERS
    assert counts.get("fetch.resumed", 0) >= 1
    assert len(server.hits) - hits_before == N_PAPERS - counts["fetch.resumed"]  # nothing fetched twice
    docs = parquet_io.read_table(layout.documents_dir(str(out)))
    assert docs.num_rows == counts["documents.kept"] > 0
    assert not (out / staging.TMP_DIR).exists()
