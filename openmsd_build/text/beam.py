"""Thin Beam DoFns of the text stage: plan fetches, fetch a host's URLs politely, extract,
and build document rows. The logic lives in `fetch/`, `extract/` and `documents`.

Fetching is grouped by *host key* (`fetch.plan.shard_host`): one element is one host
shard's list of URLs, fetched in order under that host's rate limit, so politeness holds
however many workers run; big hosts are split into several keys so that no single worker
gets an endless queue.

Documents whose abstract is metadata text meet by a hash of it (`DropSharedAbstracts`): the
same abstract on two DOIs is dropped from both (OpenAlex attaches abstracts to wrong works).

Replay from archives (`warc:`, `cc-index:`, and the resume of `http` from `OUT/warc/`)
needs no politeness and no whole-archive index: `IndexArchive` turns one archive or index
file into index rows, `JoinArchiveIndex` resolves tasks against them one redirect hop per
join round (`fetch.archive_join`), and `FetchAndExtract` replays a resolved unit from the
few records of its chain.
"""

from __future__ import annotations

import io
import itertools
import os
import uuid
from collections import Counter

import apache_beam as beam

from openmsd_build.core import parquet_io
from openmsd_build.core.beam_io import (
    COUNTS_TAG,
    REJECTS_TAG,
    UntypedDoFn,
    bump,
    in_global_window,
    untag,
)
from openmsd_build.core.rejects import make_reject
from openmsd_build.text.documents import SHARED_ABSTRACT, build_document, drop_shared_abstract, shared_abstract_key
from openmsd_build.text.extract.ahead import ahead_key
from openmsd_build.text.fetch.archive_join import DEFAULT_MAX_REDIRECTS, advance, chain_index, lookup_key, new_units
from openmsd_build.text.fetch.plan import canonical_url, host_key, plan_urls, shard_host
from openmsd_build.text.fetch.result import document_kind
from openmsd_build.text.jobs import STAGE_JOBS

STAGE = "text"
FETCH_TAG = "fetch"
FOLLOW_TAG = "follow"
META_TAG = "meta"
PENDING_TAG = "pending"
HOP_TAG = "hop"
SHARED_TAG = "shared"
# What a value is in a redirect round's GroupByKey on canonical URL (`JoinArchiveIndex`): an
# index row, a new fetch task, a unit of an earlier round, or a mark that an archived
# redirect points to the URL. Producers tag their own outputs, so a round is one Flatten
# and one GroupByKey (a CoGroupByKey adds a tagging Map per input and a regrouping Map).
ROW, TASK, UNIT, TARGET = "row", "task", "unit", "target"
META_FIELDS = (
    "doi", "title", "title_source", "abstract", "abstract_source", "publisher_language",
    "year", "venue", "type", "categories", "relations",
)


class PlanFetches(UntypedDoFn):
    """A batch (Arrow table) of papers -> `(doi, meta)` tagged META and fetch tasks
    `(host_key, task)` on the main output, at most `cap` URLs per paper."""

    def __init__(self, cap: int, shards_per_host: int):
        self.cap = cap
        self.shards_per_host = shards_per_host

    def process(self, table):
        counts: Counter = Counter()
        for paper in table.to_pylist():
            meta = {k: paper.get(k) for k in META_FIELDS}
            yield beam.pvalue.TaggedOutput(META_TAG, (paper["doi"], meta))
            planned = plan_urls(paper.get("urls") or [], self.cap)
            counts["papers"] += 1
            counts["papers_with_urls"] += bool(planned)
            has_pdf = any(t.get("kind") == "pdf" for t in planned)
            for task in planned:
                counts[f"planned.{task.get('kind')}"] += 1
                url = task["url"]
                yield shard_host(host_key(url), url, self.shards_per_host), {
                    "doi": paper["doi"], "url": url, "kind": task.get("kind"), "follow": not has_pdf,
                }
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class WholeRecordFile(io.RawIOBase):
    """The file a bundle's WARC is written to, committing whole records only.

    warcio writes a record (one gzip member) in many small writes and calls `flush()` once
    at its end. Here the writes are held in memory and `flush()` appends them to the file in
    one call, so a Ctrl-C, an exception or a kill in the middle of a record leaves the file
    ending on a complete record: `warc/` is the resume store, and a truncated last record
    would replay as a short 200 body on the next run. `close()` drops uncommitted bytes.
    Local files are appended to (the name is new per bundle); other schemes (`gs://`) are
    created through Beam's FileSystems and become visible when closed.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._pending = bytearray()
        if "://" in path and not path.startswith("file://"):
            from apache_beam.io.filesystem import CompressionTypes
            from apache_beam.io.filesystems import FileSystems

            self._out = FileSystems.create(path, mime_type="application/warc",
                                           compression_type=CompressionTypes.UNCOMPRESSED)
        else:
            local = path[len("file://"):] if path.startswith("file://") else path
            os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
            self._out = open(local, "ab")  # noqa: SIM115 - closed in close()

    def writable(self) -> bool:
        """Always writable (until closed)."""
        return not self.closed

    def write(self, data) -> int:  # type: ignore[override]
        """Hold the bytes until the record is complete."""
        self._pending += data
        return len(data)

    def flush(self) -> None:
        """A record ended: append it to the file in one write."""
        if self._pending and not self.closed:
            self._out.write(bytes(self._pending))
            self._out.flush()
            self._pending.clear()

    def close(self) -> None:
        """Close the file; bytes of an unfinished record are dropped, never written."""
        if not self.closed:
            self._pending.clear()
            try:
                self._out.close()
            finally:
                super().close()


class IndexArchive(UntypedDoFn):
    """One archive file -> `(canonical url, ("row", index row))` for each archived response
    (tagged for the redirect rounds' GroupByKey); a count dict tagged COUNTS. `kind` is
    `warc` (scan a WARC) or `cc-index` (read one Parquet file of a Common Crawl index
    extract, WARC names under `warc_prefix`).
    One element per file, so a crawl's files are indexed in parallel and no worker holds
    more than the rows of the file it reads."""

    def __init__(self, kind: str, warc_prefix: str = ""):
        self.kind = kind
        self.warc_prefix = warc_prefix

    def process(self, path: str):
        from openmsd_build.text.fetch import warc_index

        counts: Counter = Counter({"archive.files_indexed": 1})
        if self.kind == "warc":
            rows = warc_index.index_warc_file(path)
        else:
            rows = warc_index.read_cc_index(path, self.warc_prefix)
        for row in rows:
            if self.kind != "warc" and warc_index.needs_location(row):
                row = warc_index.fill_location(row)  # an extract without fetch_redirect
                counts["archive.locations_read"] += 1
            counts["archive.records_indexed"] += 1
            yield row["url"], (ROW, row)
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class JoinArchiveIndex(UntypedDoFn):
    """One round of resolving fetch tasks against the archive index, after a GroupByKey on
    canonical URL of tagged values: `(url, [("row", index row) | ("task", task) |
    ("unit", unit) | ("target", 1), ...])` -> resolved units (main), units moving on to a
    redirect target tagged PENDING as `(target url, ("unit", unit))`, and, when
    `emit_hops`, the URL's index row tagged HOP as `(url, ("row", row))` if some archived
    redirect points to it (the hop index the later, small rounds join with). Both leave
    tagged for the next round. Tasks enter as `task`, units of earlier rounds as `unit`;
    the rules are `fetch.archive_join`."""

    def __init__(self, max_redirects: int = DEFAULT_MAX_REDIRECTS, emit_hops: bool = False):
        self.max_redirects = max_redirects
        self.emit_hops = emit_hops

    def process(self, element):
        from openmsd_build.text.fetch.warc_index import latest_row

        _, values = element
        grouped = untag(values, ROW, TASK, UNIT, TARGET)
        row = latest_row(grouped[ROW])
        if self.emit_hops and row is not None and grouped[TARGET]:
            yield beam.pvalue.TaggedOutput(HOP_TAG, (row["url"], (ROW, row)))
        for unit in new_units(grouped[TASK]) + grouped[UNIT]:
            unit, resolved = advance(unit, row, self.max_redirects)
            if resolved:
                yield unit
            else:
                yield beam.pvalue.TaggedOutput(PENDING_TAG, (lookup_key(unit), (UNIT, unit)))


class FetchAndExtract(UntypedDoFn):
    """Fetch or replay, then extract: elements are either `(host_key, [task, ...])` (live
    fetch, http mode) or a resolved archive unit (a dict from `JoinArchiveIndex`: one URL,
    its tasks and the index entries of its redirect chain). Outputs extractions
    `(doi, extraction)`; fetch rows tagged FETCH; citation_pdf_url follow-ups tagged
    FOLLOW as `(host_key, task)`; extraction failures tagged REJECTS.

    `fetch_spec` is `http`, `warc:GLOB` or `cc-index:GLOB`. In http mode every response
    is archived to a new WARC file under `warc_dir` per bundle; URLs already archived by
    an earlier run arrive as resolved units (counted `fetch.resumed`) and are replayed
    instead of fetched: an interrupted fetch resumes where it stopped and fetches nothing
    twice. A unit is replayed by a `WarcBackend` holding only its chain's entries, which
    answers exactly as one holding the whole archive's index would."""

    def __init__(self, fetch_spec: str, fetch_config, warc_dir: str | None, extract_timeout: float,
                 shards_per_host: int, follow: bool = True, max_redirects: int = DEFAULT_MAX_REDIRECTS,
                 extract_workers: int = 1):
        self.fetch_spec = fetch_spec
        self.fetch_config = fetch_config
        self.warc_dir = warc_dir
        self.extract_timeout = extract_timeout
        self.shards_per_host = shards_per_host
        self.follow = follow
        self.max_redirects = max_redirects
        self.extract_workers = max(1, extract_workers)

    def setup(self):
        from openmsd_build.text.extract.isolate import ExtractorPool

        if self.fetch_spec == "http":
            from openmsd_build.text.fetch.http import HttpFetcher

            self.backend = HttpFetcher(self.fetch_config)
        else:
            self.backend = None
        self.extractors = ExtractorPool(self.extract_workers, extractors=STAGE_JOBS, timeout=self.extract_timeout)
        self.extractors.start()
        self.writer = None
        self.warc_file = None
        self.bundle_counts: Counter = Counter()
        self._units: list[dict] = []  # archive units kept to be replayed from the far end

    def start_bundle(self):
        self._close_warc()  # a failed bundle may have left its file open
        self.extractors.abandon(keep_ahead=True)  # ... and documents in its extractors
        self.extractors.start()  # the children the last bundle handed back (`release`), or new ones
        self.bundle_counts = Counter()
        self._units = []
        # a head start in this process (adopted by the pool just now, or its answers filed):
        # this bundle's archive units are replayed from the far end (`_from_far_end`)
        self._far_end = self.extractors.head_start

    def _writer(self):
        if self.writer is None:
            from openmsd_build.text.fetch.warc_store import WarcWriter

            # A new file per bundle: a retried bundle never appends to a half-written file.
            path = parquet_io.join_path(self.warc_dir, f"fetch-{uuid.uuid4().hex}.warc.gz")
            self.warc_file = WholeRecordFile(path)
            self.writer = WarcWriter(self.warc_file, name=path, start_offset=0)
        return self.writer

    def _close_warc(self):
        # Close the file, not the WarcWriter: WarcWriter.close() would flush (commit) the
        # bytes of a record cut short by an interrupt; WholeRecordFile.close drops them.
        if getattr(self, "warc_file", None) is not None:
            self.warc_file.close()
        self.writer = self.warc_file = None

    def finish_bundle(self):
        """The archive units still kept (`_from_far_end`), then the answers of the documents
        still in the extractors; then the bundle's WARC file is closed. Outputs of
        `finish_bundle` must carry their window (global here)."""
        counts: Counter = Counter()
        try:
            yield from in_global_window(self._from_far_end())
            outputs = [out for done in self.extractors.drain() for out in self._extracted(*done, counts=counts)]
            # idle now: the next stage's pool in this process (the follow-up pass, document
            # building) or this DoFn's next bundle takes the warm children over
            self.extractors.release()
        except BaseException:
            self._stop()
            raise
        finally:
            self._close_warc()
        bump(STAGE, counts)  # the elements' own counts were bumped as they went
        counts.update(self.bundle_counts)
        self.bundle_counts = Counter()
        if counts:
            outputs.append(beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts)))
        yield from in_global_window(outputs)

    def _from_far_end(self):
        """The outputs of the archive units kept by `process` while a head start exists in
        this process, replayed in descending archive position (the archives in the order the
        stage reads them, then the offset of the record each unit resolves to): the opposite
        direction to the head start's (`extract/ahead.py`), which extracts the archives from
        their first record while the worker starts.

        Why: in the order the units arrived (on the real samples, archive order) the DoFn
        first met the documents the head start had done, replaying 40 of them (~4 ms each)
        while the children it had ready sat idle, after waiting 0.13 s for the head start to
        finish its last document; from the far end the children get work at once and the two
        sides meet near where the head start stopped. Only the order differs: each unit is
        handled and counted as `process` would, and every output is sorted downstream. Called
        when `FAR_END_UNITS` are kept and at the end of the bundle."""
        units, self._units = self._units, []
        if not units:
            return
        if self._archive_order is None:
            from openmsd_build.text.extract.ahead import local_archives

            self._archive_order = {path: k for k, path in enumerate(local_archives(self.fetch_spec))}
        order = self._archive_order
        units.sort(key=lambda unit: _archive_position(unit, order), reverse=True)
        for unit in units:
            counts: Counter = Counter()
            yield from self._replay_unit(unit, counts)
            self._counted(counts)

    def teardown(self):
        from openmsd_build.text.extract.isolate import close_spares

        self._close_warc()
        extractors = getattr(self, "extractors", None)
        if extractors is not None:
            extractors.close()
        close_spares()
        backend = getattr(self, "backend", None)
        if backend is not None and hasattr(backend, "close"):
            backend.close()

    def _fetch(self, url: str):
        """Live: (result, warc_file, warc_offset, warc_length) of the archived response."""
        result = self.backend.fetch(url)
        ref = self._writer().write(result)
        if ref is not None:
            return result, ref.warc_file, ref.offset, ref.length
        return result, None, None, None

    def _replay(self, unit: dict, counts: Counter):
        """Archived: (result, warc_file, warc_offset, None) from the unit's chain. The row
        points at the final URL's record as an archive-wide replay did (no length: the
        `fetch/` table of a replay has always left it empty)."""
        from openmsd_build.text.fetch.warc_backend import WarcBackend

        backend = WarcBackend([], index=chain_index(unit), max_redirects=self.max_redirects)
        result = backend.fetch(unit["url"])
        if self.fetch_spec == "http":
            counts["fetch.resumed"] += 1
            where = backend.index.get(canonical_url(result.final_url))
        else:
            where = backend.index.get(canonical_url(result.final_url)) if result.status is not None else None
        return result, (where or (None, None))[0], (where or (None, None))[1], None

    def process(self, element):
        try:
            yield from self._process(element)
        except BaseException:
            self._stop()
            raise

    def _stop(self):
        """Ctrl-C or an error mid-element: close the WARC file now, dropping a record cut
        short, before anything (a garbage-collected wrapper's flush) could commit it;
        documents in the extractors are dropped with their children."""
        self.extractors.abandon()
        self._close_warc()

    # Archive units kept at most before the kept ones are replayed (far end first) and the
    # next kept: a bound on what a bundle holds (a unit is a URL, its papers and its chain's
    # index entries; bodies are read when it is replayed).
    FAR_END_UNITS = 4096
    _far_end = False  # set by `start_bundle`
    _archive_order: dict[str, int] | None = None  # the stage's archives -> their place, when needed

    def _process(self, element):
        if isinstance(element, dict) and self._far_end:
            self._units.append(element)
            if len(self._units) >= self.FAR_END_UNITS:
                yield from self._from_far_end()
            return
        counts: Counter = Counter()
        if isinstance(element, dict):  # a resolved archive unit
            yield from self._replay_unit(element, counts)
        else:
            _, tasks = element
            by_url: dict[str, list[dict]] = {}
            for task in sorted(tasks, key=lambda t: (t["url"], t["doi"])):
                by_url.setdefault(task["url"], []).append(task)
            for url, url_tasks in by_url.items():
                # answers (and deadlines) are looked at between fetches, not only when
                # handing over the next document: a live fetch can take a while
                for done in self.extractors.collect_ready():
                    yield from self._extracted(*done, counts=counts)
                result, *where = self._fetch(url)
                yield from self._handle(url, url_tasks, result, *where, counts=counts)
        self._counted(counts)

    def _counted(self, counts: Counter) -> None:
        bump(STAGE, counts)  # progress, as the element is done
        self.bundle_counts.update(counts)  # one count output per bundle, not per element

    def _replay_unit(self, unit: dict, counts: Counter):
        result, *where = self._replay(unit, counts)
        yield from self._handle(unit["url"], unit["tasks"], result, *where, counts=counts)

    def _handle(self, url: str, tasks: list[dict], result, warc_file, warc_offset, warc_length, *, counts: Counter):
        """One URL's outcome -> its fetch row (named after the first task, by DOI), and its
        body handed to the extractors; the answers ready by now go out (`_extracted`)."""
        first = tasks[0]
        counts["fetch.ok" if result.ok else f"fetch.error.{result.error}"] += 1
        yield beam.pvalue.TaggedOutput(FETCH_TAG, {
            "url": url, "doi": first["doi"], "kind": first.get("kind"), "status": result.status,
            "content_type": result.content_type or None, "bytes": result.n_bytes, "sha1": result.sha1,
            "warc_file": warc_file, "warc_offset": warc_offset, "warc_length": warc_length,
            # replay from an archive keeps the archived date; a URL missing from it has
            # none (a wall-clock time there would make reruns differ)
            "fetched_at": result.fetched_at if result.status is not None or self.fetch_spec == "http" else None,
            "attempts": result.attempts, "error": result.error,
        })
        if not result.ok:
            return
        kind = document_kind(result.body, result.content_type)
        if kind is None:
            yield from self._extracted((url, tasks, None), None, "unsupported_content", result.content_type, counts=counts)
            return
        kwargs = {"url": result.final_url} if kind == "html" else {}
        # answered already if a child extracted this record ahead (`extract/ahead.py`)
        ahead = ahead_key(kind, warc_file, warc_offset, result.final_url) if warc_file is not None else None
        for done in self.extractors.submit((url, tasks, kind), kind, result.body, ahead_key=ahead, **kwargs):
            yield from self._extracted(*done, counts=counts)

    def _extracted(self, tag, extraction, error, detail, *, counts: Counter):
        """One document's answer from the extractors -> its extraction for every task's
        paper, follow-ups, or a reject."""
        url, tasks, kind = tag
        if error:
            counts[f"extract_failed.{error}"] += 1
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(
                STAGE, f"extract_{error}", key=url, detail=detail, source=tasks[0]["doi"]))
            return
        extraction = {**extraction, "kind": "landing" if kind == "html" else "pdf", "url": url}
        counts[f"extracted.{extraction['kind']}"] += 1
        pdf_url = extraction.get("pdf_url")
        for task in tasks:
            yield task["doi"], extraction
            if self.follow and task.get("follow") and extraction["kind"] == "landing" and pdf_url and pdf_url != url:
                counts["follow.citation_pdf_url"] += 1
                yield beam.pvalue.TaggedOutput(FOLLOW_TAG, (
                    shard_host(host_key(pdf_url), pdf_url, self.shards_per_host),
                    {"doi": task["doi"], "url": pdf_url, "kind": "citation_pdf", "follow": False},
                ))


_SLIM_EXTRACTION = ("kind", "url", "title", "abstract", "abstracts", "content", "pdf_url", "language_hints")


def _archive_position(unit: dict, order: dict[str, int]) -> tuple[int, str, int, str]:
    """Where a resolved archive unit's record is (the last entry of its redirect chain): the
    archive's place in `order` (the stage's archives as it reads them), the file, the offset,
    then the unit's URL; first of all when it is not archived."""
    if unit["chain"]:
        _url, warc_file, offset, _length = unit["chain"][-1]
        return order.get(warc_file, -1), warc_file, offset, unit["url"]
    return -2, "", -1, unit["url"]


def slim(extraction: dict) -> dict:
    """Only the fields `build_document` reads travel through the shuffle."""
    return {k: extraction.get(k) for k in _SLIM_EXTRACTION}


def document_counts(row: dict | None, outcome: str) -> dict[str, int]:
    """The counters of one paper's outcome: `documents.<kept or drop reason>`, and for a kept
    document its text source and whether it has an abstract / content."""
    counts = {f"documents.{outcome}": 1}
    if row is not None:
        counts[f"text_source.{row['text_source']}"] = 1
        counts["with_abstract"] = int(row["abstract"] is not None)
        counts["with_content"] = int(row["content"] is not None)
    return counts


def wrong_abstract_counts(dropped: list[tuple[str, str]]) -> Counter:
    """`abstracts_wrong.<reason>` and `abstracts_wrong_by_source.<source>.<reason>` per abstract
    dropped as wrong (not under `documents.`: those count papers and add up to `papers`)."""
    counts: Counter = Counter()
    for source, reason in dropped:
        counts[f"abstracts_wrong.{reason}"] += 1
        counts[f"abstracts_wrong_by_source.{source}.{reason}"] += 1
    return counts


class BuildDocuments(UntypedDoFn):
    """`(doi, {"meta": [meta], "ext": [extraction, ...]})` -> a document row, or a count
    of why the paper was dropped. A document whose abstract is metadata text goes out tagged
    SHARED as `(shared_abstract_key, row)` instead, for `DropSharedAbstracts` to keep or
    change (and count); abstracts dropped as wrong are counted by reason.

    With `workers` > 1 (a local run: the stage's one worker process would build every
    document on one core while the others idle) documents are built by that many child
    processes (`ExtractorPool` running `documents.build_documents_job`), `BATCH_PAPERS`
    papers (or `BATCH_CHARS` characters of the extractions' `content`) a job: sent one at a time, the
    children waited on the worker's round trips for a third of the time. Answers go out as
    they come, the rest at the end of the bundle. A paper that fails there (or a batch
    whose child died) is built again here, so a bug raises with its traceback as it would
    inline."""

    JOBS = STAGE_JOBS  # what its children run (a test swaps in a failing job)
    BATCH_PAPERS = 16
    BATCH_CHARS = 4_000_000

    def __init__(self, workers: int = 1):
        self.workers = workers

    def setup(self):
        self.pool = None
        if self.workers > 1:
            from openmsd_build.text.extract.isolate import ExtractorPool

            # the fetching DoFns' children (same jobs, same limits) are taken over when idle
            self.pool = ExtractorPool(self.workers, extractors=self.JOBS, timeout=600.0)
            self.pool.start()

    def start_bundle(self):
        self._batch: list[tuple[dict, list[dict]]] = []
        self._batch_chars = 0
        if self.pool is not None:
            self.pool.abandon(keep_ahead=True)
            self.pool.start()

    def teardown(self):
        from openmsd_build.text.extract.isolate import close_spares

        if getattr(self, "pool", None) is not None:
            self.pool.close()
        close_spares()

    def process(self, element):
        doi, grouped = element
        metas = list(grouped["meta"])
        extractions = list(grouped["ext"])
        if not metas:  # an extraction for a DOI with no paper cannot happen; count if it does
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"orphan_extractions": len(extractions)})
            return
        if self.pool is None:
            dropped: list[tuple[str, str]] = []
            row, outcome = build_document(metas[0], extractions, dropped)
            yield from self._outputs(row, outcome, dropped)
            return
        self._batch.append((metas[0], extractions))
        self._batch_chars += sum(len(e.get("content") or "") for e in extractions)
        if len(self._batch) >= self.BATCH_PAPERS or self._batch_chars >= self.BATCH_CHARS:
            yield from self._send_batch()

    def _send_batch(self):
        batch, self._batch, self._batch_chars = self._batch, [], 0
        try:
            for tag, answer, error, _detail in self.pool.submit(batch, "documents", b"", papers=batch):
                yield from self._answered(tag, answer, error)
        except BaseException:
            self.pool.abandon()
            raise

    def finish_bundle(self):
        if self.pool is None:
            return
        outputs = list(self._send_batch()) if self._batch else []
        outputs += [out for tag, answer, error, _detail in self.pool.drain() for out in self._answered(tag, answer, error)]
        self.pool.release()
        yield from in_global_window(outputs)

    def _answered(self, batch, answer, error):
        """The outputs of one batch's answer; a paper the child could not build (the whole
        batch when the child died) is built here, where an exception shows its cause."""
        answers = [{"error": error}] * len(batch) if error else answer["answers"]
        for (paper, extractions), one in zip(batch, answers, strict=True):
            if "error" in one:
                dropped: list[tuple[str, str]] = []
                row, outcome = build_document(paper, extractions, dropped)
                yield from self._outputs(row, outcome, dropped)
            else:
                yield from self._outputs(one["row"], one["outcome"], [tuple(d) for d in one["dropped"]])

    def _outputs(self, row, outcome, dropped):
        counts = wrong_abstract_counts(dropped)
        key = shared_abstract_key(row) if row is not None else None
        if key is not None:
            yield beam.pvalue.TaggedOutput(SHARED_TAG, (key, row))
        else:
            counts.update(document_counts(row, outcome))
            if row is not None:
                yield row
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class DropSharedAbstracts(UntypedDoFn):
    """`(abstract key, [row, ...])` after a GroupByKey -> rows. One row alone is kept as it is;
    when two or more DOIs share the metadata abstract it belongs to none of them for sure, so
    each loses it (`documents.drop_shared_abstract`: the next abstract, or the content, keeps
    the paper; else it is dropped as `abstract_duplicate_across_dois`). Counts each row's
    outcome (`BuildDocuments` left them to this step) and `abstracts_wrong.abstract_duplicate_across_dois`.
    The group is streamed (a placeholder text on thousands of DOIs is never held in memory)."""

    def process(self, element):
        _, rows = element
        it = iter(rows)
        first = next(it, None)
        if first is None:
            return
        second = next(it, None)
        counts: Counter = Counter()
        if second is None:
            counts.update(document_counts(first, "kept"))
            yield first
        else:
            for row in itertools.chain((first, second), it):
                counts.update(wrong_abstract_counts([(row["abstract_source"], SHARED_ABSTRACT)]))
                changed, outcome = drop_shared_abstract(row)
                counts.update(document_counts(changed, outcome))
                if changed is not None:
                    yield changed
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class MetadataDocuments(UntypedDoFn):
    """`--fetch none`: a batch of papers -> `(shard, document rows)` from metadata only; rows
    whose abstract is metadata text (all of them, here) go out tagged SHARED as
    `(shared_abstract_key, row)` for `DropSharedAbstracts`, which counts them."""

    def __init__(self, num_shards: int):
        self.num_shards = num_shards

    def process(self, table):
        from openmsd_build.core.hashing import shard_of

        counts: Counter = Counter()
        by_shard: dict[int, list[dict]] = {}
        for paper in table.to_pylist():
            dropped: list[tuple[str, str]] = []
            row, outcome = build_document(paper, (), dropped)
            counts.update(wrong_abstract_counts(dropped))
            counts["papers"] += 1
            key = shared_abstract_key(row) if row is not None else None
            if key is not None:
                yield beam.pvalue.TaggedOutput(SHARED_TAG, (key, row))
                continue
            counts.update(document_counts(row, outcome))
            if row is not None:
                by_shard.setdefault(shard_of(row["doi"], self.num_shards), []).append(row)
        yield from by_shard.items()
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))
