"""`evaluate` on a build with nothing to score (no pairs in the split, or an empty pool)
says so on stderr instead of writing a table of dashes silently."""

from __future__ import annotations

from openmsd_build.evaluate.command import empty_warning


def _result(pool: int, queries: int, without: int) -> dict:
    metrics = {"map": None, "ndcg@10": None, "queries": queries, "queries_without_relevant": without}
    return {"model": "bm25", "split": "idt", "pool": pool, "k": 10, "relations": {"dc": {"all": metrics}}}


def test_nothing_scored_warns():
    [line] = empty_warning(_result(pool=0, queries=0, without=0))
    assert line.startswith("evaluate on idt: no query has a relevant paper in the pool of 0 papers")
    assert empty_warning(_result(pool=120, queries=30, without=30))  # queries, none with a relevant paper


def test_something_scored_is_quiet():
    assert empty_warning(_result(pool=120, queries=30, without=12)) == []
