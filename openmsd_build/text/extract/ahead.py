"""Extraction ahead of the pipeline: a warm extractor child reads the `warc:` archives itself
and extracts their documents while the local run's worker is still starting.

Why: until the first document reaches a child, a local run of the text stage is one process
on one core -- importing Beam, building and planning the graph, reading papers, indexing the
archives (~3-4 s on the bench sample) -- while the extractor children, imported, wait. The
documents are all in the archives already, so one child per spare core (`prewarm`'s
`ahead`) extracts them in file order meanwhile; the fetching DoFn later takes an answer
from these instead of sending the same document again (`isolate.take_ahead`).

Exactness: an answer is filed under the inputs that decide it -- the extractor, the record
(WARC file and offset, from which replay reads the same bytes with the same reader,
`warc_store.read_record`) and, for a page, its URL -- and the DoFn looks it up under the
same key, built from what replay returned (`ahead_key`). A record replay would not hand to
an extractor (not 2xx, another media type, over the size caps) is skipped, as is a key the
DoFn never asks for (another URL for the same record): the document is extracted then, as
without this. Errors are never filed: the DoFn meets them again itself. An answer that took
longer than the stage's time limit is dropped, since the DoFn would have answered
`timeout`. The child works under its usual memory limit; a document that hangs it is
bounded by the adopting pool's deadline (`IsolatedExtractor._adopt_spare`), which kills
the child. The answers come back in one message when the pool asks (until then nobody reads
the child's pipe: the worker is busy starting), so a child that crashes or is killed loses
the whole head start, and a hanging document costs its time limit twice (here, then in the
DoFn) -- the price of a head start that costs the worker nothing while it starts.

Runs in the extractor child: nothing here imports Beam.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

# Bounds of one head start: it stops at the first one reached, or when the worker asks. The
# answers wait in the worker until the run ends (a crawl's unplanned records too), so their
# text is capped; the child gets only the first archives (a pipe message sent before it reads).
MAX_DOCUMENTS = 4096
MAX_READ_BYTES = 512 * 1024 * 1024
MAX_ANSWER_CHARS = 64 * 1024 * 1024
MAX_ARCHIVES = 64

_clock = time.monotonic  # tests give it a clock of their own


def ahead_key(kind: str, warc_file: str, offset: int, url: str) -> tuple[str, str, int, str | None]:
    """The key an answer worked out ahead is filed and found under: what the extraction
    reads (the record's bytes, and a page's URL, which resolves its links)."""
    return kind, warc_file, offset, url if kind == "html" else None


def local_archives(fetch: str) -> list[str]:
    """The WARC files of `--fetch warc:GLOB` as the stage's index names them (the first
    `MAX_ARCHIVES`), when all are local files; [] otherwise (another fetch mode, remote
    files, nothing matched)."""
    if not fetch.startswith("warc:"):
        return []
    from openmsd_build.text.fetch.warc_backend import expand_paths
    from openmsd_build.text.fetch.warc_store import _is_remote

    spec = fetch[len("warc:"):]
    if any(_is_remote(item.strip()) for item in spec.split(",")):
        return []
    return expand_paths(spec)[:MAX_ARCHIVES]


def extract_ahead(
    data: bytes,
    *,
    stop: Callable[[], bool],
    jobs: dict[str, Callable[..., dict[str, Any]]],
    paths: Sequence[str],
    timeout: float,
    max_bytes: int,
    accepted_types: Sequence[str],
    lane: int = 0,
    lanes: int = 1,
    max_documents: int = MAX_DOCUMENTS,
    max_read_bytes: int = MAX_READ_BYTES,
    max_answer_chars: int = MAX_ANSWER_CHARS,
) -> dict[str, Any]:
    """The documents of every `lanes`-th response record of `paths` (from number `lane`),
    extracted in file order until `stop()` is true or a bound is reached:
    `{"results": {ahead_key: extraction}, "records": n, "seconds": s}`. `data` is unused (a
    job's signature). Each record is replayed by replay itself (`WarcBackend` holding only
    that record, with `max_bytes` and `accepted_types`: the smaller size cap of replay and
    the extractors), so a document is sent exactly when the DoFn would send it. A record or
    file that cannot be read is skipped (replay meets it again); running out of memory ends
    the head start with what it has."""
    from openmsd_build.text.fetch.result import document_kind
    from openmsd_build.text.fetch.warc_backend import WarcBackend

    started = _clock()
    results: dict[tuple, dict[str, Any]] = {}
    records = read = chars = 0
    try:
        for row in _response_rows(paths):
            if (stop() or len(results) >= max_documents or read >= max_read_bytes
                    or chars >= max_answer_chars):
                break
            records += 1
            status = row["status"]
            if (records - 1) % lanes != lane or status is None or not 200 <= status < 300:
                continue
            try:
                replay = WarcBackend([], index={row["url"]: (row["warc_file"], row["offset"], row["length"])},
                                     max_bytes=max_bytes, accepted_content_types=accepted_types)
                result = replay.fetch(row["target_uri"])
                kind = document_kind(result.body, result.content_type) if result.ok else None
            except MemoryError:
                raise
            except Exception:  # noqa: BLE001 - a damaged record: replay meets it again
                continue
            if kind is None:
                continue
            read += len(result.body)
            begun = _clock()
            try:
                extraction = jobs[kind](result.body, **({"url": result.final_url} if kind == "html" else {}))
            except MemoryError:
                raise
            except Exception:  # noqa: BLE001 - an error is the DoFn's to meet and report
                continue
            if _clock() - begun <= timeout:
                results[ahead_key(kind, row["warc_file"], row["offset"], result.final_url)] = extraction
                chars += sum(len(extraction.get(field) or "") for field in ("content", "abstract", "title"))
    except MemoryError:  # the child is near its limit: the DoFn extracts the rest
        pass
    return {"results": results, "records": records, "seconds": _clock() - started}


def _response_rows(paths: Sequence[str]) -> Iterator[dict]:
    """Index rows (with the URI as written) of the archives' response records, in file
    order; an archive that cannot be read further ends there (its index stage reports it)."""
    from openmsd_build.text.fetch.warc_index import index_warc_file

    for path in paths:
        try:
            yield from index_warc_file(path, target_uri=True)
        except MemoryError:
            raise
        except Exception:  # noqa: BLE001 - a damaged archive: the next one
            continue


extract_ahead.runs_ahead = True  # type: ignore[attr-defined]
