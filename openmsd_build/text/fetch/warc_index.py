"""Archive index rows: where each archived response lives, one row per response record.

A row is `{url, warc_file, offset, length, status, content_type, location}`: the canonical
URL (`plan.canonical_url`, the key the text stage joins its fetch tasks on), the WARC file
and the byte range of the record (one gzip member, so it can be range-read alone), the HTTP
status, the payload's media type and, for redirects, the Location header as replay would
read it. Rows come from two places, each read one file at a time so that a Beam step can
index thousands of files in parallel and no process ever holds a whole crawl's index:

* `index_warc_file`: scan one WARC (ours under `OUT/warc/`, or anyone's) record by record;
* `read_cc_index`: one Parquet file of a Common Crawl columnar-index extract (columns
  `url, warc_filename, warc_record_offset, warc_record_length, fetch_status,
  content_mime_type`, optionally `fetch_redirect`), where `warc_filename` is relative to
  the crawl's bucket and `warc_prefix` says where the user keeps those files.

Pure functions over files (no Beam); the Beam wiring is `text/beam.py` and `pipelines/text.py`.
"""

from __future__ import annotations

import io
import logging
from collections import Counter
from collections.abc import Generator, Iterator
from typing import IO

from warcio.archiveiterator import ArchiveIterator, WARCIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.utils import BUFF_SIZE

from openmsd_build.core.paths import UnsafePath, confined_path
from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import REDIRECT_STATUSES, media_type
from openmsd_build.text.fetch.warc_fast import iter_members, next_record_start, parse_member
from openmsd_build.text.fetch.warc_store import (
    _PAYLOAD_TYPE,
    headers_dict,
    open_for_read,
    read_record,
    record_status_headers,
)
from openmsd_build.text.fetch.warc_stream import is_one_stream, plain_copy

LOG = logging.getLogger(__name__)
CC_REQUIRED = ("url", "warc_filename", "warc_record_offset", "warc_record_length", "fetch_status", "content_mime_type")
CC_REDIRECT = "fetch_redirect"
_BATCH_ROWS = 65_536


def index_warc_file(path: str, target_uri: bool = False, counts: Counter | None = None) -> Iterator[dict]:
    """Rows of every response record of one WARC, in file order (so the later of two
    records of one URL comes last, as `WarcBackend` resolves it). Records without a
    target URI are skipped; request, metadata and revisit records are not responses.
    `target_uri`: each row also carries the record's URI as written (`target_uri`), for a
    reader that needs the page's own address rather than the join key.

    Members of the common shape are read by `warc_fast` (a tidy member is exactly one
    record, so its offset and length are the member's); a member whose record it is not
    sure about is read alone by warcio, and from the first member that is not a tidy,
    complete gzip member on warcio reads the rest of the file, as it would have. Where warcio
    finds no record (damage: a bit flip, zeros, an overwritten span) the index goes on at the
    next record that starts intact (`warc_fast.next_record_start`): the records in between
    are lost, counted (`DAMAGED`, `DAMAGED_BYTES`) and logged, the ones after are indexed. A
    WARC gzipped as one stream is indexed from its inflated copy (`warc_stream`): the rows
    carry `path` and that copy's offsets, which `read_record` reads the same way. A record
    cut short is not indexed (`CUT_SHORT`, counted in `counts`)."""
    if is_one_stream(path):
        for row in index_warc_file(plain_copy(path), target_uri, counts):
            yield {**row, "warc_file": path}
        return
    with open_for_read(path) as fh:
        start: int | None = 0
        spans = 0
        while start is not None:
            damaged_at = yield from _rows_until_damage(path, fh, start, target_uri, counts)
            if damaged_at is None:
                return
            spans += 1
            if spans > MAX_DAMAGED_SPANS:  # a file of near-records, each read and failed in turn
                raise ArchiveLoadFailed(f"more than {MAX_DAMAGED_SPANS} damaged spans; the rest of the file "
                                        f"from offset {damaged_at} is not read")
            start = next_record_start(fh, damaged_at)
            end = start if start is not None else fh.seek(0, io.SEEK_END)
            damaged_at = min(_past_separator(fh, damaged_at), end)
            if counts is not None:
                counts[DAMAGED] += 1
                counts[DAMAGED_BYTES] += end - damaged_at
            LOG.warning("%s: no WARC record could be read at offset %d; %d bytes skipped to %s", path, damaged_at,
                        end - damaged_at, "the next intact record" if start is not None else "the end of the file")


DAMAGED = "archive.damaged_spans"
"""Counted for each span of a WARC where no record could be read (warcio found no record
start: a damaged gzip member, a block of zeros or another file's bytes), skipped to the
next record that starts intact. Its records are lost; `DAMAGED_BYTES` says how many bytes."""
DAMAGED_BYTES = "archive.damaged_bytes"
MAX_DAMAGED_SPANS = 1000


def _rows_until_damage(path: str, fh: IO[bytes], start: int, target_uri: bool,
                       counts: Counter | None) -> Generator[dict, None, int | None]:
    """The rows from `start` (a record's start) on; returns None at the file's end, or the
    offset from which no record could be read (past every row yielded)."""
    fh.seek(start)
    for offset, length, data in iter_members(fh, start):
        record = parse_member(data) if data is not None else None
        if record is None or not record.tidy_end:
            reached = [offset]  # the end of the last record warcio read, of any type
            try:
                yield from _warcio_rows(path, fh, offset, target_uri, counts, reached)
            except ArchiveLoadFailed:
                return reached[-1]
            return None
        if record.rec_type != "response" and record.plain:
            continue
        if not record.plain:
            yield from _warcio_member_rows(path, fh, offset, length, target_uri, counts)
            continue
        uri = record.warc_fields.get("warc-target-uri")
        if uri:
            payload_type = record.warc_fields.get(_PAYLOAD_TYPE.lower())
            yield _row(path, offset, length, uri, record.status, headers_dict(record.http_headers), payload_type,
                       target_uri)
    return None


def _past_separator(fh: IO[bytes], end: int) -> int:
    """`end` (where warcio says a record of an uncompressed WARC ends) past the record's
    closing line ends, which are not part of a damaged span that follows."""
    fh.seek(end)
    head = fh.read(4)
    return end + len(head) - len(head.lstrip(b"\r\n"))


def _row(path: str, offset: int, length: int, uri: str, status: int | None, headers: dict[str, str],
         payload_type: str | None, target_uri: bool = False) -> dict:
    """One index row, however the record was parsed."""
    content_type = payload_type or media_type(headers.get("content-type"))
    row = {
        "url": canonical_url(uri),
        "warc_file": path,
        "offset": offset,
        "length": length,
        "status": status,
        "content_type": content_type or None,
        "location": headers.get("location") if status in REDIRECT_STATUSES else None,
    }
    if target_uri:
        row["target_uri"] = uri
    return row


def _warcio_member_rows(path: str, fh: IO[bytes], offset: int, length: int, target_uri: bool = False,
                        counts: Counter | None = None) -> Iterator[dict]:
    """The row (if any) of the one-record gzip member at `offset`, read by warcio; the
    file position is kept for `iter_members`."""
    resume = fh.tell()
    fh.seek(offset)
    member = fh.read(length)
    fh.seek(resume)
    for row in _warcio_rows(path, io.BytesIO(member), 0, target_uri, counts):
        yield {**row, "offset": offset, "length": length}


class _Aligned:
    """`fh` from `offset` on, with the first read ending at the next warcio block boundary
    of the file: warcio resumed here then inflates the same blocks as when it had read the
    file from its start (how it treats a damaged gzip member depends on those blocks)."""

    def __init__(self, fh: IO[bytes], offset: int) -> None:
        fh.seek(offset)
        self._fh = fh
        self._first = BUFF_SIZE - offset % BUFF_SIZE

    def tell(self) -> int:
        """The underlying position."""
        return self._fh.tell()

    def read(self, size: int = -1) -> bytes:
        """Read; the first read stops at the block boundary."""
        if self._first:
            size, self._first = self._first, 0
        return self._fh.read(size)


CUT_SHORT = "archive.records_cut_short"
"""Counted for each response record whose block ends before its `Content-Length` (a file
cut by a partial download or copy, a crash while writing, a lying header): warcio hands such
a record over as if it were whole, so its first bytes would be replayed as the complete
response. It is not indexed: the URL is answered by another archived copy, or is missing.
A record whose Content-Length is negative is counted with them (warcio reads it as a record
of negative length)."""


def _warcio_rows(path: str, fh: IO[bytes], offset: int, target_uri: bool = False,
                 counts: Counter | None = None, reached: list[int] | None = None) -> Iterator[dict]:
    """Rows of the records from `offset` (a member boundary) on, read by warcio. Past the
    start it continues as the iterator over the whole file would: WARC only, same blocks.
    A record cut short is left out, counted in `counts` (`CUT_SHORT`) and logged. The end of
    every record read, of any type, is appended to `reached`: where damage found after it
    begins (a request or metadata record read whole is not part of the damaged span)."""
    if offset:
        iterator: ArchiveIterator = WARCIterator(_Aligned(fh, offset))
    else:
        fh.seek(0)
        iterator = ArchiveIterator(fh)
    for record in iterator:
        uri = record.rec_headers.get_header("WARC-Target-URI") if record.rec_type == "response" else None
        if not uri:
            if reached is not None:  # read to its end: its length is only known then
                reached.append(iterator.get_record_offset() + iterator.get_record_length())
            continue
        status, headers = record_status_headers(record)
        payload_type = record.rec_headers.get_header(_PAYLOAD_TYPE)
        # reads the record to its end: the length is only known then
        length = iterator.get_record_length()
        missing = getattr(record.raw_stream, "limit", 0)  # bytes of the block never read
        if missing > 0 or length <= 0:  # a negative Content-Length reads as a negative record length
            if counts is not None:
                counts[CUT_SHORT] += 1
            LOG.warning("%s: the record at offset %d (%s) ends %d bytes before its Content-Length: not indexed",
                        path, iterator.get_record_offset(), uri, missing)
            continue
        if reached is not None:
            reached.append(iterator.get_record_offset() + length)
        yield _row(path, iterator.get_record_offset(), length, uri, status, headers, payload_type, target_uri)


def warc_path(prefix: str, warc_filename: str) -> str:
    """`warc_filename` of a Common Crawl index row (`crawl-data/CC-MAIN-.../x.warc.gz`)
    under `prefix` (a local folder, `gs://bucket/cc`, `s3://commoncrawl`); no prefix keeps
    the name as it is, under the current folder. The name is data: it is confined to the
    prefix (`core.paths.confined_path`: no `..`, no scheme, no backslash or control
    character, no symbolic link out of a local prefix; a leading `/` is relative to the
    prefix, as in Common Crawl's own paths) and `UnsafePath` is raised otherwise."""
    if not prefix:
        return confined_path(".", warc_filename)[2:]
    return confined_path(prefix, warc_filename, strip_leading_slash=True)


def cc_index_columns(path: str) -> list[str]:
    """The column names of one index Parquet file (its footer only)."""
    import pyarrow.parquet as pq

    with open_for_read(path) as fh:
        return list(pq.ParquetFile(fh).schema_arrow.names)


def missing_cc_columns(path: str) -> list[str]:
    """Required columns absent from an index extract: checked before a run starts, so a
    wrong export fails with the column names instead of deep inside a worker."""
    names = set(cc_index_columns(path))
    return [c for c in CC_REQUIRED if c not in names]


def _int_or_none(value: object) -> int | None:
    """Common Crawl's fetch_status is an int column, but extracts may carry strings."""
    if value is None:
        return None
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite float
        return None


def _positive_or_none(value: object) -> int | None:
    """A record length from an index row; a length that is not positive is unknown (the
    record is read from its offset to its member's end)."""
    number = _int_or_none(value)
    return number if number is not None and number > 0 else None


SUPERSEDED = "archive.index_rows_superseded"
"""Counted for each index row of a URL that another row of the same batch of the extract
(`_BATCH_ROWS`) replaces: only the latest of them (`latest_row`) goes on to be joined, so an
extract listing one URL two million times costs a few rows per batch, not two million Beam
elements grouped under one key (5 GB)."""


def read_cc_index(path: str, warc_prefix: str = "", counts: Counter | None = None) -> Iterator[dict]:
    """Rows of one Parquet file of a columnar-index extract, read in record batches (an
    extract file can hold millions of rows). `location` comes from `fetch_redirect` when
    the extract has it; a redirect row without it gets its Location from the record
    itself (`fill_location`). Rows with no URL, file or offset (or a negative or infinite one)
    are skipped, counted as `archive.index_rows_incomplete`; a URL listed again in a batch
    keeps its latest row (`SUPERSEDED`). A row whose
    file name leaves `warc_prefix` (`warc_path`) is refused: counted in `counts` as
    `archive.refused_path.<reason>`, logged, and never read."""
    import pyarrow.parquet as pq

    with open_for_read(path) as fh:
        parquet = pq.ParquetFile(fh)
        names = set(parquet.schema_arrow.names)
        missing = [c for c in CC_REQUIRED if c not in names]
        if missing:
            raise ValueError(f"{path}: not a Common Crawl index extract, missing columns {missing}")
        columns = list(CC_REQUIRED) + ([CC_REDIRECT] if CC_REDIRECT in names else [])
        refused = 0
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
            latest: dict[str, dict] = {}  # a URL listed again in the batch: only its latest row goes on
            for raw in batch.to_pylist():
                url, name, offset = raw["url"], raw["warc_filename"], _int_or_none(raw["warc_record_offset"])
                if not url or not name or offset is None or offset < 0:
                    if counts is not None:
                        counts["archive.index_rows_incomplete"] += 1
                    continue
                try:
                    warc_file = warc_path(warc_prefix, name)
                except UnsafePath as exc:
                    if counts is not None:
                        counts[f"archive.refused_path.{exc.reason}"] += 1
                    if not refused:  # once per file: the counts hold the rest
                        LOG.warning("%s: index row for %.200r refused (%s); further refusals only counted",
                                    path, url, exc)
                    refused += 1
                    continue
                status = _int_or_none(raw["fetch_status"])
                location = raw.get(CC_REDIRECT) if status in REDIRECT_STATUSES else None
                row = {
                    "url": canonical_url(url),
                    "warc_file": warc_file,
                    "offset": offset,
                    "length": _positive_or_none(raw["warc_record_length"]),
                    "status": status,
                    "content_type": raw["content_mime_type"] or None,
                    "location": location or None,
                }
                kept = latest.setdefault(row["url"], row)
                if kept is not row:
                    if counts is not None:
                        counts[SUPERSEDED] += 1
                    latest[row["url"]] = latest_row((kept, row))  # type: ignore[assignment]
            yield from latest.values()


def needs_location(row: dict) -> bool:
    """A redirect row whose target is not known from the index alone."""
    return row["status"] in REDIRECT_STATUSES and not row["location"]


def fill_location(row: dict) -> dict:
    """`row` with the Location read from its record (a range read of a small 3xx record):
    for index extracts without `fetch_redirect`, so chains can still be followed."""
    archived = read_record(row["warc_file"], row["offset"], 0, row["length"])
    return {**row, "location": archived.headers.get("location") or None}


def latest_row(rows: list[dict] | tuple[dict, ...]) -> dict | None:
    """The record a URL archived several times resolves to: the last one in
    (file name, offset) order — `WarcBackend` scans files sorted by name and lets later
    records win, so both pick the same record."""
    return max(rows, key=lambda r: (r["warc_file"], r["offset"]), default=None)
