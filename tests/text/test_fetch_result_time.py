"""`now_iso` keeps the text of the current second: still the current UTC second, in WARC-Date's form."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from openmsd_build.text.fetch import result


def test_now_iso_is_the_current_utc_second(monkeypatch):
    clock = [1_700_000_000.2]
    monkeypatch.setattr(result.time, "time", lambda: clock[0])
    first = result.now_iso()
    assert first == "2023-11-14T22:13:20Z"
    clock[0] += 0.5  # the same second: the same text
    assert result.now_iso() == first
    clock[0] += 1.0  # the next second: its own text
    assert result.now_iso() == "2023-11-14T22:13:21Z"
    monkeypatch.undo()
    now = result.now_iso()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now)
    assert abs(datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp() - time.time()) < 2
