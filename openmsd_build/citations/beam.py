"""Beam DoFns of the citations stage (wired in `pipelines/citations.py`): thin wrappers
that route `opencitations` and `citation_graph` batch outputs to tagged outputs.

Shuffled values are `(shard, (tag, Arrow IPC bytes))` (`graph.shard_pieces`, `tagged`);
the DoFns that do the heavy work run it on helper threads (`overlap`) and update Beam
counters only on the runner's thread."""

from __future__ import annotations

from collections import deque

import apache_beam as beam
import polars as pl
import pyarrow as pa

from openmsd_build.citations import graph as cg
from openmsd_build.citations.opencitations import EDGE_BATCH_SCHEMA, META_SCHEMA, parse_citation_file, parse_meta_file
from openmsd_build.citations.overlap import InOrderPool, ReadAhead, read_ahead
from openmsd_build.core import parquet_io
from openmsd_build.core.beam_io import (
    COUNTS_TAG,
    REJECTS_TAG,
    ReadParquetFrames,
    UntypedDoFn,
    bump,
    in_global_window,
    untag,
)
from openmsd_build.core.ipc import to_ipc
from openmsd_build.schemas import CITATIONS

STAGE = "citations"
DEFAULT_SHARDS = 16
NEEDS_META = "needs_meta"
EDGE_SCHEMA = pa.schema([("citing_doi", pa.string()), ("cited_doi", pa.string())])
DOC_KEYS = pa.schema([("doi", pa.string()), ("has_abstract", pa.bool_()), ("paper_id", pa.int64())])
DOCUMENT_COLUMNS = ("doi", "abstract")


def tagged(name: str, pieces: list[tuple[int, bytes]]) -> list[tuple[int, tuple[str, bytes]]]:
    """`(shard, batch)` pieces as `(shard, (name, batch))`: the value a join's GroupByKey
    expects (`beam_io.untag` splits them again)."""
    return [(shard, (name, batch)) for shard, batch in pieces]


# ---------------------------------------------------------------- stage DoFns


class ParseFile(UntypedDoFn):
    """One input file -> edge batches. Edges with both DOIs leave already without
    self-citations and cut by citing shard (`keyed`, the citing join's input: fused here so
    a batch is converted and hashed once); OMID-only edges go to `NEEDS_META` (or count as
    `no_doi` without `--meta`)."""

    def __init__(self, have_meta: bool, shards: int):
        self.have_meta = have_meta
        self.shards = shards

    def process(self, path: str):
        # The parser reads the next blocks on a helper thread while this one cuts and hands
        # on the previous batch (`overlap`): same batches, same order.
        for table, rejects, counts in read_ahead(lambda: parse_citation_file(path)):
            counts = dict(counts)
            ready, needs = _split_ready(table)
            if needs is not None and needs.num_rows:
                if self.have_meta:
                    yield beam.pvalue.TaggedOutput(NEEDS_META, needs)
                else:
                    counts["no_doi"] = counts.get("no_doi", 0) + needs.num_rows
            keyed: list = []
            if ready.num_rows:
                edges, dropped = cg.drop_self_citations(ready.select(EDGE_SCHEMA.names))
                counts["self_citation"] = counts.get("self_citation", 0) + dropped["self_citation"]
                keyed = cg.shard_pieces(edges, "citing_doi", self.shards)
            yield from tagged("edges", keyed)
            if rejects:
                yield beam.pvalue.TaggedOutput(REJECTS_TAG, rejects)
            bump(STAGE, counts)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)


def _split_ready(table: pa.Table) -> tuple[pa.Table, pa.Table | None]:
    """(edges with both DOIs, edges with an OMID-only end or None): a batch without nulls
    (every COCI batch) is not filtered at all."""
    if table.column("citing_doi").null_count == 0 and table.column("cited_doi").null_count == 0:
        return table, None
    df = pl.from_arrow(table)
    unknown = pl.col("citing_doi").is_null() | pl.col("cited_doi").is_null()
    return df.filter(~unknown).to_arrow(), df.filter(unknown).to_arrow()


class ParseMeta(UntypedDoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, path: str):
        for table, rejects, counts in parse_meta_file(path):
            if rejects:
                yield beam.pvalue.TaggedOutput(REJECTS_TAG, rejects)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
            df = pl.from_arrow(table)
            yield from cg.shard_pieces(df, "omid", self.shards)


class KeyNeedingSide(UntypedDoFn):
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
        yield from cg.shard_pieces(todo, f"{self.side}_omid", self.shards)


class ResolveSide(UntypedDoFn):
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


class FinishResolution(UntypedDoFn):
    def process(self, table: pa.Table):
        edges, counts = cg.finish_resolution(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        if edges.height:
            yield edges.to_arrow()


class DropSelfAndKey(UntypedDoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        edges, counts = cg.drop_self_citations(pl.from_arrow(table))
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        yield from tagged("edges", cg.shard_pieces(edges, "citing_doi", self.shards))


class KeyDocs(UntypedDoFn):
    """Documents -> `(shard, ("docs", keys))` by DOI shard, and always an empty piece for
    shard 0, so that shard reaches both joins and its `citations/` part is written even
    when empty (an empty piece is ignored by the joins)."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        keys = cg.document_keys(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"documents_read": table.num_rows})
        yield from tagged("docs", [(0, to_ipc(DOC_KEYS.empty_table())), *cg.shard_pieces(keys, "doi", self.shards)])


class ReadInputs(UntypedDoFn):
    """`("citations", path)` -> `ParseFile`; `("documents", path)` -> `KeyDocs` of its
    Parquet batches. One DoFn for both so that the citing join's GroupByKey reads one
    PCollection: the local runner materializes a Flatten of several as a stage of its own
    that copies every batch once more (0.5 s at 2M edges).

    Documents are read on a helper thread (`overlap.ReadAhead`, one part at a time, a few
    batches ahead) and their outputs handed on between the parser's batches, so that with
    the documents first in the input list (the wiring puts them there) reading them
    overlaps parsing instead of following it. Outputs are the same in any order.
    """

    def __init__(self, have_meta: bool, shards: int):
        self.parse = ParseFile(have_meta, shards)
        self.keys = KeyDocs(shards)
        self.documents = ReadParquetFrames(DOCUMENT_COLUMNS)
        self._docs: deque | None = None

    def start_bundle(self):
        self.teardown()  # a bundle that failed half-way may have left a reader running
        self._docs = deque()

    def process(self, element: tuple[str, str]):
        assert self._docs is not None
        kind, path = element
        if kind == "documents":
            self._docs.append(path)
        else:
            for out in self.parse.process(path):
                yield out
                yield from self._documents_ready()
        yield from self._documents_ready()

    def finish_bundle(self):
        yield from in_global_window(self._documents_ready(wait=True))

    def teardown(self):
        if self._docs and isinstance(self._docs[0], ReadAhead):
            self._docs[0].close()
        self._docs = None

    def _document_outputs(self, path: str):
        for table in self.documents.process(path):
            yield from self.keys.process(table)

    def _documents_ready(self, wait: bool = False):
        """Outputs of the queued document parts that are ready (all of them if `wait`);
        the head of the queue is the part being read (a `ReadAhead`), the rest are paths."""
        docs = self._docs
        while docs:
            if not isinstance(docs[0], ReadAhead):
                docs[0] = ReadAhead(lambda path=docs[0]: self._document_outputs(path))
            head: ReadAhead = docs[0]
            yield from head if wait else head.ready()
            if not head.done:
                return
            head.close()
            docs.popleft()


class FilterShard(UntypedDoFn):
    """One shard's edges joined with the same shard's documents; `side` says which end.

    The citing side removes duplicates, checks the citing end and re-cuts the kept edges by
    cited shard. The cited side checks the cited end and writes the shard's `citations/`
    part itself (sorted, as `WriteParquetShards` would: every shard's edges are already in
    this one call, so a third shuffle only to regroup them would move every kept edge
    through the runner once more). Shard 0 is always written (the wiring seeds it).

    Shards are joined on a small thread pool (`overlap.InOrderPool`), two at a time, their
    results handed on in arrival order; what a shard yields depends on that shard alone.
    """

    def __init__(self, side: str, shards: int, directory: str | None = None):
        self.side = side
        self.shards = shards
        self.directory = directory
        self._pool: InOrderPool | None = None

    def start_bundle(self):
        self.teardown()  # a bundle that failed half-way may have left its pool
        self._pool = InOrderPool(workers=2, depth=2)

    def process(self, element):
        assert self._pool is not None
        for counts, pieces in self._pool.submit(self._join, element):
            yield from self._hand_on(counts, pieces)

    def finish_bundle(self):
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        try:
            outputs = [out for counts, pieces in pool.drain() for out in self._hand_on(counts, pieces)]
        finally:
            pool.close()
        yield from in_global_window(outputs)

    def teardown(self):
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _hand_on(self, counts: dict[str, int] | None, pieces: list):
        """A shard's outputs, on the runner's thread (Beam counters live there)."""
        if counts is not None:
            bump(STAGE, counts)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        yield from pieces

    def _join(self, element) -> tuple[dict[str, int] | None, list[tuple[int, tuple[str, bytes]]]]:
        """One shard's work (any thread): its counts (None when it had no edges) and, on
        the citing side, its documents and `(cited shard, edges)` pieces, tagged for the
        cited join (the cited side writes instead)."""
        shard, values = element
        parts = untag(values, "docs", "edges")
        docs = cg.to_frame(parts["docs"], DOC_KEYS)
        if docs.height:
            docs = docs.group_by("doi").agg(pl.col("has_abstract").any(), pl.col("paper_id").max())
        # The citing side hands its shard's documents on to the cited join (same DOI shards),
        # so that join reads one PCollection (see `ReadInputs`); shard 0 always goes on.
        forward = [(shard, ("docs", to_ipc(docs.to_arrow())))] if self.side == "citing" else []
        edges = cg.to_frame(parts["edges"], EDGE_SCHEMA if self.side == "citing" else CITATIONS)
        if not edges.height:
            if self.side == "cited" and shard == 0:
                self._write(shard, edges)
            return None, forward
        counts: dict[str, int] = {}
        if self.side == "citing":
            edges, counts = cg.dedup_edges(edges)
        edges, c = cg.filter_side(edges, docs, self.side)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
        if self.side == "cited":
            counts["edges_kept"] = edges.height
            if edges.height or shard == 0:
                self._write(shard, edges)
            return counts, []
        return counts, forward + tagged("edges", cg.shard_pieces(edges, "cited_doi", self.shards))

    def _write(self, shard: int, edges: pl.DataFrame) -> None:
        """The shard's part file: the `_WriteShard` table (CITATIONS schema, sorted by
        citing then cited DOI, one chunk), sorted in polars rather than Arrow (faster; the
        pairs are unique after deduplication, so the order is total and the same)."""
        assert self.directory is not None
        table = cg.sorted_citations(edges).to_arrow().cast(CITATIONS).combine_chunks()
        parquet_io.write_table(table, parquet_io.part_path(self.directory, shard, self.shards))


# ---------------------------------------------------------------- pipeline

