"""The `contexts` stage's Beam graph (wiring only). Flags, input checks and the run are in
`openmsd_build.contexts.command`; the rules in the modules of `openmsd_build.contexts`.

Crossref files -> ReadReferenceFile ─┐
documents/ -> KeyDocuments ──────────┴ by DOI shard -> ExtractContexts -> contexts/ part files
splits/ -> KeyNames ──┬ instances by doi_a -> AttachLow ─┐
                      └──────────────── by doi_b ────────┴ AttachHighAndWrite -> pairs/ccs/split=*/
"""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.contexts.beam import (
    STAGE,
    AttachHighAndWrite,
    AttachLow,
    ExtractContexts,
    KeyDocuments,
    KeyNames,
    ReadReferenceFile,
)
from openmsd_build.core import layout
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, GroupShards, WriteCounts, WriteRejects, read_parts


def build(pipeline, out: str, crossref_files: list[str], shards: int, dest: str | None = None) -> None:
    """Wire the stage into `pipeline`: reads documents/ and splits/ from `out` and the Crossref
    files, writes contexts/, pairs/ccs/, rejects and stats under `dest` (default `out`)."""
    dest = dest or out
    counts = []
    keyed = []
    if crossref_files:
        refs = (
            pipeline
            | "CrossrefFiles" >> beam.Create(crossref_files, reshuffle=False)
            | "SpreadCrossref" >> beam.Reshuffle()
            | "ReadReferences" >> beam.ParDo(ReadReferenceFile(shards)).with_outputs(COUNTS_TAG, REJECTS_TAG, main="refs")
        )
        keyed.append(refs.refs)
        counts.append(refs[COUNTS_TAG])
        _ = refs[REJECTS_TAG] | "WriteRejects" >> WriteRejects(layout.rejects_dir(dest, STAGE))
    docs = read_parts(pipeline, layout.documents_dir(out), ["doi", "content", "language"], "Documents") | (
        "KeyDocuments" >> beam.ParDo(KeyDocuments(shards)).with_outputs(COUNTS_TAG, main="docs"))
    keyed.append(docs.docs)
    counts.append(docs[COUNTS_TAG])
    extracted = (tuple(keyed) | "ByDoi" >> GroupShards()
                 | "ExtractContexts" >> beam.ParDo(ExtractContexts(dest, shards)).with_outputs(COUNTS_TAG, main="pairs"))
    names = read_parts(pipeline, layout.splits_dir(out), ["doi", "split", "language"], "Splits") | (
        "KeyNames" >> beam.ParDo(KeyNames(shards)))
    low = ((names, extracted.pairs) | "ByLowDoi" >> GroupShards()
           | "AttachLow" >> beam.ParDo(AttachLow(shards)).with_outputs(COUNTS_TAG, main="pairs"))
    high = ((names, low.pairs) | "ByHighDoi" >> GroupShards()
            | "AttachHighAndWrite" >> beam.ParDo(AttachHighAndWrite(dest, shards)).with_outputs(COUNTS_TAG, main="none"))
    counts += [extracted[COUNTS_TAG], low[COUNTS_TAG], high[COUNTS_TAG]]
    _ = (
        tuple(counts)
        | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, STAGE), extra={"stage": STAGE, "shards": shards})
    )
