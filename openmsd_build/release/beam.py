"""Thin Beam DoFns of `release` and `reconstruct`; the work is in `release.hashes`.

Every join here is a hash-partitioned shuffle of Arrow tables: each side is split into
`(shard, (side, table))` by the stable DOI hash, grouped by shard, and joined inside the
shard with pyarrow, so no step holds more than one shard and nothing relies on one process.
"""

from __future__ import annotations

from collections import Counter

import apache_beam as beam
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import parquet_io, split_rows
from openmsd_build.core.beam_io import bump
from openmsd_build.core.layout import SPLIT_NAMES
from openmsd_build.release.hashes import compare_shard, release_ids, shard_table
from openmsd_build.release.schema import NO_SPLIT, RELEASE_IDS
from openmsd_build.release.verify import file_digest
from openmsd_build.schemas import PAPERS

NAMESPACE = "release"
SPLIT_FOLDERS = (*SPLIT_NAMES, NO_SPLIT)
AMBIGUOUS_TAG = "split_ambiguous"
"""WriteIdsShard's side output: DOIs `splits/` lists more than once (a few per shard)."""
AMBIGUOUS_EXAMPLES = 5
"""How many of those DOIs a shard passes on, and the release's warning and manifest show."""


class ShardTable(beam.DoFn):
    """An Arrow table -> `(shard, (side, rows))` by the stable hash of `key`."""

    def __init__(self, side: str, key: str, num_shards: int):
        self.side = side
        self.key = key
        self.num_shards = num_shards

    def process(self, table):
        for shard, part in shard_table(table, self.key, self.num_shards).items():
            yield shard, (self.side, part)


def _sides(grouped, schemas: dict[str, pa.Schema | None]) -> dict[str, pa.Table | None]:
    by_side: dict[str, list[pa.Table]] = {}
    for side, table in grouped:
        if table is not None and table.num_rows:
            by_side.setdefault(side, []).append(table)
    out: dict[str, pa.Table | None] = {}
    for side, schema in schemas.items():
        tables = by_side.get(side, [])
        if tables:
            out[side] = pa.concat_tables(tables, promote_options="default")
        else:
            out[side] = schema.empty_table() if schema is not None else None
    return out


class WriteIdsShard(beam.DoFn):
    """`(shard, [("docs", t), ("splits", t), ...])` -> `ids/split=S/part-*.parquet` for
    every split folder (shard 0 always writes all four, possibly empty).

    A paper `splits/` lists more than once is in no split (`core.split_rows`, the rule of
    every reader of `splits/`): its document goes to `split=none`, it is counted in
    `papers_split_ambiguous`, and a few of those DOIs (the shard's smallest) go to the
    AMBIGUOUS_TAG output for the warning. A `{doi: split}` of both rows kept whichever row
    came last, so the paper was released in a split that depended on the order of the files,
    while pairs gave it no pair in any split. Every row of a paper is in one shard (the
    shard key is its DOI), so a shard's count is exact and the counts add up."""

    def __init__(self, ids_root: str, num_shards: int):
        self.ids_root = ids_root
        self.num_shards = num_shards

    def process(self, element):
        shard, grouped = element
        sides = _sides(grouped, {"docs": None, "splits": None})
        docs, splits = sides["docs"], sides["splits"]
        split_of, twice = {}, []
        if splits is not None and splits.num_rows:
            rows, listed = split_rows.drop_listed_twice(pl.from_arrow(splits.select(["doi", "split"])), "doi")
            split_of = dict(zip(rows["doi"].to_list(), rows["split"].to_list(), strict=True))
            twice = listed.to_list()
        counts: Counter = Counter()
        if docs is not None and docs.column("doi").null_count:
            # a document row without a DOI (a hand edit) has no id to release under: counted
            counts["documents_without_doi"] += docs.column("doi").null_count
            docs = docs.filter(pc.is_valid(docs.column("doi")))
        ids = release_ids(docs, split_of) if docs is not None else RELEASE_IDS.empty_table()
        for split in SPLIT_FOLDERS:
            part = ids.filter(pc.equal(ids.column("split"), split)) if ids.num_rows else ids
            if part.num_rows or shard == 0:
                path = parquet_io.part_path(parquet_io.join_path(self.ids_root, f"split={split}"), shard, self.num_shards)
                parquet_io.write_table(part, path)
            counts[f"ids.{split}"] += part.num_rows
        counts["splits_without_document"] += len(set(split_of) - set(ids.column("doi").to_pylist()))
        counts["papers_split_ambiguous"] += len(twice)
        bump(NAMESPACE, counts)
        for doi in twice[:AMBIGUOUS_EXAMPLES]:  # sorted: the shard's smallest
            yield beam.pvalue.TaggedOutput(AMBIGUOUS_TAG, doi)
        yield dict(counts)


class FileChecksum(beam.DoFn):
    """A release file path -> `{path, bytes, sha256, rows}` (rows for Parquet files)."""

    def __init__(self, root: str):
        self.root = root.rstrip("/")

    def process(self, path):
        sha256, size = file_digest(path)
        rows = None
        if path.endswith(".parquet"):
            with FileSystems.open(path, compression_type="uncompressed") as f:
                rows = pq.ParquetFile(f).metadata.num_rows
        yield {"path": relative(path, self.root), "bytes": size, "sha256": sha256, "rows": rows}


def relative(path: str, root: str) -> str:
    root = root.rstrip("/") + "/"
    return path[len(root) :] if path.startswith(root) else path


class RestrictPapersShard(beam.DoFn):
    """`(shard, [("papers", t), ("ids", t), ...])` -> the shard's papers whose DOI is in
    the release, written as one sorted Parquet file; yields counts."""

    def __init__(self, directory: str, num_shards: int):
        self.directory = directory
        self.num_shards = num_shards

    def process(self, element):
        shard, grouped = element
        sides = _sides(grouped, {"papers": PAPERS, "ids": pa.schema([("doi", pa.string())])})
        papers, ids = sides["papers"], sides["ids"]
        wanted = pa.array(sorted(set(ids.column("doi").to_pylist())), pa.string())
        kept = papers.filter(pc.is_in(papers.column("doi"), value_set=wanted)) if papers.num_rows else papers
        kept = kept.sort_by([("doi", "ascending")]) if kept.num_rows else kept
        if kept.num_rows or shard == 0:
            parquet_io.write_table(kept.select(PAPERS.names).cast(PAPERS),
                                   parquet_io.part_path(self.directory, shard, self.num_shards))
        found = set(kept.column("doi").to_pylist())
        counts = {
            "papers.read": papers.num_rows,
            "papers.kept": kept.num_rows,
            "papers.not_in_release": papers.num_rows - kept.num_rows,
            "release.dois": len(wanted),
            "release.no_paper_in_inputs": sum(1 for d in wanted.to_pylist() if d not in found),
        }
        bump(NAMESPACE, counts)
        yield counts


MISMATCH_TAG = "mismatches"


class VerifyShard(beam.DoFn):
    """`(shard, [("ids", t), ("docs", t), ...])` -> the shard's counts on the main output
    and its mismatch rows `(shard, rows)` tagged MISMATCH_TAG."""

    def process(self, element):
        shard, grouped = element
        sides = _sides(grouped, {"ids": RELEASE_IDS, "docs": None})
        docs = sides["docs"]
        if docs is None:
            docs = pa.table({"doi": pa.array([], pa.string())})
        counts, mismatches = compare_shard(sides["ids"], docs)
        bump(NAMESPACE, counts)
        if mismatches:
            yield beam.pvalue.TaggedOutput(MISMATCH_TAG, (shard, mismatches))
        yield dict(counts)


def seed_side(pipeline, label: str, side: str, schema: pa.Schema):
    """`(0, (side, empty table))`, so shard 0 always exists in a grouped join."""
    return pipeline | label >> beam.Create([(0, (side, schema.empty_table()))])
