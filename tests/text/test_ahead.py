"""The head start (`text/extract/ahead.py`): documents a child extracts from the archives
while the worker starts must be exactly what the fetching DoFn would have extracted, found
under the key the DoFn asks with, and a head start that hangs must cost nothing but itself."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from archive_samples import REDIRECT_URLS, _ok, write_redirect_warcs

from openmsd_build.text.extract import isolate
from openmsd_build.text.extract.ahead import ahead_key, extract_ahead, local_archives
from openmsd_build.text.extract.landing import extract_landing
from openmsd_build.text.extract.pdf import extract_pdf
from openmsd_build.text.fetch import WarcBackend, WarcWriter
from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import DEFAULT_ACCEPTED_TYPES, document_kind
from openmsd_build.text.fetch.warc_backend import DEFAULT_REPLAY_MAX_BYTES
from openmsd_build.text.jobs import AHEAD_JOB, STAGE_JOBS

JOBS = {"html": extract_landing, "pdf": extract_pdf}


def _archives(tmp_path: Path, real_samples: Path) -> tuple[list[str], list[str]]:
    """The redirect cases' WARCs plus one of real pages and PDFs (URL = file name); the URLs
    a stage would plan."""
    paths = write_redirect_warcs(tmp_path / "warc")
    urls = list(REDIRECT_URLS)
    real = str(tmp_path / "warc" / "real-3.warc.gz")
    with WarcWriter(real) as writer:
        for folder, ctype in (("html", "text/html"), ("pdf", "application/pdf")):
            for path in sorted((real_samples / folder).iterdir())[:3]:
                url = f"https://real.example/{folder}/{path.name}"
                writer.write(_ok(url, path.read_bytes(), ctype))
                urls.append(url)
    return [*paths, real], urls


def _ahead(paths: list[str], **options) -> dict:
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": DEFAULT_ACCEPTED_TYPES, **options}
    return extract_ahead(b"", stop=lambda: False, jobs=JOBS, **kwargs)


def _asked(backend: WarcBackend, url: str) -> tuple[tuple, bytes, str] | None:
    """What the fetching DoFn does with `url`: replay it, and the key it looks the answer
    up under (with the body and kind it would send otherwise); None if nothing is sent."""
    result = backend.fetch(url)
    if not result.ok:
        return None
    kind = document_kind(result.body, result.content_type)
    if kind is None:
        return None
    where = backend.index[canonical_url(result.final_url)]
    return ahead_key(kind, where[0], where[1], result.final_url), result.body, kind


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_until_idle(spares: list, timeout: float = 60.0) -> None:
    """Wait until every child has stopped using CPU (imported, and its head start done)."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to see when the children are idle")
    pids = [spare[0].pid for spare in spares]
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        now = [_cpu_ticks(pid) for pid in pids]
        if now == last:
            return
        last = now
        time.sleep(0.5)
    raise AssertionError("the children did not become idle")


def test_every_answer_ahead_is_the_one_the_dofn_would_get_under_its_key(tmp_path, real_samples) -> None:
    paths, urls = _archives(tmp_path, real_samples)
    answer = _ahead(paths)
    results = answer["results"]
    backend = WarcBackend(paths)
    asked = {url: _asked(backend, url) for url in urls}
    sent = {url: a for url, a in asked.items() if a is not None}
    # the redirect cases send five documents (a.example/y three times: by its redirect in two
    # spellings and directly; e.example/7 by e.example/3; the newer f.example copy); every
    # real page and PDF
    assert len(sent) == 5 + 6 and len({a[0] for a in sent.values()}) == 3 + 6
    for url, (key, body, kind) in sent.items():
        assert key in results, url  # found under the DoFn's key
        expected = JOBS[kind](body, **({"url": backend.fetch(url).final_url} if kind == "html" else {}))
        assert results[key] == expected, url
    # nothing else: the older copy of f.example (a record replay never reads) and no error,
    # redirect, image or 404 record
    never_asked = set(results) - {a[0] for a in sent.values()}
    assert len(never_asked) == 1 and next(iter(never_asked))[1] == paths[0]
    assert answer["records"] == sum(1 for _ in _index_rows(paths))


def _index_rows(paths: list[str]):
    from openmsd_build.text.fetch.warc_index import index_warc_file

    for path in paths:
        yield from index_warc_file(path)


def test_lanes_share_the_records_and_bounds_stop_early(tmp_path, real_samples) -> None:
    paths, _urls = _archives(tmp_path, real_samples)
    whole = _ahead(paths)["results"]
    lanes = [_ahead(paths, lane=k, lanes=2)["results"] for k in range(2)]
    assert not set(lanes[0]) & set(lanes[1]) and {**lanes[0], **lanes[1]} == whole and all(lanes)
    assert len(_ahead(paths, max_documents=2)["results"]) == 2
    calls = iter(range(100))
    stopped = extract_ahead(b"", stop=lambda: next(calls) >= 3, jobs=JOBS, paths=paths, timeout=60.0,
                            max_bytes=DEFAULT_REPLAY_MAX_BYTES, accepted_types=DEFAULT_ACCEPTED_TYPES)
    assert stopped["records"] == 3 and len(stopped["results"]) < len(whole)


def test_errors_and_slow_answers_are_not_filed(tmp_path) -> None:
    paths = write_redirect_warcs(tmp_path / "warc")

    def failing(data: bytes, **_kw):
        raise ValueError("a parser error is the DoFn's to report")

    clock = iter(range(0, 10_000, 5))  # every extraction "takes" 5 s
    slow = {"html": lambda data, **kw: {"n": len(data)}}
    assert len(_ahead(paths)["results"]) == 4
    assert extract_ahead(b"", stop=lambda: False, jobs={"html": failing}, paths=paths, timeout=60.0,
                         max_bytes=DEFAULT_REPLAY_MAX_BYTES, accepted_types=DEFAULT_ACCEPTED_TYPES)["results"] == {}
    import openmsd_build.text.extract.ahead as ahead_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ahead_module.time, "monotonic", lambda: float(next(clock)))
        filed = extract_ahead(b"", stop=lambda: False, jobs=slow, paths=paths, timeout=4.0,
                              max_bytes=DEFAULT_REPLAY_MAX_BYTES, accepted_types=DEFAULT_ACCEPTED_TYPES)
    assert filed["results"] == {} and filed["records"] > 4


def test_only_local_warc_archives_are_read_ahead(tmp_path) -> None:
    paths = write_redirect_warcs(tmp_path / "warc")
    assert local_archives(f"warc:{tmp_path}/warc/*.warc.gz") == paths
    assert local_archives("warc:gs://bucket/crawl/*.warc.gz") == []
    assert local_archives(f"warc:{paths[0]},gs://bucket/x.warc.gz") == []
    assert local_archives("http") == local_archives("none") == local_archives(f"cc-index:{tmp_path}/x.parquet") == []


def test_a_pool_takes_the_answers_of_a_prewarmed_child_working_ahead(tmp_path, real_samples) -> None:
    """The real children: `prewarm(ahead=...)` starts the head start, a pool adopting the
    child stops it and files its answers; documents submitted under their keys are then
    answered without a child, identical to a fresh extraction."""
    paths, urls = _archives(tmp_path, real_samples)
    backend = WarcBackend(paths)
    by_key = {a[0]: a for a in (_asked(backend, url) for url in urls) if a is not None}
    sent = list(by_key.values())  # each record once (three URLs replay a.example/y)
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": list(DEFAULT_ACCEPTED_TYPES)}
    isolate.prewarm(2, import_turns=1, ahead=(AHEAD_JOB, kwargs), extractors=STAGE_JOBS, timeout=60.0)
    pool = isolate.ExtractorPool(2, extractors=STAGE_JOBS, timeout=60.0)
    try:
        _wait_until_idle(isolate._SPARES.held())  # the head start has reached the end of the archives
        pool.start()
        assert pool.pending == 1  # the child on its head start, asked to stop
        answers = pool.drain()
        assert answers == [] and isolate._AHEAD["filed"] == len(sent) + 1  # and f.example's older copy
        for n, (key, body, kind) in enumerate(sent):
            url_kw = {"url": key[3]} if kind == "html" else {}
            [(tag, result, reason, _detail)] = pool.submit(n, kind, body, ahead_key=key, **url_kw)
            assert (tag, reason) == (n, None) and result == JOBS[kind](body, **url_kw)
        assert pool.pending == 0 and isolate._AHEAD["used"] == len(sent) and pool.stats["documents"] == 0
        # a key asked again (another URL whose chain ends at the same record) is extracted
        key, body, kind = sent[-1]
        assert pool.submit("again", kind, body, ahead_key=key) == [] and pool.pending == 1
        [(tag, result, reason, _detail)] = pool.drain()
        assert (tag, reason) == ("again", None) and result == JOBS[kind](body)
    finally:
        pool.close()
        isolate.close_spares()
    assert isolate._AHEAD_RESULTS == {} and isolate._AHEAD == {"filed": 0, "used": 0}


def test_a_head_start_that_hangs_is_killed_at_the_adopting_pools_deadline(tmp_path, monkeypatch) -> None:
    """A hostile document that hangs the child working ahead: the pool that adopts it gives
    it its own time limit, then kills it; the head start is lost, nothing else is."""
    (tmp_path / "hangjobs.py").write_text(
        "import time\n\ndef hang(data, **_kw):\n    time.sleep(3600)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = write_redirect_warcs(tmp_path / "warc")
    jobs = {"html": "hangjobs:hang", "debug_echo": "openmsd_build.text.extract.isolate:_debug_echo",
            AHEAD_JOB: STAGE_JOBS[AHEAD_JOB]}
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": list(DEFAULT_ACCEPTED_TYPES)}
    isolate.prewarm(1, import_turns=1, ahead=(AHEAD_JOB, kwargs), extractors=jobs, timeout=1.0)
    time.sleep(1.0)  # the child is ready and hanging in its first page
    pool = isolate.ExtractorPool(1, extractors=jobs, timeout=1.0)
    try:
        started = time.monotonic()
        pool.start()
        assert pool.pending == 1
        assert pool.drain() == [] and time.monotonic() - started < 10
        assert isolate._AHEAD["filed"] == 0 and pool.stats["killed"] == 1
        [(tag, result, reason, _detail)] = pool.submit("x", "debug_echo", b"abc") + pool.drain()
        assert (tag, reason) == ("x", None) and result["n_bytes"] == 3
    finally:
        pool.close()
        isolate.close_spares()


def test_a_single_extractor_that_adopts_a_child_working_ahead_waits_for_its_answer(tmp_path) -> None:
    paths = write_redirect_warcs(tmp_path / "warc")
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": list(DEFAULT_ACCEPTED_TYPES)}
    isolate.prewarm(1, ahead=(AHEAD_JOB, kwargs), extractors=STAGE_JOBS, timeout=60.0)
    extractor = isolate.IsolatedExtractor(extractors=STAGE_JOBS, timeout=60.0)
    try:
        _wait_until_idle(isolate._SPARES.held())
        result, reason = extractor.extract("html", b"<html><body><p>Hello there.</p></body></html>", url="http://x/")
        assert reason is None and isinstance(result, dict)
        assert isolate._AHEAD["filed"] == 4 and not extractor._ahead
    finally:
        extractor.close()
        isolate.close_spares()


def test_the_text_command_starts_its_children_before_beam_is_imported() -> None:
    import subprocess

    code = ("import sys; import openmsd_build.cli, openmsd_build.text.command; "
            "print('apache_beam' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("extra", "started"), [([], True), (["--runner=DirectRunner"], False),
                                                (["--direct_num_workers", "2"], False)])
def test_prepare_starts_the_children_only_for_the_default_local_run(tmp_path, extra, started) -> None:
    import argparse

    from openmsd_build.core.runner import local_cores
    from openmsd_build.text import command

    paths = write_redirect_warcs(tmp_path / "warc")
    args = argparse.Namespace(fetch=f"warc:{paths[0]}", extract_workers=2, extract_timeout=30.0)
    try:
        command.prepare(args, extra)
        held = isolate._SPARES.held()
        assert len(held) == (2 if started else 0)
        assert sum(spare[4] for spare in held) == (min(2, local_cores() - 1) if started else 0)
    finally:
        isolate.close_spares()
        command._STARTED = None


@pytest.fixture(scope="module")
def small_build(tmp_path_factory) -> Path:
    """A generated sample's papers stage, and its WARCs (plus the redirect cases')."""
    from archive_samples import add_papers

    from openmsd_build.cli import main

    root = tmp_path_factory.mktemp("ahead")
    assert main(["sample", "--out", str(root / "inputs"), "--papers", "120", "--seed", "11"]) == 0
    assert main(["papers", "--out", str(root / "build"), "--unpaywall", str(root / "inputs/unpaywall/*.jsonl.gz"),
                 "--crossref", str(root / "inputs/crossref/*.json.gz"), *FNAPI]) == 0
    write_redirect_warcs(root / "inputs" / "warc")
    add_papers(root / "build", REDIRECT_URLS)
    return root


FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]


def _stage_outputs(out: Path) -> dict[str, list]:
    from openmsd_build.core import layout, parquet_io
    from openmsd_build.core.stats import read_stage_counts

    tables = {}
    for name, folder in (("documents", layout.documents_dir(str(out))), ("fetch", layout.fetch_dir(str(out))),
                         ("rejects", layout.rejects_dir(str(out), "text"))):
        rows = parquet_io.read_table(folder).to_pylist() if parquet_io.list_parts(folder) else []
        tables[name] = sorted(rows, key=repr)
    counts = read_stage_counts(str(out), "text")
    counts.pop("seconds", None)
    tables["counts"] = sorted(counts.items())
    return tables


def test_the_stage_gives_the_same_outputs_with_and_without_its_head_start(small_build, tmp_path, monkeypatch,
                                                                          caplog) -> None:
    """The text stage on the sample's archives: its documents, fetch rows, rejects and counts
    are the same whether a child extracted the archives ahead or not, and the DoFn did use
    answers worked out ahead (through the CLI, whose `prepare` starts the children)."""
    import logging
    import re

    from openmsd_build.cli import main
    from openmsd_build.core.runner import local_cores
    from openmsd_build.text import command

    if local_cores() < 2:
        pytest.skip("a head start needs a core besides the worker's")
    fetch = f"warc:{small_build}/inputs/warc/*.warc.gz"
    outputs = {}
    for head_start in (False, True):
        out = tmp_path / f"head-start-{head_start}"
        (out / "papers").mkdir(parents=True)
        for part in (small_build / "build" / "papers").glob("*.parquet"):
            (out / "papers" / part.name).write_bytes(part.read_bytes())
        monkeypatch.setattr(command, "HEAD_START", head_start)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="openmsd_build.text.extract.isolate"):
            assert main(["text", "--out", str(out), "--fetch", fetch]) == 0
        used = re.findall(r"head start: (\d+) documents extracted ahead, (\d+) of them used", caplog.text)
        if head_start:
            assert used and int(used[0][1]) > 0, caplog.text
        else:
            assert not used
        outputs[head_start] = _stage_outputs(out)
    assert outputs[True] == outputs[False]
    assert len(outputs[True]["documents"]) > 50
    assert {row["error"] for row in outputs[True]["fetch"]} >= {None, "too_many_redirects", "http_404"}
    assert isolate._SPARES.held() == [] and isolate._AHEAD_RESULTS == {}
