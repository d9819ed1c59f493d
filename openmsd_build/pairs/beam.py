"""Beam DoFns and helpers of the pairs stage (wired in `pipelines/pairs.py`)."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence

import apache_beam as beam
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import frames, layout, parquet_io, spill, split_rows
from openmsd_build.core.beam_io import COUNTS_TAG, bump
from openmsd_build.pairs import relations as pg
from openmsd_build.schemas import MIXES, NEGATIVES, PAIRS

STAGE = "pairs"
DEFAULT_SHARDS = 16
ATTRS = "attrs"
NAMES = "names"
EDGES = "edges"
INTO, OUT_OF, CAND, ANCHOR = "into", "out_of", "cand", "anchor"


def key(root: str, frame: pl.DataFrame, column: str, shards: int, tag: str, output: str | None = None):
    """(shard, (tag, path)) elements of `frame` keyed by the int id column `column`; the rows
    themselves are spilled to files under `root` (see `split.spill`: the runner's shuffle
    then holds paths, and a shard's consumer reads only its own rows)."""
    pieces = frames.split_by_shard(frame, frames.shard_ints(frame[column], shards))
    for s, value in spill.put(root, tag, pieces):
        yield (s, value) if output is None else beam.pvalue.TaggedOutput(output, (s, value))


def write_split_parts(directory_of, frame: pl.DataFrame, schema: pa.Schema, shard: int, shards: int,
                      prefix: str) -> dict[str, int]:
    """Write one shard's rows into the three split folders `directory_of(split)`."""
    counts: dict[str, int] = {}
    for code, name in enumerate(pg.SPLITS):
        part = frame.filter(pl.col("split") == code)
        table = part.to_arrow().select(schema.names).cast(schema) if part.height else schema.empty_table()
        parquet_io.write_table(table, parquet_io.part_path(directory_of(name), shard, shards))
        counts[f"{prefix}.{name}"] = part.height
    return counts


class Lookups(beam.DoFn):
    """splits rows -> attrs (main) and names (`names`), both keyed by paper_id shard."""

    def __init__(self, shards: int, root: str):
        self.shards = shards
        self.root = root

    def process(self, table: pa.Table):
        lookup = pg.split_codes(pl.from_arrow(table))
        yield from key(self.root, pg.attrs_of(lookup), "paper_id", self.shards, ATTRS)
        yield from key(self.root, pg.names_of(lookup), "paper_id", self.shards, NAMES, NAMES)


class KeyEdges(beam.DoFn):
    def __init__(self, shards: int, root: str):
        self.shards = shards
        self.root = root

    def process(self, table: pa.Table):
        edges = pg.ensure_ids(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"edges_read": edges.height})
        yield from key(self.root, edges, "cited_id", self.shards, EDGES)


def attr_frame(parts) -> pl.DataFrame:
    return frames.to_frame(parts[ATTRS]) if any(t.num_rows for t in parts[ATTRS]) else pg.empty(pg.ATTR_SCHEMA)


def name_frame(parts) -> pl.DataFrame:
    """A shard's (paper_id, doi, lang, split) names without the papers `splits/` lists more
    than once (`core.split_rows`): no pair of theirs survives E1 / E2, and a second row
    would double whatever joined to it."""
    if not any(t.num_rows for t in parts[NAMES]):
        return pg.empty(pg.NAME_SCHEMA)
    return split_rows.drop_listed_twice(frames.to_frame(parts[NAMES]), "paper_id")[0]


def annotate(element, side: str) -> tuple[pl.DataFrame | None, dict[str, int]]:
    """A shard's edges with one end's split and language attached (E1, E2), or None when the
    shard holds no edges; and the counts: edges dropped for that end and, on the cited side
    (E1, which sees every shard's lookup rows once), the papers `splits/` lists twice and
    those it lists in no known split."""
    _, values = element
    parts = spill.load(values, ATTRS, EDGES)
    attrs, twice, unknown = pg.listed_once(attr_frame(parts))
    counts = {"papers_split_ambiguous": len(twice), "papers_split_unknown": unknown} if side == "cited" else {}
    edges = frames.to_frame(parts[EDGES])
    if not edges.height:
        return None, counts
    edges, missing, ambiguous = pg.annotate_side(edges, attrs, side, twice)
    return edges, {**counts, "edges_unannotated": missing, "edges_split_ambiguous": ambiguous}


class AnnotateCited(beam.DoFn):
    """E1: attach the cited end's split/en; re-key by citing id."""

    def __init__(self, shards: int, root: str):
        self.shards = shards
        self.root = root

    def process(self, element):
        edges, counts = annotate(element, "cited")
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)
        if edges is not None:
            yield from key(self.root, edges, "citing_id", self.shards, EDGES)


class AnnotateCiting(beam.DoFn):
    """E2: attach the citing end; DC and CC (C = citing) here; BC members and the
    negatives' edges go on."""

    def __init__(self, shards: int, max_degree: int, negatives: int, root: str):
        self.shards = shards
        self.root = root
        self.max_degree = max_degree
        self.negatives = negatives

    def process(self, element):
        edges, dropped = annotate(element, "citing")
        if edges is None:
            return
        counts: Counter = Counter({**dropped, "edges_annotated": edges.height})
        dc, c = pg.direct_pairs(edges)
        counts.update(c)
        yield from key(self.root, dc, "a", self.shards, "dc", "pairs")
        partial, c = pg.enumerate_pairs(edges.select(pg.member_columns("cc")), "cc", self.max_degree)
        counts.update(c)
        yield from key(self.root, partial, "a", self.shards, "cc", "pairs")
        yield from key(self.root, edges.select(pg.member_columns("bc")), "cited_id", self.shards, "bc")
        if self.negatives:
            into, out_of = pg.negative_edges(edges)
            yield from key(self.root, into, "cited_id", self.shards, INTO)
            yield from key(self.root, out_of, "citing_id", self.shards, OUT_OF)
            yield from key(self.root, edges.select("citing_id", "cited_id"), "citing_id", self.shards, ANCHOR, "anchor")
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class EnumerateBC(beam.DoFn):
    """E3: BC (C = cited) and the negatives' candidate paths through B = this shard's papers."""

    def __init__(self, shards: int, max_degree: int, negatives: int, root: str):
        self.shards = shards
        self.root = root
        self.max_degree = max_degree
        self.negatives = negatives

    def process(self, element):
        _, values = element
        parts = spill.load(values, "bc", INTO, OUT_OF)
        counts: Counter = Counter()
        if parts["bc"]:
            partial, c = pg.enumerate_pairs(frames.to_frame(parts["bc"]), "bc", self.max_degree)
            counts.update(c)
            yield from key(self.root, partial, "a", self.shards, "bc")
        if self.negatives and parts[INTO] and parts[OUT_OF]:
            cand, c = pg.negative_candidates(frames.to_frame(parts[INTO]), frames.to_frame(parts[OUT_OF]), self.negatives,
                                             self.max_degree)
            counts.update(c)
            yield from key(self.root, cand, "a", self.shards, CAND, "cand")
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


def pair_parts(element) -> tuple[int, dict, pl.DataFrame] | None:
    """A shard's pair batches by relation and its paper names (P1, P2), or None when the
    shard holds no pairs."""
    shard, values = element
    parts = spill.load(values, NAMES, *pg.RELATIONS)
    if not any(parts[r] for r in pg.RELATIONS):
        return None
    return shard, parts, name_frame(parts)


class LowNames(beam.DoFn):
    """P1: sum CC/BC partials; attach doi/lang of `a` and the split; re-key by `b`."""

    def __init__(self, shards: int, mixes: bool, root: str):
        self.shards = shards
        self.root = root
        self.mixes = mixes

    def process(self, element):
        grouped = pair_parts(element)
        if grouped is None:
            return
        _, parts, names = grouped
        counts: Counter = Counter()
        named = {}
        for rel in pg.RELATIONS:
            if not parts[rel]:
                continue
            pairs = frames.to_frame(parts[rel])
            if rel != "dc":
                pairs = pg.sum_partials(pairs)
            pairs, missing = pg.attach_low(pairs, names)
            counts["pairs_unmapped"] += missing
            named[rel] = pairs
            yield from key(self.root, pairs, "b", self.shards, rel)
        if self.mixes:
            mix_n = pg.mix_counts(named)
            counts.update(mix_n)
            yield beam.pvalue.TaggedOutput("mix_n", mix_n)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class HighNamesAndWrite(beam.DoFn):
    """P2: attach doi/lang of `b`, finalize and write this shard's parts (and mixes)."""

    def __init__(self, out: str, shards: int, mixes: Sequence[str], root: str):
        self.out = out
        self.shards = shards
        self.root = root
        self.mixes = tuple(mixes)

    def process(self, element, totals=None):
        grouped = pair_parts(element)
        if grouped is None:
            return
        shard, parts, names = grouped
        counts: Counter = Counter()
        named = {}
        for rel in pg.RELATIONS:
            pairs = frames.to_frame(parts[rel]) if parts[rel] else None
            if pairs is None or not pairs.height:
                continue
            pairs, missing = pg.attach_high(pg.sort_pairs(pairs, rel), names)
            counts["pairs_unmapped"] += missing
            named[rel] = pairs
            final = pg.finalize(pairs, rel)
            c = write_split_parts(lambda s, r=rel: layout.pairs_dir(self.out, r, s), final, PAIRS, shard,
                                  self.shards, f"{rel}_pairs")
            if rel != "dc":
                counts.update(c)
        if self.mixes:
            merged = pg.unordered(named)
            for name in self.mixes:
                mix = pg.build_mix(merged, name, totals or {})
                counts.update(write_split_parts(lambda s, n=name: layout.mixes_dir(self.out, n, s), mix, MIXES,
                                                shard, self.shards, f"mix.{name}"))
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class NegativeNames(beam.DoFn):
    """N1 (`step` a): drop Cs the anchor cites, keep N per anchor, anchor names; N2 (b):
    positive names; N3 (c): negative names, write `negatives/`."""

    def __init__(self, step: str, out: str, shards: int, per_anchor: int, root: str):
        self.step = step
        self.out = out
        self.shards = shards
        self.root = root
        self.per_anchor = per_anchor

    def process(self, element):
        shard, values = element
        parts = spill.load(values, NAMES, CAND, ANCHOR)
        if not parts[CAND]:
            return
        cand = frames.to_frame(parts[CAND])
        counts: Counter = Counter()
        if self.step == "a":
            anchor = frames.to_frame(parts[ANCHOR]) if parts[ANCHOR] else pg.empty({"citing_id": pl.Int64,
                                                                                "cited_id": pl.Int64})
            cand, c = pg.select_negatives(cand, anchor, self.per_anchor)
            counts.update(c)
        prefix = {"a": "anchor", "b": "positive", "c": "negative"}[self.step]
        cand, missing = pg.attach_name(cand, name_frame(parts), self.step, prefix)
        counts["negatives_unmapped"] += missing
        if self.step == "c":
            final = pg.finalize_negatives(cand)
            counts.update(write_split_parts(lambda s: layout.negatives_dir(self.out, s), final, NEGATIVES, shard,
                                            self.shards, "negatives"))
        else:
            yield from key(self.root, cand, "b" if self.step == "a" else "c", self.shards, CAND)
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


def grouped(inputs, label: str):
    return inputs | f"Flatten{label}" >> beam.Flatten() | f"Group{label}" >> beam.GroupByKey()


def citation_columns(out: str) -> list[str]:
    """The id columns when `citations/` has them (current builds), else the DOIs."""
    first = parquet_io.list_parts(layout.citations_dir(out))
    if first:
        with FileSystems.open(first[0]) as f:
            names = pq.read_schema(io.BytesIO(f.read())).names
        if "citing_id" in names and "cited_id" in names:
            return ["citing_id", "cited_id"]
    return ["citing_doi", "cited_doi"]

