"""Train / IDT / ODT assignment (definitions as in the OpenMSD paper): pure polars + numpy.

The rule, exactly:

1. Only papers with at least one kept citation link take part (the rest are counted as
   `no_link` by the stage).
2. Groups: versions of one work (Crossref relations between DOIs, e.g. is-preprint-of,
   is-version-of, in either direction, also through a related DOI that is not itself
   linked) and papers with identical normalized title + abstract (lower-cased, whitespace
   collapsed, both non-empty) are merged into connected components. A group's key is its
   smallest linked DOI; every paper of a group gets the group's split.
3. Languages are counted over linked papers. The top-K (default 30) languages by paper
   count (ties by code) form the pool; `und` (undetected) and null never rank.
4. A group whose members are all in top-K languages is a *pool* group; any other group
   (some member in another language or `und`) goes to ODT (`odt_other_language`).
5. Each pool group draws `u = unit_interval(group key, seed)`. IDT = pool groups with
   `u < idt_fraction`; if that gives fewer than `min(min_idt_groups, pool groups // 10)`
   groups (small builds), IDT is instead that many pool groups with the smallest `u`.
   Why 200 by default: a pair is in IDT only when *both* papers are, so an IDT holding a
   fraction f of the papers holds about f² of the pairs. With the published fraction
   (247/53000 ≈ 0.47%) a 2,000-paper demo gets ~10 IDT papers and essentially no IDT
   pairs; 200 groups capped at a tenth of the pool gives a demo an IDT of ~10% of its
   papers and ~1% of its pairs (hundreds of rows in Table 3). A full build is unaffected:
   247/53000 of 53M papers is ~247K groups ≫ 200, so the threshold decides. Because the
   draw is per group, IDT holds the same language set as train.
6. Non-English pool groups (at least one member not `en`) not in IDT with
   `u < idt_fraction + odt_fraction` are held back to ODT (`odt_held_back`); when rule 5's
   minimum decided IDT, the band is `u < u(last IDT group) + odt_fraction` instead, so the
   larger IDT of a small build does not swallow the held-back groups. English-only
   groups are never held back by the draw.
7. An English-only pool group not in IDT moves to ODT (`odt_english_linked`) when one of its
   papers cites or is cited by a non-English paper that is in ODT after steps 4–6; this
   is one pass (English papers never pull other English papers in). Otherwise it is train.

Deterministic: only sorted DOIs, counts with code tie-breaks and `unit_interval` draws are
used, so the result is independent of input order and of the runner.

Memory: `assign_splits` is the single-machine reference (tests and small builds); it holds
one row per linked paper (≈ 80–100 B with Arrow overhead, ≈ 5 GB at 53M papers, ≈ 10 GB peak
with polars temporaries). The stage does not run it: it runs the same rule as the
partitioned steps of `split.partitioned` (tests/split/ checks they are equal), where a
worker holds one shard of papers or of groups (total / `--shards`, every shuffle spilled to
files by `split.spill`) plus three small global pieces: the per-language counts (~100
entries), rule 5's summary (≤ `min_idt_groups` draws) and the component step, which holds
the group edges only — relation links and duplicate title+abstract links, ≈ 150 B each with
temporaries — not the papers without them (at a few % of 53M papers grouped, a few hundred
MB). If that edge set ever outgrows a worker, the component step is where a partitioned
min-label propagation would go.

Counters: `papers_linked`, `groups`, `groups_multi` (groups of ≥ 2 linked papers),
`papers_in_multi_groups`, `train`, `idt`, `odt`, `odt_other_language`, `odt_held_back`,
`odt_english_linked`, `idt_minimum_applied` (1 when rule 5's minimum decided IDT),
`language_papers.<code>`, `top_language_rank.<code>`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import polars as pl

from openmsd_build.core import hashing
from openmsd_build.core.frames import hash_strings
from openmsd_build.core.hashing import unit_interval

ENGLISH = "en"
UNDETERMINED = "und"
SPLIT_CODES = {"train": 0, "idt": 1, "odt": 2}


@dataclass(frozen=True)
class SplitConfig:
    """Knobs of the split rule (see the module docstring for their use)."""

    top_k: int = 30
    idt_fraction: float = 247 / 53_000
    odt_fraction: float = 0.005
    min_idt_groups: int = 200
    seed: str = "openmsd-split-v1"


class PaperIdCollision(RuntimeError):
    """Two DOIs share a 63-bit paper_id: the pair shuffles would merge two papers."""


def paper_ids(dois: pl.Series) -> pl.Series:
    """`hash64(doi)` for every DOI (the compact key of the pair shuffles)."""
    return pl.Series("paper_id", hashing.paper_ids(dois.to_list()), dtype=pl.Int64)


def check_paper_ids(frame: pl.DataFrame) -> None:
    """Fail loudly when two distinct DOIs hash to one paper_id (odds ~1e-4 at 53M papers)."""
    dup = frame.group_by("paper_id").agg(pl.col("doi").n_unique().alias("n"), pl.col("doi").sort())
    dup = dup.filter(pl.col("n") > 1)
    if dup.height:
        raise PaperIdCollision(f"paper_id collision between DOIs {dup['doi'].to_list()[:5]}; change hashing seed")


def dedup_key(title: pl.Expr, abstract: pl.Expr) -> pl.Expr:
    """Normalized 'title || abstract' text, null when either part is empty."""

    def norm(e: pl.Expr) -> pl.Expr:
        return e.fill_null("").str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()

    t, a = norm(title), norm(abstract)
    return pl.when((t.str.len_bytes() > 0) & (a.str.len_bytes() > 0)).then(t + "\u241e" + a).otherwise(None)


def node_frame(docs: pl.DataFrame) -> pl.DataFrame:
    """documents rows (doi, title, abstract, language, relations) -> split nodes:
    (doi, language, dup_key uint64 or null, relation_dois list[str]).

    The dedup text is reduced to a 64-bit hash here so the global step does not hold text.
    """
    text = docs.select(dedup_key(pl.col("title"), pl.col("abstract")).alias("t"))["t"]
    keys = pl.Series("dup_key", hash_strings(text), dtype=pl.UInt64)
    keys = pl.select(pl.when(text.is_null()).then(None).otherwise(keys).alias("dup_key"))["dup_key"]
    if "relations" in docs.columns:
        rel = docs["relations"].list.eval(pl.element().struct.field("doi").drop_nulls())
    else:
        rel = pl.Series("relation_dois", [[] for _ in range(docs.height)], dtype=pl.List(pl.String))
    return pl.DataFrame(
        {
            "doi": docs["doi"],
            "language": docs["language"].fill_null(UNDETERMINED),
            "dup_key": keys,
            "relation_dois": rel.fill_null([]).cast(pl.List(pl.String)),
        }
    )


def connected_groups(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Component label (the smallest member index) of nodes 0..n-1 joined by edges a[i]-b[i].

    Min-label propagation with pointer jumping, vectorized in numpy: rounds are bounded
    by the components' diameter, which is tiny for version chains and duplicate stars.
    """
    label = np.arange(n, dtype=np.int64)
    if len(a) == 0:
        return label
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    while True:
        m = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, m)
        np.minimum.at(new, b, m)
        while True:  # pointer jumping: follow labels to their fixpoint
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return label
        label = new


def top_languages(languages: pl.Series, k: int) -> list[str]:
    """The k most frequent languages (count desc, code asc); `und`/null never rank."""
    counts = (
        languages.filter(languages.is_not_null() & (languages != UNDETERMINED))
        .value_counts(name="n")
        .sort(["n", languages.name], descending=[True, False])
    )
    return counts[languages.name].head(k).to_list()


def assign_splits(
    nodes: pl.DataFrame, edges: pl.DataFrame, config: SplitConfig = SplitConfig()
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Split rows (doi, paper_id, split, language, group) for linked papers, and counts.

    `nodes`: (doi, language, dup_key, relation_dois[, paper_id]) — one row per linked
    paper. `edges`: (citing_doi, cited_doi) — at least every edge between an English and a
    non-English paper (more is fine; the rest is ignored). Output sorted by doi.
    """
    nodes = nodes.unique(subset=["doi"], keep="first").sort("doi")
    n = nodes.height
    counts: Counter = Counter()
    if "paper_id" not in nodes.columns:
        nodes = nodes.with_columns(paper_ids(nodes["doi"]))
    check_paper_ids(nodes)
    nodes = nodes.with_row_index("idx")
    index = nodes.select("doi", pl.col("idx").cast(pl.Int64))

    # Version edges: relation targets outside the linked set become extra nodes n, n+1, ...
    rel = nodes.select(pl.col("idx").cast(pl.Int64), pl.col("relation_dois").alias("target")).explode("target")
    rel = rel.filter(pl.col("target").is_not_null())
    extra = rel.select("target").unique().join(index, left_on="target", right_on="doi", how="anti").sort("target")
    extra = extra.with_row_index("eidx").select("target", (pl.col("eidx").cast(pl.Int64) + n).alias("tidx"))
    all_index = pl.concat([index.rename({"doi": "target", "idx": "tidx"}), extra])
    rel = rel.join(all_index, on="target", how="inner")
    # Duplicate edges: every member of a dup_key to the key's smallest index.
    dup = nodes.filter(pl.col("dup_key").is_not_null()).select(pl.col("idx").cast(pl.Int64), "dup_key")
    dup = dup.with_columns(pl.col("idx").min().over("dup_key").alias("first")).filter(pl.col("idx") != pl.col("first"))
    a = np.concatenate([rel["idx"].to_numpy(), dup["idx"].to_numpy()])
    b = np.concatenate([rel["tidx"].to_numpy(), dup["first"].to_numpy()])
    labels = connected_groups(n + extra.height, a, b)[:n]
    # Labels are node indices; a component with a linked paper is labelled by its smallest
    # linked DOI because linked papers hold the smallest indices, sorted by DOI.
    nodes = nodes.with_columns(pl.Series("gidx", labels, dtype=pl.Int64))
    nodes = nodes.with_columns(pl.col("doi").gather(pl.col("gidx")).alias("group"))

    langs = top_languages(nodes["language"], config.top_k)
    for rank, code in enumerate(langs, start=1):
        counts[f"top_language_rank.{code}"] = rank
    for code, c in nodes["language"].value_counts().iter_rows():
        counts[f"language_papers.{code}"] = int(c)
    nodes = nodes.with_columns(
        pl.col("language").is_in(langs).alias("in_top"), (pl.col("language") == ENGLISH).alias("is_en")
    )
    groups = nodes.group_by("group").agg(
        pl.col("in_top").all().alias("pool"), pl.col("is_en").all().alias("all_en"), pl.len().alias("size")
    )
    groups = groups.sort("group")
    groups = groups.with_columns(
        pl.Series("u", [unit_interval(g, config.seed) for g in groups["group"].to_list()], dtype=pl.Float64)
    )
    counts["groups"] = groups.height
    counts["groups_multi"] = int((groups["size"] > 1).sum())
    counts["papers_in_multi_groups"] = int(groups.filter(pl.col("size") > 1)["size"].sum() or 0)

    pool = groups.filter(pl.col("pool")).sort(["u", "group"])
    n_threshold = int((pool["u"] < config.idt_fraction).sum())
    n_minimum = min(config.min_idt_groups, pool.height // 10)
    n_idt = max(n_threshold, n_minimum)
    counts["idt_minimum_applied"] = int(n_minimum > n_threshold)
    idt_groups = pool.head(n_idt)["group"]
    # Held back: the next odt_fraction of draws after IDT's. When the threshold decided IDT
    # this is exactly `u < idt_fraction + odt_fraction`; when the minimum did (small
    # builds), IDT reaches further up the draws and the held-back band moves with it, so
    # a larger IDT never empties the held-back ODT.
    last_idt_u = float(pool["u"][n_idt - 1]) if n_idt else 0.0
    held_cut = max(config.idt_fraction + config.odt_fraction, last_idt_u + config.odt_fraction)
    groups = groups.with_columns(
        pl.when(~pl.col("pool"))
        .then(pl.lit("odt_other_language"))
        .when(pl.col("group").is_in(idt_groups.implode()))
        .then(pl.lit("idt"))
        .when(~pl.col("all_en") & (pl.col("u") < held_cut))
        .then(pl.lit("odt_held_back"))
        .otherwise(pl.lit("train"))
        .alias("why")
    )
    nodes = nodes.join(groups.select("group", "why", "all_en", "pool"), on="group", how="left")

    # Rule 7: English-only train groups linked to a non-English ODT paper move to ODT.
    odt_xx = nodes.filter(pl.col("why").str.starts_with("odt") & ~pl.col("is_en")).select("doi")
    en_train = nodes.filter((pl.col("why") == "train") & pl.col("all_en")).select("doi", "group")
    e = edges.select("citing_doi", "cited_doi")
    pulled = pl.concat(
        [
            e.join(odt_xx, left_on="cited_doi", right_on="doi", how="semi").select(pl.col("citing_doi").alias("doi")),
            e.join(odt_xx, left_on="citing_doi", right_on="doi", how="semi").select(pl.col("cited_doi").alias("doi")),
        ]
    )
    pulled_groups = en_train.join(pulled.unique(), on="doi", how="semi")["group"].unique()
    nodes = nodes.with_columns(
        pl.when(pl.col("group").is_in(pulled_groups.implode()) & (pl.col("why") == "train"))
        .then(pl.lit("odt_english_linked"))
        .otherwise(pl.col("why"))
        .alias("why")
    )
    nodes = nodes.with_columns(
        pl.when(pl.col("why").str.starts_with("odt")).then(pl.lit("odt")).otherwise(pl.col("why")).alias("split")
    )
    for why, c in nodes["why"].value_counts().iter_rows():
        if why.startswith("odt_"):
            counts[why] += int(c)
    for split in SPLIT_CODES:
        counts[split] = int((nodes["split"] == split).sum())
    counts["papers_linked"] = n
    out = nodes.select("doi", "paper_id", "split", "language", "group").sort("doi")
    return out, dict(counts)
