"""Stage 5, `pairs`: DC / CC / BC pairs per split from `citations/` and `splits/`; optional
Specter-style hard negatives and relation mixes.

Wiring only; the per-shard work is `openmsd_build.pairing` (its docstring defines the pairs,
the cap, the negatives, the mixes and every counter). Elements are `(shard, (tag, arrow
table))`; every shard key is `citation_graph.shard_ints` of an int64 paper id, so a paper's
lookup rows and its edges / pairs meet in one shard. Shuffles (`E` carry edges, `P` pairs):

E1. id edges by cited id + (paper_id, split, en) attrs -> cited end annotated;
E2. by citing id + attrs -> citing end annotated. All out-edges of each citing paper are
    here: DC pairs (ids) leave for P1, CC is enumerated (C = citing), partial supports
    leave for P1; the BC members go on;
E3. by cited id: all citers of each C are here: BC enumerated, partials leave for P1;
P1. by the smaller id `a` + (paper_id, doi, lang, split) names: CC/BC partial supports
    summed (a pair's partials all share `a`), doi/lang of `a` and the pair's split attached;
P2. by the larger id `b` + names: doi/lang of `b`, written order fixed, `pairs/{dc,cc,bc}/
    split=*/part-<shard>` written by the shard itself; with `--mixes`, every relation of an
    unordered pair is in this shard too, so the mixes are built and written here (union
    down-sampling reads the global per-relation counts of P1 as a side input).

With `--hard-negatives N`: E2 also sends same-split edges into E3 keyed by their cited
paper B and by their citing paper B (B's in- and out-edges meet), where A -> B -> C paths
become ranked candidates; N1 (by anchor A, with A's out-edges and names) removes Cs that A
cites and keeps N per anchor; N2 (by B) and N3 (by C) attach the other two names, N3 writes
`negatives/split=*/`.

Hot keys: P1 and N1 are keyed by one paper, so a hub's pairs share a shard (as any
per-paper DOI lookup must); the enumeration shards are keyed by C and capped by
`--max-degree`.

Part files are written by the shard's own DoFn (same name and content on a retry, renamed
into place atomically), so the pairs never pass through one more shuffle just to be
written; missing shards get an empty part at the end so every folder holds `--shards` files.
"""

from __future__ import annotations

import argparse
import io
from collections import Counter
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from openmsd_build import citation_graph as cg
from openmsd_build import layout, parquet_io
from openmsd_build import pairing as pg
from openmsd_build.errors import UserError
from openmsd_build.pipelines.citations import COUNTS, read_counts, read_parts, untag
from openmsd_build.runner import pipeline_options
from openmsd_build.schemas import MIXES, NEGATIVES, PAIRS
from openmsd_build.transforms import WriteCounts, bump, merge_counts

STAGE = "pairs"
DEFAULT_SHARDS = 16
ATTRS = "attrs"
NAMES = "names"
EDGES = "edges"
INTO, OUT_OF, CAND, ANCHOR = "into", "out_of", "cand", "anchor"


def _key(frame: pl.DataFrame, column: str, shards: int, tag: str, output: str | None = None):
    """(shard, (tag, table)) elements of `frame` keyed by the int id column `column`."""
    for s, t in cg.split_by_shard(frame, cg.shard_ints(frame[column], shards)):
        yield (s, (tag, t)) if output is None else beam.pvalue.TaggedOutput(output, (s, (tag, t)))


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


class _Lookups(beam.DoFn):
    """splits rows -> attrs (main) and names (`names`), both keyed by paper_id shard."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        lookup = pg.split_codes(pl.from_arrow(table))
        shards = cg.shard_ints(lookup["paper_id"], self.shards)
        for s, t in cg.split_by_shard(pg.attrs_of(lookup), shards):
            yield s, (ATTRS, t)
        for s, t in cg.split_by_shard(pg.names_of(lookup), shards):
            yield beam.pvalue.TaggedOutput(NAMES, (s, (NAMES, t)))


class _KeyEdges(beam.DoFn):
    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        edges = pg.ensure_ids(pl.from_arrow(table))
        yield beam.pvalue.TaggedOutput(COUNTS, {"edges_read": edges.height})
        yield from _key(edges, "cited_id", self.shards, EDGES)


def _attrs(parts) -> pl.DataFrame:
    return cg.to_frame(parts[ATTRS]) if any(t.num_rows for t in parts[ATTRS]) else pg.empty(pg.ATTR_SCHEMA)


def _names(parts) -> pl.DataFrame:
    return cg.to_frame(parts[NAMES]) if any(t.num_rows for t in parts[NAMES]) else pg.empty(pg.NAME_SCHEMA)


class _AnnotateCited(beam.DoFn):
    """E1: attach the cited end's split/en; re-key by citing id."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, element):
        _, values = element
        parts = untag(values, ATTRS, EDGES)
        edges = cg.to_frame(parts[EDGES])
        if not edges.height:
            return
        edges, missing = pg.annotate_side(edges, _attrs(parts), "cited")
        yield beam.pvalue.TaggedOutput(COUNTS, {"edges_unannotated": missing})
        yield from _key(edges, "citing_id", self.shards, EDGES)


class _AnnotateCiting(beam.DoFn):
    """E2: attach the citing end; DC and CC (C = citing) here; BC members and the
    negatives' edges go on."""

    def __init__(self, shards: int, max_degree: int, negatives: int):
        self.shards = shards
        self.max_degree = max_degree
        self.negatives = negatives

    def process(self, element):
        _, values = element
        parts = untag(values, ATTRS, EDGES)
        edges = cg.to_frame(parts[EDGES])
        if not edges.height:
            return
        edges, missing = pg.annotate_side(edges, _attrs(parts), "citing")
        counts: Counter = Counter({"edges_unannotated": missing, "edges_annotated": edges.height})
        dc, c = pg.direct_pairs(edges)
        counts.update(c)
        yield from _key(dc, "a", self.shards, "dc", "pairs")
        partial, c = pg.enumerate_pairs(edges.select(pg.member_columns("cc")), "cc", self.max_degree)
        counts.update(c)
        yield from _key(partial, "a", self.shards, "cc", "pairs")
        yield from _key(edges.select(pg.member_columns("bc")), "cited_id", self.shards, "bc")
        if self.negatives:
            e = pg.negative_edges(edges)
            yield from _key(e, "cited_id", self.shards, INTO)
            yield from _key(e.select("citing_id", "cited_id"), "citing_id", self.shards, OUT_OF)
            yield from _key(edges.select("citing_id", "cited_id"), "citing_id", self.shards, ANCHOR, "anchor")
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS, dict(counts))


class _EnumerateBC(beam.DoFn):
    """E3: BC (C = cited) and the negatives' candidate paths through B = this shard's papers."""

    def __init__(self, shards: int, max_degree: int, negatives: int):
        self.shards = shards
        self.max_degree = max_degree
        self.negatives = negatives

    def process(self, element):
        _, values = element
        parts = untag(values, "bc", INTO, OUT_OF)
        counts: Counter = Counter()
        if parts["bc"]:
            partial, c = pg.enumerate_pairs(cg.to_frame(parts["bc"]), "bc", self.max_degree)
            counts.update(c)
            yield from _key(partial, "a", self.shards, "bc")
        if self.negatives and parts[INTO] and parts[OUT_OF]:
            cand, c = pg.negative_candidates(cg.to_frame(parts[INTO]), cg.to_frame(parts[OUT_OF]), self.negatives,
                                             self.max_degree)
            counts.update(c)
            yield from _key(cand, "a", self.shards, CAND, "cand")
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS, dict(counts))


class _LowNames(beam.DoFn):
    """P1: sum CC/BC partials; attach doi/lang of `a` and the split; re-key by `b`."""

    def __init__(self, shards: int, mixes: bool):
        self.shards = shards
        self.mixes = mixes

    def process(self, element):
        _, values = element
        parts = untag(values, NAMES, *pg.RELATIONS)
        if not any(parts[r] for r in pg.RELATIONS):
            return
        names = _names(parts)
        counts: Counter = Counter()
        named = {}
        for rel in pg.RELATIONS:
            if not parts[rel]:
                continue
            pairs = cg.to_frame(parts[rel])
            if rel != "dc":
                pairs = pg.sum_partials(pairs)
            pairs, missing = pg.attach_low(pairs, names)
            counts["pairs_unmapped"] += missing
            named[rel] = pairs
            yield from _key(pairs, "b", self.shards, rel)
        if self.mixes:
            mix_n = pg.mix_counts(named)
            counts.update(mix_n)
            yield beam.pvalue.TaggedOutput("mix_n", mix_n)
        yield beam.pvalue.TaggedOutput(COUNTS, dict(counts))


class _HighNamesAndWrite(beam.DoFn):
    """P2: attach doi/lang of `b`, finalize and write this shard's parts (and mixes)."""

    def __init__(self, out: str, shards: int, mixes: Sequence[str]):
        self.out = out
        self.shards = shards
        self.mixes = tuple(mixes)

    def process(self, element, totals=None):
        shard, values = element
        parts = untag(values, NAMES, *pg.RELATIONS)
        if not any(parts[r] for r in pg.RELATIONS):
            return
        names = _names(parts)
        counts: Counter = Counter()
        named = {}
        for rel in pg.RELATIONS:
            pairs = cg.to_frame(parts[rel]) if parts[rel] else None
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
        yield beam.pvalue.TaggedOutput(COUNTS, dict(counts))


class _NegativeNames(beam.DoFn):
    """N1 (`step` a): drop Cs the anchor cites, keep N per anchor, anchor names; N2 (b):
    positive names; N3 (c): negative names, write `negatives/`."""

    def __init__(self, step: str, out: str, shards: int, per_anchor: int):
        self.step = step
        self.out = out
        self.shards = shards
        self.per_anchor = per_anchor

    def process(self, element):
        shard, values = element
        parts = untag(values, NAMES, CAND, ANCHOR)
        if not parts[CAND]:
            return
        cand = cg.to_frame(parts[CAND])
        counts: Counter = Counter()
        if self.step == "a":
            anchor = cg.to_frame(parts[ANCHOR]) if parts[ANCHOR] else pg.empty({"citing_id": pl.Int64,
                                                                                "cited_id": pl.Int64})
            cand, c = pg.select_negatives(cand, anchor, self.per_anchor)
            counts.update(c)
        prefix = {"a": "anchor", "b": "positive", "c": "negative"}[self.step]
        cand, missing = pg.attach_name(cand, _names(parts), self.step, prefix)
        counts["negatives_unmapped"] += missing
        if self.step == "c":
            final = pg.finalize_negatives(cand)
            counts.update(write_split_parts(lambda s: layout.negatives_dir(self.out, s), final, NEGATIVES, shard,
                                            self.shards, "negatives"))
        else:
            yield from _key(cand, "b" if self.step == "a" else "c", self.shards, CAND)
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS, dict(counts))


def _grouped(inputs, label: str):
    return inputs | f"Flatten{label}" >> beam.Flatten() | f"Group{label}" >> beam.GroupByKey()


def _citation_columns(out: str) -> list[str]:
    """The id columns when `citations/` has them (current builds), else the DOIs."""
    first = parquet_io.list_parts(layout.citations_dir(out))
    if first:
        with FileSystems.open(first[0]) as f:
            names = pq.read_schema(io.BytesIO(f.read())).names
        if "citing_id" in names and "cited_id" in names:
            return ["citing_id", "cited_id"]
    return ["citing_doi", "cited_doi"]


def build(pipeline, out: str, shards: int, max_degree: int, negatives: int = 0, mixes: Sequence[str] = ()) -> None:
    splits = read_parts(pipeline, layout.splits_dir(out), ["doi", "paper_id", "split", "language"], "Splits")
    lookup = splits | "Lookups" >> beam.ParDo(_Lookups(shards)).with_output_types(Any).with_outputs(NAMES, main=ATTRS)
    attrs, names = lookup[ATTRS], lookup[NAMES]
    citations = read_parts(pipeline, layout.citations_dir(out), _citation_columns(out), "Citations")
    keyed = citations | "KeyEdges" >> beam.ParDo(_KeyEdges(shards)).with_output_types(Any).with_outputs(
        COUNTS, main=EDGES)
    counts = [keyed[COUNTS]]
    e1 = _grouped((attrs, keyed[EDGES]), "E1") | "AnnotateCited" >> beam.ParDo(
        _AnnotateCited(shards)).with_output_types(Any).with_outputs(COUNTS, main=EDGES)
    e2 = _grouped((attrs, e1[EDGES]), "E2") | "AnnotateCiting" >> beam.ParDo(
        _AnnotateCiting(shards, max_degree, negatives)).with_output_types(Any).with_outputs(
        COUNTS, "pairs", "anchor", main="members")
    e3 = _grouped((e2.members,), "E3") | "EnumerateBC" >> beam.ParDo(
        _EnumerateBC(shards, max_degree, negatives)).with_output_types(Any).with_outputs(COUNTS, "cand", main="pairs")
    counts += [e1[COUNTS], e2[COUNTS], e3[COUNTS]]
    p1 = _grouped((names, e2.pairs, e3.pairs), "P1") | "LowNames" >> beam.ParDo(
        _LowNames(shards, bool(mixes))).with_output_types(Any).with_outputs(COUNTS, "mix_n", main="pairs")
    side = {}
    if mixes:
        totals = p1.mix_n | "MixTotals" >> beam.CombineGlobally(merge_counts)
        side["totals"] = beam.pvalue.AsSingleton(totals)
    p2 = _grouped((names, p1.pairs), "P2") | "HighNamesAndWrite" >> beam.ParDo(
        _HighNamesAndWrite(out, shards, mixes), **side).with_output_types(Any).with_outputs(COUNTS, main="none")
    counts += [p1[COUNTS], p2[COUNTS]]
    if negatives:
        current = (names, e3.cand, e2.anchor)
        for step in ("a", "b", "c"):
            done = _grouped(current, f"N{step}") | f"Negatives{step}" >> beam.ParDo(
                _NegativeNames(step, out, shards, negatives)).with_output_types(Any).with_outputs(COUNTS, main="cand")
            counts.append(done[COUNTS])
            current = (names, done.cand)
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(out, STAGE), extra={"stage": STAGE})
    )


def output_dirs(out: str, negatives: int = 0, mixes: Sequence[str] = ()) -> list[tuple[str, pa.Schema]]:
    dirs = [(layout.pairs_dir(out, rel, s), PAIRS) for rel in pg.RELATIONS for s in pg.SPLITS]
    if negatives:
        dirs += [(layout.negatives_dir(out, s), NEGATIVES) for s in pg.SPLITS]
    dirs += [(layout.mixes_dir(out, name, s), MIXES) for name in mixes for s in pg.SPLITS]
    return dirs


def _fill_missing_parts(out: str, shards: int, negatives: int, mixes: Sequence[str]) -> None:
    for directory, schema in output_dirs(out, negatives, mixes):
        for shard in range(shards):
            path = parquet_io.part_path(directory, shard, shards)
            if not FileSystems.exists(path):
                parquet_io.write_table(schema.empty_table(), path)


def run_pairs(
    out: str, beam_args: Sequence[str] = (), shards: int = DEFAULT_SHARDS, max_degree: int = pg.DEFAULT_MAX_DEGREE,
    negatives: int = 0, mixes: Sequence[str] = (),
) -> dict[str, int]:
    """Run the stage and return its counts (also in `_stats/pairs.json`)."""
    if shards < 1 or max_degree < 2 or negatives < 0:
        raise UserError("need --shards >= 1, --max-degree >= 2 and --hard-negatives >= 0")
    for name in mixes:
        try:
            pg.mix_relations(name)
        except ValueError as exc:
            raise UserError(str(exc)) from exc
    # Stale optional outputs of an earlier run must not survive a run without the flag.
    for directory, _ in output_dirs(out, 1, pg.MIX_NAMES + tuple(mixes)):
        parquet_io.clear_directory(directory)
    with beam.Pipeline(options=pipeline_options(beam_args)) as pipeline:
        build(pipeline, out, shards, max_degree, negatives, tuple(mixes))
    _fill_missing_parts(out, shards, negatives, mixes)
    return read_counts(out, STAGE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the build's output root (reads citations/, splits/)")
    parser.add_argument(
        "--max-degree",
        type=int,
        default=pg.DEFAULT_MAX_DEGREE,
        help="skip a C with more references (CC) or citers (BC) than this; counted (default 1000)",
    )
    parser.add_argument("--shards", type=int, default=DEFAULT_SHARDS, help="partitions of shuffles and output files")
    parser.add_argument(
        "--hard-negatives",
        type=int,
        default=0,
        metavar="N",
        help="also write up to N Specter-style hard negatives per anchor to OUT/negatives/split=*/ (default 0: off)",
    )
    parser.add_argument(
        "--mixes",
        nargs="*",
        metavar="NAME",
        help="also write relation mixes to OUT/pairs/mix/<name>/split=*/: unions down-sampled to equal counts "
        "per relation ('dc+cc') and intersections ('dc&cc'); no NAME = all of " + ", ".join(pg.MIX_NAMES),
    )


def run(args: argparse.Namespace, beam_args: Sequence[str]) -> dict[str, int]:
    mixes = getattr(args, "mixes", None)
    mixes = tuple(pg.MIX_NAMES if mixes == [] else (mixes or ()))
    return run_pairs(
        args.out, beam_args, getattr(args, "shards", DEFAULT_SHARDS), getattr(args, "max_degree", pg.DEFAULT_MAX_DEGREE),
        getattr(args, "hard_negatives", 0) or 0, mixes,
    )
