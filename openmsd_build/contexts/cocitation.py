"""`pairs/ccs/`: papers co-cited in one sentence (pure polars).

A pair (A, B), `doi_a < doi_b`, is written once per split; `support` = the number of distinct
sentences (citing paper, sentence position) that cite both. As for the pairs stage's CC, pairs
are kept only when A and B sit in the same split of `splits/` (the citing paper may be in any
split, or none), and En-En pairs are removed from ODT; `lang_a` / `lang_b` are the papers'
languages from `splits/`, `lang_class` en-en / en-xx / xx-en / xx-xx in written order.

Counted in *instances* (one per sentence and pair; a pair's support is its instances):
`ccs_instances = ccs_instances_missing_end + ccs_instances_split_ambiguous (an end `splits/`
lists twice) + ccs_instances_cross_split + ccs_instances_odt_en_en + ccs_instances_kept`, and `ccs_instances_kept` is the sum of the
written supports; `ccs_pairs.<split>` rows are written per split.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from openmsd_build.core.layout import odt_en_en
from openmsd_build.core.split_rows import drop_listed_twice

SPLITS = ("train", "idt", "odt")
PAIR_SCHEMA = {"doi_a": pl.String, "doi_b": pl.String, "support": pl.Int64}
NAME_SCHEMA = {"doi": pl.String, "split": pl.String, "lang": pl.String}


def partial_supports(pairs: Mapping[tuple[str, str], int] | pl.DataFrame) -> pl.DataFrame:
    """Instances -> (doi_a, doi_b, support) summed; accepts `(doi_a, doi_b) -> sentences` or
    partial sums."""
    if isinstance(pairs, Mapping):
        frame = pl.DataFrame({"doi_a": [a for a, _ in pairs], "doi_b": [b for _, b in pairs],
                              "support": list(pairs.values())}, schema=PAIR_SCHEMA)
    else:
        frame = pairs
    if frame.height == 0:
        return pl.DataFrame(schema=PAIR_SCHEMA)
    return frame.group_by("doi_a", "doi_b").agg(pl.col("support").sum()).select(list(PAIR_SCHEMA))


def names_of(splits: pl.DataFrame) -> pl.DataFrame:
    """`splits/` rows -> (doi, split, lang) lookup rows."""
    return splits.select("doi", "split", pl.col("language").fill_null("und").alias("lang"))


def attach(pairs: pl.DataFrame, names: pl.DataFrame, side: str) -> tuple[pl.DataFrame, int, int]:
    """(pairs with `split_<side>` / `lang_<side>` of the `doi_<side>` end, instances of the pairs
    whose end is not in `splits/`, instances of those whose end `splits/` lists more than once).
    Both kinds are dropped. Why the second: a splits/ folder mixing two builds' files lists a
    paper in two splits, and each of its pairs was joined to both rows, written in both splits
    and counted twice (681 instances accounted for 436 found)."""
    names, twice = drop_listed_twice(names, "doi")  # the rule every reader of splits/ applies
    ambiguous = pairs[f"doi_{side}"].is_in(twice.implode())
    lost = int(pairs.filter(ambiguous)["support"].sum() or 0)
    named = names.rename(
        {"doi": f"doi_{side}", "split": f"split_{side}", "lang": f"lang_{side}"})
    joined = pairs.filter(~ambiguous).join(named, on=f"doi_{side}", how="left")
    missing = joined[f"split_{side}"].is_null()
    return joined.filter(~missing), int(joined.filter(missing)["support"].sum() or 0), lost


def finalize(pairs: pl.DataFrame) -> tuple[dict[str, pl.DataFrame], dict[str, int]]:
    """Both ends named -> the PAIRS rows of each split (sorted) and the drop counts."""
    same = pairs["split_a"] == pairs["split_b"]
    en_en_odt = same & odt_en_en(pairs["split_a"], pairs["lang_a"], pairs["lang_b"]).fill_null(False)
    kept = pairs.filter(same & ~en_en_odt)
    counts = {
        "ccs_instances_cross_split": int(pairs.filter(~same)["support"].sum() or 0),
        "ccs_instances_odt_en_en": int(pairs.filter(en_en_odt)["support"].sum() or 0),
        "ccs_instances_kept": int(kept["support"].sum() or 0),
    }
    en_a = pl.when(pl.col("lang_a") == "en").then(pl.lit("en")).otherwise(pl.lit("xx"))
    en_b = pl.when(pl.col("lang_b") == "en").then(pl.lit("en")).otherwise(pl.lit("xx"))
    rows = kept.with_columns((en_a + "-" + en_b).alias("lang_class"))
    out = {}
    for split in SPLITS:
        part = rows.filter(pl.col("split_a") == split).sort("doi_a", "doi_b")
        out[split] = part.select("doi_a", "doi_b", "lang_a", "lang_b", "lang_class", "support")
        counts[f"ccs_pairs.{split}"] = part.height
    return out, counts
