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
import pyarrow.compute as pc

from openmsd_build.core.hashing import shard_of
from openmsd_build.core.ipc import from_ipc
from openmsd_build.core.json_records import (
    MAX_NODES_PER_DOCUMENT,
    Item,
    RecordError,
    count_nodes,
    iter_documents_in,
    iter_json_lines,
    iter_raw_lines,
    parse_raw_line,
    read_all,
)
from openmsd_build.core.rejects import RejectBudget, make_reject
from openmsd_build.core.textclean import ESCAPE_SEQUENCE_RE, NONCHARACTER_CODES
from openmsd_build.papers.caps import FIELD_CAPS, LIST_CAPS
from openmsd_build.papers.merge_fast import PROJECTED, merge_frame
from openmsd_build.papers.merge_reference import _FILLED_FIELDS
from openmsd_build.papers.sources import crossref, crossref_columnar, openalex
from openmsd_build.papers.sources.registry import SOURCES as REGISTERED
from openmsd_build.schemas import PAPERS

STAGE = "papers"
DEFAULT_BATCH = 2000
# JSON Lines sources: files are cut into chunks of raw lines that any worker parses.
LINE_SOURCES = tuple(s.name for s in REGISTERED if s.line_based)
LINE_CHUNK = 5000
# Only files larger than this (compressed) are cut into chunks; smaller ones parse in place.
LINE_SPLIT_BYTES = 256 << 20
# The polars reader costs ~1 KB of memory per item whatever the item holds, so a chunk of
# `{}` items (3 bytes each) would cost GBs: only chunks with at most this many `{` (an upper
# bound on their items; a real 5,000-work chunk has ~155k) take the columnar path. Others are
# parsed record by record, under `records.MAX_NODES_PER_DOCUMENT`.
MAX_COLUMNAR_OBJECTS = 250_000
# Caps on field sizes (`papers.caps`): cut values are counted as `truncated.<source>.<field>`.

Parser = Callable[[Any], dict]
_PARSERS: dict[str, Parser] = {s.name: s.parse_function() for s in REGISTERED}  # the registry's record parsers


def _outcomes(path: str, source: str) -> Iterator[tuple[str, dict | None, Item | None]]:
    """Every record of one file as `(origin, projected record, None)` or
    `(origin, None, failed item)`. Crossref public-data-file chunks are projected on columns
    (`crossref_columnar`); everything else, and any chunk that does not fit that reader, is
    parsed record by record."""
    if source in LINE_SOURCES:
        yield from _parsed(iter_json_lines(path), source)
        return
    data, failure = read_all(path)
    if failure is not None:
        yield failure.origin, None, failure
    if data is None:
        return
    columnar = False
    if source == "crossref":
        objects = data.count(b"{")  # counted once: each count is a pass over tens of MB
        columnar = objects <= MAX_COLUMNAR_OBJECTS and count_nodes(data, objects) <= MAX_NODES_PER_DOCUMENT
    items_frame = crossref_columnar.read_items(data) if columnar else None
    if items_frame is not None:
        for record, rejected in crossref_columnar.iter_project(items_frame):
            if record is not None:
                yield f"{path}:#{record.pop('_index')}", record, None
            else:
                assert rejected is not None
                index, reason, raw_doi = rejected
                origin = f"{path}:#{index}"
                yield origin, None, Item(origin, reason=reason, raw=(raw_doi or "").encode("utf-8"))
        return
    keys = crossref.LIST_KEYS if source == "crossref" else openalex.LIST_KEYS
    yield from _parsed(iter_documents_in(data, path, keys), source)


def _parsed(items: Iterable[Item], source: str) -> Iterator[tuple[str, dict | None, Item | None]]:
    """Decoded items -> projected records or failures (a parser bug costs one record)."""
    parse = _PARSERS[source]
    for item in items:
        if item.reason is not None:
            yield item.origin, None, item
            continue
        try:
            yield item.origin, parse(item.obj), None
        except RecordError as exc:
            yield item.origin, None, Item(item.origin, reason=exc.reason, detail=exc.detail, raw=_excerpt(item.obj))
        except Exception as exc:  # noqa: BLE001 - a parser bug must cost one record, not the whole file
            yield item.origin, None, Item(item.origin, reason="parser_error",
                                          detail=f"{type(exc).__name__}: {exc}"[:200], raw=_excerpt(item.obj))


def read_line_chunks(path: str, source: str, chunk_lines: int | None = None) -> Iterator[tuple[str, Any]]:
    """Split a JSON Lines file into chunks of raw lines without parsing them, so that one
    huge snapshot file (Unpaywall's is a single gzip of tens of GB: decompression is serial)
    is parsed and projected by every worker instead of one. Yields `("chunk", (source, path,
    packed))` (`packed`: `pack_chunk` of `[(origin, line bytes, ...), ...]`) and once
    `("counts", {"files.<source>": 1})`; lines that cannot even be read (too long, corrupt
    gzip) travel in the chunks as failures."""
    chunk_lines = chunk_lines or LINE_CHUNK
    chunk: list[tuple[str, bytes | None, str | None, str | None, bytes | None]] = []
    for item in iter_raw_lines(path):
        chunk.append((item.origin, item.obj, item.reason, item.detail, item.raw))
        if len(chunk) >= chunk_lines:
            yield "chunk", (source, path, pack_chunk(chunk))
            chunk = []
    if chunk:
        yield "chunk", (source, path, pack_chunk(chunk))
    yield "counts", {f"files.{source}": 1}


_CHUNK_SCHEMA = pa.schema([("origin", pa.string()), ("line", pa.binary()), ("reason", pa.string()),
                           ("detail", pa.string()), ("raw", pa.binary())])


def pack_chunk(chunk: list) -> bytes:
    """A chunk of raw lines `[(origin, line, reason, detail, raw), ...]` as one Arrow IPC
    stream with LZ4-compressed buffers: JSON Lines compress ~5-8x at ~1 GB/s, and every byte
    of a chunk goes through the shuffle. On the local portable runner each worker's share of
    a grouped stage input is sent as one gRPC message, capped at 2 GB (1M uncompressed
    Unpaywall lines are 2.4 GB: the stage failed with one worker); the shuffle is also
    cheaper on every runner. Arrow, not pickle: reading a chunk never runs code."""
    columns = list(zip(*chunk, strict=True)) if chunk else [()] * len(_CHUNK_SCHEMA)
    table = pa.Table.from_arrays([pa.array(list(col), type=field.type) for col, field in zip(columns, _CHUNK_SCHEMA, strict=True)],
                                 schema=_CHUNK_SCHEMA)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, _CHUNK_SCHEMA, options=pa.ipc.IpcWriteOptions(compression="lz4")) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def unpack_chunk(packed: bytes) -> list[tuple]:
    """The lines `pack_chunk` packed, as the same tuples."""
    table = pa.ipc.open_stream(packed).read_all()
    return list(zip(*(table.column(k).to_pylist() for k in range(table.num_columns)), strict=True))


def parse_line_chunk(
    source: str, path: str, packed: bytes, num_shards: int, batch_size: int = DEFAULT_BATCH
) -> Iterator[tuple[str, Any]]:
    """One chunk of `read_line_chunks` -> the same tagged outputs as `read_source_file`."""
    items = (Item(origin, reason=reason, detail=detail, raw=raw) if reason is not None
             else parse_raw_line(line, origin) for origin, line, reason, detail, raw in unpack_chunk(packed))
    yield from _collect(_parsed(items, source), source, path, num_shards, batch_size, count_file=False)


def read_source_file(
    path: str, source: str, num_shards: int, batch_size: int = DEFAULT_BATCH
) -> Iterator[tuple[str, Any]]:
    """Parse one file of `source`. Yields tagged outputs:

    - `("batch", (shard, table))` projected records (`PROJECTED` rows), at most
      `batch_size` a batch;
    - `("reject", reject_row)` for every record that could not be used, up to
      `rejects.MAX_REJECTS_PER_FILE` rows per file; failures past that are only counted;
    - `("counts", {...})` once at the end: `read.<source>`, `rejected.<source>.<reason>`
      (every failure), `rejects_suppressed.<source>` (failures without a reject row),
      `truncated.<source>.<field>` (values cut to `FIELD_CAPS` / `LIST_CAPS`),
      `controls_removed.<source>.<field>` (records whose short text field held control
      characters, removed: `clean_short_text`).

    read = records in batches + reject rows + rejects_suppressed. Memory is bounded per file:
    at most `batch_size` records per shard buffer, no reject buffer, and the readers' caps.
    """
    yield from _collect(_outcomes(path, source), source, path, num_shards, batch_size)


def _collect(
    outcomes: Iterable[tuple[str, dict | None, Item | None]],
    source: str,
    path: str,
    num_shards: int,
    batch_size: int,
    count_file: bool = True,
    budget: RejectBudget | None = None,
) -> Iterator[tuple[str, Any]]:
    """Outcomes -> sharded record batches, reject rows and counts (see `read_source_file`).
    `budget`: the reject rows the file may still produce (default: a fresh file's)."""
    counts: Counter = Counter()
    buffers: dict[int, list[dict]] = {}
    budget = budget if budget is not None else RejectBudget()
    read_key = f"read.{source}"
    for origin, record, failed in outcomes:
        counts[read_key] += 1
        if record is not None:
            record["origin"] = origin
            shard = shard_of(record["doi"], num_shards)
            buf = buffers.get(shard)
            if buf is None:
                buf = buffers[shard] = []
            buf.append(record)
            if len(buf) >= batch_size:
                yield "batch", (shard, projected_table(buf, source, counts))
                buffers[shard] = []
            continue
        assert failed is not None
        counts[f"rejected.{source}.{failed.reason}"] += 1
        if not budget.take():
            counts[f"rejects_suppressed.{source}"] += 1
            continue
        yield "reject", make_reject(
            STAGE, failed.reason or "unknown", key=origin, detail=failed.detail, source=path, raw=failed.raw
        )
    for shard in sorted(buffers):
        if buffers[shard]:
            yield "batch", (shard, projected_table(buffers[shard], source, counts))
    if count_file:
        counts[f"files.{source}"] += 1
    yield "counts", dict(counts)


def projected_table(records: list[dict], source: str, counts: Counter) -> pa.Table:
    """`PROJECTED` rows of `records`: control characters removed from the short text fields
    (`_clean_controls`) and values past the caps cut (`_cap_fields`), both counted in
    `counts`, and `completeness` computed on the columns (the value
    `merge_reference.completeness` gives each record). Every record of every source and
    reader (the columnar Crossref one, the record parsers) is made a table here."""
    table = pa.Table.from_pylist(records, schema=_PROJECTED_NO_COMPLETENESS)
    if _has_controls(table):
        for record in records:
            _clean_controls(record, source, counts)
        table = pa.Table.from_pylist(records, schema=_PROJECTED_NO_COMPLETENESS)
    if _needs_caps(table):
        for record in records:
            _cap_fields(record, source, counts)
        table = pa.Table.from_pylist(records, schema=_PROJECTED_NO_COMPLETENESS)
    return table.add_column(_COMPLETENESS_AT, PROJECTED.field("completeness"), _completeness(table))


_COMPLETENESS_AT = PROJECTED.get_field_index("completeness")
_PROJECTED_NO_COMPLETENESS = PROJECTED.remove(_COMPLETENESS_AT)


def _completeness(table: pa.Table) -> pa.ChunkedArray:
    """Per row, how many of `merge_reference._FILLED_FIELDS` are filled (not null, not an
    empty string or list) -- `completeness(record)` on columns."""
    total = pa.chunked_array([pa.array([0] * table.num_rows, pa.int8())])
    for name in _FILLED_FIELDS:
        column = table.column(name)
        if pa.types.is_string(column.type):
            filled = pc.greater(pc.utf8_length(column), 0)
        elif pa.types.is_list(column.type):
            filled = pc.greater(pc.list_value_length(column), 0)
        else:
            filled = pc.is_valid(column)
        total = pc.add(total, pc.cast(pc.fill_null(filled, False), pa.int8()))
    return total


# The short metadata text fields: the merge picks them as they are, and they name things
# (a type, a licence, a language code, a venue) that later stages compare and group by.
# Titles and abstracts are cleaned by `textclean` in the source parsers.
SHORT_TEXT_FIELDS = ("venue", "publisher", "type", "publisher_language", "license")
URL_TEXT_FIELDS = ("host_type", "license", "version")  # of each `urls` entry
# C0 and C1 control characters (U+0000-U+001F, U+007F-U+009F) and Unicode's noncharacters
# (`textclean.NONCHARACTER_CODES`) as Arrow's RE2 spells them.
_CONTROL_CLASS = "[\\x{0}-\\x{1f}\\x{7f}-\\x{9f}" + "".join(f"\\x{{{c:x}}}" for c in NONCHARACTER_CODES if c > 0xFDEF) + "\\x{fdd0}-\\x{fdef}]"
# `str.translate` table: a control character that Python counts as whitespace (tab, line
# breaks, the ASCII separators, NEL) becomes a space, so the words it separated stay apart;
# every other one (NUL, BEL, ESC, ...) and every noncharacter is deleted.
_CONTROLS = {c: (" " if chr(c).isspace() else None) for c in (*range(0x20), *range(0x7F, 0xA0), *NONCHARACTER_CODES)}


def clean_short_text(value: str | None) -> str | None:
    """A short metadata value without C0 / C1 control characters: whitespace controls become
    a space, the others are deleted, runs of spaces they leave are one space, and the value
    is stripped; nothing left is None. Any other value is returned as it is (`isprintable`
    is the gate: text holding a control character is never printable)."""
    if value is None or value.isprintable():
        return value
    if "\x1b" in value:  # a terminal's colour code goes whole, not only its ESC
        value = ESCAPE_SEQUENCE_RE.sub("", value)
    cleaned = value.translate(_CONTROLS)
    if "  " in cleaned:
        cleaned = " ".join(filter(None, cleaned.split(" ")))
    return cleaned.strip() or None


def _has_controls(table: pa.Table) -> bool:
    """Whether any short text value of a batch (`SHORT_TEXT_FIELDS`, the categories, the
    text fields of the URL entries) holds a control character: one RE2 scan per column in
    C++, so the records themselves are looked at only in the rare batch that has one."""
    columns = [table.column(name) for name in SHORT_TEXT_FIELDS]
    columns.append(pc.list_flatten(table.column("categories")))
    urls = pc.list_flatten(table.column("urls"))
    if len(urls):
        urls = urls.combine_chunks() if isinstance(urls, pa.ChunkedArray) else urls
        columns += [urls.field(name) for name in URL_TEXT_FIELDS]
    return any(len(column) and pc.any(pc.match_substring_regex(column, _CONTROL_CLASS)).as_py()
               for column in columns)


def _clean_fields(values: dict, names: tuple[str, ...]) -> bool:
    """`clean_short_text` on `values[name]` in place for each of `names`; whether any changed."""
    changed = False
    for name in names:
        value = values.get(name)
        if isinstance(value, str) and not value.isprintable():
            cleaned = clean_short_text(value)
            if cleaned != value:
                values[name] = cleaned
                changed = True
    return changed


def _clean_controls(record: dict, source: str, counts: Counter) -> None:
    """`clean_short_text` on a record's short text fields in place, counting each field
    changed as `controls_removed.<source>.<field>`; categories are cleaned, the empty ones
    dropped and the rest sorted and deduplicated again (as the parsers give them)."""
    for name in SHORT_TEXT_FIELDS:
        if _clean_fields(record, (name,)):
            counts[f"controls_removed.{source}.{name}"] += 1
    categories = record.get("categories")
    if categories and not all(c.isprintable() for c in categories if isinstance(c, str)):
        cleaned_categories = sorted({c for c in map(clean_short_text, categories) if c})
        if cleaned_categories != categories:
            record["categories"] = cleaned_categories
            counts[f"controls_removed.{source}.categories"] += 1
    # a list, not a generator: every entry is cleaned, not only those up to the first change
    if any([_clean_fields(entry, URL_TEXT_FIELDS) for entry in record.get("urls") or ()]):
        counts[f"controls_removed.{source}.urls"] += 1


def _needs_caps(table: pa.Table) -> bool:
    """Whether any row of a batch has a value past `FIELD_CAPS` / `LIST_CAPS` (a few Arrow
    kernels per batch instead of a dozen lookups per record: almost no record needs a cut)."""
    for name, cap in FIELD_CAPS.items():
        longest = pc.max(pc.utf8_length(table.column(name))).as_py()
        if longest is not None and longest > cap:
            return True
    for name, cap in LIST_CAPS.items():
        longest = pc.max(pc.list_value_length(table.column(name))).as_py()
        if longest is not None and longest > cap:
            return True
    for name in LIST_CAPS:  # the strings in the lists' entries (`_cap_fields`)
        if _longest_string(pc.list_flatten(table.column(name))) > FIELD_CAPS["title"]:
            return True
    return False


def _longest_string(values: pa.ChunkedArray | pa.Array) -> int:
    """The longest string among `values` (strings, or records holding strings), 0 for none."""
    if pa.types.is_struct(values.type):
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        return max((_longest_string(values.field(i)) for i in range(values.type.num_fields)), default=0)
    if not pa.types.is_string(values.type) or not len(values):
        return 0
    return pc.max(pc.utf8_length(values)).as_py() or 0


def _cap_fields(record: dict, source: str, counts: Counter) -> None:
    """Cut over-long text fields and lists in place (see `FIELD_CAPS`), counting each cut."""
    for name, cap in FIELD_CAPS.items():
        value = record.get(name)
        if isinstance(value, str) and len(value) > cap:
            record[name] = value[:cap]
            counts[f"truncated.{source}.{name}"] += 1
    for name, cap in LIST_CAPS.items():
        value = record.get(name)
        if isinstance(value, list) and len(value) > cap:
            record[name] = value[:cap]
            counts[f"truncated.{source}.{name}"] += 1
    cap = FIELD_CAPS["title"]
    for name in LIST_CAPS:  # every string in a list's entries, as a title is capped
        value = record.get(name)
        if isinstance(value, list) and any(_too_long(entry, cap) for entry in value):
            # a URL cut short would fetch another page: an over-long one is left out instead
            record[name] = [_cut(entry, cap) for entry in value
                            if not (name == "urls" and isinstance(entry, dict) and _too_long(entry.get("url"), cap))]
            counts[f"truncated.{source}.{name}"] += 1


def _too_long(entry: Any, cap: int) -> bool:
    """Whether a list entry (a string, or a record of strings) holds a string over `cap`."""
    if isinstance(entry, str):
        return len(entry) > cap
    return isinstance(entry, dict) and any(isinstance(v, str) and len(v) > cap for v in entry.values())


def _cut(entry: Any, cap: int) -> Any:
    """A list entry with each of its strings cut at `cap` characters."""
    if isinstance(entry, str):
        return entry[:cap]
    if isinstance(entry, dict):
        return {k: v[:cap] if isinstance(v, str) else v for k, v in entry.items()}
    return entry


def _excerpt(obj: Any) -> bytes | None:
    import orjson

    try:
        return orjson.dumps(obj)[:4000]
    except TypeError:
        return repr(obj)[:4000].encode("utf-8", "replace")


def merge_shard(batches: Iterable[pa.Table | bytes | list]) -> tuple[pa.Table, dict[str, int]]:
    """All records of one shard (Arrow tables of `PROJECTED` rows, or their `core.ipc`
    bytes; an empty list is the shard-0 seed) -> the merged `papers`
    table sorted by DOI, plus join counts: `written`; `merged_records` (records folded into
    another record's row: cross-source joins and duplicates, so
    read = written + rejected + merged_records); of those, `merged_duplicates.<source>`
    (same DOI twice in one source); `joined.<sources>`; `with_abstract`; `with_urls`."""
    tables = [t for t in (from_ipc(b) if isinstance(b, bytes) else b for b in batches)
              if isinstance(t, pa.Table) and t.num_rows]
    if not tables:
        return PAPERS.empty_table(), {}
    return merge_frame(pa.concat_tables(tables))
