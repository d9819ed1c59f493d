"""The isolated extractor: a hang is killed within the limit, a crash is reported, and the next
document still extracts."""

from __future__ import annotations

import pickle
import signal
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


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_children_are_forked_from_one_warm_server_which_replaces_the_killed_and_reports_exit_codes() -> None:
    """Every child of a configuration is a fork of one server (`forkserver.py`): a child killed
    after a timeout, or one that died, is replaced by another fork of the same server, and a
    crash is reported with the exit code the server reaped."""
    from openmsd_build.text.extract import isolate

    isolate.close_fork_servers()
    pool = isolate.ExtractorPool(2, timeout=2.0, debug_kinds=True)
    try:
        pool.start()
        server = isolate.running_fork_server(pool.workers[0].extractors)
        assert {_parent_of(w.pid) for w in pool.workers} == {server.process.pid}
        assert pool.submit("slow", "debug_sleep", b"30") == []
        answers = pool.drain()
        assert answers[0][:3] == ("slow", None, "timeout")
        one = pool.workers[0]
        assert one.extract("debug_exit", b"3") == (None, "crashed") and "exit code 3" in one.last_error
        assert one.extract("debug_abort", b"") == (None, "crashed") and f"exit code -{signal.SIGABRT}" in one.last_error
        assert one.extract("debug_echo", b"xy")[0]["n_bytes"] == 2
        assert _parent_of(one.pid) == server.process.pid and server.accepting
        assert one.stats["started"] == 4
    finally:
        pool.close()
        isolate.close_fork_servers()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_closed_server_lets_its_children_finish_and_exits_after_them() -> None:
    """`close_fork_servers` (a run's end, a DoFn's teardown) stops the server making children,
    not the children in use: they answer until their pool closes them, and the server exits
    after the last. The next child starts a new server."""
    from openmsd_build.text.extract import isolate

    isolate.close_spares()
    extractor = isolate.IsolatedExtractor(timeout=10.0, debug_kinds=True)
    try:
        pid = extractor.extract("debug_echo", b"")[0]["pid"]
        server = isolate.running_fork_server(extractor.extractors)
        assert _parent_of(pid) == server.process.pid
        isolate.close_fork_servers()
        assert extractor.begin("debug_sleep", b"0.3") is None
        assert extractor.finish()[0] == {"slept": 0.3} and extractor.pid == pid
        assert server.process.poll() is None  # still waiting for its child
        extractor.close()
        assert server.process.wait(timeout=10) == 0
        assert extractor.extract("debug_echo", b"")[0]["pid"] != pid
        assert isolate.running_fork_server(extractor.extractors) is not server
    finally:
        extractor.close()
        isolate.close_fork_servers()


_DIES_WITH_A_CHILD_BUSY = """
import sys, time
from openmsd_build.text.extract.isolate import IsolatedExtractor, running_fork_server
extractor = IsolatedExtractor(timeout=600.0, debug_kinds=True)
extractor.start()
extractor.begin("debug_sleep", b"600")
print(extractor.pid, running_fork_server(extractor.extractors).process.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_caller_killed_mid_document_takes_the_server_and_the_busy_child_with_it() -> None:
    """Only the caller enforces a document's time limit, so when it dies (SIGKILL: no
    teardown runs) the server kills its children and exits: nothing is left running."""
    import subprocess
    import sys

    caller = subprocess.Popen([sys.executable, "-c", _DIES_WITH_A_CHILD_BUSY], stdout=subprocess.PIPE, text=True)
    try:
        child, server = map(int, caller.stdout.readline().split())
        assert not _gone(child, within=0.5) and _parent_of(child) == server
    finally:
        caller.kill()
        caller.wait()
    assert _gone(child) and _gone(server)


def test_prewarm_starts_every_child_from_one_server_and_they_all_answer() -> None:
    """`prewarm` asks one server for all its children at once (the server is still importing:
    the requests wait in its socket), and each becomes ready."""
    from openmsd_build.text.extract import isolate

    isolate.close_spares()
    options = {"timeout": 10.0, "debug_kinds": True}
    isolate.prewarm(3, spare_cores=1, **options)
    pool = isolate.ExtractorPool(3, **options)
    try:
        pool.start()
        answers = [pool.submit(k, "debug_sleep", b"0.5") for k in range(3)] + [pool.drain()]
        assert sorted(tag for batch in answers for tag, _r, reason, _d in batch if reason is None) == [0, 1, 2]
        assert len({w.pid for w in pool.workers}) == 3 and len(isolate._SERVERS) == 1
    finally:
        pool.close()
        isolate.close_spares()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_without_a_pidfd_the_server_kills_and_reports_the_exit() -> None:
    """Where there are no pidfds (macOS, old kernels) a child is killed through its server,
    which knows whether it has reaped it (so a reused pid is never hit), and its end is
    known from the server's exit report: forced here by dropping a child's pidfd."""
    from openmsd_build.text.extract import isolate

    isolate.close_spares()
    extractor = isolate.IsolatedExtractor(timeout=1.0, debug_kinds=True)
    try:
        extractor.start()
        child = extractor._process
        child._close_pidfd()
        pid = child.pid
        assert extractor.extract("debug_sleep", b"30") == (None, "timeout")
        assert child.returncode == -signal.SIGKILL and _gone(pid)
        assert extractor.extract("debug_echo", b"ab")[0]["n_bytes"] == 2
    finally:
        extractor.close()
        isolate.close_spares()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_server_that_dies_takes_its_children_and_the_next_document_gets_a_new_one() -> None:
    """The server killed under a busy child: the child ends with it (its watchdog), the
    document in it is `crashed`, and the next document is served by a new server."""
    import os

    from openmsd_build.text.extract import isolate

    isolate.close_spares()
    extractor = isolate.IsolatedExtractor(timeout=30.0, debug_kinds=True)
    try:
        extractor.start()
        server = isolate.running_fork_server(extractor.extractors)
        assert extractor.begin("debug_sleep", b"30") is None
        os.kill(server.process.pid, signal.SIGKILL)
        started = time.monotonic()
        assert extractor.finish()[1] == "crashed" and time.monotonic() - started < 10
        result, reason = extractor.extract("debug_echo", b"abc")
        assert reason is None and result["n_bytes"] == 3
        assert isolate.running_fork_server(extractor.extractors) is not server
    finally:
        extractor.close()
        isolate.close_spares()


def test_a_fork_that_fails_costs_that_child_only(monkeypatch) -> None:
    """The server's handling of a fork request when `fork` fails (no memory, a process
    limit): the child's caller reads why on its answer pipe, the server reports no pid and
    keeps serving."""
    import os
    import socket
    from multiprocessing.connection import Connection

    from openmsd_build.text.extract import forkserver

    ours, theirs = socket.socketpair()
    server = forkserver._Server(theirs, {})
    request_r, request_w = os.pipe()
    answer_r, answer_w = os.pipe()

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    try:
        server.handle(["fork", 7, None], [request_r, answer_w])
        answers = Connection(answer_r, writable=False)
        assert answers.poll(5)
        kind, why = answers.recv()
        assert kind == "fatal" and "cannot fork an extractor child" in why
        server.channel.flush()
        assert forkserver._Channel(ours).receive() == [(["forked", 7, None], [])]
        assert server.children == {} and server.forking
    finally:
        os.close(request_w)
        ours.close()
        theirs.close()


def test_killing_a_child_its_server_has_not_forked_yet_does_not_wait_for_the_server(tmp_path, monkeypatch) -> None:
    """A server still importing (a slow extractor module here): discarding the child it has
    not forked yet (an interrupt, a start-up timeout) returns at once; the child is killed
    when reported, or ends on its closed pipes."""
    from openmsd_build.text.extract import isolate

    (tmp_path / "slowimport.py").write_text("import time\ntime.sleep(3)\n\ndef job(data):\n    return {}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    extractor = isolate.IsolatedExtractor(extractors={"slow": "slowimport:job"})
    try:
        extractor.spawn()
        started = time.monotonic()
        extractor._discard()
        assert time.monotonic() - started < 1.0
    finally:
        extractor.close()
        isolate.close_spares()


def test_the_fork_servers_channel_reassembles_messages_and_hands_each_its_descriptors() -> None:
    """`forkserver._Channel` on a stream socket: messages sent back to back, a message that
    arrives in pieces, descriptors carried by some of them -- each message comes out whole,
    once, in order, with exactly the descriptors it was sent with; the end of the stream is
    seen; a send cut short leaves the channel closed rather than half a frame on the wire."""
    import os
    import socket

    from openmsd_build.text.extract import forkserver

    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    sender, receiver = forkserver._Channel(left), forkserver._Channel(right)
    pipes = [os.pipe() for _ in range(2)]
    try:
        sender.send(["fork", 1, None], [pipes[0][0], pipes[0][1]])
        sender.send(["kill", 1])
        sender.send(["fork", 2, 512], [pipes[1][1]])
        frame = forkserver._Channel._frame(["close"], [])
        left.sendall(frame[:3])  # a message in two pieces
        got = []
        while len(got) < 3:
            got += receiver.receive()
        left.sendall(frame[3:])
        got += receiver.receive()
        assert [message for message, _fds in got] == [["fork", 1, None], ["kill", 1], ["fork", 2, 512], ["close"]]
        assert [len(fds) for _message, fds in got] == [2, 0, 1, 0]
        # the descriptors received are the pipes sent: write through one, read through the other
        os.write(got[0][1][1], b"x")
        assert os.read(pipes[0][0], 1) == b"x"
        os.write(got[2][1][0], b"y")
        assert os.read(pipes[1][0], 1) == b"y"
        for _message, fds in got:
            for fd in fds:
                assert not os.get_inheritable(fd)
                os.close(fd)
        left.close()
        assert receiver.receive() == [] and receiver.closed
    finally:
        for r, w in pipes:
            os.close(r)
            os.close(w)
        right.close()

    class Cut:
        """A socket whose send stops half-way through a message."""

        def sendmsg(self, buffers, ancillary=()):
            return 3

        def sendall(self, data):
            raise KeyboardInterrupt

        def shutdown(self, how):
            pass

    cut = forkserver._Channel(Cut())  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        cut.send(["fork", 3, None])
    assert cut.closed
    with pytest.raises(BrokenPipeError):
        cut.send(["kill", 3])


def test_a_dead_childs_pidfd_held_elsewhere_does_not_blind_the_server(monkeypatch) -> None:
    """The server's loop waits on its socket and its children's pidfds. A reaped child's
    pidfd that another process still holds (the caller's copy, not yet closed) once stayed
    registered in the server's epoll set after the server closed its own: always readable,
    it took epoll's one event and hid the socket, so the next child was never forked (a
    start-up timeout in about one run in four of the dying-child test). The loop uses
    poll(2) now; here the caller keeps a dead child's pidfd open on purpose."""
    import os

    from openmsd_build.text.extract import isolate

    monkeypatch.setattr(isolate, "STARTUP_TIMEOUT_S", 10.0)
    isolate.close_spares()
    extractor = isolate.IsolatedExtractor(timeout=10.0, debug_kinds=True)
    held: list[int] = []
    try:
        for _ in range(3):
            extractor.start()
            assert extractor.pid is not None  # the server's report read: the handle has its pidfd
            if extractor._process._pidfd is None:
                pytest.skip("no pidfds on this platform")
            held.append(os.dup(extractor._process._pidfd))
            assert extractor.extract("debug_exit", b"3") == (None, "crashed")
            time.sleep(0.3)  # the server reaps the child and closes its pidfd; ours stays open
            assert extractor.extract("debug_echo", b"ok")[0]["n_bytes"] == 2
    finally:
        for fd in held:
            os.close(fd)
        extractor.close()
        isolate.close_spares()


def test_a_forked_child_keeps_the_collector_as_its_server_left_it(tmp_path, monkeypatch) -> None:
    """The fork server imports with the collector paused, then freezes what it loaded and
    makes young collections rarer (`core.collector`) before it forks: each child inherits
    both, so none walks the extractors' modules again."""
    from openmsd_build.core.collector import QUIET_GC_THRESHOLD
    from openmsd_build.text.extract import isolate

    (tmp_path / "gcstate.py").write_text(
        "import gc\n\ndef job(data):\n"
        "    return {'frozen': gc.get_freeze_count(), 'threshold': list(gc.get_threshold()),"
        " 'enabled': gc.isenabled()}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    extractor = isolate.IsolatedExtractor(extractors={"gc": "gcstate:job"})
    try:
        result, reason = extractor.extract("gc", b"")
        assert reason is None
        assert result["enabled"] is True and tuple(result["threshold"]) == QUIET_GC_THRESHOLD
        assert result["frozen"] > 1_000  # the server's imports, frozen before the fork
    finally:
        extractor.close()
        isolate.close_spares()
