"""`core.split_rows`: the one rule for a paper `splits/` lists more than once (in no split)."""

from __future__ import annotations

import polars as pl

from openmsd_build.core.split_rows import drop_listed_twice, listed_twice, scan_listed_once, scan_listed_twice

ROWS = pl.DataFrame({"doi": ["a", "b", "b", "c", "d", "d"], "split": ["train", "train", "idt", "odt", "idt", "idt"],
                     "language": ["en", "en", "en", "de", "fr", "fr"]})


def test_a_paper_in_two_splits_or_twice_in_one_is_listed_twice() -> None:
    assert listed_twice(ROWS).to_list() == ["b", "d"]
    kept, twice = drop_listed_twice(ROWS)
    assert kept["doi"].to_list() == ["a", "c"] and twice.to_list() == ["b", "d"]
    # rows in = rows kept + rows of the papers dropped
    assert ROWS.height == kept.height + ROWS.filter(pl.col("doi").is_in(twice.implode())).height


def test_a_folder_of_single_rows_is_kept_whole() -> None:
    once = ROWS.filter(pl.col("doi").is_in(["a", "c"]))
    kept, twice = drop_listed_twice(once)
    assert kept.equals(once) and twice.is_empty()


def test_the_lazy_reader_applies_the_same_rule() -> None:
    """evaluate and export scan splits/ and filter one split: a paper in train and IDT was in
    both pools (and a row repeated in one split was collapsed to one, silently)."""
    lazy = scan_listed_once(ROWS.lazy()).collect()
    assert lazy.sort("doi").equals(drop_listed_twice(ROWS)[0].sort("doi"))
    assert lazy.filter(pl.col("split") == "idt").height == 0
    assert scan_listed_twice(ROWS.lazy()).collect()["doi"].to_list() == listed_twice(ROWS).to_list()


def test_a_null_key_names_no_paper():
    """Two rows with a null DOI are not one paper listed twice, and a null row puts no paper
    in a split."""
    frame = pl.DataFrame({"doi": [None, None, "10.1/a", "10.1/b", "10.1/b"], "split": ["train", "idt", "train",
                                                                                  "train", "idt"]})
    assert listed_twice(frame).to_list() == ["10.1/b"]
    kept, twice = drop_listed_twice(frame)
    assert kept["doi"].to_list() == ["10.1/a"] and twice.to_list() == ["10.1/b"]
    kept, twice = drop_listed_twice(frame.filter(pl.col("doi") != "10.1/b").vstack(frame.head(1)))
    assert kept["doi"].to_list() == ["10.1/a"] and twice.is_empty()
    assert scan_listed_twice(frame.lazy()).collect()["doi"].to_list() == ["10.1/b"]
    assert scan_listed_once(frame.lazy()).collect()["doi"].to_list() == ["10.1/a"]
