"""The `text` stage's Beam graph (wiring only).

With `--fetch none` papers become documents from their metadata in batches. With
`--fetch http` or `--fetch warc:GLOB`:

    papers -> PlanFetches -> (host key, task) -> GroupByKey -> FetchAndExtract
           -> citation_pdf_url follow-ups -> GroupByKey -> FetchAndExtract (no follow)
    meta + extractions -> CoGroupByKey(doi) -> BuildDocuments -> documents/

Flags and input checks are in `openmsd_build.text.command`.
"""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, ShardRows, WriteCounts, WriteParquetShards, WriteRejects
from openmsd_build.schemas import DOCUMENTS, FETCH
from openmsd_build.text.beam import (
    FETCH_TAG,
    FOLLOW_TAG,
    META_FIELDS,
    META_TAG,
    BuildDocuments,
    FetchAndExtract,
    MetadataDocuments,
    PlanFetches,
    slim,
)
from openmsd_build.text.fetch.config import FetchConfig


def build(
    p,
    out: str,
    fetch: str,
    fetch_config: FetchConfig,
    num_shards: int,
    resume: list[str],
    cap: int = 3,
    host_shards: int = 4,
    extract_timeout: float = 60.0,
    follow: bool = True,
    dest: str | None = None,
) -> None:
    """Add the stage to pipeline `p` (`fetch` is none | http | warc:GLOB; `resume` the WARC
    files of an earlier fetch into `out`). `papers/` is read from `out`; documents/, fetch/,
    rejects and stats are written under `dest` (the staging root, default `out`); new WARC
    files go to `out`'s own `warc/`, the append-only resume store that is never staged."""
    dest = dest or out
    docs_dir, fetch_dir, warc_dir = layout.documents_dir(dest), layout.fetch_dir(dest), layout.warc_dir(out)
    columns = list(META_FIELDS) + (["urls"] if fetch != "none" else [])
    papers = p | "ReadPapers" >> beam.io.ReadFromParquetBatched(
        parquet_io.join_path(layout.papers_dir(out), "*.parquet"), columns=columns)
    if fetch == "none":
        docs = papers | "FromMetadata" >> beam.ParDo(MetadataDocuments(num_shards)).with_outputs(
            COUNTS_TAG, main="docs")
        doc_shards, counts = docs.docs, [docs[COUNTS_TAG]]
        rejects = []
    else:
        planned = papers | "PlanFetches" >> beam.ParDo(PlanFetches(cap, host_shards)).with_outputs(
            META_TAG, COUNTS_TAG, main="tasks")
        fetcher = FetchAndExtract(fetch, fetch_config, warc_dir, resume, extract_timeout,
                                  host_shards, follow=follow)
        first = (
            planned.tasks
            | "GroupByHost" >> beam.GroupByKey()
            | "Fetch" >> beam.ParDo(fetcher).with_outputs(FETCH_TAG, FOLLOW_TAG, REJECTS_TAG, COUNTS_TAG, main="ext")
        )
        second = (
            first[FOLLOW_TAG]
            | "GroupFollowUps" >> beam.GroupByKey()
            | "FetchFollowUps" >> beam.ParDo(FetchAndExtract(
                fetch, fetch_config, warc_dir, resume, extract_timeout, host_shards, follow=False,
            )).with_outputs(FETCH_TAG, FOLLOW_TAG, REJECTS_TAG, COUNTS_TAG, main="ext")
        )
        extractions = (
            (first.ext, second.ext) | "AllExtractions" >> beam.Flatten()
            | "Slim" >> beam.MapTuple(lambda doi, ext: (doi, slim(ext)))
        )
        built = (
            {"meta": planned[META_TAG], "ext": extractions}
            | "JoinByDoi" >> beam.CoGroupByKey()
            | "BuildDocuments" >> beam.ParDo(BuildDocuments()).with_outputs(COUNTS_TAG, main="rows")
        )
        doc_shards = (
            built.rows
            | "BatchDocs" >> beam.BatchElements(min_batch_size=500, max_batch_size=5000)
            | "ShardDocs" >> beam.ParDo(ShardRows("doi", num_shards))
        )
        _ = (
            (first[FETCH_TAG], second[FETCH_TAG])
            | "AllFetchRows" >> beam.Flatten()
            | "BatchFetchRows" >> beam.BatchElements(min_batch_size=500, max_batch_size=5000)
            | "ShardFetchRows" >> beam.ParDo(ShardRows("url", num_shards))
            | "WriteFetch" >> WriteParquetShards(fetch_dir, FETCH, num_shards, sort_by=("url", "doi"))
        )
        counts = [planned[COUNTS_TAG], first[COUNTS_TAG], second[COUNTS_TAG], built[COUNTS_TAG]]
        rejects = [first[REJECTS_TAG], second[REJECTS_TAG]]
    _ = doc_shards | "WriteDocuments" >> WriteParquetShards(docs_dir, DOCUMENTS, num_shards, sort_by=("doi",))
    if rejects:
        _ = tuple(rejects) | "AllRejects" >> beam.Flatten() | "WriteRejects" >> WriteRejects(
            layout.rejects_dir(dest, "text"))
    _ = (
        tuple(counts) | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, "text"), {"stage": "text", "fetch": fetch})
    )
