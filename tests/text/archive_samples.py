"""Archives for the archive-index tests: a WARC of redirect cases, a generated sample with
papers that plan those URLs, a Common Crawl style index extract of WARCs, and the
reference (`WarcBackend`, the whole-archive index) a replay's `fetch/` rows must equal."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from warcio.archiveiterator import ArchiveIterator

from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import FETCH, PAPERS
from openmsd_build.text.fetch import WarcBackend, WarcWriter
from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import FetchResult
from openmsd_build.text.fetch.warc_backend import expand_paths

HTML = (
    "<!doctype html><html lang=\"en\"><head><title>{t}</title><meta name=\"citation_title\" content=\"{t}\">"
    "<meta name=\"citation_abstract\" content=\"{a}\"></head><body><article><h1>{t}</h1><p>{a}</p></article>"
    "</body></html>"
)
ABSTRACT = ("This abstract describes a careful study of archived redirect chains in scholarly web crawls, with "
            "enough words to be kept as the text of the paper by the documents rules.")


def page(title: str) -> bytes:
    return HTML.format(t=title, a=ABSTRACT).encode()


def _ok(url: str, body: bytes, ctype: str = "text/html") -> FetchResult:
    return FetchResult(url=url, final_url=url, status=200, headers={"Content-Type": ctype}, body=body,
                       content_type=ctype, fetched_at="2024-01-02T03:04:05Z")


def _hop(url: str, location: str, status: int = 302) -> FetchResult:
    return FetchResult(url=url, final_url=url, status=status, headers={"Location": location},
                       fetched_at="2024-01-02T03:04:05Z")


# URL -> what replay should give; every case of the redirect rules
REDIRECT_URLS = [
    "http://a.example/x",          # 302 -> /y (archived, 200)
    "HTTP://A.EXAMPLE:80/x#frag",  # the same, spelled differently
    "http://b.example/1",          # loop 1 -> 2 -> 1: too_many_redirects
    "http://c.example/",           # 301 -> relative /elsewhere, never archived: not_in_archive
    "http://d.example/img",        # 200 image/png: wrong_content_type
    "http://e.example/0",          # 0 -> 1 -> ... -> 7: more hops than allowed
    "http://e.example/3",          # 3 -> ... -> 7 (200): within the limit
    "http://f.example/twice",      # archived twice, in two files: the later record wins
    "http://g.example/gone",       # 404
    "http://h.example/never",      # not archived at all
    "http://a.example/y",          # a redirect target that is also planned directly
]


def write_redirect_warcs(directory: Path) -> list[str]:
    """Two WARC files (sorted names: the second's records win for a URL in both)."""
    directory.mkdir(parents=True, exist_ok=True)
    first, second = str(directory / "redirects-1.warc.gz"), str(directory / "redirects-2.warc.gz")
    with WarcWriter(first, write_request=True) as w:
        w.write(FetchResult(url="http://a.example/x", final_url="http://a.example/y", status=200,
                            headers={"Content-Type": "text/html"}, body=page("Roses of the archive"),
                            content_type="text/html", fetched_at="2024-01-02T03:04:05Z",
                            redirects=[{"url": "http://a.example/x", "status": 302, "location": "http://a.example/y"}]))
        w.write(_hop("http://b.example/1", "http://b.example/2"))
        w.write(_hop("http://b.example/2", "http://B.example:80/1#x"))
        w.write(_hop("http://c.example/", "/elsewhere", 301))
        w.write(_ok("http://d.example/img", b"\x89PNG....", "image/png"))
        for i in range(7):
            w.write(_hop(f"http://e.example/{i}", f"/{i + 1}", 307))
        w.write(_ok("http://e.example/7", page("Seven hops away")))
        w.write(_ok("http://f.example/twice", page("An older copy")))
        w.write(FetchResult(url="http://g.example/gone", final_url="http://g.example/gone", status=404,
                            headers={"Content-Type": "text/html"}, fetched_at="2024-01-02T03:04:05Z"))
    with WarcWriter(second) as w:
        w.write(_ok("http://f.example/twice", page("The newer copy of the page")))
    return [first, second]


def add_papers(out: Path, urls: list[str]) -> None:
    """Append one paper per URL (landing page) to `out/papers/`, rewritten as one part."""
    parts = parquet_io.list_parts(layout.papers_dir(str(out)))
    existing = parquet_io.read_table(layout.papers_dir(str(out)), schema=PAPERS).to_pylist() if parts else []
    rows = [{"doi": f"10.9999/redirect-{i}", "sources": ["unpaywall"], "n_records": 1, "categories": [],
             "relations": [], "urls": [{"url": u, "kind": "landing", "host_type": "repository", "license": None,
                                        "version": None, "source": "unpaywall", "rank": 0}]}
            for i, u in enumerate(urls)]
    for part in parts:
        os.remove(part)
    parquet_io.write_table(parquet_io.table_from_rows(existing + rows, PAPERS),
                           parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))


def fetch_rows(out: Path | str) -> list[dict]:
    return sorted(parquet_io.read_table(layout.fetch_dir(str(out)), schema=FETCH).to_pylist(),
                  key=lambda r: (r["url"], r["doi"]))


def record_lengths(paths: list[str]) -> dict[tuple[str, int], int]:
    """(file, offset) -> length in bytes of every response record of `paths`, as warcio
    reads them (not the code under test)."""
    lengths = {}
    for path in paths:
        with open(path, "rb") as fh:
            iterator = ArchiveIterator(fh)
            for record in iterator:
                if record.rec_type == "response":
                    lengths[(path, iterator.get_record_offset())] = iterator.get_record_length()
    return lengths


def reference_mismatches(rows: list[dict], backend: WarcBackend) -> list[tuple]:
    """`fetch/` rows of a `warc:` replay that differ from the whole-archive backend's
    answer for the same URL (as the text stage wrote them before the joined index), with
    the length of the record each row names."""
    lengths = record_lengths(expand_paths(backend.paths))
    bad = []
    for row in rows:
        result = backend.fetch(row["url"])
        where = backend.index.get(canonical_url(result.final_url)) if result.status is not None else None
        expected = {
            "status": result.status, "error": result.error, "sha1": result.sha1, "bytes": result.n_bytes,
            "content_type": result.content_type or None, "attempts": 0,
            "fetched_at": result.fetched_at if result.status is not None else None,
            "warc_file": where[0] if where else None, "warc_offset": where[1] if where else None,
            "warc_length": lengths[where[:2]] if where else None,
        }
        got = {k: row[k] for k in expected}
        if got != expected:
            bad.append((row["url"], got, expected))
    return bad


def write_cc_index(warcs: list[str], root: Path, index_path: Path, *, with_redirects: bool) -> None:
    """A Common Crawl columnar-index extract of `warcs` (each under `root`): one row per
    response record with the public index's column names and types; `warc_filename`
    relative to `root`, as Common Crawl's are relative to its bucket. Built with warcio
    directly (not the code under test)."""
    rows = []
    for warc in warcs:
        with open(warc, "rb") as fh:
            iterator = ArchiveIterator(fh)
            for record in iterator:
                if record.rec_type != "response":
                    continue
                headers = record.http_headers
                status = int(headers.get_statuscode())
                row = {
                    "url": record.rec_headers.get_header("WARC-Target-URI"),
                    "fetch_status": status,
                    "content_mime_type": (headers.get_header("Content-Type") or "").split(";")[0] or None,
                    "warc_filename": os.path.relpath(warc, root),
                    "warc_record_offset": iterator.get_record_offset(),
                    "warc_record_length": iterator.get_record_length(),
                }
                if with_redirects:
                    row["fetch_redirect"] = headers.get_header("Location")
                rows.append(row)
    fields = [pa.field("url", pa.string()), pa.field("fetch_status", pa.int16()),
              pa.field("content_mime_type", pa.string()), pa.field("warc_filename", pa.string()),
              pa.field("warc_record_offset", pa.int32()), pa.field("warc_record_length", pa.int32())]
    if with_redirects:
        fields.append(pa.field("fetch_redirect", pa.string()))
    index_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(fields)), index_path, row_group_size=500)
