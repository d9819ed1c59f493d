"""The `pairs` stage's Beam graph (wiring only). The flags, input checks and the run
are in `openmsd_build.pairs.command`; what the stage decides is described there and in
the rule modules of `openmsd_build.pairs`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apache_beam as beam

from openmsd_build.core import layout, spill
from openmsd_build.core.beam_io import COUNTS_TAG, WriteCounts, merge_counts, read_parts
from openmsd_build.pairs.beam import (
    ATTRS,
    EDGES,
    NAMES,
    STAGE,
    AnnotateCited,
    AnnotateCiting,
    EnumerateBC,
    HighNamesAndWrite,
    KeyEdges,
    Lookups,
    LowNames,
    NegativeNames,
    citation_columns,
    grouped,
)


def build(pipeline, out: str, shards: int, max_degree: int, negatives: int = 0, mixes: Sequence[str] = (),
          dest: str | None = None) -> None:
    """Wire the stage into `pipeline`: reads splits/ and citations/ from `out`, writes
    pairs/, negatives/ and stats under `dest` (the staging root, default `out`)."""
    dest = dest or out
    root = spill.spill_root(dest, STAGE)  # every shuffle moves paths; rows go through files
    splits = read_parts(pipeline, layout.splits_dir(out), ["doi", "paper_id", "split", "language"], "Splits")
    lookup = splits | "Lookups" >> beam.ParDo(Lookups(shards, root)).with_output_types(Any).with_outputs(NAMES, main=ATTRS)
    attrs, names = lookup[ATTRS], lookup[NAMES]
    citations = read_parts(pipeline, layout.citations_dir(out), citation_columns(out), "Citations")
    keyed = citations | "KeyEdges" >> beam.ParDo(KeyEdges(shards, root)).with_output_types(Any).with_outputs(
        COUNTS_TAG, main=EDGES)
    counts = [keyed[COUNTS_TAG]]
    e1 = grouped((attrs, keyed[EDGES]), "E1") | "AnnotateCited" >> beam.ParDo(
        AnnotateCited(shards, root)).with_output_types(Any).with_outputs(COUNTS_TAG, main=EDGES)
    e2 = grouped((attrs, e1[EDGES]), "E2") | "AnnotateCiting" >> beam.ParDo(
        AnnotateCiting(shards, max_degree, negatives, root)).with_output_types(Any).with_outputs(
        COUNTS_TAG, "pairs", "anchor", main="members")
    e3 = grouped((e2.members,), "E3") | "EnumerateBC" >> beam.ParDo(
        EnumerateBC(shards, max_degree, negatives, root)).with_output_types(Any).with_outputs(COUNTS_TAG, "cand", main="pairs")
    counts += [e1[COUNTS_TAG], e2[COUNTS_TAG], e3[COUNTS_TAG]]
    p1 = grouped((names, e2.pairs, e3.pairs), "P1") | "LowNames" >> beam.ParDo(
        LowNames(shards, bool(mixes), root)).with_output_types(Any).with_outputs(COUNTS_TAG, "mix_n", main="pairs")
    side = {}
    if mixes:
        totals = p1.mix_n | "MixTotals" >> beam.CombineGlobally(merge_counts)
        side["totals"] = beam.pvalue.AsSingleton(totals)
    p2 = grouped((names, p1.pairs), "P2") | "HighNamesAndWrite" >> beam.ParDo(
        HighNamesAndWrite(dest, shards, mixes, root), **side).with_output_types(Any).with_outputs(COUNTS_TAG, main="none")
    counts += [p1[COUNTS_TAG], p2[COUNTS_TAG]]
    if negatives:
        current = (names, e3.cand, e2.anchor)
        for step in ("a", "b", "c"):
            done = grouped(current, f"N{step}") | f"Negatives{step}" >> beam.ParDo(
                NegativeNames(step, dest, shards, negatives, root)).with_output_types(Any).with_outputs(COUNTS_TAG, main="cand")
            counts.append(done[COUNTS_TAG])
            current = (names, done.cand)
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, STAGE), extra={"stage": STAGE})
    )
