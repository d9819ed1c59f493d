"""The papers stage's work, as pure functions over batches (no Beam here).

1. `read_source_file` parses one snapshot file, projects each record to the fields the
   build needs, and groups the projected records into `(shard, batch)` pairs by a stable
   hash of the normalized DOI; bad records become reject rows with a reason.
2. `merge_shard` merges all records of one shard by DOI (`merge.merge_records`) into
   `papers` rows sorted by DOI, with the join counts.

The Beam pipeline only moves these batches: one element per file in, one element per
(file, shard, batch) through the shuffle, one Parquet file per shard out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from openmsd_build.hashing import shard_of
from openmsd_build.merge import completeness
from openmsd_build.merge_columnar import PROJECTED, merge_frame
from openmsd_build.rejects import make_reject
from openmsd_build.schemas import PAPERS
from openmsd_build.sources import crossref, openalex
from openmsd_build.sources.crossref import parse_crossref
from openmsd_build.sources.openalex import parse_openalex
from openmsd_build.sources.records import Item, RecordError, iter_json_documents, iter_json_lines
from openmsd_build.sources.unpaywall import parse_unpaywall

STAGE = "papers"
SOURCES = ("unpaywall", "crossref", "openalex")
DEFAULT_BATCH = 2000

Parser = Callable[[Any], dict]
_PARSERS: dict[str, Parser] = {
    "unpaywall": parse_unpaywall,
    "crossref": parse_crossref,
    "openalex": parse_openalex,
}


def _items(path: str, source: str) -> Iterator[Item]:
    if source == "unpaywall":
        return iter_json_lines(path)
    keys = crossref.LIST_KEYS if source == "crossref" else openalex.LIST_KEYS
    return iter_json_documents(path, keys)


def read_source_file(
    path: str, source: str, num_shards: int, batch_size: int = DEFAULT_BATCH
) -> Iterator[tuple[str, Any]]:
    """Parse one file of `source`. Yields tagged outputs:

    - `("batch", (shard, [record, ...]))` projected records, at most `batch_size` a batch;
    - `("reject", reject_row)` for every record that could not be used;
    - `("counts", {...})` once at the end: `read.<source>`, `rejected.<source>.<reason>`.
    """
    parse = _PARSERS[source]
    counts: Counter = Counter()
    buffers: dict[int, list[dict]] = {}
    for item in _items(path, source):
        counts[f"read.{source}"] += 1
        if item.reason is None:
            try:
                record = parse(item.obj)
            except RecordError as exc:
                item = Item(item.origin, reason=exc.reason, detail=exc.detail, raw=_excerpt(item.obj))
            except Exception as exc:  # noqa: BLE001 - a parser bug must cost one record, not the whole file
                item = Item(item.origin, reason="parser_error", detail=f"{type(exc).__name__}: {exc}"[:200],
                            raw=_excerpt(item.obj))
            else:
                record["origin"] = item.origin
                record["completeness"] = completeness(record)
                shard = shard_of(record["doi"], num_shards)
                buf = buffers.setdefault(shard, [])
                buf.append(record)
                if len(buf) >= batch_size:
                    yield "batch", (shard, pa.Table.from_pylist(buf, schema=PROJECTED))
                    buffers[shard] = []
                continue
        counts[f"rejected.{source}.{item.reason}"] += 1
        yield "reject", make_reject(
            STAGE, item.reason or "unknown", key=item.origin, detail=item.detail, source=path, raw=item.raw
        )
    for shard in sorted(buffers):
        if buffers[shard]:
            yield "batch", (shard, pa.Table.from_pylist(buffers[shard], schema=PROJECTED))
    counts[f"files.{source}"] += 1
    yield "counts", dict(counts)


def _excerpt(obj: Any) -> bytes | None:
    import orjson

    try:
        return orjson.dumps(obj)[:4000]
    except TypeError:
        return repr(obj)[:4000].encode("utf-8", "replace")


def merge_shard(batches: Iterable[pa.Table | list]) -> tuple[pa.Table, dict[str, int]]:
    """All records of one shard (Arrow tables of `PROJECTED` rows) -> the merged `papers`
    table sorted by DOI, plus join counts: `written`; `merged_records` (records folded into
    another record's row: cross-source joins and duplicates, so
    read = written + rejected + merged_records); of those, `merged_duplicates.<source>`
    (same DOI twice in one source); `joined.<sources>`; `with_abstract`; `with_urls`."""
    tables = [b for b in batches if isinstance(b, pa.Table) and b.num_rows]
    if not tables:
        return PAPERS.empty_table(), {}
    return merge_frame(pa.concat_tables(tables))
