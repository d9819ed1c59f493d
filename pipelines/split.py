"""The `split` stage's Beam graph (wiring only). The flags, input checks and the run
are in `openmsd_build.split.command`; what the stage decides is described there and in
the rule modules of `openmsd_build.split` (the steps are `split.partitioned`)."""

from __future__ import annotations

from dataclasses import asdict

import apache_beam as beam

from openmsd_build.core import layout, spill
from openmsd_build.core.beam_io import COUNTS_TAG, WriteCounts, merge_counts, read_parts
from openmsd_build.split import partitioned as sp
from openmsd_build.split.assign import SplitConfig
from openmsd_build.split.beam import (
    STAGE,
    CheckIds,
    Components,
    Decide,
    DupEdges,
    Finish,
    Groups,
    KeyEdges,
    LanguageSide,
    LinkedDois,
    LinkShard,
    MarkTargets,
    Members,
    Nodes,
    PulledEnglish,
    PulledGroups,
    PulledMembers,
)


def grouped(inputs, label: str):
    """Flatten `(shard, (tag, path))` collections and group them by shard."""
    return inputs | f"Flatten{label}" >> beam.Flatten() | f"Group{label}" >> beam.GroupByKey()


def build(pipeline, out: str, config: SplitConfig, shards: int, dest: str | None = None) -> None:
    """Wire the stage into `pipeline`: reads citations/ and documents/ from `out`, writes
    splits/ and stats under `dest` (the staging root, default `out`)."""
    dest = dest or out
    root = spill.spill_root(dest, STAGE)  # every shuffle moves paths; rows go through files
    citations = read_parts(pipeline, layout.citations_dir(out), ["citing_doi", "cited_doi"], "Citations")
    linked = citations | "LinkedDois" >> beam.ParDo(LinkedDois(shards, root)).with_outputs(COUNTS_TAG, main="keyed")
    docs = read_parts(
        pipeline, layout.documents_dir(out), ["doi", "title", "abstract", "language", "relations"], "Docs"
    ) | "Nodes" >> beam.ParDo(Nodes(shards, root)).with_outputs(COUNTS_TAG, main="keyed")
    nodes = grouped((linked.keyed, docs.keyed), "Link") | "LinkShard" >> beam.ParDo(
        LinkShard(shards, root)).with_outputs(COUNTS_TAG, "languages", "ids", "dups", "rels", main="nodes")
    counts = [linked[COUNTS_TAG], docs[COUNTS_TAG], nodes[COUNTS_TAG]]
    _ = grouped((nodes.ids,), "Ids") | "CheckIds" >> beam.ParDo(CheckIds())

    # Global summary 1: languages (a dict of counts) -> top-K inside each consumer.
    languages = nodes.languages | "LanguageCounts" >> beam.CombineGlobally(merge_counts)
    # Groups: group edges (dedup keys by key, relations by target) -> components -> by doi.
    dup_edges = grouped((nodes.dups,), "Dups") | "DupEdges" >> beam.ParDo(DupEdges(root))
    rel_edges = grouped((nodes.nodes, nodes.rels), "Rels") | "MarkTargets" >> beam.ParDo(MarkTargets(root))
    groups = grouped((dup_edges, rel_edges), "Components") | "Components" >> beam.ParDo(Components(shards, root))
    members = grouped((nodes.nodes, groups), "Members") | "Members" >> beam.ParDo(
        Members(shards, root, config.top_k), beam.pvalue.AsSingleton(languages))
    tables = grouped((members,), "Groups") | "Groups" >> beam.ParDo(Groups(root, config)).with_outputs(
        COUNTS_TAG, "summary", main="tables")
    counts.append(tables[COUNTS_TAG])
    # Global summary 2: rule 5's pool counts and smallest draws -> the IDT cut.
    decision = (
        tables.summary
        | "IdtSummary" >> beam.CombineGlobally(lambda s: sp.merge_summaries(s, config.min_idt_groups))
        | "IdtDecision" >> beam.Map(sp.idt_decision, config)
    )
    counts.append(decision | "SummaryCounts" >> beam.Map(
        lambda d, langs: sp.summary_counts(d, langs, sp.top_from_counts(langs, config.top_k)),
        beam.pvalue.AsSingleton(languages)))
    status = tables.tables | "Decide" >> beam.ParDo(Decide(shards, root, config), beam.pvalue.AsSingleton(
        decision)).with_outputs("gmember", main="status")

    # Rule 7 inputs: edges with both languages, English / non-English only, by the xx end.
    current = citations | "KeyCiting" >> beam.ParDo(KeyEdges("citing", shards, root))
    for side in ("citing", "cited"):
        current = grouped((nodes.nodes, current), side) | f"Lang{side}" >> beam.ParDo(
            LanguageSide(side, shards, root))
    english = grouped((status.status, current), "PullEnglish") | "PulledEnglish" >> beam.ParDo(
        PulledEnglish(shards, root))
    pulled_groups = grouped((status.status, english), "PullGroups") | "PulledGroups" >> beam.ParDo(
        PulledGroups(shards, root))
    pulled = grouped((status.gmember, pulled_groups), "PullMembers") | "PulledMembers" >> beam.ParDo(
        PulledMembers(shards, root))
    final = grouped((status.status, pulled), "Finish") | "Finish" >> beam.ParDo(
        Finish(layout.splits_dir(dest), shards)).with_outputs(COUNTS_TAG, main="none")
    counts.append(final[COUNTS_TAG])
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, STAGE), extra={"stage": STAGE, "config": asdict(config)})
    )
