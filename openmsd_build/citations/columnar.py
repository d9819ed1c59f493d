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
   unchanged; rows that would fail (too few fields, empty ends, DOIs needing the full
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
from collections.abc import Iterator
from typing import IO

import numpy as np
import polars as pl
import pyarrow as pa

from openmsd_build.citations.opencitations import (
    _ARCHIVE_ERRORS,
    EDGE_BATCH_SCHEMA,
    MAX_CSV_FIELD_CHARS,
    CitationParse,
    continue_citation_rows,
    iter_csv_rows,
    text_stream,
)
from openmsd_build.core.doi import MAX_DOI_LENGTH
from openmsd_build.core.rejects import REJECT_FLUSH_ROWS, RejectBudget

BLOCK_BYTES = 8 << 20
# `io.TextIOWrapper`'s chunk size: reading the same pieces keeps damaged-archive behaviour equal.
READ_CHUNK = 8192
# A line shorter than the field cap cannot hold a field the `csv` module would refuse.
FAST_LINE_BYTES = MAX_CSV_FIELD_CHARS - 1

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
# The same language as a whole token that is canonical, optionally after a lower-case `doi:`:
# the last character of the suffix is any of the class but the forbidden last ones.
_QUICK_DOI = r"^(?:doi:)?(10\.[0-9]{4,9}(?:\.[0-9]+)*/[!-$&-@\[-~]*[!#$&(*+\-/0-9<=?@\[\\^_`a-z{|~])$"
# `doi._PREFIX_RE` for a token without whitespace (applied to the lower-cased token).
_PREFIX = r"^(?:(?:https?://)?(?:(?:dx\.|www\.)?doi\.org|doi\.[a-z]+\.org)/|doi:|info:doi/|urn:doi:)"
_OTHER_SCHEME = r"^[^/]*:"
_DOI_LIKE = r"^(?:doi:|http:|https:|info:|urn:)"


class _Chained(io.RawIOBase):
    """`prefix` then the rest of `stream`: what the row parser reads when it takes over."""

    def __init__(self, prefix: bytes, stream: IO[bytes] | None) -> None:
        self._prefix = memoryview(prefix)
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        if self._stream is None:
            return 0
        data = self._stream.read(len(buffer))
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
    One regex settles a field that is one canonical DOI (COCI: every field); only the
    others are classified token by token (Index fields of several ids are exploded).
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
        )
        base = base.join(per_row, on="r", how="left").with_columns(
            pl.when("multi").then(pl.col(f"m_{c}")).otherwise(pl.col(c)).alias(c) for c in ("omid", "doi", "cand"))
        base = base.sort("r")
    decided = base.select(
        "doi", "omid", (~pl.col("cand").fill_null(False) | pl.col("doi").is_not_null()).alias("sure"))
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
        if data.find(b"\r") >= 0:
            cr = np.flatnonzero(arr == 13)
            nxt = np.append(arr, 0)[cr + 1]
            lone = cr[nxt != 10]
            if len(lone):
                bad = min(bad, int(np.searchsorted(self.ends, lone[0])))
        self.first_bad = bad

    def __len__(self) -> int:
        return len(self.ends)

    def simple_mask(self, lines: pl.Series, first: int, stop: int) -> pl.Series:
        """Which of `lines` (lines [first, stop)) match `_SIMPLE_RE`: all of them when that
        part of the block is printable ASCII without quotes (one pass over the bytes),
        else by the regex."""
        part = np.frombuffer(self.data, np.uint8)[self.offset(first):self.offset(stop)]
        if not part.size or not (((part < 32) & (part != 10) & (part != 13)) | (part > 126) | (part == 34)).any():
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
            return pl.Series("line", arr).str.strip_suffix("\n").str.strip_suffix("\r")
        text = self.data[lo:hi].decode("utf-8", "replace")
        lines = pl.Series("line", [text]).str.split("\n").explode()
        if text.endswith("\n"):
            lines = lines.head(len(lines) - 1)
        return lines.str.strip_suffix("\r")


def _vectorized(state: CitationParse, lines: pl.Series, simple_mask: pl.Series) -> pl.Series:
    """Decide the simple rows of `lines` (where `simple_mask`) in polars: counts and edges
    go into `state`; returns the indices (in `lines`, ascending) of the rows that need
    `add_row` (not simple, or not decidable here)."""
    i_citing, i_cited = state.i_citing, state.i_cited
    assert i_citing is not None and i_cited is not None
    df = pl.DataFrame({"line": lines, "simple": simple_mask}).with_row_index("k")
    df = df.with_columns((pl.col("simple") & pl.col("line").str.contains(r'^[ ,"]*$')).alias("blank"))
    simple = df.filter(pl.col("simple") & ~pl.col("blank"))  # blank: not a row
    fields = pl.col("line").str.split(",")
    simple = simple.select(
        "k",
        fields.list.len().alias("n"),
        fields.list.get(i_citing, null_on_oob=True).str.strip_chars('"').alias("citing"),
        fields.list.get(i_cited, null_on_oob=True).str.strip_chars('"').alias("cited"),
    )
    well_formed = ((pl.col("n") >= state.need) & (pl.col("citing").str.strip_chars(" ") != "")
                   & (pl.col("cited").str.strip_chars(" ") != ""))
    simple = simple.filter(well_formed.fill_null(False))
    ids = pl.concat([
        parse_id_fields(simple["citing"]).rename(lambda c: f"citing_{c}"),
        parse_id_fields(simple["cited"]).rename(lambda c: f"cited_{c}"),
    ], how="horizontal")
    decided = pl.concat([simple.select("k"), ids], how="horizontal").filter(
        pl.col("citing_sure") & pl.col("cited_sure"))
    has_end = {s: pl.col(f"{s}_doi").is_not_null() | pl.col(f"{s}_omid").is_not_null() for s in ("citing", "cited")}
    edges = decided.filter(has_end["citing"] & has_end["cited"])
    counts = state.counts
    counts["rows_read"] += decided.height
    if decided.height - edges.height:
        counts["no_doi"] += decided.height - edges.height
    if edges.height:
        counts["rows_parsed"] += edges.height
        meta = int((edges["citing_doi"].is_null() | edges["cited_doi"].is_null()).sum())
        if meta:
            counts["rows_needing_meta"] += meta
        state.add_table(edges.select(
            "citing_doi", "cited_doi",
            pl.when(pl.col("citing_doi").is_null()).then(pl.col("citing_omid")).alias("citing_omid"),
            pl.when(pl.col("cited_doi").is_null()).then(pl.col("cited_omid")).alias("cited_omid"),
        ).to_arrow().cast(EDGE_BATCH_SCHEMA))
    slow = np.ones(len(df), dtype=bool)
    slow[decided["k"].to_numpy()] = False
    slow[df["blank"].to_numpy()] = False
    return pl.Series("k", np.flatnonzero(slow), dtype=pl.UInt32)


def parse_citation_stream(
    binary: IO[bytes], source: str, batch_rows: int, budget: RejectBudget,
) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
    """`parse_citation_rows(iter_csv_rows(text_stream(binary)), ...)` with the columnar fast
    path: same edges (batch boundaries and row order within a batch may differ), same
    rejects in the same order, same counts (module docstring)."""
    state = CitationParse(source, budget)
    read = getattr(binary, "read1", binary.read)
    carry = bytearray()
    line_no = 1  # the line number (== csv row number) of the next line; the header is 1
    header_done = False
    while True:
        error: BaseException | None = None
        eof = False
        while len(carry) < BLOCK_BYTES:
            try:
                piece = read(READ_CHUNK)
            except _ARCHIVE_ERRORS as exc:
                error, eof = exc, True
                break
            if not piece:
                eof = True
                break
            carry += piece
        if error is not None or not eof:
            cut = carry.rfind(b"\n") + 1
            if cut == 0 and error is None:  # no newline in a whole block: a huge line
                yield from _hand_over(state, bytes(carry), binary, line_no, header_done, batch_rows)
                return
        else:
            cut = len(carry)
        block = _Block(bytes(carry[:cut]))
        del carry[:cut]
        if error is not None:
            carry.clear()  # the partial line before the damage is lost, as in the row parser
        first = 0
        stop = block.first_bad
        if not header_done and len(block):
            row = _csv_row(block.text(0)) if stop > 0 and _INDEPENDENT_RE.fullmatch(block.text(0)) else None
            if row is None:
                stop = 0
            else:
                state.set_header(row)
                header_done, first, line_no = True, 1, 2
                if not state.recognized:
                    stop = 1
        if first < stop:
            lines = block.lines(first, stop)
            simple = block.simple_mask(lines, first, stop)
            parsed: dict[int, list[str]] = {}
            others = (~simple).arg_true()
            for k, text in zip(others.to_list(), lines.gather(others).to_list(), strict=True):
                row = _csv_row(text) if _INDEPENDENT_RE.fullmatch(text) else None
                if row is None:  # the row parser takes over from this line
                    stop = first + k
                    lines, simple = lines.head(k), simple.head(k)
                    break
                parsed[k] = row
            slow = _vectorized(state, lines, simple).to_list()
            texts = lines.gather(slow).to_list() if slow else []
            for k, text in zip(slow, texts, strict=True):
                row = parsed.get(k)
                if len(state.rejects) >= REJECT_FLUSH_ROWS:
                    yield from state.flush(batch_rows)
                state.add_row(line_no + k, row if row is not None else _csv_row(text) or [])
            line_no += stop - first
        if stop < len(block):
            rest = block.data[block.offset(stop):] + bytes(carry)
            yield from _hand_over(state, rest, None if error is not None else binary, line_no, header_done,
                                  batch_rows)
            if error is not None:
                raise error
            return
        if error is not None:
            if state.has_output():
                yield from state.flush(batch_rows)
            raise error
        if eof:
            if not header_done:
                state.set_header(None)
            if state.has_output():
                yield from state.flush(batch_rows)
            return
        if state.pending >= batch_rows or len(state.rejects) >= REJECT_FLUSH_ROWS:
            yield from state.flush(batch_rows)


def _hand_over(
    state: CitationParse, rest: bytes, binary: IO[bytes] | None, line_no: int, header_done: bool, batch_rows: int,
) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
    """The row parser from `line_no` on: `rest` (bytes already read) then the stream."""
    rows = iter_csv_rows(text_stream(io.BufferedReader(_Chained(rest, binary))))
    if not header_done:
        state.set_header(next(rows, None))
        line_no = 2
    yield from continue_citation_rows(state, rows, line_no, batch_rows)
