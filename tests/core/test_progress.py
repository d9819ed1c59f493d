"""The progress line of a long stage: done / planned, rate, ETA and errors."""

from __future__ import annotations

import io
import time

from openmsd_build.core import progress
from openmsd_build.core.beam_io import bump


def test_counts_feed_the_progress_line() -> None:
    stream = io.StringIO()
    with progress.reporting("text", interval=0.05, stream=stream):
        bump("text", {"planned.landing": 8, "planned.pdf": 2})
        bump("text", {"fetch.ok": 3, "fetch.error.http_404": 1, "extracted.pdf": 2})
        time.sleep(0.2)
    lines = [x for x in stream.getvalue().splitlines() if x]
    assert lines, "no progress printed"
    running = lines[-2]  # while the stage runs: done / planned so far
    assert running.startswith("text: 4 / 10 URLs (40%)") and "1 errors" in running and "ETA" in running
    # the stage finished: what it did was all there was to do
    assert lines[-1].startswith("text: 4 / 4 URLs (100%)") and "ETA" not in lines[-1]


def test_stage_without_spec_prints_nothing() -> None:
    stream = io.StringIO()
    with progress.reporting("pairs", interval=0.01, stream=stream):
        bump("pairs", {"cc_instances": 5})
        time.sleep(0.05)
    assert stream.getvalue() == ""


def test_line_format() -> None:
    text = progress.line("papers", {"done": 1500, "planned": 0, "errors": 2}, 10.0)
    assert text == "papers: 1,500 records, 150.0/s, 2 errors, 10 s elapsed"
