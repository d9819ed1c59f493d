"""Stage 5, `pairs`: DC / CC / BC pairs per split from `citations/` and `splits/`.

Wiring only; the per-shard work is `openmsd_build.pairing` (its docstring defines the pairs,
the cap and every counter). Elements are `(shard, (tag, arrow table))`; shuffles:

1. edges by citing DOI + split lookup by DOI -> citing end annotated (id, split, lang, en);
2. by cited DOI + lookup -> cited end annotated. DC pairs are final here and written
   directly (`pairs/dc/split=*/part-<shard>`); the id-only edges go on, tagged cc and bc;
3. by C (citing id for CC, cited id for BC): enumerate same-split pairs per C with a
   polars self-join, capped by `--max-degree`, partial supports summed in the shard;
4. by pair hash (both ids, so hub papers do not make hot keys): supports summed;
5. by id of A + lookup by paper_id: doi_a, lang_a; 6. by id of B + lookup: doi_b, lang_b,
   canonical DOI order, lang_class; each shard writes its `pairs/{cc,bc}/split=*/` parts.

Part files are written by the shard's own DoFn (same name and content on a retry, renamed
into place atomically), so the pairs never pass through one more shuffle just to be
written; missing shards get an empty part at the end so every folder holds `--shards` files.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
import polars as pl
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from openmsd_build import citation_graph as cg
from openmsd_build import layout, parquet_io
from openmsd_build import pairing as pg
from openmsd_build.errors import UserError
from openmsd_build.pipelines.citations import COUNTS, read_counts, read_parts, untag
from openmsd_build.runner import pipeline_options
from openmsd_build.schemas import PAIRS
from openmsd_build.transforms import WriteCounts, bump

STAGE = "pairs"
DEFAULT_SHARDS = 16
RELATIONS = ("cc", "bc")
LOOKUP = "lookup"


def write_pair_parts(out: str, relation: str, frame: pl.DataFrame, shard: int, shards: int) -> dict[str, int]:
    """Write one shard's pairs of `relation` into its three split folders; returns counts."""
    counts: dict[str, int] = {}
    for code, name in enumerate(pg.SPLITS):
        part = frame.filter(pl.col("split") == code).drop("split")
        part = part.sort("doi_a", "doi_b") if relation == "dc" else part  # CC/BC arrive sorted by ids
        table = part.to_arrow().select(PAIRS.names).cast(PAIRS) if part.height else PAIRS.empty_table()
        parquet_io.write_table(table, parquet_io.part_path(layout.pairs_dir(out, relation, name), shard, shards))
        counts[f"{relation}_pairs.{name}"] = part.height
    return counts


class _SplitLookup(beam.DoFn):
    """splits rows -> the lookup keyed by DOI shard (main) and by paper_id shard (`by_id`)."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        lookup = pg.split_codes(pl.from_arrow(table))
        for shard, t in cg.split_by_shard(lookup, cg.shard_strings(lookup["doi"], self.shards)):
            yield shard, (LOOKUP, t)
        ids = lookup.select("paper_id", "doi", "lang")
        for shard, t in cg.split_by_shard(ids, cg.shard_ints(ids["paper_id"], self.shards)):
            yield beam.pvalue.TaggedOutput("by_id", (shard, (LOOKUP, t)))


class _KeyCiting(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        df = pl.from_arrow(table)
        yield beam.pvalue.TaggedOutput(COUNTS, {"edges_read": df.height})
        for shard, t in cg.split_by_shard(df, cg.shard_strings(df["citing_doi"], self.shards)):
            yield shard, ("edges", t)


class _Annotate(beam.DoFn):
    """Join one shard's edges with the same shard's split lookup on `side`'s DOI."""

    def __init__(self, side: str, out: str, shards: int):
        self.side = side
        self.out = out
        self.shards = shards

    def process(self, element):
        shard, values = element
        parts = untag(values, LOOKUP, "edges")
        edges = cg.to_frame(parts["edges"])
        if not edges.height:
            return
        lookup = cg.to_frame(parts[LOOKUP])
        if not lookup.height:
            lookup = pg.split_codes(pl.DataFrame(schema={"doi": pl.String, "paper_id": pl.Int64,
                                                         "split": pl.String, "language": pl.String}))
        edges, missing = pg.annotate_side(edges, lookup, self.side)
        counts: Counter = Counter({"edges_unannotated": missing})
        if self.side == "citing":
            for s, t in cg.split_by_shard(edges, cg.shard_strings(edges["cited_doi"], self.shards)):
                yield s, ("edges", t)
        else:
            counts["edges_annotated"] = edges.height
            dc, c = pg.direct_pairs(edges)
            counts.update(c)
            write_pair_parts(self.out, "dc", pg.finalize(dc, unordered=False), shard, self.shards)
            ids = edges.select(pg.EDGE_COLUMNS)
            for rel in RELATIONS:
                key = ids[pg.c_key(rel)]
                for s, t in cg.split_by_shard(ids, cg.shard_ints(key, self.shards)):
                    yield beam.pvalue.TaggedOutput("by_c", (s, (rel, t)))
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS, dict(counts))


class _Enumerate(beam.DoFn):
    def __init__(self, max_degree: int, shards: int):
        self.max_degree = max_degree
        self.shards = shards

    def process(self, element):
        _, values = element
        parts = untag(values, *RELATIONS)
        for rel in RELATIONS:
            if not parts[rel]:
                continue
            partial, counts = pg.enumerate_pairs(cg.to_frame(parts[rel]), rel, self.max_degree)
            bump(STAGE, counts)
            yield beam.pvalue.TaggedOutput(COUNTS, counts)
            shards = pg.pair_shards(partial["a"].to_numpy(), partial["b"].to_numpy(), self.shards)
            for s, t in cg.split_by_shard(partial, shards):
                yield s, (rel, t)


class _Sum(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, element):
        _, values = element
        parts = untag(values, *RELATIONS)
        for rel in RELATIONS:
            if parts[rel]:
                pairs = pg.sum_partials(cg.to_frame(parts[rel]))
                for s, t in cg.split_by_shard(pairs, cg.shard_ints(pairs["a"], self.shards)):
                    yield s, (rel, t)


class _Lookup(beam.DoFn):
    """Attach doi/lang of `side` ('a' then 'b'); after 'b', finalize and write the shard."""

    def __init__(self, side: str, out: str, shards: int):
        self.side = side
        self.out = out
        self.shards = shards

    def process(self, element):
        shard, values = element
        parts = untag(values, LOOKUP, *RELATIONS)
        if not any(parts[rel] for rel in RELATIONS):
            return
        lookup = cg.to_frame(parts[LOOKUP])
        counts: Counter = Counter()
        for rel in RELATIONS:
            if not parts[rel]:
                continue
            pairs = cg.to_frame(parts[rel])
            if not lookup.height:
                counts["pairs_unmapped"] += pairs.height
                continue
            pairs, missing = pg.attach_dois(pairs, lookup, self.side)
            counts["pairs_unmapped"] += missing
            if self.side == "a":
                for s, t in cg.split_by_shard(pairs, cg.shard_ints(pairs["b"], self.shards)):
                    yield s, (rel, t)
            else:
                final = pg.finalize(pairs.sort("a", "b"), unordered=True)
                counts.update(write_pair_parts(self.out, rel, final, shard, self.shards))
        yield beam.pvalue.TaggedOutput(COUNTS, dict(counts))


def _grouped(inputs, label: str):
    return inputs | f"Flatten{label}" >> beam.Flatten() | f"Group{label}" >> beam.GroupByKey()


def build(pipeline, out: str, shards: int, max_degree: int) -> None:
    splits = read_parts(pipeline, layout.splits_dir(out), ["doi", "paper_id", "split", "language"], "Splits")
    lookup = splits | "Lookup" >> beam.ParDo(_SplitLookup(shards)).with_output_types(Any).with_outputs("by_id", main="by_doi")
    citations = read_parts(pipeline, layout.citations_dir(out), ["citing_doi", "cited_doi"], "Citations")
    keyed = citations | "KeyCiting" >> beam.ParDo(_KeyCiting(shards)).with_output_types(Any).with_outputs(COUNTS, main="edges")
    counts = [keyed[COUNTS]]
    citing = _grouped((lookup.by_doi, keyed.edges), "Citing") | "AnnotateCiting" >> beam.ParDo(
        _Annotate("citing", out, shards)).with_output_types(Any).with_outputs(COUNTS, main="edges")
    cited = _grouped((lookup.by_doi, citing.edges), "Cited") | "AnnotateCited" >> beam.ParDo(
        _Annotate("cited", out, shards)).with_output_types(Any).with_outputs(COUNTS, "by_c")
    counts += [citing[COUNTS], cited[COUNTS]]
    enumerated = _grouped((cited.by_c,), "ByC") | "Enumerate" >> beam.ParDo(
        _Enumerate(max_degree, shards)).with_output_types(Any).with_outputs(COUNTS, main="partials")
    counts.append(enumerated[COUNTS])
    summed = _grouped((enumerated.partials,), "ByPair") | "Sum" >> beam.ParDo(_Sum(shards)).with_output_types(Any)
    side_a = _grouped((lookup.by_id, summed), "ByA") | "LookupA" >> beam.ParDo(
        _Lookup("a", out, shards)).with_output_types(Any).with_outputs(COUNTS, main="pairs")
    side_b = _grouped((lookup.by_id, side_a.pairs), "ByB") | "LookupB" >> beam.ParDo(
        _Lookup("b", out, shards)).with_output_types(Any).with_outputs(COUNTS, main="none")
    counts += [side_a[COUNTS], side_b[COUNTS]]
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(out, STAGE), extra={"stage": STAGE})
    )


def _fill_missing_parts(out: str, shards: int) -> None:
    for rel in ("dc", *RELATIONS):
        for split in pg.SPLITS:
            for shard in range(shards):
                path = parquet_io.part_path(layout.pairs_dir(out, rel, split), shard, shards)
                if not FileSystems.exists(path):
                    parquet_io.write_table(PAIRS.empty_table(), path)


def run_pairs(
    out: str, beam_args: Sequence[str] = (), shards: int = DEFAULT_SHARDS, max_degree: int = pg.DEFAULT_MAX_DEGREE
) -> dict[str, int]:
    """Run the stage and return its counts (also in `_stats/pairs.json`)."""
    if shards < 1 or max_degree < 2:
        raise UserError("need --shards >= 1 and --max-degree >= 2")
    for rel in ("dc", *RELATIONS):
        for split in pg.SPLITS:
            parquet_io.clear_directory(layout.pairs_dir(out, rel, split))
    with beam.Pipeline(options=pipeline_options(beam_args)) as pipeline:
        build(pipeline, out, shards, max_degree)
    _fill_missing_parts(out, shards)
    counts = read_counts(out, STAGE)
    return counts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the build's output root (reads citations/, splits/)")
    parser.add_argument(
        "--max-degree",
        type=int,
        default=pg.DEFAULT_MAX_DEGREE,
        help="skip a C with more references (CC) or citers (BC) than this; counted (default 1000)",
    )
    parser.add_argument("--shards", type=int, default=DEFAULT_SHARDS, help="partitions of shuffles and output files")


def run(args: argparse.Namespace, beam_args: Sequence[str]) -> dict[str, int]:
    return run_pairs(
        args.out, beam_args, getattr(args, "shards", DEFAULT_SHARDS), getattr(args, "max_degree", pg.DEFAULT_MAX_DEGREE)
    )
