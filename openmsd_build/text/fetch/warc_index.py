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

from collections.abc import Iterator

from warcio.archiveiterator import ArchiveIterator

from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import REDIRECT_STATUSES, media_type
from openmsd_build.text.fetch.warc_store import _PAYLOAD_TYPE, open_for_read, read_record, record_status_headers

INDEX_FIELDS = ("url", "warc_file", "offset", "length", "status", "content_type", "location")
CC_REQUIRED = ("url", "warc_filename", "warc_record_offset", "warc_record_length", "fetch_status", "content_mime_type")
CC_REDIRECT = "fetch_redirect"
_BATCH_ROWS = 65_536


def index_warc_file(path: str) -> Iterator[dict]:
    """Rows of every response record of one WARC, in file order (so the later of two
    records of one URL comes last, as `WarcBackend` resolves it). Records without a
    target URI are skipped; request, metadata and revisit records are not responses."""
    with open_for_read(path) as fh:
        iterator = ArchiveIterator(fh)
        for record in iterator:
            if record.rec_type != "response":
                continue
            uri = record.rec_headers.get_header("WARC-Target-URI")
            if not uri:
                continue
            status, headers = record_status_headers(record)
            content_type = record.rec_headers.get_header(_PAYLOAD_TYPE) or media_type(headers.get("content-type"))
            yield {
                "url": canonical_url(uri),
                "warc_file": path,
                # reads the record to its end: the length is only known then
                "offset": iterator.get_record_offset(),
                "length": iterator.get_record_length(),
                "status": status,
                "content_type": content_type or None,
                "location": headers.get("location") if status in REDIRECT_STATUSES else None,
            }


def warc_path(prefix: str, warc_filename: str) -> str:
    """`warc_filename` of a Common Crawl index row (`crawl-data/CC-MAIN-.../x.warc.gz`)
    under `prefix` (a local folder, `gs://bucket/cc`, `s3://commoncrawl`); no prefix keeps
    the name as it is."""
    if not prefix:
        return warc_filename
    return prefix.rstrip("/") + "/" + warc_filename.lstrip("/")


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
    except (TypeError, ValueError):
        return None


def read_cc_index(path: str, warc_prefix: str = "") -> Iterator[dict]:
    """Rows of one Parquet file of a columnar-index extract, read in record batches (an
    extract file can hold millions of rows). `location` comes from `fetch_redirect` when
    the extract has it; a redirect row without it gets its Location from the record
    itself (`fill_location`). Rows with no URL, file or offset are skipped."""
    import pyarrow.parquet as pq

    with open_for_read(path) as fh:
        parquet = pq.ParquetFile(fh)
        names = set(parquet.schema_arrow.names)
        missing = [c for c in CC_REQUIRED if c not in names]
        if missing:
            raise ValueError(f"{path}: not a Common Crawl index extract, missing columns {missing}")
        columns = list(CC_REQUIRED) + ([CC_REDIRECT] if CC_REDIRECT in names else [])
        for batch in parquet.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
            for raw in batch.to_pylist():
                url, name, offset = raw["url"], raw["warc_filename"], raw["warc_record_offset"]
                if not url or not name or offset is None:
                    continue
                status = _int_or_none(raw["fetch_status"])
                location = raw.get(CC_REDIRECT) if status in REDIRECT_STATUSES else None
                yield {
                    "url": canonical_url(url),
                    "warc_file": warc_path(warc_prefix, name),
                    "offset": int(offset),
                    "length": _int_or_none(raw["warc_record_length"]),
                    "status": status,
                    "content_type": raw["content_mime_type"] or None,
                    "location": location or None,
                }


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
