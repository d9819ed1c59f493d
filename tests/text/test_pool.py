"""The extractor pool (`text.extract.pool`): a hang is killed at its deadline, a crash or an
out-of-memory costs one document and its child, children are recycled, several work at once,
and nothing outlives its caller. Ctrl-C on the whole stage: `test_interrupt.py`."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openmsd_build.text.extract.pool import ExtractorPool

PAGE = b"<html><head><meta name='citation_title' content='After a crash'></head><body></body></html>"


@pytest.fixture()
def pool():
    p = ExtractorPool(2, timeout=1.5, max_bytes=1_000_000, debug_kinds=True)
    p.start()
    yield p
    p.close()


def _reasons(answers) -> dict:
    return {tag: reason for tag, _result, reason, _detail in answers}


def test_a_hang_is_killed_at_its_deadline_and_the_child_replaced(pool) -> None:
    pids = set(pool.pids)
    assert pool.extract("debug_sleep", b"60") == (None, "timeout")  # not the 60 s it asked for
    assert pool.stats["killed"] == 1 and len(pool.pids) == 1 and set(pool.pids) < pids
    result, reason = pool.extract("debug_echo", b"abc")
    assert reason is None and result["n_bytes"] == 3


@pytest.mark.parametrize(("kind", "code"), [("debug_exit", 3), ("debug_abort", -signal.SIGABRT)])
def test_a_crash_is_one_reject_with_its_exit_code(pool, kind: str, code: int) -> None:
    assert pool.extract(kind, b"") == (None, "crashed")
    assert f"exit code {code}" in pool.last_error
    result, reason = pool.extract("html", PAGE)
    assert reason is None and result["title"] == "After a crash"


def test_out_of_memory_is_one_reject_and_the_child_is_replaced(pool) -> None:
    pool.start()
    before = set(pool.pids)
    answers = pool.submit("bomb", "debug_allocate", b"8000") + pool.drain()
    assert _reasons(answers) == {"bomb": "out_of_memory"}
    assert len(pool.pids) == 1 and set(pool.pids) < before  # the child that ran out is gone
    assert pool.extract("debug_echo", b"")[1] is None


def test_errors_and_limits(pool) -> None:
    assert pool.extract("pdf", b"x" * 1_000_001) == (None, "too_large")
    assert pool.extract("pdf", b"%PDF-1.7 not really") == (None, "parse_error")
    assert "PdfParseError" in pool.last_error
    assert pool.extract("debug_raise", b"bad input") == (None, "parse_error")
    assert pool.extract("nope", b"") == (None, "unknown_kind")


def test_children_are_recycled_after_n_documents() -> None:
    with ExtractorPool(1, recycle_after=3, debug_kinds=True) as pool:
        pids = [pool.extract("debug_echo", b"")[0]["pid"] for _ in range(7)]
    assert pids[0] == pids[1] == pids[2] != pids[3] == pids[4] == pids[5] != pids[6]
    assert pool.stats["recycled"] == 2


def test_every_child_works_at_once_and_every_answer_returns(pool) -> None:
    assert pool.submit("a", "debug_sleep", b"0.5") == []  # sent, not waited for
    answers = pool.submit("b", "debug_echo", b"xyz")  # the other child takes it at once
    assert pool.pending >= 1
    answers += pool.submit("c", "debug_echo", b"12")  # waits for a free child only
    answers += pool.drain()
    assert pool.pending == 0
    by_tag = {tag: (result, reason) for tag, result, reason, _detail in answers}
    assert by_tag["a"] == ({"slept": 0.5}, None)
    assert by_tag["b"][0]["n_bytes"] == 3 and by_tag["c"][0]["n_bytes"] == 2
    assert by_tag["b"][0]["pid"] in pool.pids


def test_a_child_killed_while_idle_is_replaced_without_costing_a_document(pool) -> None:
    """The pool polls every child's pipe: an idle child's end of file (killed between
    documents) retires it instead of waking every later wait, and no document is lost."""
    idle = pool.pids[1]
    os.kill(idle, signal.SIGKILL)
    assert _gone(idle)
    answers = pool.submit("slow", "debug_sleep", b"0.3")
    answers += pool.submit("next", "debug_echo", b"abc")  # may go to the dead child: then `crashed`
    answers += pool.drain()
    answers += pool.submit("again", "debug_echo", b"xy") + pool.drain()
    reasons = _reasons(answers)
    assert reasons["slow"] is None and reasons["again"] is None and reasons["next"] in (None, "crashed")
    assert idle not in pool.pids and len(pool.pids) == 2


def test_large_documents_and_answers_cross_whole(pool) -> None:
    """A request is its arguments then the raw bytes; both directions carry megabytes."""
    data = bytes(range(256)) * 3900  # ~1 MB (the limit is 1,000,000), every byte value
    answers = pool.submit("a", "debug_echo", data) + pool.submit("b", "debug_echo", data[:7]) + pool.drain()
    assert {tag: result["n_bytes"] for tag, result, _r, _d in answers} == {"a": len(data), "b": 7}
    result, reason = pool.extract("debug_raise", "é".encode() * 100)
    assert reason == "parse_error" and "é" * 100 in pool.last_error


def test_an_interrupt_between_a_request_and_its_bytes_drops_that_child(pool, monkeypatch) -> None:
    """Ctrl-C after a request's arguments went out and before its bytes did: the half-sent
    child is killed with the pending documents (it would read the next request as bytes)."""
    pool.submit("first", "debug_sleep", b"0.2")
    child = next(c for c in pool.children if not c.queue)
    half_sent = child.process.pid

    def interrupted(_data) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(child.conn, "send_bytes", lambda data, *a: (
        interrupted(data) if data == b"the body" else type(child.conn).send_bytes(child.conn, data, *a)))
    with pytest.raises(KeyboardInterrupt):
        pool.submit("second", "debug_echo", b"the body")
    assert pool.pending == 0 and half_sent not in pool.pids and _gone(half_sent)
    answers = pool.submit("a", "debug_echo", b"abc") + pool.submit("b", "debug_echo", b"de") + pool.drain()
    assert {tag: result["n_bytes"] for tag, result, _r, _d in answers} == {"a": 3, "b": 2}


def test_limits_are_per_document(pool) -> None:
    answers = pool.submit("hang", "debug_sleep", b"60")
    answers += pool.submit("crash", "debug_exit", b"")
    answers += pool.submit("big", "debug_echo", b"x" * 1_000_001)  # refused at once, never sent
    assert ("big", None, "too_large", "1000001 bytes > 1000000") in answers
    answers += pool.submit("after", "debug_echo", b"ok") + pool.drain()
    assert _reasons(answers) == {"hang": "timeout", "crash": "crashed", "big": "too_large", "after": None}
    more = pool.submit("x", "debug_echo", b"1") + pool.submit("y", "debug_echo", b"2") + pool.drain()
    assert _reasons(more) == {"x": None, "y": None}


def _queued_behind(pool, tag) -> int:
    """The pid of the child holding `tag` queued behind the document it is extracting."""
    return next(c.process.pid for c in pool.children if [r.tag for r in c.queue][1:] == [tag])


def test_a_small_document_waits_in_a_busy_childs_pipe_and_is_answered() -> None:
    """One child, two documents: the second is sent before the first is answered (the child
    reads it as soon as it answers), and both come back in order."""
    with ExtractorPool(1, timeout=10, debug_kinds=True) as pool:
        assert pool.submit("slow", "debug_sleep", b"0.3") == []
        assert pool.submit("next", "debug_echo", b"abc") == []  # not waited for: queued
        assert pool.pending == 2 and _queued_behind(pool, "next") == pool.pids[0]
        answers = pool.drain()
    assert [(tag, reason) for tag, _result, reason, _detail in answers] == [("slow", None), ("next", None)]
    assert answers[1][1]["n_bytes"] == 3


def test_a_document_too_large_to_wait_in_the_pipe_waits_for_an_idle_child() -> None:
    """A document bigger than a quarter of the pipe's buffer is never queued: writing it to a
    busy child would block the pool on that child."""
    with ExtractorPool(1, timeout=10, debug_kinds=True) as pool:
        pool.submit("slow", "debug_sleep", b"0.3")
        big = b"x" * (pool._queue_bytes + 1)
        answers = pool.submit("big", "debug_echo", big)
        assert [tag for tag, *_ in answers] == ["slow"]  # it waited for the child to be idle
        answers += pool.drain()
    assert answers[1][0] == "big" and answers[1][1]["n_bytes"] == len(big)


@pytest.mark.parametrize(("kind", "data", "reason"), [("debug_sleep", b"60", "timeout"),
                                                       ("debug_exit", b"3", "crashed"),
                                                       ("debug_allocate", b"8000", "out_of_memory")])
def test_a_document_queued_behind_a_failure_goes_to_the_childs_replacement(kind, data, reason) -> None:
    """The failing document is the one the child was extracting; the one queued behind it is
    not lost: it is sent to the new child, with its own full deadline."""
    with ExtractorPool(1, timeout=1.5, debug_kinds=True) as pool:
        pool.submit("bad", kind, data)
        pool.submit("queued", "debug_sleep", b"0.2")
        first = pool.pids[0]
        answers = pool.drain()
        assert _reasons(answers) == {"bad": reason, "queued": None}
        assert answers[1][1] == {"slept": 0.2} and first not in pool.pids and len(pool.pids) == 1
        assert pool.stats["documents"] == 2


def test_a_queued_document_has_a_deadline_of_its_own() -> None:
    """A hang queued behind a quick document is killed one deadline after the quick one's answer."""
    with ExtractorPool(1, timeout=1.0, debug_kinds=True) as pool:
        started = time.monotonic()
        pool.submit("quick", "debug_sleep", b"0.5")
        pool.submit("hang", "debug_sleep", b"60")
        answers = pool.drain()
    assert _reasons(answers) == {"quick": None, "hang": "timeout"}
    assert 1.4 < time.monotonic() - started < 10


def test_the_pipe_buffer_is_widened_and_a_plain_pipe_queues_nothing() -> None:
    import multiprocessing

    from openmsd_build.text.extract.pool import _widen

    duplex, _other = multiprocessing.Pipe()
    assert _widen(duplex) >= 64 * 1024  # Linux gives at least its default (~208 KB), here twice the request
    reader, writer = multiprocessing.Pipe(duplex=False)  # an OS pipe, not a socket: nothing waits in it
    assert _widen(writer) == 0
    for conn in (duplex, _other, reader, writer):
        conn.close()


def test_a_queued_documents_clock_runs_from_its_start_not_from_when_the_pool_looks() -> None:
    """A caller busy elsewhere (live fetching) reads answers late: a queued document answered
    in time is not killed for that, and a queued hang is killed one deadline after it
    started, not one deadline after the pool next looked."""
    with ExtractorPool(1, timeout=1.0, debug_kinds=True) as pool:
        pool.submit("first", "debug_sleep", b"0.1")
        pool.submit("queued", "debug_echo", b"abc")
        time.sleep(2.0)  # both answered long ago; the queued one's deadline is past
        assert _reasons(pool.drain()) == {"first": None, "queued": None}
        pool.submit("first", "debug_sleep", b"0.1")
        pool.submit("hang", "debug_sleep", b"60")
        time.sleep(2.5)  # the hang started at ~0.1 s: its deadline (~1.1 s) is past
        started = time.monotonic()
        answers = pool.drain()
    assert _reasons(answers) == {"first": None, "hang": "timeout"}
    assert time.monotonic() - started < 0.9  # killed at once, not a further second later


def test_a_default_socket_timeout_leaves_the_pipes_blocking() -> None:
    """Cloud clients set `socket.setdefaulttimeout`; a socket object made on a pipe's
    descriptor then turns it non-blocking, and every child read would fail at once (a whole
    gs:// run answered `crashed`). `_widen` must leave both ends blocking."""
    import fcntl
    import socket

    before = socket.getdefaulttimeout()
    socket.setdefaulttimeout(5.0)
    try:
        with ExtractorPool(1, timeout=10, debug_kinds=True) as pool:
            pool.submit("slow", "debug_sleep", b"0.3")
            pool.submit("queued", "debug_echo", b"abc")
            answers = pool.drain()
            child = pool.children[0]
            assert not fcntl.fcntl(child.fd, fcntl.F_GETFL) & os.O_NONBLOCK
    finally:
        socket.setdefaulttimeout(before)
    assert _reasons(answers) == {"slow": None, "queued": None}


def test_a_child_due_for_recycling_takes_no_queued_document() -> None:
    with ExtractorPool(1, recycle_after=2, timeout=10, debug_kinds=True) as pool:
        answers = []
        for n in range(5):
            answers += pool.submit(n, "debug_echo", b"")
        answers += pool.drain()
    pids = [result["pid"] for _tag, result, _r, _d in sorted(answers, key=lambda a: a[0])]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4] and pool.stats["recycled"] == 2


def test_a_refused_document_does_not_wait_for_a_child(pool) -> None:
    pool.submit("a", "debug_sleep", b"1")
    pool.submit("b", "debug_sleep", b"1")
    assert pool.submit("big", "debug_echo", b"x" * 1_000_001)[0][:3] == ("big", None, "too_large")
    assert pool.pending == 2  # answered while both children are still busy: it waited for neither
    assert sorted(tag for tag, *_ in pool.drain()) == ["a", "b"]


def test_abandon_kills_the_busy_children(pool) -> None:
    pool.submit("slow", "debug_sleep", b"60")
    busy = [c.process.pid for c in pool.children if c.queue]
    pool.abandon()
    assert pool.pending == 0 and pool.drain() == [] and busy[0] not in pool.pids
    assert _reasons(pool.submit("next", "debug_echo", b"") + pool.drain()) == {"next": None}


def test_lazy_and_picklable(pool) -> None:
    fresh = ExtractorPool(timeout=5)
    assert fresh.pids == []  # nothing started by the constructor
    pool.submit("a", "debug_echo", b"")
    copy = pickle.loads(pickle.dumps(pool))
    assert copy.size == 2 and copy.pending == 0 and copy.pids == []
    pool.drain()


@pytest.mark.skipif(not Path("/proc/self/comm").exists(), reason="process names are set through Linux's /proc")
def test_children_are_named_by_their_role(pool) -> None:
    """`top` and `bench/profile_text.py --phases` tell the extractors from the builders by name."""
    names = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in pool.pids}
    assert names == {"omsd-extract"}
    with ExtractorPool(1, role="build") as builders:
        builders.start()
        assert Path(f"/proc/{builders.pids[0]}/comm").read_text().strip() == "omsd-build"
        assert builders.extract("html", PAGE)[0]["title"] == "After a crash"  # the role names, nothing more


def test_a_missing_module_is_a_clear_error() -> None:
    pool = ExtractorPool(extractors={"html": "no_such_module_for_tests:extract"})
    with pytest.raises(RuntimeError, match="no_such_module_for_tests"):
        pool.start()
    pool.close()


def test_default_extract_workers_follow_the_runner(tmp_path) -> None:
    """One extractor per core in a local run with one worker (no spare: the worker needs a
    core's share too), the cores shared between several local workers, one on Dataflow /
    Flink (an SDK process per core); the text command uses that size when none is given."""
    from openmsd_build.core.runner import cores_per_local_worker, pipeline_options
    from openmsd_build.text import command

    cores = len(os.sched_getaffinity(0))
    assert cores_per_local_worker(pipeline_options([])) == cores
    assert cores_per_local_worker(pipeline_options(["--runner=DataflowRunner"])) == 1
    assert cores_per_local_worker(pipeline_options(["--runner=FlinkRunner"])) == 1
    several = pipeline_options(["--runner=DirectRunner", "--direct_num_workers=2"])
    assert cores_per_local_worker(several) == max(1, cores // 2)
    # Beam's spellings of one runner (any case, "Runner" optional, two tokens) are all local
    for args in (["--runner=direct"], ["--runner", "DirectRunner"], ["--runner=directrunner"],
                 ["--runner=apache_beam.runners.direct.direct_runner.BundleBasedDirectRunner"]):
        assert cores_per_local_worker(pipeline_options(args)) == cores, args

    class Sized(Exception):
        pass

    def build(*_args, extract_workers, **_kwargs):  # the pipeline's wiring, stopped at its size
        raise Sized(extract_workers)

    (tmp_path / "papers").mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"doi": pa.array([], pa.string())}), tmp_path / "papers" / "part-0.parquet")  # the build is stopped first
    (tmp_path / "a.warc.gz").write_bytes(b"")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("openmsd_build.pipelines.text.build", build)
        with pytest.raises(Sized) as sized:
            command.run_text(str(tmp_path), "warc:" + str(tmp_path / "a.warc.gz"), ["--runner=FnApiRunner"])
    assert sized.value.args == (cores,)


_reads_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


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


_DIES_WITH_A_CHILD_BUSY = """
from openmsd_build.text.extract.pool import ExtractorPool
pool = ExtractorPool(timeout=600.0, debug_kinds=True)
pool.submit("x", "debug_sleep", b"600")
print(pool.pids[0], flush=True)
import time; time.sleep(600)
"""


@_reads_proc
def test_a_caller_killed_mid_document_takes_the_busy_child_with_it() -> None:
    """Only the caller enforces a document's time limit, so when it dies (SIGKILL: no
    teardown runs) its busy child must not run on."""
    caller = subprocess.Popen([sys.executable, "-c", _DIES_WITH_A_CHILD_BUSY], stdout=subprocess.PIPE, text=True)
    try:
        child = int(caller.stdout.readline())
        assert not _gone(child, within=0.5)
    finally:
        caller.kill()
        caller.wait()
    assert _gone(child)


_RUN_THEN_LIST_CHILDREN = """
import os
from pathlib import Path
from openmsd_build.text.extract.pool import ExtractorPool, stop_fork_server

pool = ExtractorPool(1, timeout=30, debug_kinds=True)
assert pool.extract("debug_echo", b"x")[1] is None
stop_fork_server()
me = str(os.getpid())
for entry in Path("/proc").iterdir():
    try:
        stat = (entry / "stat").read_text()
    except OSError:
        continue
    if stat.rsplit(")", 1)[1].split()[1] == me:
        print((entry / "cmdline").read_bytes().replace(b"\\0", b" ").decode(errors="replace") or stat)
"""


@_reads_proc
def test_a_run_end_leaves_no_process_behind() -> None:
    """After `stop_fork_server` (a run's end) the process has no child left: neither the fork
    server nor the resource tracker multiprocessing started with it, so none outlives the
    command and every child's CPU is in the command's own figures."""
    out = subprocess.run([sys.executable, "-c", _RUN_THEN_LIST_CHILDREN], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == ""



def test_stopping_the_fork_server_does_not_wait_forever_for_a_lost_child() -> None:
    """The fork server exits once every child it forked has closed its pipe. A Ctrl-C while it
    forked one (before the pid was read back) left a child the pool never knew, waiting on a
    pipe the unwinding frame kept open, and the command's end waited for the server forever
    (1 Ctrl-C in 3 at ~3 s into a text run). The wait is now bounded and the pool closes the
    pipe of a child whose start was interrupted."""
    import multiprocessing
    from multiprocessing import forkserver

    from openmsd_build.text.extract import pool as pool_module

    p = ExtractorPool(1, timeout=5, max_bytes=1_000)
    p.start()
    lost = multiprocessing.get_context("forkserver").Process(target=time.sleep, args=(60,), daemon=True)
    lost.start()  # a child nobody will close: it holds the server's pipe for a minute
    server = forkserver._forkserver._forkserver_pid
    p.close()
    started = time.monotonic()
    pool_module._stop_server(grace=1.0)
    assert time.monotonic() - started < 10 and forkserver._forkserver._forkserver_pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(server, os.WNOHANG)  # reaped
    lost.kill()
    lost.join()


_CTRL_C_AS_THE_SERVER_STARTS = """
import os
import signal
import time

from openmsd_build.text.extract import pool

from multiprocessing import forkserver

pool._context()
forkserver.ensure_running()  # as a child's start does: the server imports the extractors for ~1 s
try:
    os.killpg(0, signal.SIGINT)  # a terminal's Ctrl-C: the whole group, the server too
    time.sleep(1)
except KeyboardInterrupt:
    pass
extractors = pool.ExtractorPool(1, timeout=30, debug_kinds=True)
print(extractors.extract("debug_echo", b"x")[1])
pool.stop_fork_server()
"""


def test_a_ctrl_c_while_the_fork_server_starts_is_no_traceback_of_its_own() -> None:
    """The standard library's fork server ignores SIGINT only after its preload (a second of
    imports): a Ctrl-C then printed a KeyboardInterrupt traceback from inside trafilatura
    under the command's one-line message, and the server was gone. It starts deaf to it."""
    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_THE_SERVER_STARTS], capture_output=True, text=True,
                          timeout=120, start_new_session=True)  # its own group, so only it is interrupted
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stdout + done.stderr[-2000:]


_POOL_GONE_BEFORE_READY = """
from openmsd_build.text.extract import pool

context = pool._context()
conn, child_end = context.Pipe()
conn.close()  # the pool's end closed while its child starts (a Ctrl-C in `_spawn`)
child = context.Process(target=pool._serve, args=(child_end, {}, None, "extract"))
child.start()
child_end.close()
child.join(60)
print(child.exitcode)
pool.stop_fork_server()
"""


def test_a_child_whose_pool_is_gone_ends_without_a_traceback() -> None:
    """A Ctrl-C while a child started closed the pool's end of its pipe; the child's "ready"
    then met a broken pipe and multiprocessing printed its traceback under the command's
    one-line message."""
    done = subprocess.run([sys.executable, "-c", _POOL_GONE_BEFORE_READY], capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stdout.strip() == "0"
