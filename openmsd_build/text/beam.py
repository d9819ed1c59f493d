"""Thin Beam DoFns of the text stage: plan fetches, fetch a host's URLs politely, extract,
and build document rows. The logic lives in `fetch/`, `extract/` and `documents`.

Fetching is grouped by *host key* (`fetch.plan.shard_host`): one element is one host
shard's list of URLs, fetched in order under that host's rate limit, so politeness holds
however many workers run; big hosts are split into several keys so that no single worker
gets an endless queue.

Extraction does only the work a paper can use, decided where the document is read once:
every fetch task carries its paper's `title_keys` (`documents.printed_title_evidence`), and
a PDF's printed title is looked for only when one of its papers needs it
(`documents.printed_title_needed`, counted `pdf_title.not_needed` when none does); a
landing page's main text waits for the papers that need it (`main_text_later`,
`CompleteMainText`).

Documents whose abstract is metadata text meet by a hash of it (`DropSharedAbstracts`): the
same abstract on two DOIs is dropped from both (OpenAlex attaches abstracts to wrong works).

Replay from archives (`warc:`, `cc-index:`, and the resume of `http` from `OUT/warc/`)
needs no politeness and no whole-archive index: `IndexArchive` turns one archive or index
file into index rows, `JoinArchiveIndex` resolves tasks against them one redirect hop per
join round (`fetch.archive_join`), and `ReplayArchive` replays a resolved unit from the
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
    Bumps,
    UntypedDoFn,
    bump,
    in_global_window,
    untag,
)
from openmsd_build.core.rejects import make_reject
from openmsd_build.text.documents import (
    SHARED_ABSTRACT,
    TITLE_NOT_NEEDED,
    build_document,
    drop_shared_abstract,
    main_text_needed,
    main_text_needed_unbuilt,
    printed_title_evidence,
    shared_abstract_key,
)
from openmsd_build.text.fetch.archive_join import DEFAULT_MAX_REDIRECTS, advance, chain_index, lookup_key, new_units
from openmsd_build.text.fetch.plan import canonical_url, host_key, plan_urls, shard_host
from openmsd_build.text.fetch.result import RECORD_UNREADABLE, document_kind
from openmsd_build.text.jobs import STAGE_JOBS

STAGE = "text"
FETCH_TAG = "fetch"
FOLLOW_TAG = "follow"
META_TAG = "meta"
PENDING_TAG = "pending"
HOP_TAG = "hop"
SHARED_TAG = "shared"
MAIN_TEXT_TAG = "main_text"
MATCHED_TAG = "matched"
# What a value is in a redirect round's GroupByKey on canonical URL (`JoinArchiveIndex`): an
# index row, a new fetch task, a unit of an earlier round, or a mark that an archived
# redirect points to the URL. Producers tag their own outputs, so a round is one Flatten
# and one GroupByKey (a CoGroupByKey adds a tagging Map per input and a regrouping Map).
ROW, TASK, UNIT, TARGET = "row", "task", "unit", "target"
# What a value is in the GroupByKey on DOI before `BuildDocuments`: a paper's metadata
# (`PlanFetches`, output META_TAG) or one of its extractions (the fetching DoFns' main
# output), tagged by their producers for the same reason.
META, EXT = "meta", "ext"
META_FIELDS = (
    "doi", "title", "title_source", "titles", "abstract", "abstract_source", "publisher_language",
    "year", "venue", "type", "categories", "relations",
)


class PlanFetches(UntypedDoFn):
    """A batch (Arrow table) of papers -> `(doi, ("meta", meta))` tagged META_TAG and fetch
    tasks `(host_key, task)` on the main output, at most `cap` URLs per paper. Every task
    carries its paper's `title_keys` (`documents.printed_title_evidence`): any URL may answer
    a PDF, whose extractor looks for the printed title only when a paper can use it."""

    def __init__(self, cap: int, shards_per_host: int):
        self.cap = cap
        self.shards_per_host = shards_per_host

    def process(self, table):
        counts: Counter = Counter()
        for paper in table.to_pylist():
            meta = {k: paper.get(k) for k in META_FIELDS}
            yield beam.pvalue.TaggedOutput(META_TAG, (paper["doi"], (META, meta)))
            planned = plan_urls(paper.get("urls") or [], self.cap)
            counts["papers"] += 1
            counts["papers_with_urls"] += bool(planned)
            has_pdf = any(t.get("kind") == "pdf" for t in planned)
            title_keys = printed_title_evidence(meta) if planned else None
            for task in planned:
                counts[f"planned.{task.get('kind')}"] += 1
                url = task["url"]
                yield shard_host(host_key(url), url, self.shards_per_host), {
                    "doi": paper["doi"], "url": url, "kind": task.get("kind"), "follow": not has_pdf,
                    "title_keys": title_keys,
                }
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class WholeRecordFile(io.RawIOBase):
    """The file a bundle's WARC is written to, committing whole records only.

    warcio writes a record (one gzip member) in many small writes and calls `flush()` once
    at its end. Here the writes are held in memory and `flush()` appends them to the file in
    one call, so a Ctrl-C, an exception or a kill in the middle of a record leaves the file
    ending on a complete record: `warc/` is the resume store, and a truncated last record
    would replay as a short 200 body on the next run. `close()` drops uncommitted bytes. The
    file is created with its first whole record, so a bundle that archived nothing (a resumed
    fetch replaying everything, a Ctrl-C before the first response) leaves no empty file.
    Local files are appended to (the name is new per bundle); other schemes (`gs://`) are
    created through Beam's FileSystems and become visible when closed.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._pending = bytearray()
        self._out = None  # opened with the first whole record: a bundle that archives none leaves no file

    def _open(self):
        if "://" in self.path and not self.path.startswith("file://"):
            from apache_beam.io.filesystem import CompressionTypes
            from apache_beam.io.filesystems import FileSystems

            return FileSystems.create(self.path, mime_type="application/warc",
                                      compression_type=CompressionTypes.UNCOMPRESSED)
        local = self.path[len("file://"):] if self.path.startswith("file://") else self.path
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        return open(local, "ab")  # noqa: SIM115 - closed in close()

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
            if self._out is None:
                self._out = self._open()
            self._out.write(bytes(self._pending))
            self._out.flush()
            self._pending.clear()

    def close(self) -> None:
        """Close the file; bytes of an unfinished record are dropped, never written."""
        if not self.closed:
            self._pending.clear()
            try:
                if self._out is not None:
                    self._out.close()
            finally:
                super().close()


class IndexArchive(UntypedDoFn):
    """One archive file -> `(canonical url, ("row", index row))` for each archived response
    (tagged for the redirect rounds' GroupByKey); a count dict tagged COUNTS; a file that is
    empty, not a WARC or unreadable is a reject tagged REJECTS naming it (`archive.rejected.*`). `kind` is
    `warc` (scan a WARC) or `cc-index` (read one Parquet file of a Common Crawl index
    extract, WARC names under `warc_prefix`).
    One element per file, so a crawl's files are indexed in parallel and no worker holds
    more than the rows of the file it reads."""

    def __init__(self, kind: str, warc_prefix: str = ""):
        self.kind = kind
        self.warc_prefix = warc_prefix

    def process(self, path: str):
        from openmsd_build.core.paths import describe_failure
        from openmsd_build.text.fetch import warc_index
        from openmsd_build.text.fetch.warc_store import is_remote
        from openmsd_build.text.fetch.warc_stream import ARCHIVE_UNREADABLE, archive_problem

        counts: Counter = Counter({"archive.files_indexed": 1})
        problem = archive_problem(path) if self.kind == "warc" else None
        if problem is None:
            try:
                for row in self._rows(path, counts):
                    counts["archive.records_indexed"] += 1
                    yield row["url"], (ROW, row)
            except Exception as exc:  # noqa: BLE001 - a damaged archive is the user's input: a reject
                if isinstance(exc, OSError) and is_remote(path):
                    raise  # a remote read that failed (maybe for now): Beam retries the file
                problem = (ARCHIVE_UNREADABLE, f"{path}: {describe_failure(exc)}")
        if counts[warc_index.CUT_SHORT]:  # not indexed: each URL is another copy's or missing
            counts["archive.files_cut_short"] += 1  # one reject row per file, as counted
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(
                STAGE, "archive_records_cut_short", key=path,
                detail=f"{counts[warc_index.CUT_SHORT]} response records end before their Content-Length"))
        if counts[warc_index.DAMAGED]:  # the records after each damaged span are indexed
            counts["archive.files_damaged"] += 1  # one reject row per file, as counted
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(
                STAGE, "archive_damaged", key=path,
                detail=f"{counts[warc_index.DAMAGED]} spans where no WARC record could be read, "
                       f"{counts[warc_index.DAMAGED_BYTES]} bytes skipped (their records lost); "
                       "the records after them are indexed"))
        if problem is not None:
            # the rows read before the damage stay indexed; the file is named in the reject
            reason, detail = problem
            counts[f"archive.rejected.{reason}"] += 1
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(STAGE, reason, key=path, detail=detail))
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))

    def _rows(self, path: str, counts: Counter):
        """The file's index rows (a cc-index row without its redirect target gets it)."""
        from openmsd_build.text.fetch import warc_index

        if self.kind == "warc":
            yield from warc_index.index_warc_file(path, counts=counts)  # records cut short counted
            return
        for row in warc_index.read_cc_index(path, self.warc_prefix, counts):  # refused paths counted
            if warc_index.needs_location(row):
                row = warc_index.fill_location(row)  # an extract without fetch_redirect
                counts["archive.locations_read"] += 1
            yield row


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


class _ExtractingDoFn(UntypedDoFn):
    """What the two fetching DoFns share: the extraction step. One `ExtractorPool` per DoFn
    instance, from `setup` to `teardown` (its children start at the first document); each
    URL's outcome becomes its fetch row and its body is handed to the pool (`_handle`), and
    every answer becomes extractions, follow-ups or a reject (`_extracted`). Documents still in
    the pool when a bundle ends are waited for in `finish_bundle`. Counts are bumped per
    element (progress) and output once per bundle."""

    def __init__(self, extract_timeout: float, shards_per_host: int, follow: bool, extract_workers: int):
        self.extract_timeout = extract_timeout
        self.shards_per_host = shards_per_host
        self.follow = follow
        self.extract_workers = max(1, extract_workers)

    def setup(self):
        from openmsd_build.text.extract.pool import ExtractorPool

        self.extractors = ExtractorPool(self.extract_workers, extractors=STAGE_JOBS, timeout=self.extract_timeout)

    def start_bundle(self):
        self.bundle_counts: Counter = Counter()
        self.bumps = Bumps(STAGE)

    def process(self, element):
        counts: Counter = Counter()
        try:
            yield from self._process(element, counts)
        except BaseException:
            self._stop()
            raise
        self.bumps(counts)  # progress, as elements are done
        self.bundle_counts.update(counts)  # one count output per bundle, not per element

    def _process(self, element, counts: Counter):
        raise NotImplementedError

    def finish_bundle(self):
        """The answers of the documents still in the extractors; outputs of `finish_bundle`
        must carry their window (global here)."""
        counts: Counter = Counter()
        try:
            outputs = [out for done in self.extractors.drain() for out in self._extracted(*done, counts=counts)]
        except BaseException:
            self._stop()
            raise
        finally:
            self._end_bundle()
        self.bumps(counts)
        self.bumps.flush()
        counts.update(self.bundle_counts)
        if counts:
            outputs.append(beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts)))
        yield from in_global_window(outputs)

    def _end_bundle(self) -> None:
        """What a bundle leaves behind besides its documents (`FetchLive`: its WARC file)."""

    def _stop(self) -> None:
        """Ctrl-C or an error mid-element: documents in the extractors are dropped with their
        children."""
        self.extractors.abandon()
        self._end_bundle()

    def teardown(self):
        extractors = getattr(self, "extractors", None)
        if extractors is not None:
            extractors.close()

    def _handle(self, url: str, tasks: list[dict], result, warc_file, warc_offset, warc_length, *, counts: Counter,
                dated: bool):
        """One URL's outcome -> its fetch row (named after the first task, by DOI), and its
        body handed to the extractors; the answers ready by now go out (`_extracted`).
        `dated`: the row keeps the fetch time even without a response (live fetching).
        A landing page whose papers all have a PDF planned is extracted without its main text
        when its archived record can be read again (`main_text_later`); a PDF gets its
        papers' `title_keys` (`pdf_title_keys`), so that its printed title is looked for only
        when one of them can use it."""
        first = tasks[0]
        counts["fetch.ok" if result.ok else f"fetch.error.{result.error}"] += 1
        counts["tasks.answered"] += len(tasks)  # every task planned or followed ends here, once
        yield beam.pvalue.TaggedOutput(FETCH_TAG, {
            "url": url, "doi": first["doi"], "kind": first.get("kind"), "status": result.status,
            "content_type": result.content_type or None, "bytes": result.n_bytes, "sha1": result.sha1,
            "warc_file": warc_file, "warc_offset": warc_offset, "warc_length": warc_length,
            # replay from an archive keeps the archived date; a URL missing from it has
            # none (a wall-clock time there would make reruns differ)
            "fetched_at": result.fetched_at if result.status is not None or dated else None,
            "attempts": result.attempts, "error": result.error,
        })
        if not result.ok:
            return
        kind = document_kind(result.body, result.content_type)
        if kind is None:
            yield from self._extracted((url, tasks, None, None), None, "unsupported_content", result.content_type,
                                       counts=counts)
            return
        # the one call into the extractors: what they are given besides the bytes is here
        kwargs = {"url": result.final_url} if kind == "html" else {"titles": pdf_title_keys(tasks)}
        later = None
        if kind == "html" and main_text_later(tasks) and warc_offset is not None:
            later = [warc_file, warc_offset, warc_length, result.final_url]
            kwargs["with_content"] = False
        for done in self.extractors.submit((url, tasks, kind, later), kind, result.body, **kwargs):
            yield from self._extracted(*done, counts=counts)

    def _extracted(self, tag, extraction, error, detail, *, counts: Counter):
        """One document's answer from the extractors -> its extraction for every task's
        paper as `(doi, ("ext", extraction))` with only the fields documents are built from
        (`slim`), follow-ups, or a reject."""
        url, tasks, kind, later = tag
        if error:
            counts[f"extract_failed.{error}"] += 1
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(
                STAGE, f"extract_{error}", key=url, detail=detail, source=tasks[0]["doi"]))
            return
        extraction = {**extraction, "kind": "landing" if kind == "html" else "pdf", "url": url}
        counts[f"extracted.{extraction['kind']}"] += 1
        if (extraction.get("rules") or {}).get("title") == TITLE_NOT_NEEDED:
            counts["pdf_title.not_needed"] += 1
        if later is not None:
            extraction["content_from"] = later
            counts["main_text.deferred"] += 1
        pdf_url = extraction.get("pdf_url")
        slimmed = (EXT, slim(extraction))
        counts["extractions.sent"] += len(tasks)  # one per paper, all met again at the join by DOI
        for task in tasks:
            yield task["doi"], slimmed
            if self.follow and task.get("follow") and extraction["kind"] == "landing" and pdf_url and pdf_url != url:
                counts["follow.citation_pdf_url"] += 1
                yield beam.pvalue.TaggedOutput(FOLLOW_TAG, (
                    shard_host(host_key(pdf_url), pdf_url, self.shards_per_host),
                    {"doi": task["doi"], "url": pdf_url, "kind": "citation_pdf", "follow": False,
                     "title_keys": task.get("title_keys")},
                ))


class ReplayArchive(_ExtractingDoFn):
    """A resolved archive unit (a dict from `JoinArchiveIndex`: one URL, its tasks and the
    index entries of its redirect chain) -> extractions `(doi, ("ext", extraction))`, its fetch row
    tagged FETCH, citation_pdf_url follow-ups tagged FOLLOW as `(host_key, task)`, extraction
    failures tagged REJECTS. The unit is replayed by a `WarcBackend` holding only its chain's
    entries, which answers exactly as one holding the whole archive's index would. `resumed`:
    the archive is `OUT/warc/` of an earlier live fetch (counted `fetch.resumed`)."""

    def __init__(self, extract_timeout: float, shards_per_host: int, follow: bool = True, extract_workers: int = 1,
                 max_redirects: int = DEFAULT_MAX_REDIRECTS, resumed: bool = False):
        super().__init__(extract_timeout, shards_per_host, follow, extract_workers)
        self.max_redirects = max_redirects
        self.resumed = resumed

    def _process(self, unit: dict, counts: Counter):
        from openmsd_build.text.fetch.warc_backend import WarcBackend

        backend = WarcBackend([], index=chain_index(unit), max_redirects=self.max_redirects)
        result = backend.fetch(unit["url"])
        if result.error == RECORD_UNREADABLE:  # an index row that names no readable record
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(
                STAGE, RECORD_UNREADABLE, key=unit["url"], detail=result.headers.get("x-error"),
                source=unit["tasks"][0]["doi"]))
        # the row points at the final URL's record as an archive-wide replay did, with the
        # record's length from its index entry (as a live fetch's row has it): the byte range
        # that reads the record again, which a replay's rows left empty although it was known
        # (a Common Crawl index row without a usable length leaves it empty still)
        where = None
        if self.resumed:
            counts["fetch.resumed"] += 1
            where = backend.index.get(canonical_url(result.final_url))
        elif result.status is not None:
            where = backend.index.get(canonical_url(result.final_url))
        warc_file, warc_offset, warc_length = where if where else (None, None, None)
        yield from self._handle(unit["url"], unit["tasks"], result, warc_file, warc_offset, warc_length, counts=counts,
                                dated=self.resumed)


class FetchLive(_ExtractingDoFn):
    """`(host_key, [task, ...])` -> the host shard's URLs fetched in order under its rate
    limit (`fetch.http.HttpFetcher`), each response archived to a new WARC file under
    `warc_dir` per bundle (the resume store), then extracted as `ReplayArchive` does."""

    def __init__(self, fetch_config, warc_dir: str, extract_timeout: float, shards_per_host: int, follow: bool = True,
                 extract_workers: int = 1):
        super().__init__(extract_timeout, shards_per_host, follow, extract_workers)
        self.fetch_config = fetch_config
        self.warc_dir = warc_dir

    def setup(self):
        from openmsd_build.text.fetch.http import HttpFetcher

        super().setup()
        self.backend = HttpFetcher(self.fetch_config)
        self.writer = self.warc_file = None

    def start_bundle(self):
        super().start_bundle()
        self._end_bundle()  # a failed bundle may have left its file open

    def _writer(self):
        if self.writer is None:
            from openmsd_build.text.fetch.warc_store import WarcWriter

            # A new file per bundle: a retried bundle never appends to a half-written file.
            path = parquet_io.join_path(self.warc_dir, f"fetch-{uuid.uuid4().hex}.warc.gz")
            self.warc_file = WholeRecordFile(path)
            self.writer = WarcWriter(self.warc_file, name=path, start_offset=0)
        return self.writer

    def _end_bundle(self) -> None:
        # Close the file, not the WarcWriter: WarcWriter.close() would flush (commit) the
        # bytes of a record cut short by an interrupt; WholeRecordFile.close drops them.
        if getattr(self, "warc_file", None) is not None:
            self.warc_file.close()
        self.writer = self.warc_file = None

    def teardown(self):
        self._end_bundle()
        super().teardown()
        backend = getattr(self, "backend", None)
        if backend is not None and hasattr(backend, "close"):
            backend.close()

    def _process(self, element, counts: Counter):
        _, tasks = element
        by_url: dict[str, list[dict]] = {}
        for task in sorted(tasks, key=lambda t: (t["url"], t["doi"])):
            by_url.setdefault(task["url"], []).append(task)
        for url, url_tasks in by_url.items():
            # answers (and deadlines) are looked at between fetches, not only when handing
            # over the next document: a live fetch can take a while
            for done in self.extractors.collect_ready():
                yield from self._extracted(*done, counts=counts)
            result = self.backend.fetch(url)
            ref = self._writer().write(result)
            where = (ref.warc_file, ref.offset, ref.length) if ref is not None else (None, None, None)
            yield from self._handle(url, url_tasks, result, *where, counts=counts, dated=True)


class FetchLocal(_ExtractingDoFn):
    """`--fetch local:`: `(host_key, [task, ...])` -> each URL answered from the user's folder
    (`fetch.local_files.LocalFilesBackend`: a matched file's `file://` URL, or a URL a
    manifest row names; anything else `not_in_folder`), then extracted as `ReplayArchive`
    does. Nothing is archived: the folder is the user's own copy, and the fetch row names
    the file read."""

    def __init__(self, spec: str, extract_timeout: float, shards_per_host: int, follow: bool = True,
                 extract_workers: int = 1):
        super().__init__(extract_timeout, shards_per_host, follow, extract_workers)
        self.spec = spec

    def setup(self):
        from openmsd_build.text.fetch.local_files import LocalFilesBackend

        super().setup()
        self.backend = LocalFilesBackend(self.spec)

    def _process(self, element, counts: Counter):
        from openmsd_build.text.fetch.local_files import shown

        _, tasks = element
        by_url: dict[str, list[dict]] = {}
        for task in sorted(tasks, key=lambda t: (t["url"], t["doi"])):
            by_url.setdefault(task["url"], []).append(task)  # a file several papers share: read once
        for url, url_tasks in by_url.items():
            result = self.backend.fetch(url)
            path = self.backend.path_for(url) if result.status is not None else None
            # the fetch row names the file read, as UTF-8 can hold its name
            yield from self._handle(url, url_tasks, result, shown(path) if path else None, None, None,
                                    counts=counts, dated=False)


class PlanLocalFiles(UntypedDoFn):
    """`--fetch local:`: a batch of papers -> fetch tasks `(host_key, task)` for the files a
    manifest or the naming rule matches to each paper (`fetch.local_files.doi_tasks`), the
    papers' own URLs being planned by `PlanFetches`; each task carries its paper's
    `title_keys` as theirs do; counts `local.*` tagged COUNTS; the source's keys each paper
    matched (`local_files.doi_keys`) as `(key, None)` tagged MATCHED, so that the keys no
    paper matched become rejects (`RejectUnmatchedLocalKeys`)."""

    def __init__(self, spec: str, shards_per_host: int):
        self.spec = spec
        self.shards_per_host = shards_per_host

    def setup(self):
        from openmsd_build.text.fetch.local_files import load

        self.source = load(self.spec)

    def process(self, table):
        from openmsd_build.text.fetch.local_files import doi_keys, doi_tasks

        counts: Counter = Counter()
        for paper in table.to_pylist():
            keys = doi_keys(self.source, paper["doi"])
            for key in keys:
                yield beam.pvalue.TaggedOutput(MATCHED_TAG, (key, None))
                for url_key in self.source.urls_of_doi.get(key, ()):  # its rows that give a URL too
                    yield beam.pvalue.TaggedOutput(MATCHED_TAG, (url_key, None))
            tasks = doi_tasks(self.source, paper["doi"], keys)
            counts["local.papers_matched"] += bool(tasks)
            has_pdf = any(t["kind"] == "pdf" for t in tasks)
            title_keys = printed_title_evidence(paper) if tasks else None
            for task in tasks:
                counts[f"local.files_matched.{task['kind']}"] += 1
                yield shard_host(host_key(task["url"]), task["url"], self.shards_per_host), {
                    **task, "follow": not has_pdf, "title_keys": title_keys}
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


class RejectUnmatchedLocalKeys(UntypedDoFn):
    """`(key of a local source, values)` after a GroupByKey -> a reject and its count for each
    file of a key no paper matched (`local_files.unmatched_rejects`); nothing for a matched
    key. Keys are the DOIs or file stems of `by_doi` and the manifest's URL rows
    (`local_files.url_key`). The values are one False from the source's listing and one None
    for each paper that matched the key (`PlanLocalFiles`) or URL the passes answered from the
    folder. The source is read once per DoFn instance, as `PlanLocalFiles` reads it."""

    def __init__(self, spec: str):
        self.spec = spec

    def setup(self):
        from openmsd_build.text.fetch.local_files import load

        self.source = load(self.spec)

    def process(self, element):
        from openmsd_build.text.fetch.local_files import unmatched_rejects

        key, values = element
        if any(v is None for v in values):
            return
        for reason, named, detail in unmatched_rejects(self.source, key):
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, {f"local.rejected.{reason}": 1})
            yield make_reject(STAGE, reason, key=named, detail=detail)


def pdf_title_keys(tasks: list[dict]) -> list[list[str] | None]:
    """The `titles` argument of `extract_pdf` for a URL fetched for `tasks`: each task's
    paper's `title_keys`, None (the printed title may be used) for a task without them."""
    return [t.get("title_keys") for t in tasks]


def main_text_later(tasks: list[dict]) -> bool:
    """Whether a landing page is extracted without its main text at first: every paper it
    was planned for has a PDF planned too, and a PDF's text is the content `build_document`
    prefers, so trafilatura's work on the page is wasted for most of them. The papers that
    still need it (their PDF failed or is another text: `documents.main_text_needed`) get
    the page read again and extracted whole (`CompleteMainText`)."""
    return all(t.get("kind") == "landing" and not t.get("follow") for t in tasks)


_SLIM_EXTRACTION = ("kind", "url", "title", "abstract", "abstracts", "content", "pdf_url", "language_hints", "rules",
                    "content_from")


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
    """`(doi, [("meta", meta), ("ext", extraction), ...])` (a GroupByKey of values their
    producers tagged: a CoGroupByKey would add a Map per input and one after the grouping,
    and every extraction would cross one more materialized Flatten) -> a document row, or a count
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
    inline. Counts are bumped per paper (progress) and output once per bundle. A paper whose
    landing page was extracted without its main text and whose result that text could
    change (`documents.main_text_needed`) goes out tagged MAIN_TEXT_TAG as `(doi, (paper,
    extractions))` for `CompleteMainText`, uncounted here."""

    JOBS = STAGE_JOBS  # what its children run (a test swaps in a failing job)
    BATCH_PAPERS = 16
    BATCH_CHARS = 4_000_000

    def __init__(self, workers: int = 1):
        self.workers = workers

    def setup(self):
        self.pool = None
        if self.workers > 1:
            from openmsd_build.text.extract.pool import ExtractorPool

            self.pool = ExtractorPool(self.workers, extractors=self.JOBS, timeout=600.0, role="build")

    def start_bundle(self):
        self._batch: list[tuple[dict, list[dict]]] = []
        self._batch_chars = 0
        self.bundle_counts: Counter = Counter()  # output once per bundle, not per paper
        self.bumps = Bumps(STAGE)

    def teardown(self):
        if getattr(self, "pool", None) is not None:
            self.pool.close()

    def process(self, element):
        doi, values = element
        grouped = untag(values, META, EXT)
        metas, extractions = grouped[META], grouped[EXT]
        self.bundle_counts["extractions.received"] += len(extractions)
        if not metas:  # an extraction for a DOI with no paper cannot happen; count if it does
            self.bundle_counts["orphan_extractions"] += len(extractions)
            return
        if main_text_needed_unbuilt(extractions):  # not built twice
            yield beam.pvalue.TaggedOutput(MAIN_TEXT_TAG, (doi, (metas[0], extractions)))
            return
        yield from self._build(metas[0], extractions)

    def _build(self, paper, extractions):
        """A paper built: by the children, in batches, when there are several workers; else
        here, at once."""
        if self.workers <= 1:
            dropped: list[tuple[str, str]] = []
            row, outcome = build_document(paper, extractions, dropped)
            yield from self._outputs(row, outcome, dropped, paper, extractions)
            return
        yield from self._queue(paper, extractions)

    def _queue(self, paper, extractions):
        """A paper for the children to build, sent with the batch it fills."""
        self._batch.append((paper, extractions))
        self._batch_chars += sum(len(e.get("content") or "") for e in extractions)
        if len(self._batch) >= self.BATCH_PAPERS or self._batch_chars >= self.BATCH_CHARS:
            yield from self._send_batch()

    def _send_batch(self):
        batch, self._batch, self._batch_chars = self._batch, [], 0
        try:
            for done in self.pool.submit(batch, "documents", b"", papers=batch):
                yield from self._dispatch(*done)
        except BaseException:
            self.pool.abandon()
            raise

    def _dispatch(self, tag, answer, error, _detail):
        """One answer of the pool (here always a batch of papers)."""
        yield from self._answered(tag, answer, error)

    def finish_bundle(self):
        outputs = []
        while self.pool is not None:  # answers may queue papers (CompleteMainText): until none is left
            outputs += [out for done in self.pool.drain() for out in self._dispatch(*done)]
            if not self._batch:
                break
            outputs += self._send_batch()
        self.bumps.flush()
        if self.bundle_counts:
            outputs.append(beam.pvalue.TaggedOutput(COUNTS_TAG, dict(self.bundle_counts)))
        yield from in_global_window(outputs)

    def _answered(self, batch, answer, error):
        """The outputs of one batch's answer; a paper the child could not build (the whole
        batch when the child died) is built here, where an exception shows its cause."""
        answers = [{"error": error}] * len(batch) if error else answer["answers"]
        for (paper, extractions), one in zip(batch, answers, strict=True):
            if "error" in one:
                dropped: list[tuple[str, str]] = []
                row, outcome = build_document(paper, extractions, dropped)
                yield from self._outputs(row, outcome, dropped, paper, extractions)
            else:
                yield from self._outputs(one["row"], one["outcome"], [tuple(d) for d in one["dropped"]], paper,
                                         extractions)

    def _outputs(self, row, outcome, dropped, paper, extractions):
        """A built paper's outputs and counts; one whose landing page's main text could
        change the result goes out tagged MAIN_TEXT_TAG instead (counted when built again)."""
        if main_text_needed(paper, extractions, row):
            yield beam.pvalue.TaggedOutput(MAIN_TEXT_TAG, (paper["doi"], (paper, extractions)))
            return
        counts = wrong_abstract_counts(dropped)
        key = shared_abstract_key(row) if row is not None else None
        if key is not None:
            yield beam.pvalue.TaggedOutput(SHARED_TAG, (key, row))
        else:
            counts.update(document_counts(row, outcome))
            if row is not None:
                yield row
        self.bumps(counts)
        self.bundle_counts.update(counts)


class CompleteMainText(BuildDocuments):
    """`(doi, (paper, extractions))` of a paper that needs the main text of landing pages
    extracted without it (`main_text_later`) -> each such page read again from its archived
    record and extracted whole, isolated as the first time (`ExtractorPool`, the same
    extractor, so the extraction is the one a single pass gives), then the document built
    and counted as `BuildDocuments` does (by the same children, in batches, when `workers`
    > 1: the pool's answers are pages, tagged `(doi, k)`, or built batches, tagged by their
    list of papers). A page that cannot be read or extracted again
    keeps what the first extraction found (title, abstracts, PDF link), is counted
    `main_text_failed.<reason>` and written to the rejects as `main_text_<reason>`."""

    def __init__(self, extract_timeout: float, workers: int = 1):
        super().__init__(workers)
        self.extract_timeout = extract_timeout

    def setup(self):
        from openmsd_build.text.extract.pool import ExtractorPool

        self.pool = ExtractorPool(max(1, self.workers), extractors=self.JOBS, timeout=self.extract_timeout,
                                  role="complete")

    def start_bundle(self):
        super().start_bundle()
        self.waiting: dict[str, list] = {}  # doi -> [paper, extractions, pages still out]

    def process(self, element):
        from openmsd_build.core.paths import describe_failure
        from openmsd_build.text.fetch.warc_store import is_remote, read_record

        doi, (paper, extractions) = element
        extractions = list(extractions)
        later = [k for k, e in enumerate(extractions) if e.get("content_from")]
        self.waiting[doi] = [paper, extractions, len(later)]
        try:
            for k in later:
                warc_file, offset, length, final_url = extractions[k]["content_from"]
                try:
                    body = read_record(warc_file, offset, None, length).body
                except Exception as exc:  # noqa: BLE001 - an archive gone or damaged since: this page's failure
                    if isinstance(exc, OSError) and is_remote(str(warc_file)):
                        raise  # a remote read that failed (maybe for now): Beam retries
                    yield from self._filled((doi, k), None, "unreadable", describe_failure(exc))
                    continue
                for done in self.pool.submit((doi, k), "html", body or b"", url=final_url):
                    yield from self._dispatch(*done)
        except BaseException:
            self.pool.abandon()
            raise

    def _dispatch(self, tag, answer, error, detail):
        if isinstance(tag, list):  # a batch of papers built
            yield from self._answered(tag, answer, error)
        else:
            yield from self._filled(tag, answer, error, detail)

    def _filled(self, tag, extraction, error, detail):
        """One page's answer into its paper; the paper is built once all its pages are in."""
        doi, k = tag
        waiting = self.waiting[doi]
        paper, extractions = waiting[0], waiting[1]
        page = extractions[k]
        if error:
            self.bundle_counts[f"main_text_failed.{error}"] += 1
            self.bumps({f"main_text_failed.{error}": 1})
            yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(
                STAGE, f"main_text_{error}", key=page["url"], detail=detail, source=doi))
            extractions[k] = {**page, "content_from": None}
        else:
            extractions[k] = slim({**extraction, "kind": "landing", "url": page["url"]})
            self.bundle_counts["main_text.completed"] += 1
        waiting[2] -= 1
        if waiting[2] == 0:
            del self.waiting[doi]
            yield from self._build(paper, extractions)


class DropSharedAbstracts(UntypedDoFn):
    """`(abstract key, [row, ...])` after a GroupByKey -> rows. One row alone is kept as it is;
    when two or more DOIs share the metadata abstract it belongs to none of them for sure, so
    each loses it (`documents.drop_shared_abstract`: the next abstract, or the content, keeps
    the paper; else it is dropped as `abstract_duplicate_across_dois`). Counts each row's
    outcome (`BuildDocuments` left them to this step) and `abstracts_wrong.abstract_duplicate_across_dois`.
    The group is streamed (a placeholder text on thousands of DOIs is never held in memory).
    Counts go out once per bundle (most groups are one row: an output each would cost Beam
    more than the group)."""

    def start_bundle(self):
        self.bundle_counts: Counter = Counter()
        self.bumps = Bumps(STAGE)

    def finish_bundle(self):
        self.bumps.flush()
        if self.bundle_counts:
            yield from in_global_window([beam.pvalue.TaggedOutput(COUNTS_TAG, dict(self.bundle_counts))])

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
        self.bumps(counts)
        self.bundle_counts.update(counts)


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
