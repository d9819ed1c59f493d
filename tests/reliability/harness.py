"""Small helpers of the reliability suite: a hard deadline for "never hangs" properties and
the accounting of a papers-stage file read."""

from __future__ import annotations

import contextlib
import signal
import time
from collections import Counter
from collections.abc import Iterator


class Hang(AssertionError):
    """Raised inside the code under test when it runs past its deadline."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail with `Hang` if the block runs longer than `seconds` (main thread, POSIX). A
    timer already running (pytest-timeout's per-test one) goes on afterwards with what is
    left of it."""

    def _alarm(signum, frame):
        raise Hang(f"still running after {seconds:g} s")

    outer = signal.getitimer(signal.ITIMER_REAL)[0]
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))


def account_source_file(path: str, source: str, num_shards: int = 4, batch_size: int = 50) -> dict:
    """Run `paper_join.read_source_file` to the end and check its bookkeeping: every item
    read is either a projected record in a batch, a reject row, or past the file's reject-row
    cap a counted failure (`rejects_suppressed.<source>`), and the counters say so. Returns
    {"read", "records", "rejects", "reasons"} (and "suppressed" when some were); raises
    AssertionError otherwise."""
    from openmsd_build.papers.join import read_source_file
    from openmsd_build.schemas import REJECTS

    records = rejects = 0
    counts: dict = {}
    reasons: Counter = Counter()
    for tag, value in read_source_file(path, source, num_shards, batch_size):
        if tag == "batch":
            shard, batch = value  # a list of record dicts or an Arrow table of them
            dois = batch.column("doi").to_pylist() if hasattr(batch, "column") else [r["doi"] for r in batch]
            assert 0 <= shard < num_shards
            assert 0 < len(dois) <= batch_size
            for doi in dois:
                assert isinstance(doi, str) and doi.startswith("10."), doi
            records += len(dois)
        elif tag == "reject":
            assert set(value) == set(REJECTS.names), value
            assert value["reason"], value
            reasons[value["reason"]] += 1
            rejects += 1
        else:
            assert tag == "counts"
            counts = value
    read = counts.get(f"read.{source}", 0)
    # past `MAX_REJECTS_PER_FILE` reject rows a file's failures are only counted
    suppressed = counts.get(f"rejects_suppressed.{source}", 0)
    assert read == records + rejects + suppressed, (read, records, rejects, suppressed, counts)
    assert sum(v for k, v in counts.items() if k.startswith("rejected.")) == rejects + suppressed, counts
    out = {"read": read, "records": records, "rejects": rejects, "reasons": dict(reasons)}
    return {**out, "suppressed": suppressed} if suppressed else out
