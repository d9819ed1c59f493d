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
the child and loses only this head start.

Runs in the extractor child: nothing here imports Beam.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

# Bounds of one head start: it stops at the first one reached, or when the worker asks.
MAX_DOCUMENTS = 4096
MAX_READ_BYTES = 512 * 1024 * 1024


def ahead_key(kind: str, warc_file: str, offset: int, url: str) -> tuple[str, str, int, str | None]:
    """The key an answer worked out ahead is filed and found under: what the extraction
    reads (the record's bytes, and a page's URL, which resolves its links)."""
    return kind, warc_file, offset, url if kind == "html" else None


def local_archives(fetch: str) -> list[str]:
    """The WARC files of `--fetch warc:GLOB` as the stage's index names them, when all are
    local files; [] otherwise (another fetch mode, remote files, nothing matched)."""
    if not fetch.startswith("warc:"):
        return []
    from openmsd_build.text.fetch.warc_backend import expand_paths
    from openmsd_build.text.fetch.warc_store import _is_remote

    spec = fetch[len("warc:"):]
    if any(_is_remote(item.strip()) for item in spec.split(",")):
        return []
    return expand_paths(spec)


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
) -> dict[str, Any]:
    """The documents of every `lanes`-th response record of `paths` (from number `lane`),
    extracted in file order until `stop()` is true or a bound is reached:
    `{"results": {ahead_key: extraction}, "records": n, "seconds": s}`. `data` is unused (a
    job's signature). `max_bytes` and `accepted_types` are replay's caps (the smaller size
    cap of replay and the extractors)."""
    from openmsd_build.text.fetch.result import document_kind, final_error
    from openmsd_build.text.fetch.warc_index import index_warc_file
    from openmsd_build.text.fetch.warc_store import read_record

    started = time.monotonic()
    results: dict[tuple, dict[str, Any]] = {}
    records = read = 0
    for path in paths:
        for row in index_warc_file(path, target_uri=True):
            if stop() or len(results) >= max_documents or read >= max_read_bytes:
                return {"results": results, "records": records, "seconds": time.monotonic() - started}
            records += 1
            status = row["status"]
            if (records - 1) % lanes != lane or status is None or not 200 <= status < 300:
                continue
            archived = read_record(path, row["offset"], max_bytes, row["length"])
            body = archived.body
            if (final_error(archived.status, archived.error) is not None or body is None or len(body) > max_bytes
                    or archived.content_type not in accepted_types):
                continue
            read += len(body)
            kind = document_kind(body, archived.content_type)
            if kind not in ("html", "pdf"):
                continue
            url = row["target_uri"]
            begun = time.monotonic()
            try:
                extraction = jobs[kind](body, **({"url": url} if kind == "html" else {}))
            except MemoryError:
                break  # the child is near its limit: stop here, the DoFn extracts the rest
            except Exception:  # noqa: BLE001 - an error is the DoFn's to meet and report
                continue
            if time.monotonic() - begun <= timeout:
                results[ahead_key(kind, path, row["offset"], url)] = extraction
        else:
            continue
        break
    return {"results": results, "records": records, "seconds": time.monotonic() - started}


extract_ahead.runs_ahead = True  # type: ignore[attr-defined]
