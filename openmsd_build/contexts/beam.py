"""Beam DoFns of the contexts stage (wired in `pipelines/contexts.py`). Elements are
`(shard, (tag, Arrow IPC bytes))`: documents and reference lists meet by DOI shard, the
co-citation instances are summed by their first DOI, then by their second (each time with
that end's split and language from `splits/`), and each shard writes its own part files."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator

import apache_beam as beam
import polars as pl
import pyarrow as pa

from openmsd_build.contexts import cocitation
from openmsd_build.contexts.extract import iter_document_contexts
from openmsd_build.contexts.references import longest_lists, read_items, reference_lists
from openmsd_build.contexts.resolve import REASONS
from openmsd_build.contexts.spool import ContextSpool
from openmsd_build.core import frames, layout, parquet_io
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, UntypedDoFn, bump, untag
from openmsd_build.core.rejects import make_reject
from openmsd_build.schemas import CONTEXTS, PAIRS

STAGE = "contexts"
DEFAULT_SHARDS = 16
DOCS, REFS, NAMES, PAIRS_TAG = "docs", "refs", "names", "pairs"
REFERENCE_STRUCT = pa.struct([("order", pa.int32()), ("key", pa.string()), ("doi", pa.string()),
                              ("author", pa.string()), ("year", pa.string()), ("unstructured", pa.string())])
REFERENCE_LISTS = pa.schema([("doi", pa.string()), ("references", pa.list_(REFERENCE_STRUCT)),
                             ("listed", pa.int32())])


def _keyed(table: pa.Table | pl.DataFrame, column: str, shards: int, tag: str):
    for shard, data in frames.shard_pieces(table, column, shards):
        yield shard, (tag, data)


def _tagged(values, *names: str) -> dict[str, list]:
    """A shard's grouped values by tag (`GroupShards` adds an empty seed value to shard 0)."""
    return untag((v for v in values if v), *names)


def _counted(counts: Counter | dict):
    counts = {k: v for k, v in counts.items() if v}
    bump(STAGE, counts)
    return beam.pvalue.TaggedOutput(COUNTS_TAG, counts)


class ReadReferenceFile(UntypedDoFn):
    """A Crossref file path -> its reference lists keyed by the citing DOI's shard; every
    record that could not be read, and every work without a valid DOI, is a reject."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, path: str):
        counts: Counter = Counter(crossref_files_read=1)
        rows, failures = reference_lists(read_items(path), counts)
        for reason, origin, detail in failures:
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(STAGE, reason, key=origin, detail=detail,
                                                                   source=path))
        yield _counted(counts)
        if rows:
            yield from _keyed(pa.Table.from_pylist(rows, schema=REFERENCE_LISTS), "doi", self.shards, REFS)


class KeyDocuments(UntypedDoFn):
    """documents/ rows -> those with full text, keyed by DOI shard."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        frame = pl.from_arrow(table)
        with_text = frame.filter(pl.col("content").is_not_null() & (pl.col("content").str.strip_chars() != ""))
        yield _counted({"documents_read": frame.height, "documents_without_content": frame.height - with_text.height})
        yield from _keyed(with_text, "doi", self.shards, DOCS)


class KeyNames(UntypedDoFn):
    """splits/ rows -> (doi, split, lang) lookups keyed by DOI shard."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, table: pa.Table):
        yield from _keyed(cocitation.names_of(pl.from_arrow(table)), "doi", self.shards, NAMES)


class ExtractContexts(UntypedDoFn):
    """One DOI shard: documents with their reference lists -> `contexts/` part file; the
    shard's co-citation instances, summed, keyed by `doi_a`. The rows go to a local spool
    (`contexts.spool`) as they are found, not into one list of the shard: a worker holds the
    shard's reference lists, one batch of full texts and one batch of rows."""

    def __init__(self, dest: str, shards: int):
        self.dest = dest
        self.shards = shards

    @staticmethod
    def _document_batches(values) -> Iterator[pl.DataFrame]:
        """The shard's batches of documents, one decoded at a time."""
        for value in values:
            if value and value[0] == DOCS:
                yield frames.to_frame([value[1]])

    def process(self, element):
        shard, values = element
        counts: Counter = Counter()
        # two passes over the grouped values (re-iterable on every runner): the shard's
        # reference lists first, then its documents one batch at a time, so a worker holds
        # the lists and one batch of full texts, never the whole shard's texts
        refs = [data for v in values if v and v[0] == REFS for data in (v[1],)]
        lists = longest_lists(frames.to_frame(refs).select("doi", "references", "listed").iter_rows(),
                              counts) if refs else {}
        del refs
        instances: Counter = Counter()  # (doi_a, doi_b) -> sentences, summed over the shard
        seen: set[str] = set()
        with tempfile.TemporaryDirectory(prefix="openmsd-contexts-") as tmp, \
                ContextSpool(os.path.join(tmp, "rows.arrow")) as spool:
            for batch in self._document_batches(values):
                for doi, content, language in batch.select("doi", "content", "language").iter_rows():
                    seen.add(doi)
                    references, listed = lists.get(doi, (None, None))
                    counts["documents_with_reference_list" if references else "documents_without_reference_list"] += 1
                    found = spool.add(doi, iter_document_contexts(doi, content, language, references, counts,
                                                                  instances, listed))
                    counts["documents_with_contexts"] += bool(found)
            counts["reference_lists_joined"] += sum(doi in seen for doi in lists)
            counts["reference_lists_without_text"] += sum(doi not in seen for doi in lists)
            if spool.rows or shard == 0:
                parquet_io.write_tables(spool.tables(), CONTEXTS,
                                        parquet_io.part_path(layout.contexts_dir(self.dest), shard, self.shards))
        yield _counted(counts)
        if shard == 0:  # every unresolved reason in the stats, zero included (the report lists them)
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, {f"markers_unresolved.{reason}": 0 for reason in REASONS})
        if instances:
            yield from _keyed(cocitation.partial_supports(instances).sort("doi_a", "doi_b"), "doi_a", self.shards,
                              PAIRS_TAG)


class AttachLow(UntypedDoFn):
    """By `doi_a`: partial supports summed, doi_a's split and language attached; re-keyed by `doi_b`."""

    def __init__(self, shards: int):
        self.shards = shards

    def process(self, element):
        _, values = element
        parts = _tagged(values, NAMES, PAIRS_TAG)
        if not parts[PAIRS_TAG]:
            return
        pairs = cocitation.partial_supports(frames.to_frame(parts[PAIRS_TAG]))
        names = frames.to_frame(parts[NAMES]) if parts[NAMES] else pl.DataFrame(schema=cocitation.NAME_SCHEMA)
        named, missing, ambiguous = cocitation.attach(pairs, names, "a")
        yield _counted({"ccs_instances_missing_end": missing, "ccs_instances_split_ambiguous": ambiguous})
        yield from _keyed(named, "doi_b", self.shards, PAIRS_TAG)


class AttachHighAndWrite(UntypedDoFn):
    """By `doi_b`: doi_b's split and language attached, the split rule applied, and this
    shard's `pairs/ccs/split=*/` part files written."""

    def __init__(self, dest: str, shards: int):
        self.dest = dest
        self.shards = shards

    def process(self, element):
        shard, values = element
        parts = _tagged(values, NAMES, PAIRS_TAG)
        if not parts[PAIRS_TAG]:
            return
        names = frames.to_frame(parts[NAMES]) if parts[NAMES] else pl.DataFrame(schema=cocitation.NAME_SCHEMA)
        named, missing, ambiguous = cocitation.attach(frames.to_frame(parts[PAIRS_TAG]), names, "b")
        per_split, counts = cocitation.finalize(named)
        for split, frame in per_split.items():
            table = frame.to_arrow().cast(PAIRS) if frame.height else PAIRS.empty_table()
            path = parquet_io.part_path(layout.pairs_dir(self.dest, "ccs", split), shard, self.shards)
            parquet_io.write_table(table, path)
        yield _counted({**counts, "ccs_instances_missing_end": missing, "ccs_instances_split_ambiguous": ambiguous})
