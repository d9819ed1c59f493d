"""The head start (`text/extract/ahead.py`): documents a child extracts from the archives
while the worker starts must be exactly what the fetching DoFn would have extracted, found
under the key the DoFn asks with, and a head start that hangs must cost nothing but itself."""

from __future__ import annotations

import re
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


# A landing page whose PDF link is relative: its extraction depends on the page's URL.
LINKED = (b'<html><head><meta name="citation_title" content="A page that links its PDF">'
          b'<meta name="citation_pdf_url" content="/files/paper.pdf"></head><body><article><p>'
          + b"Words of a page that links its paper by a relative address. " * 8 + b"</p></article></body></html>")


def _archives(tmp_path: Path, real_samples: Path | None) -> tuple[list[str], list[str]]:
    """The redirect cases' WARCs plus one of a page with a relative PDF link and, when the
    real samples are there, real pages and PDFs (URL = file name); the URLs a stage would
    plan, among them the linking page spelled otherwise than its record says."""
    paths = write_redirect_warcs(tmp_path / "warc")
    urls = [*REDIRECT_URLS, "http://k.example/landing", "HTTP://K.EXAMPLE/landing"]
    more = str(tmp_path / "warc" / "more-3.warc.gz")
    with WarcWriter(more) as writer:
        writer.write(_ok("http://k.example/landing", LINKED))
        for folder, ctype in (("html", "text/html"), ("pdf", "application/pdf")):
            for path in sorted((real_samples / folder).iterdir())[:3] if real_samples else []:
                url = f"https://real.example/{folder}/{path.name}"
                writer.write(_ok(url, path.read_bytes(), ctype))
                urls.append(url)
    return [*paths, more], urls


def _ahead(paths: list[str], **options) -> dict:
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": DEFAULT_ACCEPTED_TYPES, **options}
    return extract_ahead(b"", stop=lambda: False, jobs=JOBS, **kwargs)


def _replay_index(paths: list[str]) -> dict[str, tuple]:
    """The index the DoFn's replay reads by: the stage's index rows (the later record of a
    URL), entries with their record's length (range reads), as `archive_join.chain_index`."""
    from openmsd_build.text.fetch.warc_index import index_warc_file, latest_row

    by_url: dict[str, list[dict]] = {}
    for path in paths:
        for row in index_warc_file(path):
            by_url.setdefault(row["url"], []).append(row)
    return {url: (r["warc_file"], r["offset"], r["length"]) for url, r in
            ((url, latest_row(rows)) for url, rows in by_url.items())}


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


def test_every_answer_ahead_is_the_one_the_dofn_would_get_under_its_key(tmp_path, real_samples_if_any) -> None:
    paths, urls = _archives(tmp_path, real_samples_if_any)
    answer = _ahead(paths)
    results = answer["results"]
    backend = WarcBackend([], index=_replay_index(paths))
    asked = {url: _asked(backend, url) for url in urls}
    sent = {url: a for url, a in asked.items() if a is not None}
    n_real = len(urls) - len(REDIRECT_URLS) - 2
    # the redirect cases send five documents (a.example/y three times: by its redirect in two
    # spellings and directly; e.example/7 by e.example/3; the newer f.example copy); the
    # linking page twice (two spellings), every real page and PDF
    assert len(sent) == 5 + 2 + n_real and len({a[0] for a in sent.values()}) == 3 + 2 + n_real
    for url, (key, body, kind) in sent.items():
        expected = JOBS[kind](body, **({"url": backend.fetch(url).final_url} if kind == "html" else {}))
        if url == "HTTP://K.EXAMPLE/landing":
            # replay reads the record under another spelling than it was archived with, and
            # the page's PDF link resolves against it: a different answer, which must not be
            # found (an answer keyed without the URL would be)
            assert key not in results and expected["pdf_url"] != results[key[:3] + ("http://k.example/landing",)]["pdf_url"]
            continue
        assert key in results, url  # found under the DoFn's key
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


def test_lanes_share_the_records_and_bounds_stop_early(tmp_path, real_samples_if_any) -> None:
    paths, _urls = _archives(tmp_path, real_samples_if_any)
    whole = _ahead(paths)["results"]
    lanes = [_ahead(paths, lane=k, lanes=2)["results"] for k in range(2)]
    assert not set(lanes[0]) & set(lanes[1]) and {**lanes[0], **lanes[1]} == whole and all(lanes)
    assert len(_ahead(paths, max_documents=2)["results"]) == 2
    assert len(_ahead(paths, max_answer_chars=1)["results"]) == 1
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
        patch.setattr(ahead_module, "_clock", lambda: float(next(clock)))
        filed = extract_ahead(b"", stop=lambda: False, jobs=slow, paths=paths, timeout=4.0,
                              max_bytes=DEFAULT_REPLAY_MAX_BYTES, accepted_types=DEFAULT_ACCEPTED_TYPES)
    assert filed["results"] == {} and filed["records"] > 4


def test_only_local_warc_archives_are_read_ahead(tmp_path) -> None:
    paths = write_redirect_warcs(tmp_path / "warc")
    assert local_archives(f"warc:{tmp_path}/warc/*.warc.gz") == paths
    assert local_archives("warc:gs://bucket/crawl/*.warc.gz") == []
    assert local_archives(f"warc:{paths[0]},gs://bucket/x.warc.gz") == []
    assert local_archives("http") == local_archives("none") == local_archives(f"cc-index:{tmp_path}/x.parquet") == []


def _marked_ahead(tmp_path: Path, monkeypatch) -> tuple[dict[str, str], Path]:
    """The stage's jobs with a head start that leaves a file when it is done (so a test
    adopts the child once its answers are all in, not at a moment of the machine's load)."""
    (tmp_path / "aheadmark.py").write_text(
        "from pathlib import Path\n"
        "from openmsd_build.text.extract.ahead import extract_ahead\n\n"
        "def run(data, *, marker, **kwargs):\n"
        "    answer = extract_ahead(data, **kwargs)\n"
        "    Path(marker).write_text('done')\n"
        "    return answer\n\n"
        "run.runs_ahead = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return {**STAGE_JOBS, AHEAD_JOB: "aheadmark:run"}, tmp_path / "ahead-done"


def _wait_for(marker: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert time.monotonic() < deadline, f"{marker} never appeared"
        time.sleep(0.05)


def test_a_pool_takes_the_answers_of_a_prewarmed_child_working_ahead(tmp_path, monkeypatch,
                                                                     real_samples_if_any) -> None:
    """The real children: `prewarm(ahead=...)` starts the head start, a pool adopting the
    child stops it and files its answers; documents submitted under their keys are then
    answered without a child, identical to a fresh extraction."""
    paths, urls = _archives(tmp_path, real_samples_if_any)
    backend = WarcBackend([], index=_replay_index(paths))
    by_key = {a[0]: a for a in (_asked(backend, url) for url in urls) if a is not None}
    sent = [a for key, a in by_key.items() if key[3] != "HTTP://K.EXAMPLE/landing"]  # each record once
    jobs, marker = _marked_ahead(tmp_path, monkeypatch)
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": list(DEFAULT_ACCEPTED_TYPES), "marker": str(marker)}
    isolate.prewarm(2, spare_cores=1, ahead=(AHEAD_JOB, kwargs), extractors=jobs, timeout=60.0)
    pool = isolate.ExtractorPool(2, extractors=jobs, timeout=60.0)
    try:
        _wait_for(marker)  # the head start has reached the end of the archives
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
        url_kw = {"url": key[3]} if kind == "html" else {}
        assert pool.submit("again", kind, body, ahead_key=key, **url_kw) == [] and pool.pending == 1
        [(tag, result, reason, _detail)] = pool.drain()
        assert (tag, reason) == ("again", None) and result == JOBS[kind](body, **url_kw)
    finally:
        pool.close()
        isolate.close_spares()
    assert isolate._AHEAD_RESULTS == {} and isolate._AHEAD == {"filed": 0, "used": 0}


def _hostile_head_start(tmp_path: Path, monkeypatch, then: str, timeout: float,
                        children: int = 1) -> tuple[isolate.ExtractorPool, Path]:
    """A child working ahead whose page extractor marks that it has begun and then runs
    `then` (hangs, dies, takes its time), and the pool (`children` children, time limit
    `timeout`) that will adopt it."""
    marker = tmp_path / "began"
    (tmp_path / "hostilejobs.py").write_text(
        "import os, time\nfrom pathlib import Path\n\n"
        f"def page(data, **_kw):\n    Path({str(marker)!r}).write_text('in')\n    {then}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = write_redirect_warcs(tmp_path / "warc")
    jobs = {"html": "hostilejobs:page", "debug_echo": "openmsd_build.text.extract.isolate:_debug_echo",
            "debug_sleep": "openmsd_build.text.extract.isolate:_debug_sleep", AHEAD_JOB: STAGE_JOBS[AHEAD_JOB]}
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": list(DEFAULT_ACCEPTED_TYPES)}
    isolate.prewarm(children, spare_cores=1, ahead=(AHEAD_JOB, kwargs), extractors=jobs, timeout=timeout)
    return isolate.ExtractorPool(children, extractors=jobs, timeout=timeout), marker


def test_a_head_start_that_hangs_is_killed_at_the_adopting_pools_deadline(tmp_path, monkeypatch) -> None:
    """A hostile document that hangs the child working ahead: the pool that adopts it gives
    it its own time limit, then kills it; the head start is lost, nothing else is."""
    pool, marker = _hostile_head_start(tmp_path, monkeypatch, "time.sleep(3600)", timeout=1.0)
    try:
        _wait_for(marker)  # the child is hanging in its first page
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


def test_a_head_start_that_crashed_is_settled_when_its_pool_starts_again(tmp_path, monkeypatch) -> None:
    """The child dies on its head start after a pool adopted it (a PDF that crashes PDFium):
    the next `start` (a new bundle) settles it as crashed and starts a child in its place."""
    pool, marker = _hostile_head_start(tmp_path, monkeypatch, "time.sleep(0.5); os._exit(9)", timeout=30.0)
    try:
        _wait_for(marker)
        pool.start()  # adopts the child on its head start, which then dies
        pid = pool.workers[0]._process.pid
        pool.workers[0]._process.wait(timeout=30)
        pool.abandon(keep_ahead=True)  # a new bundle
        pool.start()
        assert pool.pending == 0 and pool.workers[0].pid not in (None, pid)
        [(tag, result, reason, _detail)] = pool.submit("x", "debug_echo", b"abcd") + pool.drain()
        assert (tag, reason) == ("x", None) and result["n_bytes"] == 4 and isolate._AHEAD["filed"] == 0
    finally:
        pool.close()
        isolate.close_spares()


def test_a_single_extractor_that_adopts_a_child_working_ahead_waits_for_its_answer(tmp_path, monkeypatch) -> None:
    paths = write_redirect_warcs(tmp_path / "warc")
    jobs, marker = _marked_ahead(tmp_path, monkeypatch)
    kwargs = {"paths": paths, "timeout": 60.0, "max_bytes": DEFAULT_REPLAY_MAX_BYTES,
              "accepted_types": list(DEFAULT_ACCEPTED_TYPES), "marker": str(marker)}
    isolate.prewarm(1, ahead=(AHEAD_JOB, kwargs), extractors=jobs, timeout=60.0)
    extractor = isolate.IsolatedExtractor(extractors=jobs, timeout=60.0)
    try:
        _wait_for(marker)
        result, reason = extractor.extract("html", b"<html><body><p>Hello there.</p></body></html>", url="http://x/")
        assert reason is None and isinstance(result, dict) and "results" not in result
        assert isolate._AHEAD["filed"] == 4 and not extractor._ahead
    finally:
        extractor.close()
        isolate.close_spares()


def test_the_text_command_starts_its_children_before_beam_is_imported(tmp_path) -> None:
    """Through the CLI in a fresh interpreter: `prepare` starts the children (with a head
    start) before Beam is imported; the run then fails (no papers), and nothing is left."""
    import subprocess

    from openmsd_build.core.runner import local_cores

    paths = write_redirect_warcs(tmp_path / "warc")
    code = (
        "import sys\n"
        "import openmsd_build.text.command as command\n"
        "from openmsd_build.text.extract import isolate\n"
        "started = command.prewarm\n"
        "def prewarm(*args, **kwargs):\n"
        "    print('beam loaded:', 'apache_beam' in sys.modules, 'ahead:', kwargs.get('ahead') is not None)\n"
        "    return started(*args, **kwargs)\n"
        "command.prewarm = prewarm\n"
        "from openmsd_build.cli import main\n"
        f"code = main(['text', '--out', {str(tmp_path / 'out')!r}, '--fetch', 'warc:{paths[0]}'])\n"
        "print('exit', code, 'spares', len(isolate._SPARES.held()), 'started', command._STARTED)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = out.stdout.strip().splitlines()
    assert lines[0] == f"beam loaded: False ahead: {local_cores() > 1}", out
    assert lines[-1] == "exit 2 spares 0 started None" and "no papers" in out.stderr, out


def test_a_wrong_flag_after_prepare_leaves_no_children(tmp_path) -> None:
    from openmsd_build.cli import main
    from openmsd_build.text import command

    paths = write_redirect_warcs(tmp_path / "warc")
    assert main(["text", "--out", str(tmp_path / "out"), "--fetch", f"warc:{paths[0]}", "--extract-wrokers", "2"]) == 2
    assert isolate._SPARES.held() == [] and command._STARTED is None


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


def test_the_stage_gives_the_same_outputs_with_and_without_its_head_start(small_build, tmp_path, monkeypatch) -> None:
    """The text stage on the sample's archives: its documents, fetch rows, rejects and counts
    are the same whether a child extracted the archives ahead or not, and the DoFn did use
    answers worked out ahead. With: the `openmsd-build` program in a fresh interpreter, as a
    user runs it (the children start while Beam imports); without: in this process."""
    import subprocess

    from openmsd_build.cli import main
    from openmsd_build.core.runner import local_cores
    from openmsd_build.text import command

    if local_cores() < 2:
        pytest.skip("a head start needs a core besides the worker's")
    fetch = f"warc:{small_build}/inputs/warc/*.warc.gz"
    outs = {}
    for head_start in (False, True):
        out = outs[head_start] = tmp_path / f"head-start-{head_start}"
        (out / "papers").mkdir(parents=True)
        for part in (small_build / "build" / "papers").glob("*.parquet"):
            (out / "papers" / part.name).write_bytes(part.read_bytes())
    monkeypatch.setattr(command, "HEAD_START", False)
    assert main(["text", "--out", str(outs[False]), "--fetch", fetch]) == 0
    run = subprocess.run([sys.executable, "-m", "openmsd_build.cli", "-v", "text", "--out", str(outs[True]),
                          "--fetch", fetch], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    used = re.findall(r"head start: (\d+) documents extracted ahead, (\d+) of them used", run.stderr)
    assert used and int(used[0][1]) > 0, run.stderr[-3000:]
    with_ahead, without = _stage_outputs(outs[True]), _stage_outputs(outs[False])
    assert with_ahead == without
    assert len(with_ahead["documents"]) > 50
    assert {row["error"] for row in with_ahead["fetch"]} >= {None, "too_many_redirects", "http_404"}


def test_a_damaged_archive_costs_only_its_own_records(tmp_path) -> None:
    """A WARC cut short in the middle of a record, and garbage that is no WARC at all: the
    head start reads what it can and goes on with the next archive."""
    paths = write_redirect_warcs(tmp_path / "warc")
    whole = _ahead(paths)["results"]
    cut = tmp_path / "warc" / "cut.warc.gz"
    data = Path(paths[0]).read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    garbage = tmp_path / "warc" / "garbage.warc.gz"
    garbage.write_bytes(b"\x1f\x8b\x08\x00 not a gzip member at all" * 50)
    answer = _ahead([str(garbage), str(cut), paths[1]])
    assert {key for key in answer["results"] if key[1] == paths[1]} == {key for key in whole if key[1] == paths[1]}
    assert all(key[1] in (str(cut), paths[1]) for key in answer["results"])


def test_a_document_not_yet_filed_waits_for_the_adopted_head_start_instead_of_extracting_it_twice(
        tmp_path, monkeypatch) -> None:
    """The head start answers only after the document it is in; a document submitted before
    that may be one it has done, so when no child is free the pool first waits for that
    answer (and files it) rather than for a free child: here the head start's first page is
    filed before the submitted document is sent."""
    pool, marker = _hostile_head_start(tmp_path, monkeypatch, "time.sleep(0.5); return {'title': 'slow'}",
                                       timeout=60.0, children=2)
    try:
        _wait_for(marker)
        pool.start()
        assert pool.pending == 1 and isolate._AHEAD["filed"] == 0
        answers = pool.submit("busy", "debug_sleep", b"0.3")  # the free child: now none is free
        answers += pool.submit("x", "debug_sleep", b"0.2", ahead_key=("html", "elsewhere", 0, "x"))
        assert isolate._AHEAD["filed"] >= 1 and not any(w._ahead for w in pool.workers)
        done = {tag: (result, reason) for tag, result, reason, _detail in answers + pool.drain()}
        assert done == {"busy": ({"slept": 0.3}, None), "x": ({"slept": 0.2}, None)}
        # the next miss does not wait: no head start is left to wait for
        left = pool._ahead_wait_left
        assert pool.submit("y", "debug_sleep", b"0.2", ahead_key=("html", "elsewhere", 1, "y")) == []
        assert pool._ahead_wait_left == left > 0
        assert [tag for tag, _r, reason, _d in pool.drain() if reason is None] == ["y"]
    finally:
        pool.close()
        isolate.close_spares()


def test_a_free_child_is_not_kept_waiting_for_the_head_start(tmp_path, monkeypatch) -> None:
    """A document not filed goes at once to a free child, however long the head start's
    current document takes: the wait is spent only by a document that would wait anyway."""
    pool, marker = _hostile_head_start(tmp_path, monkeypatch, "time.sleep(3); return {'title': 'slow'}",
                                       timeout=60.0, children=2)
    try:
        _wait_for(marker)
        pool.start()
        left = pool._ahead_wait_left
        started = time.monotonic()
        assert pool.submit("x", "debug_echo", b"abcd", ahead_key=("html", "elsewhere", 0, "x")) == []
        # well under the head start's 3 s page (and the wait's 1 s), even on a loaded machine
        assert time.monotonic() - started < 0.9 and pool._ahead_wait_left == left
        assert any(w._ahead for w in pool.workers) and isolate._AHEAD["filed"] == 0  # still in its page
        [(tag, result, reason, _detail)] = pool.drain()
        assert (tag, reason) == ("x", None) and result["n_bytes"] == 4 and isolate._AHEAD["filed"] >= 1
    finally:
        pool.close()
        isolate.close_spares()


def test_a_head_start_stuck_in_a_document_delays_the_next_only_by_the_short_wait(tmp_path, monkeypatch) -> None:
    """A head start hanging in a hostile page: a document that finds no free child waits
    `AHEAD_WAIT_S` at most for it, then for the busy child; the stuck one is killed at its
    own deadline."""
    monkeypatch.setattr(isolate, "AHEAD_WAIT_S", 0.3)
    pool, marker = _hostile_head_start(tmp_path, monkeypatch, "time.sleep(3600)", timeout=2.0, children=2)
    try:
        _wait_for(marker)
        pool.start()
        started = time.monotonic()
        answers = pool.submit("busy", "debug_sleep", b"0.2")
        answers += pool.submit("x", "debug_echo", b"abcd", ahead_key=("html", "elsewhere", 0, "x"))
        assert time.monotonic() - started < 1.5 and isolate._AHEAD["filed"] == 0 and pool._ahead_wait_left <= 0
        answers += pool.drain()
        done = {tag: (result, reason) for tag, result, reason, _detail in answers}
        assert done["busy"] == ({"slept": 0.2}, None) and done["x"][1] is None and done["x"][0]["n_bytes"] == 4
        assert pool.stats["killed"] == 1
    finally:
        pool.close()
        isolate.close_spares()


class _PoolWithHeadStart:
    """What `FetchAndExtract` asks of its pool, with `head_start` set as given."""

    def __init__(self, head_start: bool) -> None:
        self.head_start = head_start

    def drain(self) -> list:
        return []

    def release(self) -> None:
        pass

    def abandon(self, **_kw) -> None:
        pass

    def start(self) -> None:
        pass


@pytest.mark.parametrize("head_start", [True, False])
def test_archive_units_are_replayed_from_the_far_end_while_a_head_start_exists(monkeypatch, head_start) -> None:
    """With extractions worked out ahead, the fetching DoFn keeps its bundle's archive units
    and replays them in descending archive position (file, offset of the record each resolves
    to; the unarchived last), meeting the head start, which goes forward; without one it
    replays each as it comes."""
    from openmsd_build.text import beam as text_beam

    dofn = text_beam.FetchAndExtract("warc:unused", None, None, 5.0, 1)
    dofn.extractors = _PoolWithHeadStart(head_start)
    dofn.writer = dofn.warc_file = None
    dofn.start_bundle()
    seen: list[str] = []
    monkeypatch.setattr(dofn, "_replay", lambda unit, counts: (unit["url"], None, None, None))
    monkeypatch.setattr(dofn, "_handle", lambda url, *_a, counts: iter(seen.append(url) or ()))

    def unit(url: str, where: tuple[str, int] | None) -> dict:
        chain = [[url, where[0], where[1], 100]] if where else []
        return {"url": url, "tasks": [{"doi": url, "url": url}], "chain": chain}

    units = (unit("a", ("w1", 10)), unit("b", ("w2", 5)), unit("c", None), unit("d", ("w1", 200)))
    for element in units:
        list(dofn.process(element))
    arrived = list(seen)
    list(dofn.finish_bundle())
    if head_start:
        assert arrived == [] and seen == ["b", "d", "a", "c"]  # archives the stage does not list: by name
        # archives in the order the stage reads them (the head start's): the last one's first
        dofn._archive_order = {"w2": 0, "w1": 1}
        seen.clear()
        dofn.start_bundle()
        for element in units:
            list(dofn.process(element))
        list(dofn.finish_bundle())
        assert seen == ["d", "a", "b", "c"]
    else:
        assert arrived == seen == ["a", "b", "c", "d"]


def test_kept_archive_units_are_replayed_when_the_bound_is_reached(monkeypatch) -> None:
    """At most `FAR_END_UNITS` units wait in the DoFn: then those are replayed (far end
    first), and the rest of the bundle is kept again."""
    from openmsd_build.text import beam as text_beam

    dofn = text_beam.FetchAndExtract("warc:unused", None, None, 5.0, 1)
    dofn.extractors = _PoolWithHeadStart(True)
    dofn.writer = dofn.warc_file = None
    monkeypatch.setattr(text_beam.FetchAndExtract, "FAR_END_UNITS", 3)
    dofn.start_bundle()
    seen: list[str] = []
    monkeypatch.setattr(dofn, "_replay", lambda unit, counts: (unit["url"], None, None, None))
    monkeypatch.setattr(dofn, "_handle", lambda url, *_a, counts: iter(seen.append(url) or ()))
    for k in range(7):
        list(dofn.process({"url": f"u{k}", "tasks": [{"doi": "d", "url": f"u{k}"}], "chain": [[f"u{k}", "w", k, 1]]}))
        assert len(dofn._units) == (k + 1) % 3
    list(dofn.finish_bundle())
    assert seen == ["u2", "u1", "u0", "u5", "u4", "u3", "u6"]
