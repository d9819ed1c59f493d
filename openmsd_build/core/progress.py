"""Progress of a long stage: done / planned, rate, ETA and errors so far.

Every DoFn already reports its batch counts through `beam_io.bump` (Beam Metrics, which the
Dataflow and Flink UIs show live). `bump` also feeds this module's process-wide tally, and
`reporting(stage)` prints it while the stage runs: a line rewritten in place on a terminal,
a plain line every `interval` seconds otherwise (CI logs). The tally only sees DoFns that run
in the launching process — the in-process runner's case; on a distributed runner the same
counts are the runner's `<stage>/progress.*` counters.

Which counters mean "done", "planned" and "errors" is stated per stage in `SPECS`.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressSpec:
    unit: str
    done: tuple[str, ...]  # counter names or prefixes ending in "." that count finished work
    planned: tuple[str, ...] = ()  # counters of the work known to be coming (empty: unknown)
    errors: tuple[str, ...] = ()


SPECS: dict[str, ProgressSpec] = {
    "papers": ProgressSpec("records", ("read.",), (), ("rejected.",)),
    "text": ProgressSpec("URLs", ("fetch.ok", "fetch.error."), ("planned.", "follow."), ("fetch.error.",)),
    "citations": ProgressSpec("rows", ("rows_read",), (), ("malformed_row", "bad_doi")),
    # documents_read = without content + with / without a reference list: done when extracted
    "contexts": ProgressSpec("documents", ("documents_without_content", "documents_with_reference_list",
                                           "documents_without_reference_list"), ("documents_read",),
                             ("crossref_rejected.", "crossref_works_bad_doi")),
    # not a Beam stage: `enrich.command.Enricher` adds a document's outcome as it is known
    "enrich": ProgressSpec("documents", ("english_skipped", "enriched", "rejected", "not_summarized"),
                           ("documents_planned",), ("rejected",)),
}

_lock = threading.Lock()
_tally: Counter = Counter()


def _matches(name: str, keys: tuple[str, ...]) -> bool:
    return any(name == k or (k.endswith(".") and name.startswith(k)) for k in keys)


@functools.lru_cache(maxsize=4096)
def _roles(spec: ProgressSpec, name: str) -> tuple[bool, bool, bool]:
    """Whether counter `name` counts as done, planned, errors under `spec` (asked for every
    count of every batch: a stage has a few dozen counter names)."""
    return _matches(name, spec.done), _matches(name, spec.planned), _matches(name, spec.errors)


def add(namespace: str, counts: Mapping[str, int]) -> dict[str, int]:
    """Add a batch's counts to the tally; returns its progress increments (done, planned,
    errors) so `bump` can mirror them as Beam counters."""
    spec = SPECS.get(namespace)
    if spec is None:
        return {}
    inc = {"done": 0, "planned": 0, "errors": 0}
    for name, value in counts.items():
        if not isinstance(value, int | float):
            continue
        done, planned, errors = _roles(spec, name)
        if done:
            inc["done"] += int(value)
        if planned:
            inc["planned"] += int(value)
        if errors:
            inc["errors"] += int(value)
    with _lock:
        for key, value in inc.items():
            _tally[(namespace, key)] += value
    return {k: v for k, v in inc.items() if v}


def snapshot(namespace: str) -> dict[str, int]:
    with _lock:
        return {k: _tally[(namespace, k)] for k in ("done", "planned", "errors")}


def line(stage: str, figures: Mapping[str, int], elapsed: float) -> str:
    """`text: 1,234 / 3,507 URLs (35%), 41.2/s, ETA 55 s, 12 errors, 30 s elapsed`."""
    spec = SPECS[stage]
    done, planned, errors = figures["done"], figures["planned"], figures["errors"]
    rate = done / elapsed if elapsed > 0 else 0.0
    parts = [f"{stage}: {done:,}" + (f" / {planned:,}" if planned else "") + f" {spec.unit}"]
    if planned:
        parts[0] += f" ({min(100, 100 * done // max(planned, 1))}%)"
    parts.append(f"{rate:,.1f}/s")
    if planned and rate > 0 and done < planned:
        parts.append(f"ETA {(planned - done) / rate:,.0f} s")
    parts.append(f"{errors:,} errors")
    parts.append(f"{elapsed:,.0f} s elapsed")
    return ", ".join(parts)


@contextmanager
def reporting(stage: str, interval: float | None = None, stream=None) -> Iterator[None]:
    """Print the stage's progress while the block runs (nothing for stages without a spec)."""
    if stage not in SPECS:
        yield
        return
    stream = stream or sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    interval = interval or (1.0 if tty else 30.0)
    with _lock:
        for key in ("done", "planned", "errors"):
            _tally[(stage, key)] = 0
    started = time.monotonic()
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            text = line(stage, snapshot(stage), time.monotonic() - started)
            stream.write(("\r" + text + "\x1b[K") if tty else text + "\n")
            stream.flush()

    thread = threading.Thread(target=loop, name=f"progress-{stage}", daemon=True)
    thread.start()
    finished = False
    try:
        yield
        finished = True
    finally:
        stop.set()
        thread.join(timeout=2)
        figures = snapshot(stage)
        if finished and figures["planned"]:
            # all planned work is done: "planned" counted tasks (a URL planned by several
            # papers is one), so the last line says what was done, at 100%
            figures["planned"] = figures["done"]
        if figures["done"]:
            text = line(stage, figures, time.monotonic() - started)
            stream.write(("\r" + text + "\x1b[K\n") if tty else text + "\n")
            stream.flush()
