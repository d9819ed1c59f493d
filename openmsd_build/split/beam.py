"""Beam DoFns and helpers of the split stage (wired in `pipelines/split.py`).

Every shuffle is spilled (`split.spill`): elements are `(shard, (tag, path))` and a DoFn
reads only its shard's pieces, so what a worker holds is one shard of papers or of groups.
The steps are the functions of `split.partitioned`.
"""

from __future__ import annotations

from collections import Counter

import apache_beam as beam
import polars as pl
import pyarrow as pa

from openmsd_build.core import frames, parquet_io, spill
from openmsd_build.core.beam_io import COUNTS_TAG, bump
from openmsd_build.schemas import SPLITS
from openmsd_build.split import partitioned as sp
from openmsd_build.split.assign import SplitConfig, check_paper_ids, node_frame, paper_ids

STAGE = "split"
DEFAULT_SHARDS = 16
NODE_SCHEMA = pa.schema(
    [
        ("doi", pa.string()),
        ("language", pa.string()),
        ("dup_key", pa.uint64()),
        ("relation_dois", pa.list_(pa.string())),
        ("paper_id", pa.int64()),
    ]
)
EDGE_SCHEMA = pa.schema([("citing_doi", pa.string()), ("cited_doi", pa.string())])
GROUPS_SCHEMA = {"doi": pl.String, "group": pl.String}


def by_doi(root: str, frame: pl.DataFrame, column: str, shards: int, tag: str, output: str | None = None):
    """Spill `frame` keyed by the DOI shard of `column`; yield `(shard, (tag, path))`."""
    pieces = frames.split_by_shard(frame, frames.shard_strings(frame[column], shards)) if frame.height else []
    for s, value in spill.put(root, tag, pieces):
        yield (s, value) if output is None else beam.pvalue.TaggedOutput(output, (s, value))


def by_int(root: str, frame: pl.DataFrame, column: str, shards: int, tag: str, output: str | None = None):
    """Spill `frame` keyed by the shard of the integer column `column`."""
    pieces = frames.split_by_shard(frame, frames.shard_ints(frame[column], shards)) if frame.height else []
    for s, value in spill.put(root, tag, pieces):
        yield (s, value) if output is None else beam.pvalue.TaggedOutput(output, (s, value))


def frame(parts: dict, tag: str, schema: pa.Schema | dict | None = None) -> pl.DataFrame:
    if isinstance(schema, dict):
        return frames.to_frame(parts[tag]) if parts[tag] else pl.DataFrame(schema=schema)
    return frames.to_frame(parts[tag], schema)


class _Spilling(beam.DoFn):
    def __init__(self, shards: int, root: str):
        self.shards = shards
        self.root = root


class LinkedDois(_Spilling):
    def process(self, table: pa.Table):
        df = pl.from_arrow(table)
        dois = pl.concat([df["citing_doi"], df["cited_doi"]]).unique().to_frame("doi")
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"citations_read": df.height})
        yield from by_doi(self.root, dois, "doi", self.shards, "linked")


class Nodes(_Spilling):
    def process(self, table: pa.Table):
        nodes = node_frame(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"documents_read": nodes.height})
        yield from by_doi(self.root, nodes, "doi", self.shards, "docs")


class LinkShard(_Spilling):
    """Per doi shard: the linked nodes (with paper_id), their language counts, and the
    group-edge material: dedup keys (by key) and relation edges (by target DOI)."""

    def process(self, element):
        shard, values = element
        parts = spill.load(values, "linked", "docs")
        linked = frame(parts, "linked", pa.schema([("doi", pa.string())])).unique()
        docs = frame(parts, "docs", NODE_SCHEMA.remove(NODE_SCHEMA.get_field_index("paper_id")))
        nodes = docs.join(linked, on="doi", how="semi") if docs.height else docs
        counts = {
            "no_link": docs.height - nodes.height,
            "edge_ends_not_in_documents": linked.height - nodes.height,
        }
        nodes = nodes.unique(subset=["doi"], keep="first", maintain_order=True)
        counts["papers_linked"] = nodes.height
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        if not nodes.height:
            return
        nodes = nodes.with_columns(paper_ids(nodes["doi"]))
        yield from spill.put(self.root, "nodes", [(shard, nodes.to_arrow())])
        yield beam.pvalue.TaggedOutput("languages", sp.language_counts(nodes))
        yield from by_int(self.root, nodes.select("paper_id", "doi"), "paper_id", self.shards, "ids", "ids")
        dups = sp.dup_members(nodes)
        yield from by_int(self.root, dups, "dup_key", self.shards, "dup", "dups")
        yield from by_doi(self.root, sp.relation_edges(nodes), "b", self.shards, "rel", "rels")


class CheckIds(beam.DoFn):
    """Fail when two DOIs share a paper_id (the check `assign_splits` does, per id shard)."""

    def process(self, element):
        _, values = element
        ids = frame(spill.load(values, "ids"), "ids", {"paper_id": pl.Int64, "doi": pl.String})
        check_paper_ids(ids)
        return []


class DupEdges(beam.DoFn):
    """Per dedup-key shard: member -> smallest member edges (to the component step)."""

    def __init__(self, root: str):
        self.root = root

    def process(self, element):
        _, values = element
        edges = sp.dup_edges(frame(spill.load(values, "dup"), "dup", {"dup_key": pl.UInt64, "doi": pl.String}))
        yield from spill.put(self.root, "gedge", [(0, edges.to_arrow())])


class MarkTargets(beam.DoFn):
    """Per target-DOI shard: relation edges with `b_linked` (to the component step)."""

    def __init__(self, root: str):
        self.root = root

    def process(self, element):
        _, values = element
        parts = spill.load(values, "nodes", "rel")
        if not parts["rel"]:
            return
        edges = sp.mark_targets(frames.to_frame(parts["rel"]), frame(parts, "nodes", NODE_SCHEMA))
        yield from spill.put(self.root, "gedge", [(0, edges.to_arrow())])


class Components(_Spilling):
    """The one step that sees every group edge (see `partitioned.components` for its
    memory: the group edges only, not the papers); emits (doi, group) by doi shard."""

    def process(self, element):
        _, values = element
        edges = frame(spill.load(values, "gedge"), "gedge", sp.EDGE_COLUMNS)
        yield from by_doi(self.root, sp.components(edges), "doi", self.shards, "group")


class Members(_Spilling):
    """Per doi shard: each paper's group and language flags, keyed by group."""

    def __init__(self, shards: int, root: str, top_k: int):
        super().__init__(shards, root)
        self.top_k = top_k

    def process(self, element, languages):
        _, values = element
        parts = spill.load(values, "nodes", "group")
        if not parts["nodes"]:
            return
        m = sp.members(frame(parts, "nodes", NODE_SCHEMA), frame(parts, "group", GROUPS_SCHEMA),
                       sp.top_from_counts(languages, self.top_k))
        yield from by_doi(self.root, m, "group", self.shards, "member")


class Groups(beam.DoFn):
    """Per group shard: group flags and draws (spilled in place), rule 5's summary, counts."""

    def __init__(self, root: str, config: SplitConfig):
        self.root = root
        self.config = config

    def process(self, element):
        shard, values = element
        table = sp.group_table(frames.to_frame(spill.load(values, "member")["member"]), self.config.seed)
        counts = sp.group_counts(table)
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        yield beam.pvalue.TaggedOutput("summary", sp.idt_summary(table, self.config))
        yield from spill.put(self.root, "table", [(shard, table.to_arrow())])


class Decide(_Spilling):
    """Per group shard (no shuffle: a ParDo over `Groups`'s pieces): rules 4–6 with the
    global decision; the papers' status by doi shard, the English-only train groups'
    members by group shard (for rule 7)."""

    def __init__(self, shards: int, root: str, config: SplitConfig):
        super().__init__(shards, root)
        self.config = config

    def process(self, element, decision):
        shard, (_, path) = element
        status = sp.decide(pl.from_arrow(spill.read_piece(path)), decision, self.config)
        yield from by_doi(self.root, status, "doi", self.shards, "status")
        train_en = status.filter((pl.col("why") == "train") & pl.col("all_en")).select("group", "doi")
        for value in spill.put(self.root, "gmember", [(shard, train_en.to_arrow())]):
            yield beam.pvalue.TaggedOutput("gmember", value)


class KeyEdges(_Spilling):
    def __init__(self, side: str, shards: int, root: str):
        super().__init__(shards, root)
        self.side = side

    def process(self, table: pa.Table):
        df = pl.from_arrow(table)
        yield from by_doi(self.root, df, f"{self.side}_doi", self.shards, "edges")


class LanguageSide(_Spilling):
    """Attach `{side}_lang`; after the cited side keep only English/non-English edges,
    as (xx, en) DOIs keyed by the non-English end."""

    def __init__(self, side: str, shards: int, root: str):
        super().__init__(shards, root)
        self.side = side

    def process(self, element):
        _, values = element
        parts = spill.load(values, "nodes", "edges")
        if not parts["edges"]:
            return
        edges = frames.to_frame(parts["edges"])
        langs = frame(parts, "nodes", NODE_SCHEMA).select("doi", pl.col("language").alias(f"{self.side}_lang"))
        edges = edges.join(langs, left_on=f"{self.side}_doi", right_on="doi", how="inner")
        if self.side == "citing":
            yield from by_doi(self.root, edges, "cited_doi", self.shards, "edges")
            return
        mixed = edges.filter((pl.col("citing_lang") == "en") != (pl.col("cited_lang") == "en"))
        yield from by_doi(self.root, sp.mixed_ends(mixed), "xx", self.shards, "ends")


class PulledEnglish(_Spilling):
    """Rule 7, by the non-English end: English ends of edges from an ODT paper."""

    def process(self, element):
        _, values = element
        parts = spill.load(values, "status", "ends")
        if not parts["ends"] or not parts["status"]:
            return
        en = sp.pulled_english(frames.to_frame(parts["ends"]), frames.to_frame(parts["status"]))
        yield from by_doi(self.root, en, "doi", self.shards, "en")


class PulledGroups(_Spilling):
    """Rule 7, by the English end: the English-only train groups pulled to ODT."""

    def process(self, element):
        _, values = element
        parts = spill.load(values, "status", "en")
        if not parts["en"] or not parts["status"]:
            return
        groups = sp.pulled_groups(frames.to_frame(parts["en"]), frames.to_frame(parts["status"]))
        yield from by_doi(self.root, groups, "group", self.shards, "pulled_group")


class PulledMembers(_Spilling):
    """Rule 7, by group: every member DOI of a pulled group."""

    def process(self, element):
        _, values = element
        parts = spill.load(values, "gmember", "pulled_group")
        if not parts["gmember"] or not parts["pulled_group"]:
            return
        dois = sp.pulled_members(frames.to_frame(parts["pulled_group"]), frames.to_frame(parts["gmember"]))
        yield from by_doi(self.root, dois, "doi", self.shards, "pulled")


class Finish(beam.DoFn):
    """Per doi shard: final split, counts, and the shard's `splits/` part file (sorted by
    doi, the same file `WriteParquetShards` wrote before)."""

    def __init__(self, directory: str, shards: int):
        self.directory = directory
        self.shards = shards

    def process(self, element):
        shard, values = element
        parts = spill.load(values, "status", "pulled")
        if not parts["status"]:
            return
        out, counts = sp.finish(frames.to_frame(parts["status"]), frame(parts, "pulled", {"doi": pl.String}))
        parquet_io.write_table(out.to_arrow().cast(SPLITS), parquet_io.part_path(self.directory, shard, self.shards))
        counts = dict(Counter(counts))
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
