"""DC / CC / BC pairs, hard negatives and relation mixes on batches (pure polars + numpy).

Definitions (the OpenMSD paper's): DC — A cites B, directed, support 1. CC — A and B are both cited
by some C; BC — A and B both cite some C; CC and BC are unordered, written once with
`doi_a < doi_b`, and `support` = number of distinct C. Pairs are derived on the whole kept
graph (C may sit in any split) and kept only when A and B share a split; En-En pairs are
removed from ODT. `lang_class` is en-en / en-xx / xx-en / xx-xx from (lang_a, lang_b) in
the written order.

Why it is shaped this way (the published scripts emitted each pair twice, in both orders,
and enumerated with no cap; a first version of this module annotated edges by DOI strings
and spent most of its time joining and sorting strings): everything up to the very end
works on int64 paper ids (`hash64(doi)`, written by the citations stage as
`citing_id`/`cited_id` and by the split stage as `paper_id`). Edges are annotated with the
split code and an is-English flag of both ends by joins on ids; CC/BC are enumerated per C
only among members of one split (`(c, split)` groups, so a cross-split pair is never
formed), with `a < b` by id generated directly in numpy (no k² self-join and filter), and
partial supports are combined inside the shard on one packed uint64 key of dense per-shard
codes. A pair then only carries `(a, b, support)`: its split is the split of `a`. DOIs,
languages and the split come back at the end by two joins with the `(paper_id, doi, lang,
split)` names — one on the smaller id `a`, one on the larger id `b` — and the written order
is fixed then (DOI order for CC/BC, citing -> cited for DC). Files are sorted by `(a, b)`
ids: deterministic on every runner, and several times cheaper than sorting DOI strings.

Cap: a C with more than `max_degree` members (references for CC, citers for BC) is skipped
for that relation. Otherwise one paper cited 100k times yields ~5·10⁹ pair instances.

Counters (per relation `r` in cc, bc; `dc` for direct citations; `<s>` a split):

* `edges_read` = `edges_unannotated` (an end not in `splits/`, or listed there with a split
  that is none of train / idt / odt, a null one included: a hand edit; or stale inputs) +
  `edges_split_ambiguous` (an end `splits/` lists more than once: `core.split_rows`, such a
  paper is in no split) + `edges_annotated`; `papers_split_ambiguous` counts those papers,
  `papers_split_unknown` the papers listed once with a split that is none of the three;
* `dc_kept.<s>`, `dc_cross_split`, `dc_odt_en_en` — `edges_annotated` = their sum;
* `r_c_considered` (Cs with ≥ 2 members), `r_c_skipped_cap` (Cs over the cap),
  `r_instances_skipped_cap` (same-split pair instances those Cs would have emitted),
  `r_instances_cross_split` (instances never generated because A, B differ in split;
  informational), `r_instances_odt_en_en` (removed), `r_instances` (emitted instances;
  the sum of the written supports of r);
* `r_pairs.<s>` — distinct pairs written (rows of `pairs/r/split=<s>`);
* hard negatives: `neg_bridges_skipped_cap`, `neg_triples` (same-split A->B->C paths with
  A != C through bridges under the cap) = `neg_duplicate_paths` (an (A, C) already found
  through another bridge) + `neg_candidates_pruned` + `neg_cited_by_anchor` (candidates
  removed because A cites C) + `neg_over_per_anchor` + Σ `negatives.<s>` (rows written);
* mixes: `mix.<name>.<s>` (rows written), `mix_n.<r>.<s>` (distinct unordered pairs of r).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl

from openmsd_build.core.errors import short_repr
from openmsd_build.core.frames import mix64
from openmsd_build.core.hashing import hash64, paper_ids
from openmsd_build.core.layout import RELATIONS, SPLIT_NAMES, odt_en_en
from openmsd_build.core.split_rows import drop_listed_twice

SPLITS = SPLIT_NAMES
SPLIT_CODE = {name: i for i, name in enumerate(SPLITS)}
ODT = SPLIT_CODE["odt"]
ENGLISH = "en"
DEFAULT_MAX_DEGREE = 1000
NEGATIVE_SEED = "openmsd-negatives-v1"
MIX_SEED = "openmsd-mix-v1"
# Relation mixes of the OpenMSD paper: unions down-sampled to equal counts per relation
# ("+") and intersections ("&").
MIX_NAMES = ("dc+cc", "dc+bc", "cc+bc", "dc+cc+bc", "dc&cc", "dc&bc", "cc&bc", "dc&cc&bc")

ATTR_SCHEMA = {"paper_id": pl.Int64, "split": pl.Int8, "en": pl.Boolean}
NAME_SCHEMA = {"paper_id": pl.Int64, "doi": pl.String, "lang": pl.String, "split": pl.Int8}
PAIR_SCHEMA = {"a": pl.Int64, "b": pl.Int64, "support": pl.Int64}


def split_codes(splits: pl.DataFrame) -> pl.DataFrame:
    """`splits/` rows -> (doi, paper_id, split code, lang, en): the source of both lookups.
    A split that is none of `SPLITS` (a hand-edited "foo", "IDT", null) is a null code: the
    row stays, so a paper listed twice is still in no split (`core.split_rows`), and
    `listed_once` leaves it out (the paper is in no split either; its edges are unannotated).
    `replace_strict` without a default stopped the whole stage on one such row."""
    return splits.select(
        "doi",
        pl.col("paper_id").cast(pl.Int64),
        pl.col("split").replace_strict(SPLIT_CODE, default=None, return_dtype=pl.Int8).alias("split"),
        pl.col("language").fill_null("und").alias("lang"),
        (pl.col("language") == ENGLISH).fill_null(False).alias("en"),
    )


def attrs_of(lookup: pl.DataFrame) -> pl.DataFrame:
    """The id-only lookup used to annotate edges: (paper_id, split, en)."""
    return lookup.select(list(ATTR_SCHEMA))


def names_of(lookup: pl.DataFrame) -> pl.DataFrame:
    """The lookup used to turn ids back into DOIs at the end: (paper_id, doi, lang, split)."""
    return lookup.select(list(NAME_SCHEMA))


def empty(schema: dict) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def annotate_side(edges: pl.DataFrame, attrs: pl.DataFrame, side: str, twice: pl.Series) -> tuple[pl.DataFrame, int, int]:
    """Attach `{side}_split` and `{side}_en` by a join on `{side}_id`; returns the edges kept,
    the number whose `side` end is not in `splits/` and the number whose `side` end `splits/`
    lists more than once. `attrs, twice` are `listed_once(lookup)[:2]`: such a paper's edges are
    dropped before the join (`core.split_rows`): joined to both rows, each of them came out
    twice, in two splits, and its CC / BC enumeration paired the paper with itself."""
    ambiguous = 0
    if len(twice):
        hit = edges[f"{side}_id"].is_in(twice.implode())
        ambiguous = int(hit.sum())
        edges = edges.filter(~hit)
    right = attrs.select(
        pl.col("paper_id").alias(f"{side}_id"), pl.col("split").alias(f"{side}_split"), pl.col("en").alias(f"{side}_en")
    )
    joined = edges.join(right, on=f"{side}_id", how="inner")
    return joined, edges.height - joined.height, ambiguous


def listed_once(lookup: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, int]:
    """(a shard's (or the whole) lookup without the papers `splits/` lists more than once
    and without those listed once in no known split (`split_codes`), the paper ids of the
    first, the number of the second): what `annotate_side` joins with, once per lookup;
    `len` of the ids is `papers_split_ambiguous`, the number `papers_split_unknown`."""
    once, twice = drop_listed_twice(lookup, "paper_id")
    known = once.filter(pl.col("split").is_not_null())
    return known, twice, once.height - known.height


def annotate_edges(edges: pl.DataFrame, attrs: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Both ends at once (single-machine path; the pipeline does one end per shuffle)."""
    n = edges.height
    attrs, twice, unknown = listed_once(attrs)
    edges, miss_b, twice_b = annotate_side(edges, attrs, "cited", twice)
    edges, miss_a, twice_a = annotate_side(edges, attrs, "citing", twice)
    return edges, {"edges_read": n, "edges_unannotated": miss_a + miss_b, "edges_split_ambiguous": twice_a + twice_b,
                   "edges_annotated": edges.height, "papers_split_ambiguous": len(twice),
                   "papers_split_unknown": unknown}


def _odt_en_en() -> pl.Expr:
    """An annotated edge whose citing paper is in ODT and both ends English (`layout.odt_en_en`
    on split codes and English flags): no DC pair, so no triplet's positive either."""
    return odt_en_en(pl.col("citing_split"), pl.col("citing_en"), pl.col("cited_en"), odt=ODT, english=True)


def direct_pairs(annotated: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """DC pairs of annotated id edges: same split, no ODT En-En.

    Returns (a, b, support=1, fwd) with `a < b` by id (`fwd`: a is the citing paper), so
    that DC travels the same id-keyed name lookups as CC/BC; and the counts.
    """
    same = pl.col("citing_split") == pl.col("cited_split")
    en_en_odt = same & _odt_en_en()
    flags = annotated.select(same.alias("same"), en_en_odt.alias("ee"), pl.col("citing_split"))
    counts: Counter = Counter()
    counts["dc_cross_split"] = int((~flags["same"]).sum())
    counts["dc_odt_en_en"] = int(flags["ee"].sum())
    kept_mask = flags["same"] & ~flags["ee"]
    for code, c in flags.filter(kept_mask)["citing_split"].value_counts().iter_rows():
        counts[f"dc_kept.{SPLITS[code]}"] += int(c)
    kept = annotated.filter(kept_mask)
    fwd = pl.col("citing_id") < pl.col("cited_id")
    out = kept.select(
        pl.min_horizontal("citing_id", "cited_id").alias("a"),
        pl.max_horizontal("citing_id", "cited_id").alias("b"),
        pl.lit(1, dtype=pl.Int64).alias("support"),
        fwd.alias("fwd"),
    )
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


def member_columns(relation: str) -> tuple[str, ...]:
    """The annotated edge columns the enumeration of `relation` reads."""
    return {"cc": ("citing_id", "cited_id", "cited_split", "cited_en"),
            "bc": ("citing_id", "cited_id", "citing_split", "citing_en")}[relation]


def group_pairs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) row pairs with i < j inside each contiguous group [start, end).

    `starts`/`ends` give, for every row, its group's bounds. Exactly k(k-1)/2 pairs per
    group of k rows, generated with `np.repeat` (no k² join followed by a filter).
    """
    idx = np.arange(len(starts), dtype=np.int64)
    partners = ends - idx - 1
    total = int(partners.sum())
    left = np.repeat(idx, partners)
    offsets = np.cumsum(partners) - partners
    right = left + 1 + (np.arange(total, dtype=np.int64) - np.repeat(offsets, partners))
    return left, right


def enumerate_pairs(
    edges: pl.DataFrame, relation: str, max_degree: int = DEFAULT_MAX_DEGREE
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Partial supports (a, b, support) of CC or BC pairs from annotated id edges, `a < b`.

    Every C must be wholly inside `edges` (the pipeline shards by C). Edges are unique (the
    citations stage removes duplicates), so a C contributes at most once to a pair and
    `support` counts distinct Cs. A pair's split is the split of its members (equal by
    construction), so it is not carried.
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
    counts[f"{r}_instances_odt_en_en"] = 0
    counts[f"{r}_instances"] = 0
    if m.height < 2:
        return empty(PAIR_SCHEMA), dict(counts)
    # Dense per-shard member codes in id order; members sorted by (c, s, code).
    uniq, code = np.unique(m["x"].to_numpy(), return_inverse=True)
    m = m.with_columns(pl.Series("code", code.astype(np.int64))).sort("c", "s", "code")
    grp = m.select((pl.col("c").rle_id() * 4 + pl.col("s").cast(pl.Int64)).rle_id().alias("g"))["g"].to_numpy()
    bounds = np.flatnonzero(np.diff(grp)) + 1
    first = np.concatenate([[0], bounds])
    last = np.concatenate([bounds, [len(grp)]])
    size = last - first
    ends = np.repeat(last, size)
    left, right = group_pairs(np.repeat(first, size), ends)
    s = m["s"].to_numpy()
    e = m["e"].to_numpy()
    drop = odt_en_en(s[left], e[left], e[right], odt=ODT, english=True)
    counts[f"{r}_instances_odt_en_en"] = int(drop.sum())
    if drop.any():
        left, right = left[~drop], right[~drop]
    counts[f"{r}_instances"] = len(left)
    codes = m["code"].to_numpy().astype(np.uint64)
    key = codes[left] * np.uint64(len(uniq)) + codes[right]
    summed = pl.DataFrame({"k": key}).group_by("k").agg(pl.len().cast(pl.Int64).alias("support"))
    k = summed["k"].to_numpy()
    n = np.uint64(len(uniq))
    partial = pl.DataFrame(
        {"a": uniq[(k // n).astype(np.int64)], "b": uniq[(k % n).astype(np.int64)], "support": summed["support"]},
        schema=PAIR_SCHEMA,
    )
    return partial, dict(counts)


def sum_partials(partials: pl.DataFrame) -> pl.DataFrame:
    """Add up partial supports of the same pair (in the shard that owns `a`)."""
    if partials.height == 0:
        return partials
    return partials.group_by("a", "b").agg(pl.col("support").sum())


def pair_hash(a: np.ndarray, b: np.ndarray, seed: int = 0) -> np.ndarray:
    """A stable uint64 mix of two int64 ids (and a seed): shards, draws, rankings."""
    with np.errstate(over="ignore"):
        first = mix64(np.asarray(a).astype(np.uint64) ^ np.uint64(seed))
        return mix64(first ^ np.asarray(b).astype(np.uint64))


def _gather_names(ids: pl.Series, names: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    """Rows of `names` for each id, in the order of `ids` (binary search on the names
    sorted by id, then a gather: no hash join, and the row order is kept), and the mask of
    ids found."""
    if not names.height:
        return names.clear(ids.len()), np.zeros(ids.len(), dtype=bool)
    names = names.sort("paper_id")
    keys = names["paper_id"].to_numpy()
    want = ids.to_numpy()
    pos = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
    found = keys[pos] == want
    return names[pos], found


def attach_low(pairs: pl.DataFrame, names: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """doi/lang of `a` (the smaller id) and the pair's split (= the split of `a`)."""
    got, found = _gather_names(pairs["a"], names)
    joined = pairs.with_columns(got["doi"].alias("doi_lo"), got["lang"].alias("lang_lo"), got["split"])
    if not found.all():
        joined = joined.filter(pl.Series(found))
    return joined, pairs.height - joined.height


def attach_high(pairs: pl.DataFrame, names: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """doi/lang of `b` (the larger id)."""
    got, found = _gather_names(pairs["b"], names)
    joined = pairs.with_columns(got["doi"].alias("doi_hi"), got["lang"].alias("lang_hi"))
    if not found.all():
        joined = joined.filter(pl.Series(found))
    return joined, pairs.height - joined.height


def lang_class(lang_a: pl.Expr, lang_b: pl.Expr) -> pl.Expr:
    """en-en / en-xx / xx-en / xx-xx from the two languages in written order."""
    a = pl.when(lang_a == ENGLISH).then(pl.lit("en")).otherwise(pl.lit("xx"))
    b = pl.when(lang_b == ENGLISH).then(pl.lit("en")).otherwise(pl.lit("xx"))
    return (a + "-" + b).alias("lang_class")


def finalize(pairs: pl.DataFrame, relation: str) -> pl.DataFrame:
    """Pairs with both names attached -> PAIRS columns + split, in the given row order.

    CC/BC are written in DOI order (`doi_a < doi_b`); DC as citing -> cited.
    """
    lo, hi = pairs["doi_lo"], pairs["doi_hi"]
    keep = pairs["fwd"] if relation == "dc" else (lo <= hi)
    lang_lo, lang_hi = pairs["lang_lo"], pairs["lang_hi"]
    out = pl.DataFrame({
        "doi_a": lo.zip_with(keep, hi), "doi_b": hi.zip_with(keep, lo),
        "lang_a": lang_lo.zip_with(keep, lang_hi), "lang_b": lang_hi.zip_with(keep, lang_lo),
    })
    return out.with_columns(
        lang_class(pl.col("lang_a"), pl.col("lang_b")),
        pairs["support"].cast(pl.Int64).alias("support"),
        pairs["split"].cast(pl.Int8).alias("split"),
    )


def sort_pairs(pairs: pl.DataFrame, relation: str) -> pl.DataFrame:
    """The written row order: by (a, b) ids (and direction for DC)."""
    return pairs.sort("a", "b", *(["fwd"] if relation == "dc" else []))


# ---------------------------------------------------------------- relation mixes


def mix_relations(name: str) -> tuple[str, tuple[str, ...]]:
    """'dc+cc' -> ('union', ('dc', 'cc')); 'dc&cc&bc' -> ('intersection', (...))."""
    op = "&" if "&" in name else "+"
    rels = tuple(name.split(op))
    if len(rels) < 2 or len(set(rels)) != len(rels) or not set(rels) <= set(RELATIONS) or ("&" in name and "+" in name):
        raise ValueError(f"bad mix name {short_repr(name)}: relations from dc, cc, bc joined by '+' or '&'")
    return ("intersection" if op == "&" else "union"), rels


def unordered(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Relation frames with names attached -> one row per unordered pair (a < b by id):
    (a, b, split, doi_lo, doi_hi, lang_lo, lang_hi, dc, cc, bc) where dc counts the
    directions cited (0-2) and cc/bc are supports (0 when absent)."""
    parts = []
    cols = ["a", "b", "split", "doi_lo", "doi_hi", "lang_lo", "lang_hi"]
    for rel in RELATIONS:
        f = frames.get(rel)
        if f is None or not f.height:
            continue
        parts.append(f.select(*cols, *[(pl.col("support") if r == rel else pl.lit(0, pl.Int64)).alias(r)
                                       for r in RELATIONS]))
    if not parts:
        return pl.DataFrame(schema={"a": pl.Int64, "b": pl.Int64, "split": pl.Int8, "doi_lo": pl.String,
                                    "doi_hi": pl.String, "lang_lo": pl.String, "lang_hi": pl.String,
                                    **{r: pl.Int64 for r in RELATIONS}})
    allp = pl.concat(parts, how="vertical_relaxed")
    return allp.group_by("a", "b").agg(pl.col(cols[2:]).first(), *[pl.col(r).sum() for r in RELATIONS])


def mix_counts(frames: dict[str, pl.DataFrame]) -> dict[str, int]:
    """`mix_n.<r>.<s>`: distinct unordered pairs of each relation per split (frames with
    `a`, `b` and `split`); summed over the shards that own `a` they are the global counts
    the down-sampling of union mixes needs."""
    counts: Counter = Counter()
    for rel, f in frames.items():
        if f is None or not f.height:
            continue
        u = f.select("a", "b", "split").unique(subset=["a", "b"]) if rel == "dc" else f
        for code, c in u["split"].value_counts().iter_rows():
            counts[f"mix_n.{rel}.{SPLITS[code]}"] += int(c)
    return dict(counts)


def keep_draw(a: np.ndarray, b: np.ndarray, relation: str, keep: float, seed: str = MIX_SEED) -> np.ndarray:
    """Deterministic Bernoulli(keep) draw per unordered pair and relation: u < keep with
    u = hash(seed:relation, a, b) / 2**64 in [0, 1)."""
    h = pair_hash(a, b, hash64(relation, seed))
    u = (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return u < keep


def build_mix(merged: pl.DataFrame, name: str, totals: dict[str, int]) -> pl.DataFrame:
    """One mix from `unordered()` rows -> MIXES columns + split, sorted by (a, b).

    Intersection: pairs present in every relation of the mix. Union: each relation r of
    the mix is down-sampled to the size m of its smallest relation *in the same split*
    (`totals` holds `mix_n.<r>.<s>`): a pair of r is drawn with probability m / n_r by
    `keep_draw`, so every relation contributes m pairs in expectation and the smallest one
    is kept whole; the union of the draws is written (supports of all three relations are
    reported as columns, full and not down-sampled)."""
    kind, rels = mix_relations(name)
    if kind == "intersection":
        mask = pl.all_horizontal([pl.col(r) > 0 for r in rels])
        out = merged.filter(mask)
    else:
        keep = np.zeros(merged.height, dtype=bool)
        a, b = merged["a"].to_numpy(), merged["b"].to_numpy()
        split = merged["split"].to_numpy()
        for code, s in enumerate(SPLITS):
            n = {r: totals.get(f"mix_n.{r}.{s}", 0) for r in rels}
            m = min(n.values())
            for r in rels:
                if not n[r]:
                    continue
                present = (merged[r].to_numpy() > 0) & (split == code)
                keep |= present & keep_draw(a, b, r, m / n[r])
        out = merged.filter(pl.Series(keep))
    out = out.sort("a", "b")
    swap = pl.col("doi_lo") > pl.col("doi_hi")
    return out.select(
        pl.when(swap).then(pl.col("doi_hi")).otherwise(pl.col("doi_lo")).alias("doi_a"),
        pl.when(swap).then(pl.col("doi_lo")).otherwise(pl.col("doi_hi")).alias("doi_b"),
        pl.when(swap).then(pl.col("lang_hi")).otherwise(pl.col("lang_lo")).alias("lang_a"),
        pl.when(swap).then(pl.col("lang_lo")).otherwise(pl.col("lang_hi")).alias("lang_b"),
        *[pl.col(r).alias(f"support_{r}") for r in RELATIONS],
        "split",
    ).with_columns(lang_class(pl.col("lang_a"), pl.col("lang_b"))).select(
        "doi_a", "doi_b", "lang_a", "lang_b", "lang_class", *[f"support_{r}" for r in RELATIONS], "split"
    )


# ---------------------------------------------------------------- hard negatives


def negative_edges(annotated: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(into, out_of) of the hard negatives' paths A -> B -> C: `into` the same-split edges
    that may be a triplet's (anchor, positive), with the citing paper's out-degree among the
    same-split edges: (citing_id, cited_id, split, outdeg), ODT En-En edges left out (no DC
    pair, so no positive: ODT holds no En-En pair of any relation); `out_of` every same-split
    edge (citing_id, cited_id), the B -> C step to a negative. Needs all out-edges of each
    citing paper (the pipeline computes it in the shard keyed by citing id)."""
    # the out-degree counts every same-split edge of A (an En-En one too): the later "A does not
    # cite C" check may remove that many candidates, so the pruning keeps that many more
    e = annotated.filter(pl.col("citing_split") == pl.col("cited_split")).with_columns(
        pl.len().over("citing_id").cast(pl.Int64).alias("outdeg"))
    into = e.filter(~_odt_en_en()).select(
        "citing_id", "cited_id", pl.col("citing_split").alias("split"), "outdeg")
    return into, e.select("citing_id", "cited_id")


def negative_candidates(
    into: pl.DataFrame, out_of: pl.DataFrame, per_anchor: int, max_degree: int = DEFAULT_MAX_DEGREE,
    seed: str = NEGATIVE_SEED,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Paths A -> B -> C through bridges B held wholly here.

    `into`: same-split edges (citing_id=A, cited_id=B, split, outdeg of A) for every B of
    the shard; `out_of`: same-split edges (citing_id=B, cited_id=C). A bridge with more than
    `max_degree` citers or references is skipped (its fan-out is their product). Each
    candidate (A, C), A != C, gets rank `h = hash(seed, A, C)` and its positive is the
    bridge with the smallest `hash(seed, A, B)`. Per anchor only the `per_anchor +
    outdeg(A)` best-ranked candidates can survive the later "A does not cite C" check
    (which removes at most outdeg(A) of them), so the rest is pruned here.
    Returns (a, b, c, split, h, hb).
    """
    counts: Counter = Counter()
    schema = {"a": pl.Int64, "b": pl.Int64, "c": pl.Int64, "split": pl.Int8, "h": pl.UInt64, "hb": pl.UInt64}
    if not into.height or not out_of.height:
        return pl.DataFrame(schema=schema), dict(counts)
    indeg = into.group_by("cited_id").len("i")
    outdeg = out_of.group_by("citing_id").len("o")
    bridges = indeg.join(outdeg, left_on="cited_id", right_on="citing_id", how="inner")
    ok = bridges.filter((pl.col("i") <= max_degree) & (pl.col("o") <= max_degree))
    counts["neg_bridges_skipped_cap"] = bridges.height - ok.height
    first = into.join(ok.select("cited_id"), on="cited_id", how="semi")
    tri = first.join(out_of.select(pl.col("citing_id").alias("cited_id"), pl.col("cited_id").alias("c")),
                     on="cited_id", how="inner")
    tri = tri.filter(pl.col("citing_id") != pl.col("c"))
    counts["neg_triples"] = tri.height
    s = hash64("negatives", seed)
    a, b, c = tri["citing_id"].to_numpy(), tri["cited_id"].to_numpy(), tri["c"].to_numpy()
    tri = pl.DataFrame({
        "a": tri["citing_id"], "b": tri["cited_id"], "c": tri["c"], "split": tri["split"].cast(pl.Int8),
        "h": pl.Series(pair_hash(a, c, s), dtype=pl.UInt64), "hb": pl.Series(pair_hash(a, b, s), dtype=pl.UInt64),
        "outdeg": tri["outdeg"],
    })
    paths = tri.height
    tri = tri.sort("a", "h", "c", "hb", "b").unique(subset=["a", "c"], keep="first", maintain_order=True)
    counts["neg_duplicate_paths"] = paths - tri.height  # one (A, C) through several bridges
    kept = tri.filter(pl.int_range(pl.len()).over("a") < per_anchor + pl.col("outdeg"))
    counts["neg_candidates_pruned"] = tri.height - kept.height
    return kept.select(list(schema)), dict(counts)


def select_negatives(
    candidates: pl.DataFrame, anchor_edges: pl.DataFrame, per_anchor: int
) -> tuple[pl.DataFrame, dict[str, int]]:
    """In the shard of anchor A: drop candidates C that A cites (`anchor_edges` holds A's
    out-edges, any split), keep the `per_anchor` best-ranked per A. Returns (a, b, c, split)
    sorted by (a, h, c)."""
    counts: Counter = Counter()
    cand = candidates.sort("a", "h", "c", "hb", "b").unique(subset=["a", "c"], keep="first", maintain_order=True)
    counts["neg_duplicate_paths"] = candidates.height - cand.height  # the same (A, C) from two shards
    cited = anchor_edges.select(pl.col("citing_id").alias("a"), pl.col("cited_id").alias("c"))
    kept = cand.join(cited, on=["a", "c"], how="anti", maintain_order="left")
    counts["neg_cited_by_anchor"] = cand.height - kept.height
    capped = kept.filter(pl.int_range(pl.len()).over("a") < per_anchor)
    counts["neg_over_per_anchor"] = kept.height - capped.height
    return capped.select("a", "b", "c", "split"), dict(counts)


def attach_name(frame: pl.DataFrame, names: pl.DataFrame, key: str, prefix: str) -> tuple[pl.DataFrame, int]:
    """Attach `{prefix}_doi` and `lang_{prefix}` for the id column `key`."""
    right = names.select(pl.col("paper_id").alias(key), pl.col("doi").alias(f"{prefix}_doi"),
                         pl.col("lang").alias(f"lang_{prefix}"))
    joined = frame.join(right, on=key, how="inner")
    return joined, frame.height - joined.height


def finalize_negatives(frame: pl.DataFrame) -> pl.DataFrame:
    """(a, b, c, split, names of the three) -> NEGATIVES columns + split, sorted by (a, c)."""
    return frame.sort("a", "c").select(
        "anchor_doi", "positive_doi", "negative_doi", "lang_anchor", "lang_positive", "lang_negative", "split"
    )


def hard_negatives(
    annotated: pl.DataFrame, names: pl.DataFrame, per_anchor: int = 5, max_degree: int = DEFAULT_MAX_DEGREE,
    seed: str = NEGATIVE_SEED,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Specter-style triples (anchor A, positive B, negative C) on one machine: A cites B,
    B cites C, A does not cite C, A != C, all three in one split, (A, B) a DC pair (in ODT
    not both English); at most `per_anchor` per
    A, chosen by the seeded hash rank of (A, C). The same functions the pipeline runs per
    shard (`negative_edges`, `negative_candidates`, `select_negatives`)."""
    into, out_of = negative_edges(annotated)
    cand, counts = negative_candidates(into, out_of, per_anchor, max_degree, seed)
    counts = Counter(counts)
    chosen, c = select_negatives(cand, annotated.select("citing_id", "cited_id"), per_anchor)
    counts.update(c)
    for key, prefix in (("a", "anchor"), ("b", "positive"), ("c", "negative")):
        chosen, _ = attach_name(chosen, names, key, prefix)
    out = finalize_negatives(chosen)
    for code, n in out["split"].value_counts().iter_rows():
        counts[f"negatives.{SPLITS[code]}"] += int(n)
    return out, dict(counts)


# ---------------------------------------------------------------- the whole stage, one machine


def ensure_ids(citations: pl.DataFrame) -> pl.DataFrame:
    """(citing_id, cited_id) of citation rows; computed from the DOIs for a `citations/`
    written before the id columns existed (slow: one hash per row), or holding null ids
    beside its DOIs (parts of two builds read together). Null ids without the DOIs (the stage
    reads only the id columns of a current `citations/`: a hand edit) stay null: such an
    edge joins no paper and is counted as `edges_unannotated`. They were taken for an old
    folder, and the DOI columns the stage had not read stopped it (`ColumnNotFoundError`)."""
    if "citing_id" in citations.columns and "cited_id" in citations.columns:
        complete = citations["citing_id"].null_count() == 0 and citations["cited_id"].null_count() == 0
        if complete or "citing_doi" not in citations.columns or "cited_doi" not in citations.columns:
            return citations.select(pl.col("citing_id").cast(pl.Int64), pl.col("cited_id").cast(pl.Int64))
    return pl.DataFrame({
        "citing_id": paper_ids(citations["citing_doi"].to_list()),
        "cited_id": paper_ids(citations["cited_doi"].to_list()),
    }, schema={"citing_id": pl.Int64, "cited_id": pl.Int64})


def compute_pairs(
    citations: pl.DataFrame, splits: pl.DataFrame, max_degree: int = DEFAULT_MAX_DEGREE,
    negatives: int = 0, mixes: tuple[str, ...] = (),
) -> tuple[dict[tuple[str, str], pl.DataFrame], dict[str, int]]:
    """The whole stage on one machine (tests, small builds, the bench's function timing):
    {(relation, split): PAIRS frame} (plus ("negatives", split) and ("mix/<name>", split)
    when asked) and the counts. Every frame is sorted by (a, b) paper ids, as the
    pipeline's part files are. Uses the functions the Beam pipeline runs per shard,
    without the sharding."""
    lookup = split_codes(splits)
    attrs, names = attrs_of(lookup), names_of(drop_listed_twice(lookup, "paper_id")[0])
    annotated, counts = annotate_edges(ensure_ids(citations), attrs)
    counts = Counter(counts)
    dc, c = direct_pairs(annotated)
    counts.update(c)
    frames = {"dc": dc}
    for rel in ("cc", "bc"):
        # one shard holds every C here, so enumerate_pairs' in-shard sum is already final
        frames[rel], c = enumerate_pairs(annotated.select(member_columns(rel)), rel, max_degree)
        counts.update(c)
    named = {}
    for rel, f in frames.items():
        f, _ = attach_low(sort_pairs(f, rel), names)
        f, _ = attach_high(f, names)
        named[rel] = f
    out: dict[tuple[str, str], pl.DataFrame] = {}
    for rel, f in named.items():
        final = finalize(f, rel)
        for code, name in enumerate(SPLITS):
            part = final.filter(pl.col("split") == code).drop("split")
            out[(rel, name)] = part
            if rel != "dc":
                counts[f"{rel}_pairs.{name}"] = part.height
    if mixes:
        counts.update(mix_counts(named))
        merged = unordered(named)
        for name in mixes:
            mix = build_mix(merged, name, counts)
            for code, s in enumerate(SPLITS):
                out[(f"mix/{name}", s)] = mix.filter(pl.col("split") == code).drop("split")
                counts[f"mix.{name}.{s}"] = out[(f"mix/{name}", s)].height
    if negatives:
        neg, c = hard_negatives(annotated, names, negatives, max_degree)
        counts.update(c)
        for code, s in enumerate(SPLITS):
            out[("negatives", s)] = neg.filter(pl.col("split") == code).drop("split")
    return out, dict(counts)
