"""Offline fetching (`--fetch warc:PATH_OR_GLOB`): answer `fetch(url)` from WARC files.

Lets the text stage run with no network at all — on archives we wrote earlier, or on
third-party crawls — with the same `FetchResult` contract as `HttpFetcher`, so the rest of
the pipeline cannot tell the difference. Archived redirects (3xx records with Location) are
followed just as a live fetch would follow them.

The index (canonical URL -> file, offset) is built lazily on first use by scanning every
record header once; it holds one entry per archived URL in memory. That is the reference
behaviour (tests compare against it) and fine for one machine's archives; the text stage
itself never builds it: it indexes archives in parallel (`warc_index`), joins them with its
tasks by URL in the pipeline (`archive_join`) and gives this class only the few index
entries of one URL's redirect chain (`index=`, values `(file, offset[, length])`; with a
length the record is range-read). `revisit` records (payload dedupe by other crawlers) are
not resolved.
"""

from __future__ import annotations

import glob
import os
import threading
from collections.abc import Mapping, Sequence

from openmsd_build.core.paths import describe_failure
from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import (
    DEFAULT_ACCEPTED_TYPES,
    MAX_BODY_BYTES,
    NOT_IN_ARCHIVE,
    RECORD_UNREADABLE,
    REDIRECT_STATUSES,
    TOO_LARGE,
    TOO_MANY_REDIRECTS,
    WRONG_CONTENT_TYPE,
    FetchResult,
    final_error,
    follow_redirect,
    join_location,
)
from openmsd_build.text.fetch.safety import url_refusal
from openmsd_build.text.fetch.warc_store import is_remote, read_record


def expand_paths(paths: str | Sequence[str]) -> list[str]:
    """Expand comma-separated paths, globs and folders (local via `glob`, a folder
    recursively as `core.inputs.folder_files`, remote via Beam's FileSystems.match), sorted
    so the index is deterministic."""
    items = [p.strip() for p in paths.split(",")] if isinstance(paths, str) else list(paths)
    out: list[str] = []
    for item in filter(None, items):
        if is_remote(item):
            from apache_beam.io.filesystems import FileSystems

            for match in FileSystems.match([item]):
                out.extend(m.path for m in match.metadata_list)
        elif any(ch in item for ch in "*?["):
            out.extend(p for p in glob.glob(item, recursive=True) if not os.path.isdir(p))
        elif os.path.isdir(item):  # a folder: every file under it, as for every other input
            from openmsd_build.core.folders import folder_files

            out.extend(folder_files(item))
        else:
            out.append(item)
    return sorted(dict.fromkeys(out))


def _read(where: tuple, max_bytes: int | None) -> FetchResult:
    """The record an index entry points at; range-read when the entry carries its length."""
    return read_record(where[0], where[1], max_bytes, where[2] if len(where) > 2 else None)


class WarcBackend:
    """`fetch(url) -> FetchResult` from archived responses; thread-safe; picklable (only the
    paths and settings travel; the index is rebuilt lazily on the worker)."""

    def __init__(
        self,
        paths: str | Sequence[str],
        *,
        max_redirects: int = 5,
        max_bytes: int | None = MAX_BODY_BYTES,
        accepted_content_types: Sequence[str] = DEFAULT_ACCEPTED_TYPES,
        index: Mapping[str, tuple] | None = None,
    ) -> None:
        self.paths = paths
        self.max_redirects = max_redirects
        self.max_bytes = max_bytes
        self.accepted_content_types = tuple(accepted_content_types)
        self._given_index = dict(index) if index is not None else None
        self._index: dict[str, tuple] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: str, **kwargs) -> WarcBackend:
        """Build from the CLI value `warc:PATH_OR_GLOB[,PATH...]`."""
        if not spec.startswith("warc:"):
            raise ValueError(f"not a warc fetch spec: {spec!r}")
        return cls(spec[len("warc:") :], **kwargs)

    def __getstate__(self) -> dict:
        """Drop the lock and the (rebuildable) index."""
        state = self.__dict__.copy()
        state.pop("_lock")
        state["_index"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        """Restore settings and a fresh lock."""
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def index(self) -> dict[str, tuple]:
        """canonical URL -> (warc file, offset[, length]) of its response record; built once."""
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._given_index if self._given_index is not None else self._build_index()
        return self._index

    def _build_index(self) -> dict[str, tuple[str, int]]:
        """Scan every response record; a URL archived twice resolves to the later record."""
        from openmsd_build.text.fetch.warc_index import index_warc_file

        index: dict[str, tuple[str, int]] = {}
        for path in expand_paths(self.paths):
            for row in index_warc_file(path):
                index[row["url"]] = (path, row["offset"])
        return index

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, url: object) -> bool:
        """Whether `url` can be answered from the archive alone: its record exists and any
        archived redirect chain from it ends in an archived final record (or loops / runs
        past `max_redirects`, which replays the same too_many_redirects). A chain that
        stops at a target that was never archived — a hop refused or failed live — is
        not, so a resumed build fetches the URL again instead of replaying a different
        error (`not_in_archive`) than the uninterrupted build produced."""
        if not isinstance(url, str):
            return False
        current = url
        for _hop in range(self.max_redirects + 1):
            where = self.index.get(canonical_url(current))
            if where is None:
                return False
            archived = _read(where, 0)
            location = archived.headers.get("location")
            if archived.status not in REDIRECT_STATUSES or not location:
                return True
            current = join_location(current, location)
        return True

    def fetch(self, url: str) -> FetchResult:
        """The archived answer for `url`, following archived redirects; `not_in_archive`
        when the URL (or a redirect target) was never archived."""
        result = FetchResult(url=url, final_url=url)
        current = url
        for _hop in range(self.max_redirects + 1):
            result.final_url = current
            where = self.index.get(canonical_url(current))
            if where is None:
                result.error = NOT_IN_ARCHIVE
                return result
            try:
                archived = _read(where, self.max_bytes)
            except Exception as exc:  # noqa: BLE001 - one damaged record (an index row that lies) is one URL's error
                if isinstance(exc, OSError) and is_remote(where[0]):
                    raise  # a remote read that failed (maybe for now): Beam retries the bundle
                result.error = RECORD_UNREADABLE
                # which record (file and offset, so the index row can be found), never its bytes
                result.headers = {"x-error": f"{where[0]} @ {where[1]}: {describe_failure(exc)}"}
                return result
            result.status = archived.status
            result.headers = archived.headers
            result.content_type = archived.content_type
            result.fetched_at = archived.fetched_at
            # an archived 3xx is a hop to replay whatever error code reading it produced
            target = follow_redirect(result, current, archived.status, archived.headers, None)
            if target is not None:
                refused = url_refusal(target)
                if refused is not None:  # file:///etc/passwd, an unparsable Location: what the live fetch said
                    result.final_url, result.error = target, refused
                    return result
                current = target
                continue
            result.error = final_error(archived.status, archived.error)
            if result.error is None:
                if self.max_bytes is not None and archived.body is not None and len(archived.body) > self.max_bytes:
                    result.error = TOO_LARGE
                elif result.content_type not in self.accepted_content_types:
                    result.error = WRONG_CONTENT_TYPE
                else:
                    result.body = archived.body
            return result
        result.error = TOO_MANY_REDIRECTS
        return result
