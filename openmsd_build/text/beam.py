"""Thin Beam DoFns of the text stage: plan fetches, fetch a host's URLs politely, extract,
and build document rows. The logic lives in `fetch/`, `extract/` and `documents`.

Fetching is grouped by *host key* (`fetch.plan.shard_host`): one element is one host
shard's list of URLs, fetched in order under that host's rate limit, so politeness holds
however many workers run; big hosts are split into several keys so that no single worker
gets an endless queue.
"""

from __future__ import annotations

import io
import os
import uuid
from collections import Counter

import apache_beam as beam

from openmsd_build.core import parquet_io
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, bump
from openmsd_build.core.rejects import make_reject
from openmsd_build.text.documents import build_document
from openmsd_build.text.fetch.plan import canonical_url, host_key, plan_urls, shard_host
from openmsd_build.text.fetch.result import document_kind

STAGE = "text"
FETCH_TAG = "fetch"
FOLLOW_TAG = "follow"
META_TAG = "meta"
META_FIELDS = (
    "doi", "title", "title_source", "abstract", "abstract_source", "publisher_language",
    "year", "venue", "type", "categories", "relations",
)


class PlanFetches(beam.DoFn):
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


class FetchAndExtract(beam.DoFn):
    """`(host_key, [task, ...])` -> extractions `(doi, extraction)`; fetch rows tagged
    FETCH; citation_pdf_url follow-ups tagged FOLLOW; extraction failures tagged REJECTS.

    `fetch_spec` is `http` or `warc:GLOB`. In http mode every response is archived to a
    new WARC file under `warc_dir` per bundle, and URLs already archived by an earlier run
    (`resume_archives`) are served from there instead of the network: an interrupted fetch
    resumes where it stopped and fetches nothing twice."""

    def __init__(self, fetch_spec: str, fetch_config, warc_dir: str | None, resume_archives: list[str],
                 extract_timeout: float, shards_per_host: int, follow: bool = True):
        self.fetch_spec = fetch_spec
        self.fetch_config = fetch_config
        self.warc_dir = warc_dir
        self.resume_archives = list(resume_archives)
        self.extract_timeout = extract_timeout
        self.shards_per_host = shards_per_host
        self.follow = follow

    def setup(self):
        from openmsd_build.text.extract.isolate import IsolatedExtractor
        from openmsd_build.text.fetch.warc_backend import WarcBackend

        if self.fetch_spec == "http":
            from openmsd_build.text.fetch.http import HttpFetcher

            self.backend = HttpFetcher(self.fetch_config)
            self.archive = WarcBackend(self.resume_archives) if self.resume_archives else None
        else:
            self.backend = WarcBackend.from_spec(self.fetch_spec)
            self.archive = None
        self.extractor = IsolatedExtractor(timeout=self.extract_timeout)
        self.writer = None
        self.warc_file = None

    def start_bundle(self):
        self.finish_bundle()  # a failed bundle may have left its file open

    def _writer(self):
        if self.writer is None:
            from openmsd_build.text.fetch.warc_store import WarcWriter

            # A new file per bundle: a retried bundle never appends to a half-written file.
            path = parquet_io.join_path(self.warc_dir, f"fetch-{uuid.uuid4().hex}.warc.gz")
            self.warc_file = WholeRecordFile(path)
            self.writer = WarcWriter(self.warc_file, name=path, start_offset=0)
        return self.writer

    def finish_bundle(self):
        # Close the file, not the WarcWriter: WarcWriter.close() would flush (commit) the
        # bytes of a record cut short by an interrupt; WholeRecordFile.close drops them.
        if self.warc_file is not None:
            self.warc_file.close()
        self.writer = self.warc_file = None

    def teardown(self):
        self.finish_bundle()
        extractor = getattr(self, "extractor", None)
        if extractor is not None:
            extractor.close()
        backend = getattr(self, "backend", None)
        if backend is not None and hasattr(backend, "close"):
            backend.close()

    def _fetch(self, url: str, counts: Counter):
        """(result, warc_file, warc_offset, warc_length)."""
        if self.archive is not None and url in self.archive:
            counts["fetch.resumed"] += 1
            result = self.archive.fetch(url)
            where = self.archive.index.get(canonical_url(result.final_url))
            return result, (where or (None, None))[0], (where or (None, None))[1], None
        result = self.backend.fetch(url)
        if self.fetch_spec == "http":
            ref = self._writer().write(result)
            if ref is not None:
                return result, ref.warc_file, ref.offset, ref.length
            return result, None, None, None
        where = self.backend.index.get(canonical_url(result.final_url)) if result.status is not None else None
        return result, (where or (None, None))[0], (where or (None, None))[1], None

    def process(self, element):
        try:
            yield from self._process(element)
        except BaseException:
            # Ctrl-C or an error mid-element: close the WARC file now, dropping a record cut
            # short, before anything (a garbage-collected wrapper's flush) could commit it.
            self.finish_bundle()
            raise

    def _process(self, element):
        _, tasks = element
        counts: Counter = Counter()
        done: dict[str, tuple] = {}
        for task in sorted(tasks, key=lambda t: (t["url"], t["doi"])):
            url = task["url"]
            if url not in done:
                result, warc_file, warc_offset, warc_length = self._fetch(url, counts)
                extraction, error = None, None
                if result.ok:
                    kind = document_kind(result.body, result.content_type)
                    if kind is None:
                        error, detail = "unsupported_content", result.content_type
                    else:
                        extraction, error = self.extractor.extract(kind, result.body, **({"url": result.final_url} if kind == "html" else {}))
                        detail = self.extractor.last_error
                        if extraction is not None:
                            extraction = {**extraction, "kind": "landing" if kind == "html" else "pdf", "url": url}
                    if error:
                        counts[f"extract_failed.{error}"] += 1
                        yield beam.pvalue.TaggedOutput(REJECTS_TAG, make_reject(
                            STAGE, f"extract_{error}", key=url, detail=detail, source=task["doi"]))
                    else:
                        counts[f"extracted.{extraction['kind']}"] += 1
                counts["fetch.ok" if result.ok else f"fetch.error.{result.error}"] += 1
                done[url] = (result, extraction)
                yield beam.pvalue.TaggedOutput(FETCH_TAG, {
                    "url": url, "doi": task["doi"], "kind": task.get("kind"), "status": result.status,
                    "content_type": result.content_type or None, "bytes": result.n_bytes, "sha1": result.sha1,
                    "warc_file": warc_file, "warc_offset": warc_offset, "warc_length": warc_length,
                    # replay from an archive keeps the archived date; a URL missing from it has
                    # none (a wall-clock time there would make reruns differ)
                    "fetched_at": result.fetched_at if result.status is not None or self.fetch_spec == "http" else None,
                    "attempts": result.attempts, "error": result.error,
                })
            result, extraction = done[url]
            if extraction is None:
                continue
            yield task["doi"], extraction
            pdf_url = extraction.get("pdf_url")
            if self.follow and task.get("follow") and extraction["kind"] == "landing" and pdf_url and pdf_url != url:
                counts["follow.citation_pdf_url"] += 1
                yield beam.pvalue.TaggedOutput(FOLLOW_TAG, (
                    shard_host(host_key(pdf_url), pdf_url, self.shards_per_host),
                    {"doi": task["doi"], "url": pdf_url, "kind": "citation_pdf", "follow": False},
                ))
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))


_SLIM_EXTRACTION = ("kind", "url", "title", "abstract", "content", "pdf_url")


def slim(extraction: dict) -> dict:
    """Only the fields `build_document` reads travel through the shuffle."""
    return {k: extraction.get(k) for k in _SLIM_EXTRACTION}


class BuildDocuments(beam.DoFn):
    """`(doi, {"meta": [meta], "ext": [extraction, ...]})` -> a document row, or a count
    of why the paper was dropped."""

    def process(self, element):
        doi, grouped = element
        metas = list(grouped["meta"])
        extractions = list(grouped["ext"])
        if not metas:  # an extraction for a DOI with no paper cannot happen; count if it does
            yield beam.pvalue.TaggedOutput(COUNTS_TAG, {"orphan_extractions": len(extractions)})
            return
        row, outcome = build_document(metas[0], extractions)
        counts = {f"documents.{outcome}": 1}
        if row is not None:
            counts[f"text_source.{row['text_source']}"] = 1
            counts["with_abstract"] = int(row["abstract"] is not None)
            counts["with_content"] = int(row["content"] is not None)
            yield row
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, counts)


class MetadataDocuments(beam.DoFn):
    """`--fetch none`: a batch of papers -> `(shard, document rows)` from metadata only."""

    def __init__(self, num_shards: int):
        self.num_shards = num_shards

    def process(self, table):
        from openmsd_build.core.hashing import shard_of

        counts: Counter = Counter()
        by_shard: dict[int, list[dict]] = {}
        for paper in table.to_pylist():
            row, outcome = build_document(paper, ())
            counts[f"documents.{outcome}"] += 1
            counts["papers"] += 1
            if row is not None:
                counts[f"text_source.{row['text_source']}"] += 1
                counts["with_abstract"] += row["abstract"] is not None
                by_shard.setdefault(shard_of(row["doi"], self.num_shards), []).append(row)
        yield from by_shard.items()
        bump(STAGE, counts)
        yield beam.pvalue.TaggedOutput(COUNTS_TAG, dict(counts))
