"""Beam DoFns of the citations stage (wired in `pipelines/citations.py`): thin wrappers
that route `opencitations` and `citation_graph` batch outputs to tagged outputs."""

from __future__ import annotations

import apache_beam as beam
import polars as pl
import pyarrow as pa

from openmsd_build.citations import graph as cg
from openmsd_build.citations.opencitations import EDGE_BATCH_SCHEMA, META_SCHEMA, parse_citation_file, parse_meta_file
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, bump, untag
from openmsd_build.schemas import CITATIONS

STAGE = "citations"
DEFAULT_SHARDS = 16
NEEDS_META = "needs_meta"
EDGE_SCHEMA = pa.schema([("citing_doi", pa.string()), ("cited_doi", pa.string())])
DOC_KEYS = pa.schema([("doi", pa.string()), ("has_abstract", pa.bool_()), ("paper_id", pa.int64())])


# ---------------------------------------------------------------- stage DoFns


class ParseFile(beam.DoFn):
    def __init__(self, have_meta: bool):
        self.have_meta = have_meta

    def process(self, path: str):
        for table, rejects, counts in parse_citation_file(path):
            counts = dict(counts)
            df = pl.from_arrow(table)
            needs = df.filter(pl.col("citing_doi").is_null() | pl.col("cited_doi").is_null())
            ready = df.filter(pl.col("citing_doi").is_not_null() & pl.col("cited_doi").is_not_null())
            if needs.height:
                if self.have_meta:
                    yield beam.pvalue.TaggedOutput(NEEDS_META, needs.to_arrow())
                else:
                    counts["no_doi"] = counts.get("no_doi", 0) + needs.height
            if ready.height:
                yield ready.select("citing_doi", "cited_doi").to_arrow()
            if rejects:
                yield beam.pvalue.TaggedOutput(REJECTS_TAG, rejects)
            bump(STAGE, counts)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)


class ParseMeta(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, path: str):
        for table, rejects, counts in parse_meta_file(path):
            if rejects:
                yield beam.pvalue.TaggedOutput(REJECTS_TAG, rejects)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
            df = pl.from_arrow(table)
            yield from cg.split_by_shard(df, cg.shard_strings(df["omid"], self.shards))


class KeyNeedingSide(beam.DoFn):
    """Edges with an unresolved `side` -> (shard of that OMID, table); others pass through
    on the `done` output untouched."""

    def __init__(self, side: str, shards: int):
        self.side = side
        self.shards = shards

    def process(self, table: pa.Table):
        df = pl.from_arrow(table)
        todo = df.filter(pl.col(f"{self.side}_doi").is_null())
        done = df.filter(pl.col(f"{self.side}_doi").is_not_null())
        if done.height:
            yield beam.pvalue.TaggedOutput("done", done.to_arrow())
        yield from cg.split_by_shard(todo, cg.shard_strings(todo[f"{self.side}_omid"], self.shards))


class ResolveSide(beam.DoFn):
    def __init__(self, side: str):
        self.side = side

    def process(self, element):
        _, values = element
        parts = untag(values, "meta", "edges")
        edges = cg.to_frame(parts["edges"], EDGE_BATCH_SCHEMA)
        if not edges.height:
            return
        meta = cg.to_frame(parts["meta"], META_SCHEMA)
        resolved = cg.resolve_omids(edges, meta, self.side)
        n = int(resolved[f"{self.side}_doi"].is_not_null().sum())
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"omid_resolved": n})
        yield resolved.to_arrow()


class FinishResolution(beam.DoFn):
    def process(self, table: pa.Table):
        edges, counts = cg.finish_resolution(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        if edges.height:
            yield edges.to_arrow()


class DropSelfAndKey(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        edges, counts = cg.drop_self_citations(pl.from_arrow(table))
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        yield from cg.split_by_shard(edges, cg.shard_strings(edges["citing_doi"], self.shards))


class KeyDocs(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        keys = cg.document_keys(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"documents_read": table.num_rows})
        yield from cg.split_by_shard(keys, cg.shard_strings(keys["doi"], self.shards))


class FilterShard(beam.DoFn):
    """One shard's edges joined with the same shard's documents; `side` says which end."""

    def __init__(self, side: str, shards: int):
        self.side = side
        self.shards = shards

    def process(self, element):
        shard, values = element
        parts = untag(values, "docs", "edges")
        edges = cg.to_frame(parts["edges"], EDGE_SCHEMA if self.side == "citing" else CITATIONS)
        if not edges.height:
            return
        docs = cg.to_frame(parts["docs"], DOC_KEYS)
        if docs.height:
            docs = docs.group_by("doi").agg(pl.col("has_abstract").any(), pl.col("paper_id").max())
        counts: dict[str, int] = {}
        if self.side == "citing":
            edges, counts = cg.dedup_edges(edges)
        edges, c = cg.filter_side(edges, docs, self.side)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
        if self.side == "cited":
            counts["edges_kept"] = edges.height
            bump(STAGE, counts)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
            if edges.height:
                yield shard, edges.select(CITATIONS.names).to_arrow()
            return
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        yield from cg.split_by_shard(edges, cg.shard_strings(edges["cited_doi"], self.shards))


# ---------------------------------------------------------------- pipeline

