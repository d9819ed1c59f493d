"""The `split` stage's Beam graph (wiring only). The flags, input checks and the run
are in `openmsd_build.split.command`; what the stage decides is described there and in
the rule modules of `openmsd_build.split`."""

from __future__ import annotations

from dataclasses import asdict

import apache_beam as beam

from openmsd_build.core import layout
from openmsd_build.core.beam_io import COUNTS_TAG, WriteCounts, WriteParquetShards, read_parts, tag
from openmsd_build.schemas import SPLITS
from openmsd_build.split.assign import SplitConfig
from openmsd_build.split.beam import (
    NODE_SCHEMA,
    STAGE,
    Assign,
    KeyEdges,
    LanguageSide,
    LinkedDois,
    LinkShard,
    Nodes,
)


def build(pipeline, out: str, config: SplitConfig, shards: int, dest: str | None = None) -> None:
    """Wire the stage into `pipeline`: reads citations/ and documents/ from `out`, writes
    splits/ and stats under `dest` (the staging root, default `out`)."""
    dest = dest or out
    citations = read_parts(pipeline, layout.citations_dir(out), ["citing_doi", "cited_doi"], "Citations")
    linked = citations | "LinkedDois" >> beam.ParDo(LinkedDois(shards)).with_outputs(COUNTS_TAG, main="keyed")
    docs = read_parts(
        pipeline, layout.documents_dir(out), ["doi", "title", "abstract", "language", "relations"], "Docs"
    ) | "Nodes" >> beam.ParDo(Nodes(shards)).with_outputs(COUNTS_TAG, main="keyed")
    nodes = (
        (linked.keyed | "TagLinked" >> beam.Map(tag("linked")), docs.keyed | "TagDocs" >> beam.Map(tag("docs")))
        | "FlattenLink" >> beam.Flatten()
        | "GroupLink" >> beam.GroupByKey()
        | "LinkShard" >> beam.ParDo(LinkShard()).with_outputs(COUNTS_TAG, main="nodes")
    )
    counts = [linked[COUNTS_TAG], docs[COUNTS_TAG], nodes[COUNTS_TAG]]
    tagged_nodes = nodes.nodes | "TagNodes" >> beam.Map(tag("nodes"))
    current = citations | "KeyCiting" >> beam.ParDo(KeyEdges("citing", shards))
    for side in ("citing", "cited"):
        current = (
            (tagged_nodes, current | f"TagEdges{side}" >> beam.Map(tag("edges")))
            | f"Flatten{side}" >> beam.Flatten()
            | f"Group{side}" >> beam.GroupByKey()
            | f"Lang{side}" >> beam.ParDo(LanguageSide(side, shards))
        )
    everything = (
        nodes.nodes | "NodesToOne" >> beam.Map(lambda kv: (0, ("nodes", kv[1]))),
        current | "EdgesToOne" >> beam.Map(lambda t: (0, ("edges", t))),
        pipeline | "EnsureOne" >> beam.Create([(0, ("nodes", NODE_SCHEMA.empty_table()))]),
    )
    assigned = (
        everything
        | "FlattenAll" >> beam.Flatten()
        | "GroupAll" >> beam.GroupByKey()
        | "Assign" >> beam.ParDo(Assign(config, shards)).with_outputs(COUNTS_TAG, main="splits")
    )
    counts.append(assigned[COUNTS_TAG])
    _ = assigned.splits | "WriteSplits" >> WriteParquetShards(layout.splits_dir(dest), SPLITS, shards, sort_by=("doi",))
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, STAGE), extra={"stage": STAGE, "config": asdict(config)})
    )
