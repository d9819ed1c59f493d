"""Columnar fast path of OpenCitations parsing: the same edges, rejects and counts as the
row parser of `opencitations.py`, without a Python call per row.

Why: COCI alone is ~2B rows; the row parser (`csv` module, `parse_id_field`,
`normalize_doi`, one list append per column) costs ~15-20 µs a row, ten CPU-hours before any
join. Almost every real row is plain: ASCII, at most every field wrapped in quotes, DOIs
already canonical (lower case, bare or `doi:`-prefixed). Such rows are split, unquoted and
checked in polars, a block of lines at a time; every other row goes through the row
parser's own decision (`CitationParse.add_row`), so the reference stays the one definition.

How a stream is read (each step keeps the row parser's bounds and line numbers):

1. bytes arrive in blocks of about `BLOCK_BYTES`, cut after the last newline, read with
   `read1(8192)` like `io.TextIOWrapper` so that a damaged archive loses exactly the bytes
   the row parser would lose (complete lines before the damage are parsed, then the error
   goes to `parse_citation_file` as before);
2. a line can be parsed on its own when it holds no NUL, no bare carriage return, is shorter
   than the CSV field cap (so neither `field_too_large` nor `line_too_long` can apply) and
   every quote in it wraps a whole field; then one physical line is one `csv` row and its
   line number is the row parser's;
3. *simple* lines (printable ASCII, quoted fields without commas) are split and unquoted
   in polars; their id fields are decided in polars when every token is an `omid:`, another
   scheme's id, or a canonical DOI (bare or after `doi:`), which `normalize_doi` returns
   unchanged, and a field of several tokens has no bare one (else it is no list of ids,
   `parse_id_field`); rows that would fail (too few fields, empty ends, DOIs needing the full
   normalizer) and lines that are not simple go to `add_row`, in line order, so reject
   rows, their order and the reject budget are the row parser's;
4. at the first line that cannot be parsed on its own (a quoted newline, a huge line, a
   stray quote, NUL or CR, or an unrecognized header) the rest of the stream is handed to
   the row parser itself (`continue_citation_rows`) on the same state: hostile input gets
   exactly the hardened path.
"""

from __future__ import annotations

import csv
import io
import re
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO

import numpy as np
import polars as pl
import pyarrow as pa

from openmsd_build.citations.opencitations import (
    _ARCHIVE_ERRORS,
    EDGE_BATCH_SCHEMA,
    MAX_CSV_FIELD_CHARS,
    CitationParse,
    LineTally,
    continue_citation_rows,
    iter_csv_rows,
    text_stream,
)
from openmsd_build.core.doi import MAX_DOI_LENGTH
from openmsd_build.core.rejects import REJECT_FLUSH_ROWS, RejectBudget

BLOCK_BYTES = 8 << 20
# A block also ends after this many lines: every line costs ~150 bytes of offsets, masks and
# split fields while a block is decided, so an 8 MiB block of blank lines (8M lines, from an
# 8 KB gzip) peaked at 1.2 GB, and two decided at once at 2.1 GB. Real rows are 40-150 bytes,
# so a real block holds 60k-200k lines and is cut by its bytes as before.
BLOCK_LINES = 1 << 18
# Blocks decided on helper threads while earlier ones are applied (read ahead at most this
# many blocks: memory is a few blocks).
DECIDE_THREADS = 2
DECIDE_AHEAD = 2
# `io.TextIOWrapper`'s chunk size: reading the same pieces keeps damaged-archive behaviour equal.
READ_CHUNK = 8192
# A line shorter than the field cap cannot hold a field the `csv` module would refuse.
FAST_LINE_BYTES = MAX_CSV_FIELD_CHARS - 1

# Bytes of a plain block: printable ASCII without '"', and the line ends.
_PLAIN_BYTES = bytes([10, 13, *(b for b in range(32, 127) if b != 34)])
# Printable ASCII without '"' and ','; a simple line is fields of those, each optionally quoted.
_PLAIN = r"[\x20\x21\x23-\x2B\x2D-\x7E]*"
_SIMPLE_RE = rf'^(?:"{_PLAIN}"|{_PLAIN})(?:,(?:"{_PLAIN}"|{_PLAIN}))*$'
# A line the `csv` module ends where the line ends: every field unquoted without quotes, or
# wholly quoted with no quote inside (commas and any other character allowed).
_INDEPENDENT_RE = re.compile(r'(?:"[^"\r\n]*"|[^",\r\n]*)(?:,(?:"[^"\r\n]*"|[^",\r\n]*))*')
# `doi._CANONICAL_RE` in the regex dialect polars uses (no look-behind: the forbidden last
# characters are checked apart).
_CANONICAL = r"^10\.[0-9]{4,9}(?:\.[0-9]+)*/[!-$&-@\[-~]+$"
_BAD_LAST = r"""[.,;:'">)\]}]$"""
# `_QUICK_DOI` without the optional `doi:` and without a capture group: a bare canonical DOI.
_BARE_DOI = r"^10\.[0-9]{4,9}(?:\.[0-9]+)*/[!-$&-@\[-~]*[!#$&(*+\-/0-9<=?@\[\\^_`a-z{|~]$"
# The same language as a whole token that is canonical, optionally after a lower-case `doi:`:
# the last character of the suffix is any of the class but the forbidden last ones.
_QUICK_DOI = r"^(?:doi:)?(10\.[0-9]{4,9}(?:\.[0-9]+)*/[!-$&-@\[-~]*[!#$&(*+\-/0-9<=?@\[\\^_`a-z{|~])$"
# `doi._PREFIX_RE` for a token without whitespace (applied to the lower-cased token).
_PREFIX = r"^(?:(?:https?://)?(?:(?:dx\.|www\.)?doi\.org|doi\.[a-z]+\.org)/|doi:|info:doi/|urn:doi:)"
_OTHER_SCHEME = r"^[^/]*:"
# A simple line that is no row (the `csv` row is empty or all its fields blank).
_BLANK = r'^[ ,"]*$'
_DOI_LIKE = r"^(?:doi:|http:|https:|info:|urn:)"


class _Chained(io.RawIOBase):
    """`prefix` then the rest of `stream`: what the row parser reads when it takes over."""

    def __init__(self, prefix: bytes, stream: IO[bytes] | None) -> None:
        self._prefix = memoryview(prefix)
        self._stream = stream
        # `read1`, never `read`: `GzipFile.read(n)` gathers n bytes over several inflations
        # and drops all of them when a cut archive fails half-way, while the row parser's
        # `TextIOWrapper` reads with `read1` and keeps every complete line before the cut.
        self._read = getattr(stream, "read1", None) or getattr(stream, "read", None)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        if self._read is None:
            return 0
        data = self._read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _canonical(token: pl.Expr) -> pl.Expr:
    """True where `normalize_doi(token)` is `token` itself (its canonical shortcut)."""
    return (token.str.contains(_CANONICAL) & ~token.str.contains(_BAD_LAST)
            & (token.str.len_bytes() <= MAX_DOI_LENGTH))


def _classify(t: pl.Expr) -> list[pl.Expr]:
    """One token's part in `parse_id_field`: its OMID (prefix removed, lower case), its
    DOI where `normalize_doi`'s answer is known without it (else null), and whether the
    token is DOI-looking."""
    low = t.str.to_lowercase()
    is_omid = low.str.starts_with("omid:")
    candidate = ~is_omid & ~(low.str.contains(_OTHER_SCHEME) & ~low.str.contains(_DOI_LIKE))
    # One prefix off, lower case: where that is canonical it is what `normalize_doi` returns
    # for a printable-ASCII token (its other steps cannot change such a string).
    key = low.str.replace(_PREFIX, "")
    doi = pl.when(_canonical(key)).then(key)
    return [
        pl.when(is_omid & (low.str.len_bytes() > 5)).then(low.str.slice(5)).alias("omid"),
        pl.when(candidate).then(doi).alias("doi"),
        candidate.alias("cand"),
    ]


def parse_id_fields(fields: pl.Series) -> pl.DataFrame:
    """`parse_id_field` over a column of printable-ASCII fields: (doi, omid, sure) per field.

    `sure` is False where the answer needs `normalize_doi`'s full pipeline (the first
    DOI-looking token is not canonical); those rows go to the row parser. Where `sure`, the
    error is None by construction (no DOI-looking token failed before the chosen one).

    A field that is one bare canonical DOI (COCI: nearly every field) is its own answer;
    that is settled by one regex without a capture group (a DFA match, ~10x cheaper than
    the extraction in `_parse_id_fields_general`, which decides every other field).
    """
    bare = (fields.str.contains(_BARE_DOI) & (fields.str.len_bytes() <= MAX_DOI_LENGTH)).fill_null(False)
    quick = pl.DataFrame({"doi": fields.cast(pl.String), "bare": bare}).select(
        pl.when("bare").then("doi").alias("doi"), pl.lit(None, pl.String).alias("omid"), pl.lit(True).alias("sure"))
    rest = (~bare).arg_true()
    if not len(rest):
        return quick
    decided = _parse_id_fields_general(fields.gather(rest))
    return pl.DataFrame([quick[c].clone().scatter(rest, decided[c]) for c in ("doi", "omid", "sure")])


def _parse_id_fields_general(fields: pl.Series) -> pl.DataFrame:
    """`parse_id_fields` for any printable-ASCII fields (prefixed, several ids, OMIDs).

    One regex settles a field that is one canonical DOI, bare or after `doi:`; only the
    others are classified token by token (Index fields of several ids are exploded). A field
    of several tokens not all prefixed (`10.1000/abc def`: no list of ids, `parse_id_field`)
    is left to the row parser (not `sure`).
    """
    quick = pl.DataFrame({"f": fields}).select(pl.col("f").str.extract(_QUICK_DOI, 1).alias("doi")).select(
        pl.when(pl.col("doi").str.len_bytes() <= MAX_DOI_LENGTH).then(pl.col("doi")).alias("doi"),
        pl.lit(None, pl.String).alias("omid"), pl.lit(True).alias("sure"))
    rest = quick["doi"].is_null().arg_true()
    if not len(rest):  # every field one canonical DOI: nothing else to decide
        return quick
    base = pl.DataFrame({"f": fields.gather(rest)}).with_row_index("r").with_columns(
        pl.col("f").str.contains(" ").alias("multi"), *_classify(pl.col("f")))
    if base["multi"].any():
        tokens = (
            base.filter("multi").select("r", pl.col("f").str.split(" ").alias("t")).explode("t")
            .filter(pl.col("t").is_not_null() & (pl.col("t") != ""))
            .with_columns(*_classify(pl.col("t")))
        )
        per_row = tokens.group_by("r").agg(
            pl.col("omid").drop_nulls().first().alias("m_omid"),
            pl.col("doi").filter(pl.col("cand")).first().alias("m_doi"),
            pl.col("cand").any().alias("m_cand"),
            # several tokens, one of them bare: no list of ids (`parse_id_field`), the row parser decides
            ((pl.len() > 1) & ~pl.col("t").str.contains(_OTHER_SCHEME).all()).alias("m_unlisted"),
        )
        base = base.join(per_row, on="r", how="left").with_columns(
            pl.when("multi").then(pl.col(f"m_{c}")).otherwise(pl.col(c)).alias(c) for c in ("omid", "doi", "cand"))
        base = base.sort("r").with_columns(pl.col("m_unlisted").fill_null(False).alias("unlisted"))
    else:
        base = base.with_columns(pl.lit(False).alias("unlisted"))
    decided = base.select(
        "doi", "omid",
        ((~pl.col("cand").fill_null(False) | pl.col("doi").is_not_null()) & ~pl.col("unlisted")).alias("sure"))
    return pl.DataFrame([quick[c].clone().scatter(rest, decided[c]) for c in ("doi", "omid", "sure")])


def _csv_row(text: str) -> list[str] | None:
    """The `csv` row of one line that `_INDEPENDENT_RE` accepted (None if `csv` disagrees)."""
    try:
        rows = list(csv.reader([text]))
    except csv.Error:
        return None
    return rows[0] if len(rows) == 1 else ([] if not rows else None)


class _Block:
    """One block of whole lines: byte offsets of each line and the first line index from
    which the rest of the stream must go to the row parser (`len(self)` if none)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        arr = np.frombuffer(data, np.uint8)
        newlines = np.flatnonzero(arr == 10)
        ends = newlines
        if data and data[-1] != 10:
            ends = np.append(ends, len(data))
        self.starts = np.concatenate([[0], newlines + 1])[: len(ends)].astype(np.int64)
        self.ends = ends.astype(np.int64)
        lengths = self.ends - self.starts
        bad = len(self.ends)
        long = np.flatnonzero(lengths > FAST_LINE_BYTES)
        if len(long):
            bad = int(long[0])
        if data.find(b"\x00") >= 0:
            bad = min(bad, int(np.searchsorted(self.ends, np.flatnonzero(arr == 0)[0])))
        self.has_cr = data.find(b"\r") >= 0
        if self.has_cr:
            cr = np.flatnonzero(arr == 13)
            nxt = np.append(arr, 0)[cr + 1]
            lone = cr[nxt != 10]
            if len(lone):
                bad = min(bad, int(np.searchsorted(self.ends, lone[0])))
        self.first_bad = bad
        self._plain: bool | None = None

    def __len__(self) -> int:
        return len(self.ends)

    def plain(self, first: int, stop: int) -> bool:
        """Lines [first, stop) are printable ASCII without quotes (line ends aside): every
        line is then simple, and no field needs unquoting. (The whole block is checked
        first, with C-speed scans: nearly always it is plain, and then so is any part.)"""
        if self._plain is None:
            data = self.data
            self._plain = data.isascii() and data.find(b'"') < 0 and not data.translate(None, _PLAIN_BYTES)
        return self._plain or not self.data[self.offset(first):self.offset(stop)].translate(None, _PLAIN_BYTES)

    def quote_free(self, first: int, stop: int) -> bool:
        """Lines [first, stop) hold no quote: each then stands alone for the `csv` module
        (the block's checks already excluded NUL, bare CR and over-long lines)."""
        return self.data.find(b'"', self.offset(first), self.offset(stop)) < 0

    def simple_mask(self, lines: pl.Series, first: int, stop: int, plain: bool | None = None) -> pl.Series:
        """Which of `lines` (lines [first, stop)) match `_SIMPLE_RE`: all of them when that
        part of the block is `plain` (one pass over the bytes), else by the regex."""
        if plain if plain is not None else self.plain(first, stop):
            return pl.Series("simple", np.ones(len(lines), dtype=bool))
        return lines.str.contains(_SIMPLE_RE)

    def offset(self, line: int) -> int:
        return int(self.starts[line]) if line < len(self) else len(self.data)

    def text(self, line: int) -> str:
        return self.data[self.starts[line]:self.ends[line]].decode("utf-8", "replace").removesuffix("\r")

    def lines(self, first: int, stop: int) -> pl.Series:
        """Lines [first, stop) decoded (undecodable bytes replaced, as the row parser does).

        ASCII blocks (nearly all) become an Arrow string array over the block's own bytes
        (no decode, no split); others are decoded and split."""
        if stop <= first:
            return pl.Series("line", [], dtype=pl.String)
        lo, hi = self.offset(first), self.offset(stop)
        if self.data.isascii():
            offsets = np.append(self.starts[first:stop], hi).astype(np.int64)
            arr = pa.LargeStringArray.from_buffers(stop - first, pa.py_buffer(offsets), pa.py_buffer(self.data))
            lines = pl.Series("line", arr).str.strip_suffix("\n")
            return lines.str.strip_suffix("\r") if self.has_cr else lines
        text = self.data[lo:hi].decode("utf-8", "replace")
        lines = pl.Series("line", [text]).str.split("\n").explode()
        if text.endswith("\n"):
            lines = lines.head(len(lines) - 1)
        return lines.str.strip_suffix("\r")


def _simple_rows(state: CitationParse, lines: pl.Series, simple_mask: pl.Series, quoted: bool = True) -> pl.DataFrame:
    """The simple lines of `lines` in one polars query: `k` (index in `lines`), `ok` (enough
    fields and non-empty ends, else the row parser rejects the row, or it is blank), the
    unquoted `citing` / `cited` fields, and `bare` (both are one canonical DOI, which
    `parse_id_field` returns unchanged: nearly every COCI row). Without `quoted` the lines
    hold no quote, so fields are not unquoted."""
    need = state.need
    # The first `need` fields only (`split_exact` leaves a missing one null and builds no
    # list per line): the row has at least `need` fields when the last of them exists.
    field = pl.col("f").struct.field

    def unquoted(c: pl.Expr) -> pl.Expr:
        return c.str.strip_chars('"') if quoted else c

    def bare(c: pl.Expr) -> pl.Expr:
        return c.str.contains(_BARE_DOI) & (c.str.len_bytes() <= MAX_DOI_LENGTH)

    citing, cited = pl.col("citing"), pl.col("cited")
    return (
        pl.LazyFrame({"line": lines, "simple": simple_mask}).with_row_index("k").filter("simple")
        .select("k", pl.col("line").str.split_exact(",", need - 1).alias("f"))
        .select("k", field(f"field_{need - 1}").is_not_null().alias("enough"),
                unquoted(field(f"field_{state.i_citing}")).alias("citing"),
                unquoted(field(f"field_{state.i_cited}")).alias("cited"))
        .select("k", "citing", "cited",
                (pl.col("enough") & (citing.str.strip_chars(" ") != "")
                 & (cited.str.strip_chars(" ") != "")).fill_null(False).alias("ok"),
                (bare(citing) & bare(cited)).fill_null(False).alias("bare"))
        .collect()
    )


def _blank_rows(lines: pl.Series, rows: pl.DataFrame) -> np.ndarray:
    """Indices `k` of `rows` (simple lines that are not `ok`) that are blank (no row at
    all); only those lines can be, since a blank line has no non-empty field."""
    k = rows["k"]
    return k.filter(lines.gather(k).str.contains(_BLANK)).to_numpy()


def _decide_ids(rows: pl.DataFrame) -> pl.DataFrame:
    """`parse_id_field` of both ends of well-formed simple rows, where it is known without
    `normalize_doi`'s full pipeline: (k, citing_doi, citing_omid, cited_doi, cited_omid),
    in `k` order. Rows left out go to the row parser."""
    ends = ("citing", "cited")
    bare = rows.filter("bare").select(
        "k", *(x for e in ends for x in (pl.col(e).alias(f"{e}_doi"), pl.lit(None, pl.String).alias(f"{e}_omid"))))
    rest = rows.filter(~pl.col("bare"))
    if not rest.height:
        return bare
    ids = pl.concat([rest.select("k"), *(parse_id_fields(rest[e]).rename(lambda c, e=e: f"{e}_{c}") for e in ends)],
                    how="horizontal")
    sure = ids.filter(pl.col("citing_sure") & pl.col("cited_sure")).select(bare.columns)
    return pl.concat([bare, sure]).sort("k")


@dataclass
class _Decided:
    """What the columnar path decided for one block's lines (computed on any thread;
    `_StreamParse._apply` hands it to the parse state in line order)."""

    stop: int  # the block's line where the row parser must take over (its length if none)
    first: int  # the block's first line considered
    parsed: dict[int, list[str]]  # csv rows of non-simple lines, by index in the lines
    edges: pa.Table | None  # edges of the rows decided here
    counts: dict[str, int]  # their counts
    slow: list[int]  # indices (ascending) of the lines that need `add_row`
    texts: list[str]  # those lines' text


def _decide_block(state: CitationParse, block: _Block, first: int, stop: int) -> _Decided:
    """Lines [first, stop) of `block` decided without touching `state` (its header only is
    read), so that blocks can be decided on helper threads while earlier ones are applied."""
    lines = block.lines(first, stop)
    plain = block.plain(first, stop)
    simple = block.simple_mask(lines, first, stop, plain)
    parsed: dict[int, list[str]] = {}
    others = (~simple).arg_true()
    for k, text in zip(others.to_list(), lines.gather(others).to_list(), strict=True):
        row = _csv_row(text) if _INDEPENDENT_RE.fullmatch(text) else None
        if row is None:  # the row parser takes over from this line
            stop = first + k
            lines, simple = lines.head(k), simple.head(k)
            break
        parsed[k] = row
    edges, counts, slow = _vectorized(state, lines, simple, quoted=not plain)
    texts = lines.gather(slow).to_list() if slow else []
    return _Decided(stop, first, parsed, edges, counts, slow, texts)


def _vectorized(
    state: CitationParse, lines: pl.Series, simple_mask: pl.Series, quoted: bool = True,
) -> tuple[pa.Table | None, dict[str, int], list[int]]:
    """Decide the simple rows of `lines` (where `simple_mask`) in polars: their edges and
    counts, and the indices (in `lines`, ascending) of the rows that need `add_row` (not
    simple, or not decidable here). `quoted=False` promises the lines hold no quote."""
    assert state.i_citing is not None and state.i_cited is not None
    rows = _simple_rows(state, lines, simple_mask, quoted)
    decided = _decide_ids(rows.filter("ok"))
    has_end = {s: pl.col(f"{s}_doi").is_not_null() | pl.col(f"{s}_omid").is_not_null() for s in ("citing", "cited")}
    edges = decided.filter(has_end["citing"] & has_end["cited"])
    counts = {"rows_read": decided.height, "no_doi": decided.height - edges.height, "rows_parsed": edges.height,
              "rows_needing_meta": int((edges["citing_doi"].is_null() | edges["cited_doi"].is_null()).sum())}
    table = None
    if edges.height:
        table = edges.select(
            "citing_doi", "cited_doi",
            pl.when(pl.col("citing_doi").is_null()).then(pl.col("citing_omid")).alias("citing_omid"),
            pl.when(pl.col("cited_doi").is_null()).then(pl.col("cited_omid")).alias("cited_omid"),
        ).to_arrow().cast(EDGE_BATCH_SCHEMA)
    slow = np.ones(len(lines), dtype=bool)
    slow[decided["k"].to_numpy()] = False
    slow[_blank_rows(lines, rows.filter(~pl.col("ok")))] = False
    return table, counts, np.flatnonzero(slow).tolist()


def parse_citation_stream(
    binary: IO[bytes], source: str, batch_rows: int, budget: RejectBudget, tally: LineTally | None = None,
) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
    """`parse_citation_rows(iter_csv_rows(text_stream(binary), tally, single_line=True), ...)` with the
    columnar fast path: same edges (batch boundaries and row order within a batch may
    differ), same rejects in the same order, same counts (module docstring), the same
    physical lines counted on `tally`."""
    with ThreadPoolExecutor(DECIDE_THREADS, thread_name_prefix="citations-decide") as pool:
        parse = _StreamParse(binary, source, batch_rows, budget, pool, tally if tally is not None else LineTally())
        try:
            yield from parse.run()
        finally:
            parse.cancel()


@dataclass
class _Pending:
    """A block read, its header handled, its lines being decided (`decided`, if any)."""

    block: _Block
    first: int
    stop: int
    error: BaseException | None
    eof: bool
    header_done: bool
    decided: Future | None

    @property
    def final(self) -> bool:
        """Nothing may be read after this block before it is applied: the stream ends or
        breaks here, the row parser takes over here, or it may (a line with a quote can
        turn out not to stand alone; then the row parser must read the stream itself
        from there, exactly as without read-ahead)."""
        return (self.error is not None or self.eof or self.stop < len(self.block)
                or (self.first < self.stop and not self.block.quote_free(self.first, self.stop)))


class _StreamParse:
    """The block loop of `parse_citation_stream`, pipelined: up to `DECIDE_AHEAD` blocks are
    read and decided on helper threads (`_decide_block`, no shared state) while earlier
    ones are applied to the parse state in order (`_finish`): counts, edges, `add_row` of
    the slow lines with their line numbers, flushes and the hand-over to the row parser
    happen in the order and with the values of the sequential loop. Reading ahead stops
    at any block after which the stream must not be read yet (`_Pending.final`)."""

    def __init__(self, binary: IO[bytes], source: str, batch_rows: int, budget: RejectBudget,
                 pool: ThreadPoolExecutor, tally: LineTally) -> None:
        self.binary = binary
        self.tally = tally
        self.read = getattr(binary, "read1", binary.read)
        self.state = CitationParse(source, budget)
        self.batch_rows = batch_rows
        self.pool = pool
        self.carry = bytearray()
        self.line_no = 1  # the line number (== csv row number) of the next line; the header is 1
        self.header_done = False
        self.queue: deque[_Pending] = deque()

    def cancel(self) -> None:
        for pending in self.queue:
            if pending.decided is not None:
                pending.decided.cancel()
        self.queue.clear()

    def run(self) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
        while True:
            if self.queue and (len(self.queue) > DECIDE_AHEAD or self.queue[-1].final):
                if (yield from self._finish(self.queue.popleft())):
                    return
                continue
            pending = self._next_block()
            if pending is None:  # no newline in a whole block: a huge line
                while self.queue:
                    if (yield from self._finish(self.queue.popleft())):
                        return
                yield from _hand_over(self.state, bytes(self.carry), self.binary, self.line_no, self.header_done,
                                      self.batch_rows, self.tally)
                return
            self.queue.append(pending)

    def _next_block(self) -> _Pending | None:
        """Read the next block (None: a line longer than a block), handle the header if it
        is the first, and start deciding its lines."""
        carry, error, eof = self.carry, None, False
        lines = carry.count(b"\n")
        while len(carry) < BLOCK_BYTES and lines < BLOCK_LINES:
            try:
                piece = self.read(READ_CHUNK)
            except _ARCHIVE_ERRORS as exc:
                error, eof = exc, True
                break
            if not piece:
                eof = True
                break
            carry += piece
            lines += piece.count(b"\n")
        if error is not None:
            # the complete lines before the damage, as `io.TextIOWrapper` delivers them: a
            # line may also end in a lone '\r' (not the last byte: a '\n' might follow it)
            cut = max(carry.rfind(b"\n"), carry.rfind(b"\r", 0, max(len(carry) - 1, 0))) + 1
        elif not eof:
            cut = carry.rfind(b"\n") + 1
            if cut == 0:
                return None
        else:
            cut = len(carry)
        block = _Block(bytes(memoryview(carry)[:cut]))
        del carry[:cut]
        if error is not None:
            carry.clear()  # the partial line before the damage is lost, as in the row parser
        first, stop = 0, block.first_bad
        if not self.header_done and len(block):  # the first block: nothing is queued
            row = _csv_row(block.text(0)) if stop > 0 and _INDEPENDENT_RE.fullmatch(block.text(0)) else None
            if row is None:
                stop = 0
            else:
                self.state.set_header(row)
                self.header_done, first, self.line_no = True, 1, 2
                self.tally.n += 1
                if not self.state.recognized:
                    stop = 1
        decided = self.pool.submit(_decide_block, self.state, block, first, stop) if first < stop else None
        return _Pending(block, first, stop, error, eof, self.header_done, decided)

    def _finish(self, pending: _Pending):
        """Apply one block in order; True when the stream is done (a generator: it may
        flush batches)."""
        state, batch_rows, block, stop = self.state, self.batch_rows, pending.block, pending.stop
        if pending.decided is not None:
            decided: _Decided = pending.decided.result()
            stop = decided.stop
            yield from self._apply(decided)
        if stop < len(block):
            later = b"".join(p.block.data for p in self.queue)  # read ahead: only plain blocks
            self.cancel()
            rest = block.data[block.offset(stop):] + later + bytes(self.carry)
            yield from _hand_over(state, rest, None if pending.error is not None else self.binary, self.line_no,
                                  pending.header_done, batch_rows, self.tally)
            if pending.error is not None:
                raise pending.error
            return True
        if pending.error is not None:
            if state.has_output():
                yield from state.flush(batch_rows)
            raise pending.error
        if pending.eof:
            if not pending.header_done:
                state.set_header(None)
            if state.has_output():
                yield from state.flush(batch_rows)
            return True
        if state.pending >= batch_rows or len(state.rejects) >= REJECT_FLUSH_ROWS:
            yield from state.flush(batch_rows)
        return False

    def _apply(self, decided: _Decided):
        """A block's decisions into the state, in line order (a generator: flushes rejects
        every `REJECT_FLUSH_ROWS`, as the row loop does)."""
        state = self.state
        for name, value in decided.counts.items():
            if value or name == "rows_read":  # as the sequential loop: `rows_read` even when 0
                state.counts[name] += value
        if decided.edges is not None:
            state.add_table(decided.edges)
        for k, text in zip(decided.slow, decided.texts, strict=True):
            row = decided.parsed.get(k)
            if len(state.rejects) >= REJECT_FLUSH_ROWS:
                yield from state.flush(self.batch_rows)
            state.add_row(self.line_no + k, row if row is not None else _csv_row(text) or [])
        self.line_no += decided.stop - decided.first
        self.tally.n += decided.stop - decided.first


def _hand_over(
    state: CitationParse, rest: bytes, binary: IO[bytes] | None, line_no: int, header_done: bool, batch_rows: int,
    tally: LineTally,
) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
    """The row parser from `line_no` on: `rest` (bytes already read) then the stream."""
    rows = iter_csv_rows(text_stream(io.BufferedReader(_Chained(rest, binary))), tally, single_line=True)
    if not header_done:
        state.set_header(next(rows, None))
        line_no = 2
    yield from continue_citation_rows(state, rows, line_no, batch_rows)
