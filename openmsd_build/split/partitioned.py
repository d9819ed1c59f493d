"""The split rule of `assign.assign_splits`, cut into per-shard steps and small global summaries.

Why: `assign_splits` holds every linked paper in one place (≈ 5–10 GB at 53M papers). The
rule's global dependencies are few and each is either small or local after one shuffle:

* top-K languages need only the per-language paper counts (a dict of ~100 entries);
* groups need connected components, but only over the *group edges* (relation links and
  duplicate title+abstract links); a paper with neither is its own group. The component
  step holds those edges only (two DOIs + a flag each, ≈ 150 B per edge with polars
  temporaries), never the papers without them;
* rule 5 needs the number of pool groups, the number under `idt_fraction` and the
  `min_idt_groups` smallest `(u, group)` draws: a summary of ≤ `min_idt_groups` rows;
* rule 7 is a partitioned join of the English / non-English edges with the papers' status
  (by the non-English end, then the English end, then the group).

Everything else runs per shard of DOIs (papers) or of group keys (groups); each function
here is one such step, and `assign_splits` stays the reference they must equal
(tests/split/test_split_partitioned.py checks it on generated graphs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import polars as pl

from openmsd_build.core.hashing import unit_interval
from openmsd_build.split.assign import ENGLISH, UNDETERMINED, SplitConfig, connected_groups, paper_ids

EDGE_COLUMNS = {"a": pl.String, "b": pl.String, "b_linked": pl.Boolean}
STATUS_COLUMNS = ("doi", "paper_id", "language", "group", "why", "all_en", "is_en")


def language_counts(nodes: pl.DataFrame) -> dict[str, int]:
    """Linked papers per language code (a shard's part of the global summary)."""
    return {code: int(n) for code, n in nodes["language"].value_counts().iter_rows()}


def top_from_counts(counts: Mapping[str, int], k: int) -> list[str]:
    """`assign.top_languages` from the summed counts: count desc, code asc; `und` never ranks."""
    ranked = sorted(((-n, code) for code, n in counts.items() if code is not None and code != UNDETERMINED))
    return [code for _, code in ranked[:k]]


def dup_members(nodes: pl.DataFrame) -> pl.DataFrame:
    """(dup_key, doi) of papers with a dedup key: shuffled by the key."""
    return nodes.filter(pl.col("dup_key").is_not_null()).select("dup_key", "doi")


def dup_edges(members: pl.DataFrame) -> pl.DataFrame:
    """Within a dup key's members, every member to the smallest one (as `assign_splits`)."""
    m = members.unique()
    m = m.with_columns(pl.col("doi").min().over("dup_key").alias("first")).filter(pl.col("doi") != pl.col("first"))
    return m.select(pl.col("doi").alias("a"), pl.col("first").alias("b"), pl.lit(True).alias("b_linked"))


def relation_edges(nodes: pl.DataFrame) -> pl.DataFrame:
    """(a = linked paper, b = related DOI): shuffled by `b` to learn whether `b` is linked."""
    rel = nodes.select(pl.col("doi").alias("a"), pl.col("relation_dois").alias("b")).explode("b")
    return rel.filter(pl.col("b").is_not_null())


def mark_targets(rel: pl.DataFrame, nodes: pl.DataFrame) -> pl.DataFrame:
    """Relation edges of this target shard with `b_linked` (is `b` a linked paper here)."""
    linked = nodes.select("doi").unique()
    return rel.with_columns(pl.col("b").is_in(linked["doi"].implode()).alias("b_linked")).select(list(EDGE_COLUMNS))


def components(edges: pl.DataFrame) -> pl.DataFrame:
    """(doi, group) of every linked paper touched by a group edge.

    Nodes are numbered linked DOIs first (sorted), then unlinked relation targets, so the
    smallest label of a component is its smallest linked DOI: `assign_splits`'s group key.
    Every edge has a linked end `a`, so every component has one.
    """
    if not edges.height:
        return pl.DataFrame(schema={"doi": pl.String, "group": pl.String})
    ends = pl.concat(
        [edges.select(pl.col("a").alias("doi"), pl.lit(True).alias("linked")),
         edges.select(pl.col("b").alias("doi"), pl.col("b_linked").alias("linked"))]
    )
    nodes = ends.group_by("doi").agg(pl.col("linked").any()).sort(["linked", "doi"], descending=[True, False])
    nodes = nodes.with_row_index("i").with_columns(pl.col("i").cast(pl.Int64))
    index = nodes.select("doi", "i")
    e = edges.join(index.rename({"doi": "a", "i": "ia"}), on="a").join(index.rename({"doi": "b", "i": "ib"}), on="b")
    labels = connected_groups(nodes.height, e["ia"].to_numpy(), e["ib"].to_numpy())
    nodes = nodes.with_columns(pl.col("doi").gather(pl.Series(labels)).alias("group"))
    return nodes.filter(pl.col("linked")).select("doi", "group")


def members(nodes: pl.DataFrame, groups: pl.DataFrame, top: list[str]) -> pl.DataFrame:
    """A doi shard's papers with their group (their own DOI when no group edge touched
    them) and language flags: shuffled by group."""
    out = nodes.select("doi", "paper_id", "language").join(groups, on="doi", how="left")
    return out.with_columns(
        pl.col("group").fill_null(pl.col("doi")),
        pl.col("language").is_in(top).alias("in_top"),
        (pl.col("language") == ENGLISH).alias("is_en"),
    )


def group_table(members: pl.DataFrame, seed: str) -> pl.DataFrame:
    """A group shard's members with their group's pool / all_en / size flags and draw `u`."""
    groups = members.group_by("group").agg(
        pl.col("in_top").all().alias("pool"), pl.col("is_en").all().alias("all_en"), pl.len().alias("size")
    )
    groups = groups.with_columns(
        pl.Series("u", [unit_interval(g, seed) for g in groups["group"].to_list()], dtype=pl.Float64)
    )
    return members.join(groups, on="group", how="left")


def group_counts(table: pl.DataFrame) -> dict[str, int]:
    groups = table.select("group", "size").unique()
    multi = groups.filter(pl.col("size") > 1)
    return {"groups": groups.height, "groups_multi": multi.height, "papers_in_multi_groups": int(multi["size"].sum() or 0)}


def idt_summary(table: pl.DataFrame, config: SplitConfig) -> dict:
    """Rule 5's summary of a group shard: pool groups, those under the threshold, and the
    `min_idt_groups` smallest `(u, group)` (all rule 5 needs when the minimum decides)."""
    pool = table.filter(pl.col("pool")).select("group", "u").unique().sort(["u", "group"])
    head = pool.head(config.min_idt_groups)
    smallest = list(zip(head["u"].to_list(), head["group"].to_list(), strict=True))
    return {"pool": pool.height, "below": int((pool["u"] < config.idt_fraction).sum()), "smallest": smallest}


def merge_summaries(summaries: Iterable[dict], keep: int) -> dict:
    """Associative merge of `idt_summary` dicts (a CombineGlobally function)."""
    pool = below = 0
    smallest: list = []
    for s in summaries:
        pool += s["pool"]
        below += s["below"]
        smallest = sorted(smallest + [tuple(x) for x in s["smallest"]])[:keep]
    return {"pool": pool, "below": below, "smallest": smallest}


def idt_decision(summary: dict, config: SplitConfig) -> dict:
    """Rule 5 and 6's global numbers: the IDT cut and the held-back band.

    When the threshold decides, IDT is `u < idt_fraction` (the first `below` groups in
    `(u, group)` order) and the band is `u < idt_fraction + odt_fraction`. When the minimum
    decides, IDT is every pool group with `(u, group)` up to the n-th smallest, and the band
    starts at that group's `u`.
    """
    n_threshold = summary["below"]
    n_minimum = min(config.min_idt_groups, summary["pool"] // 10)
    n_idt = max(n_threshold, n_minimum)
    cut = None
    last_u = 0.0
    if n_minimum > n_threshold:
        cut = tuple(summary["smallest"][n_idt - 1])
        last_u = float(cut[0])
    held_cut = max(config.idt_fraction + config.odt_fraction, last_u + config.odt_fraction)
    return {"cut": cut, "held_cut": held_cut, "idt_minimum_applied": int(n_minimum > n_threshold)}


def decide(table: pl.DataFrame, decision: dict, config: SplitConfig) -> pl.DataFrame:
    """Rules 4–6 for a group shard's members: `why` before the English-linked rule."""
    if decision["cut"] is None:
        in_idt = pl.col("u") < config.idt_fraction
    else:
        cu, cg = decision["cut"]
        in_idt = (pl.col("u") < cu) | ((pl.col("u") == cu) & (pl.col("group") <= cg))
    why = (
        pl.when(~pl.col("pool"))
        .then(pl.lit("odt_other_language"))
        .when(in_idt)
        .then(pl.lit("idt"))
        .when(~pl.col("all_en") & (pl.col("u") < decision["held_cut"]))
        .then(pl.lit("odt_held_back"))
        .otherwise(pl.lit("train"))
    )
    return table.with_columns(why.alias("why")).select(list(STATUS_COLUMNS))


def mixed_ends(edges: pl.DataFrame) -> pl.DataFrame:
    """English / non-English edges (with both languages) -> (xx, en) DOIs: shuffled by xx."""
    cited_en = pl.col("cited_lang") == ENGLISH
    return edges.select(
        pl.when(cited_en).then(pl.col("citing_doi")).otherwise(pl.col("cited_doi")).alias("xx"),
        pl.when(cited_en).then(pl.col("cited_doi")).otherwise(pl.col("citing_doi")).alias("en"),
    )


def pulled_english(ends: pl.DataFrame, status: pl.DataFrame) -> pl.DataFrame:
    """English ends of edges whose non-English end is in ODT (rule 7, first join)."""
    odt_xx = status.filter(pl.col("why").str.starts_with("odt") & ~pl.col("is_en")).select("doi")
    return ends.join(odt_xx, left_on="xx", right_on="doi", how="semi").select(pl.col("en").alias("doi")).unique()


def pulled_groups(en: pl.DataFrame, status: pl.DataFrame) -> pl.DataFrame:
    """Groups of pulled English papers that are English-only train groups (second join)."""
    train_en = status.filter((pl.col("why") == "train") & pl.col("all_en")).select("doi", "group")
    return train_en.join(en, on="doi", how="semi").select("group").unique()


def pulled_members(groups: pl.DataFrame, group_members: pl.DataFrame) -> pl.DataFrame:
    """Every member DOI of the pulled groups (third join, by group)."""
    return group_members.join(groups, on="group", how="semi").select("doi")


def finish(status: pl.DataFrame, pulled: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """A doi shard's final split rows (sorted by doi) and its counts."""
    moved = pl.col("doi").is_in(pulled["doi"].implode()) & (pl.col("why") == "train")
    status = status.with_columns(pl.when(moved).then(pl.lit("odt_english_linked")).otherwise(pl.col("why")).alias("why"))
    status = status.with_columns(
        pl.when(pl.col("why").str.starts_with("odt")).then(pl.lit("odt")).otherwise(pl.col("why")).alias("split")
    )
    counts: Counter = Counter()
    for why, c in status["why"].value_counts().iter_rows():
        if why.startswith("odt_"):
            counts[why] += int(c)
    for split in ("train", "idt", "odt"):
        counts[split] = int((status["split"] == split).sum())
    out = status.select("doi", "paper_id", "split", "language", "group").sort("doi")
    return out, dict(counts)


def summary_counts(decision: dict, languages: Mapping[str, int], top: list[str]) -> dict[str, int]:
    """Counters of the global summaries (and zeros, so every run reports the same keys)."""
    counts = {"papers_linked": 0, "groups": 0, "groups_multi": 0, "papers_in_multi_groups": 0, "train": 0,
              "idt": 0, "odt": 0, "idt_minimum_applied": decision["idt_minimum_applied"]}
    counts.update({f"language_papers.{code}": int(n) for code, n in languages.items()})
    counts.update({f"top_language_rank.{code}": rank for rank, code in enumerate(top, start=1)})
    return counts


def assign_partitioned(
    nodes: pl.DataFrame, edges: pl.DataFrame, config: SplitConfig | None = None, shards: int = 4
) -> tuple[pl.DataFrame, dict[str, int]]:
    """The partitioned steps run in one process with in-memory shuffles (the Beam graph
    in `pipelines/split.py` runs the same steps): for tests against `assign_splits`.

    `nodes` as `assign_splits` takes them (with `paper_id`); `edges` with citing/cited DOIs
    and languages (`citing_lang`, `cited_lang`), already restricted to English /
    non-English edges.
    """
    from openmsd_build.core import frames

    config = config or SplitConfig()

    def by(frame: pl.DataFrame, column: str) -> dict[int, pl.DataFrame]:
        if not frame.height:
            return {}
        keys = frame[column]
        shard = frames.shard_ints(keys, shards) if keys.dtype.is_integer() else frames.shard_strings(keys, shards)
        return {s: pl.from_arrow(t) for s, t in frames.split_by_shard(frame, shard)}

    def cat(frames: Iterable[pl.DataFrame], schema: Mapping | None = None) -> pl.DataFrame:
        frames = [f for f in frames if f.height]
        return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame(schema=schema or {})

    nodes = nodes.unique(subset=["doi"], keep="first")
    if "paper_id" not in nodes.columns:
        nodes = nodes.with_columns(paper_ids(nodes["doi"]))
    node_shards = by(nodes, "doi")
    languages: Counter = Counter()
    for part in node_shards.values():
        languages.update(language_counts(part))
    top = top_from_counts(languages, config.top_k)
    dups = by(cat(dup_members(p) for p in node_shards.values()), "dup_key")
    rels = by(cat(relation_edges(p) for p in node_shards.values()), "b")
    gedges = [dup_edges(p) for p in dups.values()]
    gedges += [mark_targets(r, node_shards.get(s, nodes.clear())) for s, r in rels.items()]
    groups = by(components(cat(gedges, EDGE_COLUMNS)), "doi")
    empty_groups = pl.DataFrame(schema={"doi": pl.String, "group": pl.String})
    member = by(cat(members(p, groups.get(s, empty_groups), top) for s, p in node_shards.items()), "group")
    tables = {s: group_table(m, config.seed) for s, m in member.items()}
    counts: Counter = Counter()
    for t in tables.values():
        counts.update(group_counts(t))
    decision = idt_decision(merge_summaries((idt_summary(t, config) for t in tables.values()),
                                            config.min_idt_groups), config)
    status = by(cat(decide(t, decision, config) for t in tables.values()), "doi")
    ends = by(mixed_ends(edges), "xx")
    none = pl.DataFrame(schema={c: pl.String for c in ("xx", "en", "doi", "group")})
    en = by(cat(pulled_english(e, status.get(s, none)) for s, e in ends.items() if s in status), "doi")
    pg = by(cat(pulled_groups(e, status[s]) for s, e in en.items() if s in status), "group")
    pm = by(cat(pulled_members(g, tables[s].select("group", "doi")) for s, g in pg.items() if s in tables), "doi")
    out = []
    for s, st in status.items():
        rows, c = finish(st, pm.get(s, pl.DataFrame(schema={"doi": pl.String})))
        out.append(rows)
        counts.update(c)
    counts.update(summary_counts(decision, languages, top))
    counts["papers_linked"] = nodes.height
    result = cat(out).sort("doi") if out else pl.DataFrame(schema={"doi": pl.String, "paper_id": pl.Int64,
                                                                   "split": pl.String, "language": pl.String,
                                                                   "group": pl.String})
    return result, dict(counts)
