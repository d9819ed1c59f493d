"""Beam DoFns and helpers of the split stage (wired in `pipelines/split.py`)."""

from __future__ import annotations

import apache_beam as beam
import polars as pl
import pyarrow as pa

from openmsd_build.citations import graph as cg
from openmsd_build.core.beam_io import COUNTS_TAG, bump, untag
from openmsd_build.split.assign import SplitConfig, assign_splits, node_frame, paper_ids

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


class LinkedDois(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        df = pl.from_arrow(table)
        dois = pl.concat([df["citing_doi"], df["cited_doi"]]).unique().to_frame("doi")
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"citations_read": df.height})
        yield from cg.split_by_shard(dois, cg.shard_strings(dois["doi"], self.shards))


class Nodes(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        nodes = node_frame(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"documents_read": nodes.height})
        yield from cg.split_by_shard(nodes, cg.shard_strings(nodes["doi"], self.shards))


class LinkShard(beam.DoFn):
    def process(self, element):
        shard, values = element
        parts = untag(values, "linked", "docs")
        linked = cg.to_frame(parts["linked"], pa.schema([("doi", pa.string())])).unique()
        docs = cg.to_frame(parts["docs"], NODE_SCHEMA.remove(NODE_SCHEMA.get_field_index("paper_id")))
        nodes = docs.join(linked, on="doi", how="semi") if docs.height else docs
        counts = {
            "no_link": docs.height - nodes.height,
            "edge_ends_not_in_documents": linked.height - nodes.height,
        }
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        if nodes.height:
            yield shard, nodes.with_columns(paper_ids(nodes["doi"])).to_arrow()


class KeyEdges(beam.DoFn):
    def __init__(self, side: str, shards: int):
        self.side = side
        self.shards = shards

    def process(self, table: pa.Table):
        df = pl.from_arrow(table)
        yield from cg.split_by_shard(df, cg.shard_strings(df[f"{self.side}_doi"], self.shards))


class LanguageSide(beam.DoFn):
    """Attach `{side}_lang`; after the cited side keep only English/non-English edges."""

    def __init__(self, side: str, shards: int):
        self.side = side
        self.shards = shards

    def process(self, element):
        _, values = element
        parts = untag(values, "nodes", "edges")
        edges = cg.to_frame(parts["edges"])
        if not edges.height:
            return
        langs = cg.to_frame(parts["nodes"], NODE_SCHEMA).select("doi", pl.col("language").alias(f"{self.side}_lang"))
        edges = edges.join(langs, left_on=f"{self.side}_doi", right_on="doi", how="inner")
        if self.side == "citing":
            yield from cg.split_by_shard(edges, cg.shard_strings(edges["cited_doi"], self.shards))
            return
        mixed = edges.filter((pl.col("citing_lang") == "en") != (pl.col("cited_lang") == "en"))
        if mixed.height:
            yield mixed.select("citing_doi", "cited_doi").to_arrow()


class Assign(beam.DoFn):
    """The single global step (see `splitting.assign_splits` for its memory)."""

    def __init__(self, config: SplitConfig, shards: int):
        self.config = config
        self.shards = shards

    def process(self, element):
        _, values = element
        parts = untag(values, "nodes", "edges")
        nodes = cg.to_frame(parts["nodes"], NODE_SCHEMA)
        edges = cg.to_frame(parts["edges"], EDGE_SCHEMA)
        out, counts = assign_splits(nodes, edges, self.config)
        bump(STAGE, {k: v for k, v in counts.items() if "." not in k})
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        yield from cg.split_by_shard(out, cg.shard_strings(out["doi"], self.shards))

