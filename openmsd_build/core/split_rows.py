"""The one rule for a paper that `splits/` lists more than once, for every reader of `splits/`.

The split stage writes exactly one row per paper. A folder with a second row for a paper
(two builds' part files mixed, a hand edit, a copy left behind) cannot say which split the
paper is in, and every reader that joins on the DOI or paper id used to take both rows: the
pairs stage annotated each of the paper's citation edges twice, wrote DC pairs into a split
one end is not in, CC / BC "pairs" of a paper with itself and counts that no longer
reconciled (`edges_unannotated` went negative); contexts wrote its CCS pairs in both splits;
evaluate and export put the paper in both splits' pools. The rule, the same everywhere: such
a paper is in no split. Its rows are dropped before any join, its pairs are never formed,
and the stages that count say how many (pairs: `papers_split_ambiguous`,
`edges_split_ambiguous`; contexts: `ccs_instances_split_ambiguous`) and warn.

Pure polars, eager for the Beam stages (they see one shard's lookup rows, and a paper's rows
all fall in its shard because the shard key is the paper's), lazy for the readers that scan
the whole folder.
"""

from __future__ import annotations

import polars as pl


def listed_twice(frame: pl.DataFrame, key: str = "doi") -> pl.Series:
    """The distinct values of `key` that `frame` holds on more than one row (in two splits,
    or twice in one: either way not one build's single row), sorted. A null key names no
    paper: it is never one of them (two null rows are not a paper listed twice)."""
    return frame.filter(pl.col(key).is_not_null() & pl.col(key).is_duplicated())[key].unique().sort()


def drop_listed_twice(frame: pl.DataFrame, key: str = "doi") -> tuple[pl.DataFrame, pl.Series]:
    """(`frame` without any row of a paper listed more than once, nor any row whose key is
    null (it names no paper, so it puts none in a split), those papers' keys)."""
    twice = listed_twice(frame, key)
    if twice.is_empty():
        return (frame.drop_nulls(key) if frame[key].null_count() else frame), twice
    return frame.filter(pl.col(key).is_not_null() & ~pl.col(key).is_in(twice.implode())), twice


def scan_listed_twice(rows: pl.LazyFrame, key: str = "doi") -> pl.LazyFrame:
    """The distinct values of `key` that `rows` (a scan of `splits/`) holds on more than one
    row, sorted: `listed_twice` for a reader of the whole folder (the report shows how many,
    and which)."""
    return (rows.filter(pl.col(key).is_not_null()).group_by(key).agg(pl.len().alias("_rows"))
            .filter(pl.col("_rows") > 1).select(key).sort(key))


def scan_listed_once(rows: pl.LazyFrame, key: str = "doi") -> pl.LazyFrame:
    """`rows` (a scan of `splits/`) restricted to the papers listed exactly once: a paper with
    two rows is in no split's pool, as the pairs stage gives it no pair in any split (a row
    whose key is null joins nothing here, so it is left out too)."""
    once = rows.group_by(key).agg(pl.len().alias("_rows")).filter(pl.col("_rows") == 1).select(key)
    return rows.join(once, on=key, how="semi")
