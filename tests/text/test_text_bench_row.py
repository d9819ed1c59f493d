"""`bench/run_all.py`'s text row: which run each figure comes from, and the split of the wall
ratio into the CPU spent beyond the extractors and the cores left idle (`ours_cores`,
`anchor_parallel_cores`), the figures the text stage's goals are read from."""

from __future__ import annotations

import pytest

# three turns of the anchor in one process and of the anchor on two processes
ANCHOR = [(72.0, 72.0), (71.0, 71.0), (74.0, 74.0)]
PARALLEL = [(38.0, 76.0), (37.0, 73.0), (40.0, 78.0)]


def _row(repo_script, ours: list[tuple[float, float]]) -> dict:
    """The text row of three turns; each run given as (wall s, CPU s)."""
    def runs(pairs):
        return [{"seconds": s, "cpu_s": c, "peak_rss_mb": 100.0, "load": 1.0} for s, c in pairs]

    return repo_script("bench/run_all.py").text_row("text", 20000, runs(ours), runs(ANCHOR), runs(PARALLEL))


def test_text_row_figures_and_the_split_of_its_wall_ratio(repo_script) -> None:
    row = _row(repo_script, [(60.0, 102.0), (58.0, 100.0), (70.0, 130.0)])
    # CPU ratios per turn; the CPU figures are the middle turn's (1.42, 1.41, 1.76 -> turn 0)
    assert row["cpu_turn_ratios"] == [1.42, 1.41, 1.76]
    assert (row["ours_cpu_s"], row["anchor_cpu_s"], row["anchor_parallel_cpu_s"]) == (102.0, 72.0, 76.0)
    assert row["cpu_ratio"] == 1.42 and row["parallel_cpu_ratio"] == 1.34
    # the wall figures are each side's median run, and the cores its own CPU over its wall
    assert (row["ours_s"], row["anchor_parallel_s"]) == (60.0, 38.0)
    assert row["parallel_ratio"] == 1.58
    assert row["ours_cores"] == 1.7 and row["anchor_parallel_cores"] == 2.0
    # with the median runs in the middle turn, the wall ratio is the two factors' product
    assert row["parallel_ratio"] == pytest.approx(
        row["parallel_cpu_ratio"] * row["anchor_parallel_cores"] / row["ours_cores"], abs=0.01)


def test_cores_come_from_the_median_wall_run_not_the_middle_cpu_turn(repo_script) -> None:
    # turn 0 is the middle turn by CPU ratio (1.42), turn 1 the stage's median run by wall (61 s)
    row = _row(repo_script, [(60.0, 102.0), (61.0, 100.0), (70.0, 130.0)])
    assert row["ours_cpu_s"] == 102.0 and row["ours_s"] == 61.0
    assert row["ours_cores"] == 1.64  # 100 / 61, not 102 / 60
    assert row["anchor_parallel_cores"] == 2.0  # 76 / 38, the median run by wall
