"""The papers stage's parsing pool (`papers.parallel`, `core.ordered_pool`) and the per-record
shortcuts of `join`: same outputs as parsing in one process, errors instead of hangs."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from pool_helpers import die, fail, pid, sleep_then

from openmsd_build.core.hashing import shard_of
from openmsd_build.core.ipc import from_ipc
from openmsd_build.core.ordered_pool import OrderedPool, WorkerCrashed
from openmsd_build.papers import join, parallel
from openmsd_build.papers.merge_reference import completeness
from openmsd_build.papers.sources.common import str_or_none, url_entry
from openmsd_build.papers.sources.unpaywall import _VERSION_ORDER, oa_urls


def test_answers_come_back_in_submission_order_whatever_finishes_first():
    with OrderedPool(2, max_pending=4) as pool:
        answers = pool.submit("slow", "slow", sleep_then, 1, 0.6)
        answers += pool.submit("fast", "fast", sleep_then, 2, 0.0)
        time.sleep(0.3)
        answers += pool.ready()  # "fast" is done, but "slow" is first in line
        assert answers == []
        answers += list(pool.drain())
    assert answers == [("slow", 1), ("fast", 2)]


def test_no_more_work_is_out_than_max_pending():
    with OrderedPool(1, max_pending=2) as pool:
        taken = []
        for k in range(5):
            taken += pool.submit(k, f"job {k}", sleep_then, k, 0.05)
            assert pool.pending <= 2
        taken += list(pool.drain())
    assert taken == [(k, k) for k in range(5)]


@pytest.mark.timeout(60)  # a hang fails here (the per-test timeout), not a wall-clock assert
def test_a_dead_child_is_a_clear_error_not_a_hang_and_the_pool_recovers():
    pool = OrderedPool(2)
    try:
        pool.submit("a", "parsing file A", sleep_then, 1, 0.0)
        pool.submit("b", "parsing file B", die, 7)
        with pytest.raises(WorkerCrashed, match=r"exit status 7\) died while parsing file B"):
            list(pool.drain())
        assert pool.pending == 0
        # the next submit starts fresh children
        assert pool.submit("c", "c", sleep_then, 3, 0.0) + list(pool.drain()) == [("c", 3)]
    finally:
        pool.close()


def test_an_exception_in_the_work_is_raised_in_the_parent():
    with OrderedPool(1) as pool:
        pool.submit("x", "x", fail, "bad record")
        with pytest.raises(ValueError, match="bad record"):
            list(pool.drain())


def test_abandon_drops_work_and_close_stops_the_children():
    pool = OrderedPool(2)
    pool.start()
    pool.submit("slow", "slow", sleep_then, 1, 30)
    pool.abandon()  # a failed bundle: the busy child is stopped, nothing is returned
    assert pool.pending == 0 and list(pool.drain()) == []
    answers = pool.submit("p", "p", pid) + list(pool.drain())
    children = [c.process for c in pool._children]
    pool.close()
    assert answers[0][1] in {p.pid for p in children}
    assert all(p.poll() is not None for p in children)


_CTRL_C_AS_A_CHILD_STARTS = """
import operator
import os
import signal
import subprocess

from openmsd_build.core.ordered_pool import OrderedPool

# this process lives through its terminal's Ctrl-C (a handler: unlike SIG_IGN, a child does
# not inherit it), so only what the children do with it is seen
signal.signal(signal.SIGINT, lambda *_: None)
start = subprocess.Popen


def popen(*args, **kwargs):
    child = start(*args, **kwargs)
    os.killpg(0, signal.SIGINT)  # a terminal's Ctrl-C as the child's interpreter starts
    return child


subprocess.Popen = popen
with OrderedPool(2) as pool:
    print(pool.submit(1, "adding", operator.add, 1, 2) + list(pool.drain()))
"""


def test_a_ctrl_c_as_the_children_start_is_no_traceback_of_theirs():
    """A terminal's Ctrl-C reaches its whole process group; a pool child ignored it only once
    its interpreter had started and imported the pool (~0.1 s), so a Ctrl-C then printed
    KeyboardInterrupt tracebacks from the children's imports under the command's one line
    (papers, `--parse-workers` > 1). The children run in a process group of their own."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_A_CHILD_STARTS], capture_output=True, text=True,
                          timeout=120, start_new_session=True)  # its own group: only it is interrupted
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0 and done.stdout.strip() == "[(1, 3)]", done.stdout + done.stderr[-2000:]


# ------------------------------------------------------------------ pooled parsing = in-process parsing


def _line_file(tmp_path: Path, n: int = 60) -> str:
    lines = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            lines.append('{"doi": "10.1000/broken", "title": ')  # invalid JSON
        elif kind == 1:
            lines.append(json.dumps({"title": "no doi"}))
        elif kind == 2:
            lines.append("")  # blank: not a record
        else:
            loc = {"url_for_pdf": f"https://x.org/{i}.pdf", "url_for_landing_page": f" https://x.org/{i} ",
                   "version": "acceptedVersion", "host_type": "repository", "license": "cc-by", "is_best": i % 2 == 0}
            lines.append(json.dumps({"doi": f"10.1000/P{i}", "title": "t" * (2500 if i == 9 else 5), "year": 2001,
                                     "oa_locations": [loc, {"url_for_pdf": "ftp://no"}], "best_oa_location": loc}))
    path = tmp_path / "u.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    return str(path)


def _summary(outputs) -> tuple[pa.Table, list, dict]:
    tables, rejects, counts = [], [], Counter()
    for tag, value in outputs:
        if tag == "batch":  # the pool's answers carry batches as IPC bytes
            tables.append(from_ipc(value[1]) if isinstance(value[1], bytes) else value[1])
        elif tag == "reject":
            rejects.append(value)
        else:
            counts.update(value)
    return pa.concat_tables(tables).sort_by("origin"), rejects, dict(counts)


def test_a_line_file_parsed_in_pool_chunks_equals_one_process(tmp_path):
    path = _line_file(tmp_path)
    alone = _summary(join.read_source_file(path, "unpaywall", 3, batch_size=4))
    reader = parallel.PooledReader(2, 3, batch_size=4, chunk_lines=7)  # many chunks, in order
    try:
        pooled = _summary([*reader.read_file(path, "unpaywall"), *reader.finish()])
    finally:
        reader.close()
    assert pooled[0].equals(alone[0])
    assert pooled[1] == alone[1]  # the same reject rows in line order
    assert pooled[2] == alone[2] and alone[2]["truncated.unpaywall.title"] == 1


def test_the_file_reject_budget_spans_chunks_in_line_order():
    budget = parallel._FileBudget("unpaywall", limit=3)
    chunk1 = [("reject", {"key": "f:1"}), ("batch", "b1"), ("reject", {"key": "f:2"})]
    chunk2 = [("reject", {"key": "f:5"}), ("reject", {"key": "f:6"}), ("counts", {"read.unpaywall": 2})]
    out = list(budget.apply(chunk1)) + list(budget.apply(chunk2))
    assert [v["key"] for t, v in out if t == "reject"] == ["f:1", "f:2", "f:5"]
    assert ("counts", {"rejects_suppressed.unpaywall": 1}) in out


def test_default_workers_one_per_core_locally_none_elsewhere():
    from apache_beam.options.pipeline_options import PipelineOptions

    local = PipelineOptions(["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])
    assert parallel.default_parse_workers(local, 1 << 30) >= 1
    assert parallel.default_parse_workers(local, 1 << 20) == 1  # small input: no pool
    assert parallel.default_parse_workers(PipelineOptions(["--runner=DataflowRunner"]), 1 << 30) == 1


# ------------------------------------------------------------------ per-record shortcuts


def test_shard_of_is_the_empty_keyed_blake2b():
    """`shard_of` skips the empty key's encoding; the shard must stay the keyed definition's."""
    rng = random.Random(3)
    for _ in range(2000):
        suffix = "".join(rng.choice("abcé漢/.-_") for _ in range(rng.randrange(1, 30)))
        doi = f"10.{rng.randrange(1000, 99999)}/{suffix}"
        n = rng.randrange(1, 64)
        keyed = int.from_bytes(hashlib.blake2b(doi.encode(), digest_size=8, key=b"").digest(), "big") & ((1 << 63) - 1)
        assert shard_of(doi, n) == keyed % n


def _record(**fields) -> dict:
    base = {"doi": "10.1/x", "source": "crossref", "title": None, "titles": [], "abstract": None, "venue": None,
            "publisher": None, "year": None, "type": None, "categories": [], "publisher_language": None,
            "license": None, "is_oa": None, "urls": [], "relations": [], "origin": "f:1"}
    return {**base, **fields}


def test_batch_completeness_and_caps_equal_the_per_record_rules():
    url = {"url": "https://a", "kind": "pdf", "host_type": None, "license": None, "version": None,
           "source": "unpaywall", "rank": 0}
    records = [
        _record(),
        _record(title="", abstract="a", year=2000, urls=[url], categories=["c"], venue="v", type="t"),
        _record(title="t" * 2001, titles=["x" * 3000, "y"], urls=[url] * 101, license="l" * 2001),
        _record(venue=" ", type="", year=1999, categories=[]),
    ]
    expected = [dict(r) for r in records]
    counts_expected: Counter = Counter()
    for r in expected:
        join._cap_fields(r, "crossref", counts_expected)
        r["completeness"] = completeness(r)
    counts: Counter = Counter()
    table = join.projected_table(records, "crossref", counts)
    assert table.equals(pa.Table.from_pylist(expected, schema=join.PROJECTED))
    assert counts == counts_expected and counts["truncated.crossref.titles"] == 1


def _oa_urls_reference(record: dict) -> list[dict]:
    """`unpaywall.oa_urls` as it was before it was inlined (the behaviour to keep)."""
    locations = record.get("oa_locations") if isinstance(record.get("oa_locations"), list) else []
    if not locations and isinstance(record.get("best_oa_location"), dict):
        locations = [record["best_oa_location"]]
    best = record.get("best_oa_location") if isinstance(record.get("best_oa_location"), dict) else {}
    ordered = sorted(
        (loc for loc in locations if isinstance(loc, dict)),
        key=lambda loc: (not (loc.get("is_best") or (best and loc.get("url") == best.get("url"))),
                         _VERSION_ORDER.get(loc.get("version") or "", 3)),
    )
    urls = []
    for position, loc in enumerate(ordered):
        for kind, key in (("pdf", "url_for_pdf"), ("landing", "url_for_landing_page")):
            entry = url_entry(loc.get(key), kind, "unpaywall", loc.get("host_type"), loc.get("license"),
                              loc.get("version"), preference=position * 2 + (kind == "landing"))
            if entry:
                urls.append(entry)
    return urls


@pytest.mark.parametrize("record", [
    {},
    {"oa_locations": "x", "best_oa_location": {"url_for_pdf": " HTTPS://A.pdf ", "version": " v "}},
    {"oa_locations": [], "best_oa_location": {}},
    {"oa_locations": [1, None, {"url_for_landing_page": "http://b", "license": 3, "host_type": " "}],
     "best_oa_location": {"url": "http://b"}},
    {"oa_locations": [{"url": "u1", "url_for_pdf": "https://1", "version": "submittedVersion"},
                      {"url": "u2", "url_for_pdf": "https://2", "version": "publishedVersion", "is_best": "yes"},
                      {"url": "u3", "url_for_landing_page": "ftp://3"}, {"url_for_pdf": "", "url_for_landing_page": 5}],
     "best_oa_location": {"url": "u1"}},
])
def test_inlined_oa_urls_equal_the_url_entry_rules(record):
    assert oa_urls(record) == _oa_urls_reference(record)
    assert str_or_none("  ") is None  # the rule `_text` inlines


def test_inlined_oa_urls_rank_an_unhashable_version_as_unknown():
    """The reference raised TypeError here (the source fuzz test found it): now a location
    whose version is not a string ranks as an unknown version, like a missing one."""
    record = {"oa_locations": [{"version": ["x"], "url_for_pdf": "https://a"}]}
    with pytest.raises(TypeError):
        _oa_urls_reference(record)
    assert oa_urls(record) == oa_urls({"oa_locations": [{"url_for_pdf": "https://a"}]})
    ranked = {"oa_locations": [{"url_for_pdf": "https://a/x.pdf", "version": ["publishedVersion"]},
                               {"url_for_pdf": "https://b/y.pdf", "version": "publishedVersion"}]}
    assert [u["url"] for u in oa_urls(ranked)] == ["https://b/y.pdf", "https://a/x.pdf"]
