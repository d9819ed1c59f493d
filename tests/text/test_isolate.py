"""The isolated extractor: a hang is killed within the limit, a crash is reported, and the next
document still extracts."""

from __future__ import annotations

import pickle
import time
from pathlib import Path

import pytest

from openmsd_build.text.extract.isolate import IsolatedExtractor


@pytest.fixture(scope="module")
def extractor():
    ex = IsolatedExtractor(timeout=1.5, max_bytes=1_000_000, debug_kinds=True)
    ex.start()
    yield ex
    ex.close()


def test_hang_is_killed_within_limit_and_next_document_extracts(extractor: IsolatedExtractor) -> None:
    pid = extractor.pid
    started = time.monotonic()
    result, reason = extractor.extract("debug_sleep", b"60")
    elapsed = time.monotonic() - started
    assert (result, reason) == (None, "timeout")
    assert elapsed < 1.5 + 2.0
    assert extractor.pid is None  # killed
    result, reason = extractor.extract("debug_echo", b"abc")
    assert reason is None and result["n_bytes"] == 3 and result["pid"] != pid


@pytest.mark.parametrize("kind", ["debug_exit", "debug_abort"])
def test_crash_is_reported_and_recovery_works(extractor: IsolatedExtractor, kind: str) -> None:
    assert extractor.extract(kind, b"")[1] == "crashed"
    assert "worker died" in extractor.last_error
    result, reason = extractor.extract("html", b"<html><head><meta name='citation_title' content='After a crash'></head><body></body></html>")
    assert reason is None and result["title"] == "After a crash"


def test_errors_and_limits(extractor: IsolatedExtractor) -> None:
    assert extractor.extract("pdf", b"x" * 1_000_001) == (None, "too_large")
    assert extractor.extract("pdf", b"%PDF-1.7 not really") == (None, "parse_error")
    assert "PdfParseError" in extractor.last_error
    assert extractor.extract("debug_raise", b"bad input") == (None, "parse_error")
    assert extractor.extract("nope", b"") == (None, "unknown_kind")
    pid = extractor.pid
    assert extractor.extract("debug_allocate", b"8000") == (None, "out_of_memory")
    assert extractor.pid == pid  # a MemoryError does not cost the worker


def test_real_documents_with_url(real_samples: Path, extractor: IsolatedExtractor) -> None:
    page = (real_samples / "html" / "commonmeta-py__arxiv_1902.02534.html").read_bytes()
    result, reason = extractor.extract("html", page, url="https://arxiv.org/abs/1902.02534")
    assert reason is None and result["pdf_url"].startswith("https://arxiv.org/pdf/")
    pdf = (real_samples / "pdf" / "s2orc-doc2json__N18-3011.pdf").read_bytes()
    result, reason = extractor.extract("pdf", pdf)
    assert reason is None and "Semantic Scholar" in result["title"]


def test_lazy_and_picklable() -> None:
    ex = IsolatedExtractor(timeout=5)
    assert ex.pid is None  # nothing started by the constructor
    clone = pickle.loads(pickle.dumps(ex))
    assert clone.timeout == 5 and clone.pid is None
    result, reason = clone.extract("html", b"<html><head><title>Lazy start of a worker</title></head></html>")
    assert reason is None and result["title"] == "Lazy start of a worker"
    started = clone.pid
    assert pickle.loads(pickle.dumps(clone)).pid is None  # a running worker is not pickled
    clone.close()
    assert clone.pid is None and started is not None


def test_missing_module_is_a_clear_error() -> None:
    """A child that cannot import an extractor's module says which one (it used to be a
    bare "worker died")."""
    import pytest

    from openmsd_build.text.extract.isolate import IsolatedExtractor

    extractor = IsolatedExtractor(extractors={"html": "no_such_module_for_tests:extract"})
    try:
        with pytest.raises(RuntimeError, match="cannot import no_such_module_for_tests"):
            extractor.start()
    finally:
        extractor.close()


# --- the pool: several children at once -------------------------------------------------------

@pytest.fixture()
def pool():
    from openmsd_build.text.extract.isolate import ExtractorPool

    p = ExtractorPool(2, timeout=2.0, max_bytes=1_000_000, debug_kinds=True)
    p.start()
    yield p
    p.close()


def test_pool_keeps_every_child_busy_and_returns_every_answer(pool) -> None:
    assert pool.submit("a", "debug_sleep", b"0.5") == []  # sent, not waited for
    answers = pool.submit("b", "debug_echo", b"xyz")  # the other child takes it at once
    assert pool.workers[0].busy  # "a" still sleeping while "b" was handed out
    answers += pool.submit("c", "debug_echo", b"12")  # waits for a free child only
    answers += pool.drain()
    assert pool.pending == 0
    by_tag = {tag: (result, reason) for tag, result, reason, _detail in answers}
    assert set(by_tag) == {"a", "b", "c"}
    assert by_tag["a"] == ({"slept": 0.5}, None)
    assert by_tag["b"][0]["n_bytes"] == 3 and by_tag["c"][0]["n_bytes"] == 2
    pids = {pool.workers[0].pid, pool.workers[1].pid}
    assert len(pids) == 2 and by_tag["b"][0]["pid"] in pids


def test_pool_limits_are_per_document(pool) -> None:
    answers = pool.submit("hang", "debug_sleep", b"60")
    answers += pool.submit("crash", "debug_exit", b"")
    answers += pool.submit("big", "debug_echo", b"x" * 1_000_001)  # refused at once, never sent
    assert ("big", None, "too_large", "1000001 bytes > 1000000") in answers
    answers += pool.submit("after", "debug_echo", b"ok")
    answers += pool.drain()
    reasons = {tag: reason for tag, _result, reason, _detail in answers}
    assert reasons == {"hang": "timeout", "crash": "crashed", "big": "too_large", "after": None}
    # a killed or dead child is replaced: the pool goes on with two
    more = pool.submit("x", "debug_echo", b"1") + pool.submit("y", "debug_echo", b"2") + pool.drain()
    assert sorted(tag for tag, *_ in more) == ["x", "y"] and all(reason is None for _t, _r, reason, _d in more)


def test_pool_abandon_kills_pending_documents(pool) -> None:
    pool.submit("slow", "debug_sleep", b"60")
    pid = next(w.pid for w in pool.workers if w.busy)
    pool.abandon()
    assert pool.pending == 0 and pool.drain() == []
    assert pid not in {w.pid for w in pool.workers}
    assert pool.submit("next", "debug_echo", b"") + pool.drain() == [
        ("next", {"pid": next(w.pid for w in pool.workers if w.pid), "n_bytes": 0}, None, None)]


def test_pool_pickles_without_processes(pool) -> None:
    pool.submit("a", "debug_echo", b"")
    copy = pickle.loads(pickle.dumps(pool))
    assert copy.size == 2 and copy.pending == 0 and all(w.pid is None for w in copy.workers)
    pool.drain()


def test_default_extract_workers_follow_the_runner() -> None:
    """One extractor per core, plus one that works while the Beam worker hands an answered
    child its next document, in a local run; one on a distributed runner, which already runs
    a worker per core."""
    import os

    from openmsd_build.core.runner import pipeline_options
    from openmsd_build.text.command import default_extract_workers

    assert default_extract_workers(pipeline_options([])) == len(os.sched_getaffinity(0)) + 1
    assert default_extract_workers(pipeline_options(["--runner=DataflowRunner"])) == 1
    assert default_extract_workers(pipeline_options(["--runner=FlinkRunner"])) == 1


def test_pool_keeps_answers_when_sending_fails(pool, monkeypatch) -> None:
    """Answers taken while waiting for an idle child are not lost if handing over the next
    document raises (a child that cannot start, an interrupt): the next call returns them."""
    assert pool.submit("slow", "debug_sleep", b"0.3") == []
    answers = pool.submit("fast", "debug_echo", b"abc")
    import time as _time

    _time.sleep(0.6)  # both done by now; the next submit collects them before sending

    def broken_begin(*_args, **_kwargs):
        raise RuntimeError("child cannot start")

    for worker in pool.workers:
        monkeypatch.setattr(worker, "begin", broken_begin)
    with pytest.raises(RuntimeError, match="cannot start"):
        pool.submit("lost?", "debug_echo", b"x")
    answers += pool.drain()
    assert sorted(tag for tag, *_ in answers) == ["fast", "slow"]


def test_refused_document_does_not_wait_for_a_child(pool) -> None:
    pool.submit("a", "debug_sleep", b"1")
    pool.submit("b", "debug_sleep", b"1")
    started = time.monotonic()
    assert pool.submit("big", "debug_echo", b"x" * 1_000_001)[0][:3] == ("big", None, "too_large")
    assert time.monotonic() - started < 0.5  # answered at once although both children are busy
    assert sorted(tag for tag, *_ in pool.drain()) == ["a", "b"]


def test_closed_or_busy_extractor_state() -> None:
    ex = IsolatedExtractor(timeout=5, debug_kinds=True)
    ex.begin("debug_sleep", b"30")
    with pytest.raises(RuntimeError, match="pending"):
        ex.spawn()
    ex.close()
    assert not ex.busy and ex.pid is None
    assert ex.extract("debug_echo", b"ok") == ({"pid": ex.pid, "n_bytes": 2}, None)
    ex.close()


def test_local_runner_with_several_workers_shares_the_cores() -> None:
    import os

    from openmsd_build.core.runner import pipeline_options
    from openmsd_build.text.command import default_extract_workers

    cores = len(os.sched_getaffinity(0))
    options = pipeline_options(["--runner=DirectRunner", "--direct_num_workers=2"])
    assert default_extract_workers(options) == max(1, cores // 2)  # no spare child each: they would crowd the cores


def test_released_children_serve_the_next_pool_of_the_same_configuration() -> None:
    """A local text run starts its children once: `prewarm` before the pipeline, and each
    pool hands its idle children back (`release`) for the next one (the follow-up pass,
    document building). A pool with other child limits never takes them."""
    import os

    from openmsd_build.text.extract import isolate
    from openmsd_build.text.extract.isolate import ExtractorPool, close_spares, prewarm

    def echo_pids(pool: ExtractorPool) -> set[int]:
        answers = pool.submit("a", "debug_sleep", b"0.2") + pool.submit("b", "debug_echo", b"") + pool.drain()
        assert all(reason is None for _t, _r, reason, _d in answers)
        return {w.pid for w in pool.workers}

    options = {"timeout": 10.0, "debug_kinds": True}
    prewarm(2, **options)
    first = ExtractorPool(2, **options)
    other = ExtractorPool(1, max_memory_mb=1024, **options)
    try:
        spare_pids = {spare[0].pid for spare in isolate._SPARES.held()}
        first.start()
        assert {w.pid for w in first.workers} == spare_pids and len(spare_pids) == 2
        pids = echo_pids(first)
        first.submit("pending", "debug_sleep", b"0.5")
        with pytest.raises(RuntimeError, match="drain"):
            first.release()
        first.drain()
        first.release()
        assert all(w.pid is None for w in first.workers)
        other.start()  # another memory limit: a child of its own
        assert other.workers[0].pid not in pids
        second = ExtractorPool(2, timeout=1.0, debug_kinds=True)  # its own time limit is fine
        second.start()
        assert echo_pids(second) == pids
        assert second.submit("slow", "debug_sleep", b"5") == [] and second.drain()[0][2] == "timeout"
        second.release()  # one live child handed back, the killed one is not
        assert len(isolate._SPARES.held()) == 1
    finally:
        first.close()
        other.close()
        close_spares()
    assert isolate._SPARES.held() == []
    time.sleep(0.2)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)


_TAKE_TURN = """
import sys, time
from openmsd_build.text.extract.isolate import _import_turn
print("waiting", flush=True)
with _import_turn(sys.argv[1]):
    print("in", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_prewarmed_children_take_turns_to_import_and_a_dead_holder_frees_the_turn(tmp_path) -> None:
    """`prewarm`'s children take turns to import (`_import_turn`), so the parent, busy
    planning the pipeline, keeps a core; a holder that dies releases its turn (a killed
    child cannot stall its siblings), and a lock that cannot be made only means no turns."""
    import subprocess
    import sys

    from openmsd_build.text.extract import isolate

    lock = str(tmp_path / "turn")
    holder = subprocess.Popen([sys.executable, "-c", _TAKE_TURN, lock, "60"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "waiting\n" and holder.stdout.readline() == "in\n"
        waiter = subprocess.Popen([sys.executable, "-c", _TAKE_TURN, lock, "0"], stdout=subprocess.PIPE, text=True)
        assert waiter.stdout.readline() == "waiting\n"
        time.sleep(0.5)
        assert waiter.poll() is None  # at the lock, not in
        holder.kill()  # dies holding it
        out, _ = waiter.communicate(timeout=30)
        assert out == "in\n" and waiter.returncode == 0
    finally:
        holder.kill()
        holder.wait()
    with isolate._import_turn(str(tmp_path / "no-such-dir" / "turn")):
        pass


@pytest.mark.parametrize(("count", "turns", "locks"), [(3, 1, {"turn-0"}), (3, 2, {"turn-0", "turn-1"}), (2, 2, set())])
def test_prewarm_gives_its_children_as_many_turns_as_it_is_told(count: int, turns: int, locks: set[str]) -> None:
    """The children share `import_turns` lock files (one per core the parent leaves them);
    as many children as turns need none. They all become ready."""
    from openmsd_build.text.extract import isolate

    directory = Path(isolate._import_lock_path()).parent
    for old in directory.glob("turn-*"):
        old.unlink()
    options = {"timeout": 10.0, "debug_kinds": True}
    isolate.prewarm(count, import_turns=turns, **options)
    pool = isolate.ExtractorPool(count, **options)
    try:
        pool.start()
        answers = [pool.submit(k, "debug_echo", b"x") for k in range(count)] + [pool.drain()]
        assert sorted(tag for batch in answers for tag, _r, reason, _d in batch if reason is None) == list(range(count))
        assert {p.name for p in directory.glob("turn-*")} == locks
    finally:
        pool.close()
        isolate.close_spares()
