"""DC / CC / BC pair enumeration and aggregation on batches with polars (pure functions).

Definitions (DESIGN.md): DC — A cites B, directed, support 1. CC — A and B are both cited
by some C; BC — A and B both cite some C; CC and BC are unordered, written once with
`doi_a < doi_b`, and `support` = number of distinct C. Pairs are derived on the whole kept
graph (C may sit in any split) and kept only when A and B share a split; En-En pairs are
removed from ODT. `lang_class` is en-en / en-xx / xx-en / xx-xx from (lang_a, lang_b) in
the written order.

Why it is shaped this way (the published scripts emitted each pair twice, in both orders,
and enumerated with no cap): edges carry int64 paper ids, the split code and an is-English
flag of both ends *before* enumeration, so a self-join per C on (C, split) never produces a
cross-split pair; pairs are generated once with `a < b` by id, partial supports are summed
inside the shard (combiner-style), re-sharded by a hash of the pair (never of A alone, so a
hub paper does not make a hot key) and summed again; DOIs come back at the very end by a
partitioned lookup and the id order is turned into DOI order then.

Cap: a C with more than `max_degree` members (references for CC, citers for BC) is skipped
for that relation. Otherwise one paper cited 100k times yields ~5·10⁹ pair instances.

Counters (per relation `r` in cc, bc; `dc` for direct citations; `<s>` a split):

* `edges_read`, `edges_unannotated` (an end not in `splits/`; stale inputs), `edges_annotated`;
* `dc_kept.<s>`, `dc_cross_split`, `dc_odt_en_en` — `edges_annotated` = their sum;
* `r_c_considered` (Cs with ≥ 2 members), `r_c_skipped_cap` (Cs over the cap),
  `r_instances_skipped_cap` (same-split pair instances those Cs would have emitted),
  `r_instances_cross_split` (instances never generated because A, B differ in split;
  informational), `r_instances_odt_en_en` (removed), `r_instances` (emitted instances;
  the sum of the written supports of r);
* `r_pairs.<s>` — distinct pairs written (rows of `pairs/r/split=<s>`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl

from openmsd_build.citation_graph import mix64

SPLITS = ("train", "idt", "odt")
SPLIT_CODE = {name: i for i, name in enumerate(SPLITS)}
ODT = SPLIT_CODE["odt"]
ENGLISH = "en"
DEFAULT_MAX_DEGREE = 1000

# Columns of the id-only annotated edges the CC/BC enumeration consumes.
EDGE_COLUMNS = ("citing_id", "cited_id", "citing_split", "cited_split", "citing_en", "cited_en")
PARTIAL_COLUMNS = ("a", "b", "split", "support")


def split_codes(splits: pl.DataFrame) -> pl.DataFrame:
    """`splits/` rows -> the lookup used to annotate edges (doi, id, split code, lang, is_en)."""
    return splits.select(
        "doi",
        pl.col("paper_id").cast(pl.Int64),
        pl.col("split").replace_strict(SPLIT_CODE, return_dtype=pl.Int8).alias("split"),
        pl.col("language").fill_null("und").alias("lang"),
        (pl.col("language") == ENGLISH).fill_null(False).alias("en"),
    )


def annotate_side(edges: pl.DataFrame, lookup: pl.DataFrame, side: str) -> tuple[pl.DataFrame, int]:
    """Attach `{side}_id/_split/_lang/_en` by DOI; returns the edges kept and the number
    whose `side` end is missing from the lookup."""
    renamed = lookup.rename({c: f"{side}_{c}" for c in ("paper_id", "split", "lang", "en")})
    renamed = renamed.rename({f"{side}_paper_id": f"{side}_id"})
    joined = edges.join(renamed, left_on=f"{side}_doi", right_on="doi", how="inner")
    return joined, edges.height - joined.height


def annotate_edges(edges: pl.DataFrame, lookup: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Both sides at once (single-machine path; the pipeline does one side per shuffle)."""
    n = edges.height
    edges, miss_a = annotate_side(edges, lookup, "citing")
    edges, miss_b = annotate_side(edges, lookup, "cited")
    return edges, {"edges_read": n, "edges_unannotated": miss_a + miss_b, "edges_annotated": edges.height}


def direct_pairs(annotated: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """DC pairs (citing -> cited) of annotated edges with DOIs: same split, no ODT En-En.

    Returns (doi_a, doi_b, lang_a, lang_b, split, support=1) and counts.
    """
    same = pl.col("citing_split") == pl.col("cited_split")
    en_en_odt = same & (pl.col("citing_split") == ODT) & pl.col("citing_en") & pl.col("cited_en")
    kept = annotated.filter(same & ~en_en_odt)
    counts: Counter = Counter()
    counts["dc_cross_split"] = int((~annotated.select(same).to_series()).sum())
    counts["dc_odt_en_en"] = int(annotated.select(en_en_odt).to_series().sum())
    out = kept.select(
        pl.col("citing_doi").alias("doi_a"),
        pl.col("cited_doi").alias("doi_b"),
        pl.col("citing_lang").alias("lang_a"),
        pl.col("cited_lang").alias("lang_b"),
        pl.col("citing_split").alias("split"),
        pl.lit(1, dtype=pl.Int64).alias("support"),
    )
    for code, c in out["split"].value_counts().iter_rows():
        counts[f"dc_kept.{SPLITS[code]}"] += int(c)
    return out, dict(counts)


def _members(edges: pl.DataFrame, relation: str) -> pl.DataFrame:
    """(c, x, s, e): the C key and one member with its split code and is-English flag."""
    if relation == "cc":  # A, B both cited by C: C is the citing paper, members its references
        return edges.select(
            pl.col("citing_id").alias("c"), pl.col("cited_id").alias("x"),
            pl.col("cited_split").alias("s"), pl.col("cited_en").alias("e"),
        )
    if relation == "bc":  # A, B both cite C: C is the cited paper, members its citers
        return edges.select(
            pl.col("cited_id").alias("c"), pl.col("citing_id").alias("x"),
            pl.col("citing_split").alias("s"), pl.col("citing_en").alias("e"),
        )
    raise ValueError(f"unknown relation {relation!r}")


def c_key(relation: str) -> str:
    """The edge column whose value is C for `relation` (the shuffle key of the enumeration)."""
    return {"cc": "citing_id", "bc": "cited_id"}[relation]


def enumerate_pairs(
    edges: pl.DataFrame, relation: str, max_degree: int = DEFAULT_MAX_DEGREE
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Partial supports (a, b, split, support) of CC or BC pairs from annotated id edges.

    Every C must be wholly inside `edges` (the pipeline shards by C). Edges are assumed
    unique (the citations stage removes duplicates), so a C contributes at most once to a
    pair and `support` counts distinct Cs. Pairs have `a < b` by paper id.
    """
    r = relation
    m = _members(edges, relation)
    counts: Counter = Counter()
    per_cs = m.group_by("c", "s").agg(pl.len().cast(pl.Int64).alias("k"))
    per_c = per_cs.group_by("c").agg(
        pl.col("k").sum().alias("d"), ((pl.col("k") * (pl.col("k") - 1)) // 2).sum().alias("same")
    )
    per_c = per_c.filter(pl.col("d") >= 2)
    over = per_c.filter(pl.col("d") > max_degree)
    counts[f"{r}_c_considered"] = per_c.height
    counts[f"{r}_c_skipped_cap"] = over.height
    counts[f"{r}_instances_skipped_cap"] = int(over["same"].sum() or 0)
    ok = per_c.filter(pl.col("d") <= max_degree)
    counts[f"{r}_instances_cross_split"] = int(
        ok.select(((pl.col("d") * (pl.col("d") - 1)) // 2 - pl.col("same")).sum()).item() or 0
    )
    m = m.join(ok.filter(pl.col("same") > 0).select("c"), on="c", how="semi")
    pairs = m.join(m, on=["c", "s"], suffix="_b").filter(pl.col("x") < pl.col("x_b"))
    en_en_odt = (pl.col("s") == ODT) & pl.col("e") & pl.col("e_b")
    n_all = pairs.height
    pairs = pairs.filter(~en_en_odt)
    counts[f"{r}_instances_odt_en_en"] = n_all - pairs.height
    counts[f"{r}_instances"] = pairs.height
    partial = pairs.group_by("x", "x_b", "s").agg(pl.len().cast(pl.Int64).alias("support"))
    partial = partial.select(pl.col("x").alias("a"), pl.col("x_b").alias("b"), pl.col("s").alias("split"), "support")
    return partial, dict(counts)


def sum_partials(partials: pl.DataFrame) -> pl.DataFrame:
    """Add up partial supports of the same pair (after the re-shard by pair hash)."""
    if partials.height == 0:
        return partials
    return partials.group_by("a", "b", "split").agg(pl.col("support").sum())


def pair_shards(a: np.ndarray, b: np.ndarray, num_shards: int) -> np.ndarray:
    """Shard of each (a, b) pair: a stable mix of both ids, so a hub A spreads over shards."""
    with np.errstate(over="ignore"):
        h = mix64(mix64(np.asarray(a)) ^ np.asarray(b).astype(np.uint64))
    return (h % np.uint64(num_shards)).astype(np.int64)


def attach_dois(pairs: pl.DataFrame, lookup: pl.DataFrame, side: str) -> tuple[pl.DataFrame, int]:
    """Map `side` ('a' or 'b') ids back to doi/lang by a join with (paper_id, doi, lang)."""
    names = {"paper_id": side, "doi": f"doi_{side}", "lang": f"lang_{side}"}
    right = lookup.select("paper_id", "doi", "lang").rename(names)
    joined = pairs.join(right, on=side, how="inner")
    return joined, pairs.height - joined.height


def lang_class(lang_a: pl.Expr, lang_b: pl.Expr) -> pl.Expr:
    """en-en / en-xx / xx-en / xx-xx from the two languages in written order."""
    a = pl.when(lang_a == ENGLISH).then(pl.lit("en")).otherwise(pl.lit("xx"))
    b = pl.when(lang_b == ENGLISH).then(pl.lit("en")).otherwise(pl.lit("xx"))
    return (a + "-" + b).alias("lang_class")


def finalize(pairs: pl.DataFrame, unordered: bool) -> pl.DataFrame:
    """(doi_a, doi_b, lang_a, lang_b, split, support) -> PAIRS columns + split, with CC/BC
    put into `doi_a < doi_b` order (languages swapped along)."""
    if unordered:
        swap = pl.col("doi_a") > pl.col("doi_b")
        pairs = pairs.with_columns(
            pl.when(swap).then(pl.col("doi_b")).otherwise(pl.col("doi_a")).alias("doi_a"),
            pl.when(swap).then(pl.col("doi_a")).otherwise(pl.col("doi_b")).alias("doi_b"),
            pl.when(swap).then(pl.col("lang_b")).otherwise(pl.col("lang_a")).alias("lang_a"),
            pl.when(swap).then(pl.col("lang_a")).otherwise(pl.col("lang_b")).alias("lang_b"),
        )
    return pairs.select(
        "doi_a", "doi_b", "lang_a", "lang_b", lang_class(pl.col("lang_a"), pl.col("lang_b")),
        pl.col("support").cast(pl.Int64), pl.col("split").cast(pl.Int8),
    )


def compute_pairs(
    citations: pl.DataFrame, splits: pl.DataFrame, max_degree: int = DEFAULT_MAX_DEGREE
) -> tuple[dict[tuple[str, str], pl.DataFrame], dict[str, int]]:
    """The whole stage on one machine (tests, small builds, the bench's function timing):
    {(relation, split): PAIRS frame} and the counts. DC is sorted by (doi_a, doi_b); CC and
    BC by paper ids (deterministic, and far cheaper than sorting millions of DOI strings).

    Uses exactly the functions the Beam pipeline runs per shard, without the sharding.
    """
    lookup = split_codes(splits)
    annotated, counts = annotate_edges(citations.select("citing_doi", "cited_doi"), lookup)
    counts = Counter(counts)
    dc, c = direct_pairs(annotated)
    counts.update(c)
    frames = {"dc": finalize(dc, unordered=False)}
    ids = lookup.select("paper_id", "doi", "lang")
    for rel in ("cc", "bc"):
        partial, c = enumerate_pairs(annotated.select(EDGE_COLUMNS), rel, max_degree)
        counts.update(c)
        pairs = sum_partials(partial)
        pairs, _ = attach_dois(pairs, ids, "a")
        pairs, _ = attach_dois(pairs, ids, "b")
        frames[rel] = finalize(pairs.sort("a", "b"), unordered=True)
    out: dict[tuple[str, str], pl.DataFrame] = {}
    for rel, frame in frames.items():
        for code, name in enumerate(SPLITS):
            part = frame.filter(pl.col("split") == code).drop("split")
            out[(rel, name)] = part.sort("doi_a", "doi_b") if rel == "dc" else part
            if rel != "dc":
                counts[f"{rel}_pairs.{name}"] = part.height
    return out, dict(counts)


def hard_negatives(annotated: pl.DataFrame, per_anchor: int = 5, max_degree: int = DEFAULT_MAX_DEGREE) -> pl.DataFrame:
    """Specter-style triples (anchor A, positive B, negative C): A cites B, B cites C, A
    does not cite C, A != C, all three in one split. At most `per_anchor` triples per A,
    chosen by a stable hash of (A, C) so the choice does not depend on input order; a B
    with more than `max_degree` citers or references is not used as a bridge (the
    fan-out is their product).

    `annotated` needs citing/cited DOIs, ids and split codes. Returns (anchor_doi,
    positive_doi, negative_doi, split code) sorted by anchor, negative.
    """
    e = annotated.select("citing_id", "cited_id", "citing_doi", "cited_doi", "citing_split", "cited_split")
    e = e.filter(pl.col("citing_split") == pl.col("cited_split"))
    indeg = e.group_by("cited_id").len("i")
    outdeg = e.group_by("citing_id").len("o")
    bridges = indeg.join(outdeg, left_on="cited_id", right_on="citing_id").filter(
        (pl.col("i") <= max_degree) & (pl.col("o") <= max_degree)
    )
    first = e.join(bridges.select("cited_id"), on="cited_id", how="semi")
    second = e.rename({c: c + "_2" for c in e.columns})
    tri = first.join(second, left_on="cited_id", right_on="citing_id_2", how="inner")
    tri = tri.filter(pl.col("citing_id") != pl.col("cited_id_2"))
    tri = tri.join(
        e.select("citing_id", "cited_id"), left_on=["citing_id", "cited_id_2"], right_on=["citing_id", "cited_id"],
        how="anti",
    )
    tri = tri.select(
        pl.col("citing_id").alias("a"), pl.col("cited_id_2").alias("c"),
        pl.col("citing_doi").alias("anchor_doi"), pl.col("cited_doi").alias("positive_doi"),
        pl.col("cited_doi_2").alias("negative_doi"), pl.col("citing_split").alias("split"),
    ).sort("a", "c", "positive_doi").unique(subset=["a", "c"], keep="first", maintain_order=True)
    if tri.height == 0:
        return tri.drop("a", "c")
    rank = pl.Series("h", pair_shards(tri["a"].to_numpy(), tri["c"].to_numpy(), 1 << 62))
    tri = tri.with_columns(rank).sort("a", "h", "negative_doi")
    tri = tri.filter(pl.int_range(pl.len()).over("a") < per_anchor)
    return tri.select("anchor_doi", "positive_doi", "negative_doi", "split").sort("anchor_doi", "negative_doi")
