"""Wall time, CPU time and peak memory of one stage, saved in its `_stats/<stage>.json`.

Measured around the whole stage command in the launching process (with the in-process
runner that is the whole stage; on a distributed runner it is the launcher's share, and the
runner's UI holds the workers' figures). CPU and peak memory include child processes (the
isolated extractors), read from `getrusage`; the peak is the launching process's peak up to
the stage's end (under `run`, the largest of the stages so far).
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from openmsd_build.core.stats import update_stage_stats


def _cpu_and_peak() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    scale = 1.0 if sys.platform == "darwin" else 1024.0  # ru_maxrss: bytes on macOS, KiB on Linux
    peak_mb = max(me.ru_maxrss, kids.ru_maxrss) * scale / (1 << 20)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, peak_mb


@contextmanager
def measured() -> Iterator[dict]:
    """Yields a dict that holds `wall_s`, `cpu_s` and `peak_rss_mb` once the block ends."""
    figures: dict = {}
    wall0, (cpu0, _) = time.monotonic(), _cpu_and_peak()
    try:
        yield figures
    finally:
        cpu1, peak = _cpu_and_peak()
        figures.update(wall_s=round(time.monotonic() - wall0, 2), cpu_s=round(cpu1 - cpu0, 2),
                       peak_rss_mb=round(peak, 1))


def record(out: str, stage: str, figures: dict) -> None:
    """Add `resources` to `_stats/<stage>.json` (nothing when the stage wrote no stats)."""
    update_stage_stats(out, stage, {"resources": figures})


def timing_table(rows: dict[str, dict]) -> str:
    """`stage  wall s  cpu s  peak MB` lines for the stages run."""
    lines = [f"{'stage':<10} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}"]
    for stage, r in rows.items():
        lines.append(f"{stage:<10} {r.get('wall_s', 0):>8.1f} {r.get('cpu_s', 0):>8.1f} {r.get('peak_rss_mb', 0):>8.0f}")
    return "\n".join(lines)
