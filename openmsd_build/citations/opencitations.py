"""Parsing OpenCitations dumps: every CSV shape the project has met, with the real `csv` module.

Why a module of its own: the published reference scripts split lines on commas (a DOI may
hold a comma inside a quoted field), skipped every row containing the letters "oci" (which
also drops DOIs such as `10.1000/social.oci.2`) and never normalized DOIs. Here a file's
*header* decides its shape, and data rows are never filtered by their text.

Shapes recognised by their header (names compared case-insensitively, quotes/BOM removed):

* legacy COCI: `oci,citing,cited,creation,timespan,journal_sc,author_sc`, bare DOIs;
* Index without the oci column (`citing,cited,...`), bare DOIs;
* Index / OC Meta example: `id,citing,cited,...` or `citing_id,...,cited_id,...` whose
  fields hold space-separated prefixed ids (`omid:br/06101 doi:10.1/x pmid:123`): the first
  valid `doi:` id is taken, the `omid:` id is kept for the Meta join (a field whose tokens
  are not all prefixed is no such list: `parse_id_field`);
* OMID-only Index rows (`omid:br/...` alone): the DOI comes from an OpenCitations Meta CSV
  (`id` column lists `omid:br/... doi:10... issn:...`) joined by OMID later in the stage.

A file whose header has no citing/cited columns (e.g. the Index provenance CSV) is not a
citation file: its rows are counted as `rows_unrecognized_file` and one reject is written.

Counters produced while parsing (names are stable; the stage adds the later ones):

* `files_read` — input files opened (zip members count one each);
* `files_unrecognized` — files without citing/cited columns in their header;
* `rows_read` — non-blank data rows of every file (header excluded);
* `rows_unrecognized_file` — data rows of unrecognized files (dropped);
* `files_unreadable` — truncated or corrupt .gz / .zip inputs, citation or Meta files, and
  zips with a member that cannot be read (encrypted, an unknown compression method), and
  compression bombs (`compression_bomb`: more lines than compressed bytes read,
  `MAX_LINES_PER_COMPRESSED_BYTE`): one reject each; the rows read before the damage are kept and counted as usual;
* `malformed_row` — too few fields, an empty citing/cited field, or a row the CSV layer
  refused (dropped, rejected); of those, `rows_too_long` had a physical line longer than
  `MAX_CSV_LINE_CHARS` or a field longer than `MAX_CSV_FIELD_CHARS` (reject reasons
  `line_too_long` / `field_too_large`: such a row is skipped, never held in memory whole);
  a citation row whose line ends inside a quoted field is one too (`unbalanced_quote`: no
  citation field spans lines, so a quote left open would swallow the lines after it);
* `bad_doi` — an end whose DOI ids all failed `normalize_doi` and that has no OMID
  (dropped, rejected with the normalizer's reason); of those, `bad_doi_whitespace` had a
  field with whitespace that does not separate prefixed ids and is no DOI as a whole
  (`10.1000/abc def`, `10.1000/ abc`, `doi:10.1/x y`, `pmid:1 10.1/x`: reject detail
  `doi_whitespace`, `parse_id_field`), where the first token was taken before;
* `no_doi` — an end with neither a DOI nor an OMID (only pmid:/other ids) (dropped);
* `rows_parsed` — rows that leave the parser as an edge (both DOIs known, or an OMID to
  resolve); `rows_needing_meta` — those of them with at least one OMID-only end;
* `input_lines` — physical lines the decompressed streams delivered (line ends `\n`,
  `\r\n` or a lone `\r`, as the `csv` module reads them, plus a last line without one at
  a clean end; the partial line cut by a damaged archive is not one), counted on the bytes
  themselves (`CountedLines`); `lines_parsed` — physical lines, headers included, that
  reached the CSV decision on either path (`LineTally`). They are equal: a line lost
  between decompression and parsing (a dropped buffer at a hand-over, a read that failed
  half-way) makes them differ, which `rows_read` alone cannot show (a lost line is never
  read as a row).

Reject rows are handed on at least every `REJECT_FLUSH_ROWS` rows (a batch with no edges may
carry only rejects), and one input file (all members of a zip together) yields at most
`MAX_REJECTS_PER_FILE` of them: later failures are counted as usual and also as
`rejects_suppressed`, so reject rows + rejects_suppressed = malformed_row + bad_doi +
files_unrecognized (+ files_unreadable).

Meta parsing counts `meta_rows_read` = `meta_rows_mapped` (an OMID and a DOI) +
`meta_rows_no_doi` + `meta_rows_no_omid` (of those, `meta_rows_too_long` a row the CSV layer
refused) + `meta_bad_doi` (rejected) + `meta_rows_unbalanced_quote` (rejected): a row whose
quoted field is left open (`"Rust, a` in a title) up to a line that opens with an OMID, or to
the end of the file (`iter_meta_csv_rows`). Only that row is lost: the rows after it, which
the `csv` module would have read into its field, are read as rows.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import sys
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO

import pyarrow as pa

from openmsd_build.core.doi import InvalidDOI, normalize_doi
from openmsd_build.core.json_records import GZIP_MAGIC, Prepend
from openmsd_build.core.paths import describe_failure
from openmsd_build.core.rejects import REJECT_FLUSH_ROWS, RejectBudget, make_reject

STAGE = "citations"
DEFAULT_BATCH_ROWS = 200_000

# The edge batches leaving the parser: DOIs when known, OMIDs (`br/0610...`) otherwise.
EDGE_BATCH_SCHEMA = pa.schema(
    [
        ("citing_doi", pa.string()),
        ("cited_doi", pa.string()),
        ("citing_omid", pa.string()),
        ("cited_omid", pa.string()),
    ]
)
META_SCHEMA = pa.schema([("omid", pa.string()), ("doi", pa.string())])

_CITING_NAMES = ("citing", "citing_id")
_CITED_NAMES = ("cited", "cited_id")
# Prefixes that are DOIs in disguise and must go through the normalizer.
_DOI_LIKE_PREFIXES = ("doi:", "http:", "https:", "info:", "urn:")

# One field of a real row is a few ids (Meta author lists reach ~200 KB); a larger field is
# garbage or an attack, and the `csv` module would otherwise grow it without limit (the
# limit is process-wide; the default is 128 KiB, so raising it to 1 MiB breaks no other user).
MAX_CSV_FIELD_CHARS = 1 << 20
# One physical line is read at most this long; the rest of a longer line is skipped in chunks.
MAX_CSV_LINE_CHARS = 4 << 20
_SKIP_CHUNK = 1 << 20
csv.field_size_limit(min(sys.maxsize, MAX_CSV_FIELD_CHARS))


# A cut download or a corrupt archive: the rows before the damage are kept, the file is
# counted as `files_unreadable` with one reject, and the job carries on.
_ARCHIVE_ERRORS = (EOFError, OSError, zlib.error, zipfile.BadZipFile)


# A compressed input delivering more lines than this per compressed byte read is a
# compression bomb: real dumps hold 0.05-0.1 lines per compressed byte (rows of 40-150 bytes
# that inflate 4-6x), and a 1 MB gzip of blank lines (1G lines) took the parser over two
# minutes per MB. Lines, not bytes, cost time, so one long line (skipped in chunks) is no
# bomb. Never before `BOMB_FLOOR_LINES` lines.
MAX_LINES_PER_COMPRESSED_BYTE = 1
BOMB_FLOOR_LINES = 1 << 20


class CompressionBomb(OSError):
    """A compressed input past `MAX_LINES_PER_COMPRESSED_BYTE`. An `_ARCHIVE_ERRORS` member:
    the rows before it are kept and the file is one `compression_bomb` reject."""


class _BoundedInflation(io.BufferedIOBase):
    """A decompressed stream that raises `CompressionBomb` once it has delivered more lines
    than `MAX_LINES_PER_COMPRESSED_BYTE` times the compressed bytes read (`consumed()`, given
    the bytes delivered so far), and at least `BOMB_FLOOR_LINES`."""

    def __init__(self, stream: IO[bytes], consumed: Callable[[int], float], name: str) -> None:
        super().__init__()
        self._stream = stream
        self._consumed = consumed
        self._name = name
        self.inflated = self.lines = 0

    def readable(self) -> bool:
        return True

    def _checked(self, data: bytes) -> bytes:
        self.inflated += len(data)
        self.lines += data.count(b"\n")
        if self.lines > BOMB_FLOOR_LINES:
            consumed = self._consumed(self.inflated)
            if self.lines > MAX_LINES_PER_COMPRESSED_BYTE * consumed:
                raise CompressionBomb(f"{self.lines} lines inflated from {int(consumed)} compressed bytes (more than "
                                      f"{MAX_LINES_PER_COMPRESSED_BYTE} a byte): the rest of {self._name[:200]} is "
                                      "not read")
        return data

    def read(self, size: int | None = -1) -> bytes:
        return self._checked(self._stream.read(size))

    def read1(self, size: int = -1) -> bytes:
        return self._checked(getattr(self._stream, "read1", self._stream.read)(size))

    def close(self) -> None:
        self._stream.close()
        super().close()


def _inflated(stream: IO[bytes], name: str) -> IO[bytes]:
    """`stream` decompressed when its first bytes are gzip's, whatever its name: a browser's
    download of `x.csv.gz` is often inflated already but keeps the name (every row was a
    `corrupt_archive`), and a gzip named `.csv` was read as text (`unrecognized_header`); the
    papers stage already decides by the bytes (`json_records.open_binary`)."""
    head = stream.read(2)
    joined = Prepend(head, stream)  # counts the compressed bytes handed on: the bomb bound's measure
    if head != GZIP_MAGIC:
        return io.BufferedReader(joined)
    return _BoundedInflation(gzip.GzipFile(fileobj=joined), lambda _inflated: joined.consumed, name)


@dataclass(frozen=True)
class BadRow:
    """A row the CSV layer could not deliver (`line_too_long`, `field_too_large`,
    `csv_error`): it is counted and rejected like a malformed row."""

    reason: str
    detail: str
    raw: str = ""


class _LineTooLong(Exception):
    def __init__(self, size: int, head: str) -> None:
        super().__init__(f"line of more than {size} characters")
        self.size = size
        self.head = head


class _UnbalancedQuote(Exception):
    def __init__(self, head: str) -> None:
        super().__init__("a quote opened and not closed on its line")
        self.head = head


class _QuoteLeftOpen(Exception):
    """A Meta row whose quoted field, opened on line `first`, is still open `where` (at a
    line that opens with an OMID, another row, or at the end of the file): raised by
    `_MetaLines` through the csv reader, which drops the row it was reading."""

    def __init__(self, first: int, where: str, head: str) -> None:
        super().__init__(f"a quoted field opened on line {first} is still open {where}")
        self.head = head


class LineTally:
    """Physical lines that reached the CSV decision (`lines_parsed`); shared by the columnar
    path and the row parser it may hand over to."""

    def __init__(self) -> None:
        self.n = 0


class CountedLines(io.BufferedIOBase):
    """A decompressed byte stream that counts the physical lines in the bytes it delivers
    (`input_lines`, module docstring): line ends as `io.TextIOWrapper(newline="")` sees them
    (`\n`, `\r\n`, a lone `\r`; a `\r` that ends a read waits for the next one), plus a
    last line without an end when the stream ends cleanly (a read returns nothing). A
    damaged archive raises before that, so its cut partial line is not counted.

    It also keeps every byte decompressed before damage: the stream below is only ever
    read with `read1` (one inflation per call), and `read(n)` gathers such pieces and
    returns what it has when one fails, raising on the next call. (`GzipFile.read(n)`
    itself drops the pieces it gathered when a later one fails: the lines lost at the
    citations hand-over, which `rows_read == rows_parsed` could not show.)"""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__()
        self._read1 = getattr(stream, "read1", stream.read)
        self._error: BaseException | None = None
        self.lines = 0
        self._cr = False  # the last byte delivered was a '\r' not yet counted
        self._tail = False  # bytes delivered after the last line end

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        pieces: list[bytes] = []
        got = 0
        while size is None or size < 0 or got < size:
            try:
                piece = self.read1(-1 if size is None or size < 0 else size - got)
            except _ARCHIVE_ERRORS as exc:
                if not pieces:
                    raise
                self._error = exc  # the bytes already inflated go out first
                break
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        return b"".join(pieces)

    def read1(self, size: int = -1) -> bytes:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._seen(self._read1(size))

    def _seen(self, data: bytes) -> bytes:
        if not data:
            if self._cr or self._tail:
                self.lines += 1
            self._cr = self._tail = False
            return data
        n = data.count(b"\n")
        if self._cr and data[0] != 10:
            n += 1  # the '\r' that ended the previous read stood alone
        if data.find(b"\r") >= 0:
            n += data.count(b"\r") - data.count(b"\r\n")
            if data[-1] == 13:
                n -= 1  # counted with the next read (a '\n' may follow)
        self._cr = data[-1] == 13
        self._tail = data[-1] not in (10, 13)
        self.lines += n
        return data


class _BoundedLines:
    """The lines of a text stream, none longer than `MAX_CSV_LINE_CHARS`: a longer line is
    consumed in chunks and reported by raising `_LineTooLong` from `__next__` (which the csv
    reader passes through to its caller and then resets), so a one-line multi-GB member never
    becomes one string. Each physical line is counted on `tally` when one is given."""

    def __init__(self, stream: IO[str], tally: LineTally | None = None, single_line: bool = False) -> None:
        self._stream = stream
        self._tally = tally
        self._single_line = single_line

    def __iter__(self) -> _BoundedLines:
        return self

    def __next__(self) -> str:
        line = self._stream.readline(MAX_CSV_LINE_CHARS + 1)
        if not line:
            raise StopIteration
        if self._tally is not None:
            self._tally.n += 1
        if len(line) > MAX_CSV_LINE_CHARS and not line.endswith(("\n", "\r")):
            head, size = line[:200], len(line)
            while line and not line.endswith(("\n", "\r")):
                line = self._stream.readline(_SKIP_CHUNK)
                size += len(line)
            raise _LineTooLong(size, head)
        if self._single_line and '"' in line and ends_in_quoted_field(line):
            raise _UnbalancedQuote(line[:200])
        return line

    def reset(self) -> None:
        """The csv reader gave or dropped a row: it reads the next line as a new row's."""

    def row_left_open(self) -> _QuoteLeftOpen | None:
        """Why the row the csv reader just gave is damaged, if it is (`_MetaLines`)."""
        return None


# A line that opens with an OMID, as a Meta row does (its id column comes first).
_OMID_LINE = re.compile(r'"?omid:br/', re.IGNORECASE)


class _MetaLines(_BoundedLines):
    """`_BoundedLines` for OpenCitations Meta, whose rows may span lines (a title with a line
    break) but open with their id column's OMID: a line that opens with an OMID while a quoted
    field is still open is another row, not more of that field.

    A quote left open (`"Rust, a` in a title) made the `csv` module read the lines after it
    into the field, up to the next quote or the field cap, and their rows were lost. The csv
    reader asks for a second line before it gives a row only when a quoted field is still
    open at the end of the first (`reading`: its own state, no emulation); if that line
    opens with an OMID, `_QuoteLeftOpen` is raised through the reader, which drops the
    damaged row (rejected, `unbalanced_quote`), and the line is delivered again as the first
    of the next row. Each line is read once: no re-parsing, however far the quote would have
    run. `_csv_rows` calls `reset` whenever the reader gives or drops a row."""

    def __init__(self, stream: IO[str], tally: LineTally | None = None) -> None:
        super().__init__(stream, tally)
        self.reading = False  # the csv reader has lines of a row it has not given yet
        self.ended_inside = False  # the stream ended while it had (a quoted field open)
        self.line_no = 0  # physical lines read
        self._first, self._line = 0, ""  # the line the row being read opened on, and its text
        self._held: str | None = None  # the OMID line that ended an open row: delivered next
        self._held_error: _LineTooLong | None = None

    def __next__(self) -> str:
        if self._held_error is not None:
            error, self._held_error = self._held_error, None
            raise error
        if self._held is not None:
            line, self._held = self._held, None
        else:
            try:
                line = super().__next__()
            except StopIteration:
                self.ended_inside = self.reading
                raise
            except _LineTooLong as exc:
                self.line_no += 1
                if self.reading and _OMID_LINE.match(exc.head):
                    self._held_error = exc  # the damaged row first, then this line's own reject
                    raise self._left_open() from None
                raise
            self.line_no += 1
            if self.reading and _OMID_LINE.match(line):
                self._held = line
                raise self._left_open()
        if not self.reading:
            self.reading, self._first, self._line = True, self.line_no, line
        return line

    def _left_open(self, where: str | None = None) -> _QuoteLeftOpen:
        self.reading = False
        return _QuoteLeftOpen(self._first, where or f"at line {self.line_no}, which opens with an OMID: this row is "
                              f"rejected, the rows from line {self.line_no} on are read as rows", self._line[:200])

    def reset(self) -> None:
        self.reading = False

    def row_left_open(self) -> _QuoteLeftOpen | None:
        """The csv reader gives the row it was reading when the stream ends inside a quoted
        field (it is not strict): that row's quote was never closed."""
        if not self.ended_inside:
            return None
        self.ended_inside = False
        return self._left_open("at the end of the file")


# A line whose fields are each wholly quoted (no quote inside) or hold no quote: closed.
_CLOSED_LINE = re.compile(r'(?:"[^"]*"|[^",\r\n]*)(?:,(?:"[^"]*"|[^",\r\n]*))*\r?\n?\Z')


def ends_in_quoted_field(line: str) -> bool:
    """Whether the `csv` module (default dialect, not strict) is still inside a quoted field at
    the end of `line`, i.e. would read the next line into it: a quote opens a field only at
    its start, `""` inside is a quote, and the closing quote may be followed by more text."""
    if _CLOSED_LINE.match(line):
        return False
    quoted, at_start = False, True
    pending_quote = False  # inside a quoted field, a quote that may close it or be doubled
    for char in line.rstrip("\r\n"):
        if quoted:
            if pending_quote:
                pending_quote = False
                if char != '"':  # the field closed; the rest of it is plain text
                    quoted = False
                    at_start = char == ","
                continue
            if char == '"':
                pending_quote = True
            continue
        if at_start and char == '"':
            quoted, at_start = True, False
        else:
            at_start = char == ","
    return quoted and not pending_quote


def iter_csv_rows(stream: IO[str], tally: LineTally | None = None,
                  single_line: bool = False) -> Iterator[list[str] | BadRow]:
    """`csv.reader` rows of a text stream, with every CSV failure turned into a `BadRow`
    instead of an exception that would end the file (or a GB-sized line or field); the
    physical lines read are counted on `tally`. `single_line` (citation rows, whose fields
    never span lines): a line that ends inside a quoted field (`ends_in_quoted_field`) is a
    `BadRow` of its own (`unbalanced_quote`), where the `csv` module would read the lines after
    it into that field."""
    return _csv_rows(_BoundedLines(stream, tally, single_line))


def iter_meta_csv_rows(stream: IO[str], tally: LineTally | None = None) -> Iterator[list[str] | BadRow]:
    """`iter_csv_rows` for an OpenCitations Meta CSV (`_MetaLines`): a row whose quoted field
    is still open where a line opens with an OMID, or where the file ends, is a `BadRow`
    (`unbalanced_quote`), and the rows after it are read as rows."""
    return _csv_rows(_MetaLines(stream, tally))


def _csv_rows(lines: _BoundedLines) -> Iterator[list[str] | BadRow]:
    reader = csv.reader(lines)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except _LineTooLong as exc:
            lines.reset()
            yield BadRow("line_too_long", f"line of {exc.size} characters > {MAX_CSV_LINE_CHARS}", exc.head)
        except (_UnbalancedQuote, _QuoteLeftOpen) as exc:
            yield BadRow("unbalanced_quote", str(exc), exc.head)
        except csv.Error as exc:
            lines.reset()
            reason = "field_too_large" if "field larger than field limit" in str(exc) else "csv_error"
            yield BadRow(reason, str(exc)[:200])
        else:
            left_open = lines.row_left_open()
            lines.reset()
            yield row if left_open is None else BadRow("unbalanced_quote", str(left_open), left_open.head)


# The reason code (`parse_id_field`) of a field whose whitespace does not separate prefixed
# ids and that is not one DOI either: a DOI with whitespace inside (`10.1000/abc def`), or a
# bare id among prefixed ones. Counted as `bad_doi` (and `bad_doi_whitespace`) or
# `meta_bad_doi`, and rejected with this code.
DOI_WHITESPACE = "doi_whitespace"


def parse_id_field(value: str) -> tuple[str | None, str | None, str | None]:
    """Split one citing/cited field into (doi, omid, doi_error_reason).

    A field is a bare DOI (COCI), one prefixed id, or a list of prefixed ids separated by
    whitespace (`omid:br/06101 doi:10.1/x pmid:123`). In a list the first id that
    normalizes as a DOI wins; `omid:` ids are kept (without the prefix) for the Meta join;
    other schemes (pmid:, pmcid:, openalex: ...) are ignored. The error reason is that of the
    first DOI-looking id that failed, so a row with only a broken DOI can be rejected with
    the normalizer's own code.

    A field with whitespace whose tokens are not all prefixed is no list of ids: it is one
    value, taken when `normalize_doi` accepts it whole (whitespace after a prefix or around
    the DOI: `doi: 10.1/x`, `https://doi.org/ 10.1/x`, which leave no doubt what the DOI
    is), else `(None, None, DOI_WHITESPACE)`. Taking its first token, as before, turned
    `10.1000/abc def` into `10.1000/abc`: another paper's DOI, joined silently.
    """
    tokens = value.split()
    doi = omid = error = None
    bare = False  # a token without a scheme: a colon before its first slash (`10.1000/a:b` has none)
    for token in tokens:
        low = token.lower()
        if low.startswith("omid:"):
            if omid is None and len(low) > 5:
                omid = low[5:]
            continue
        if ":" not in low.split("/", 1)[0]:
            bare = True
        elif not low.startswith(_DOI_LIKE_PREFIXES):
            continue  # another identifier scheme (pmid:123, pmcid:PMC1, wikidata:Q1 ...)
        if doi is not None:
            continue
        try:
            doi = normalize_doi(token)
        except InvalidDOI as exc:
            error = error or exc.reason
    if bare and len(tokens) > 1:  # no list of ids
        try:
            return normalize_doi(value), None, None
        except InvalidDOI:
            return None, None, DOI_WHITESPACE
    return doi, omid, error


def open_binary_streams(path: str) -> Iterator[tuple[str, IO[bytes]]]:
    """Yield (source name, decompressed byte stream) for a CSV file, a .csv.gz, or each .csv
    (or .csv.gz) member of a .zip, streamed (a member is never read whole).

    Opened through Beam's `FileSystems`, so `gs://` inputs work like local ones.
    """
    from apache_beam.io.filesystems import FileSystems

    raw = FileSystems.open(path, compression_type="uncompressed")
    lower = path.lower()
    if lower.endswith(".zip"):
        # A seekable stream (local files, GCS) is read member by member; only an unseekable
        # one is buffered whole (a COCI zip is tens of GB compressed).
        seekable = getattr(raw, "seekable", lambda: False)()
        data: IO[bytes] = raw if seekable else io.BytesIO(raw.read())
        try:
            with zipfile.ZipFile(data) as archive:
                for name in sorted(archive.namelist()):
                    if name.lower().endswith((".csv", ".csv.gz")) and not name.endswith("/"):
                        yield f"{path}!{name}", _inflated(_open_member(archive, name), name)
        finally:
            raw.close()
        return
    try:
        yield path, _inflated(raw, path)
    finally:
        raw.close()


def _open_member(archive: zipfile.ZipFile, name: str) -> IO[bytes]:
    """A zip member opened for reading; a member `zipfile` cannot read (encrypted, or packed
    with a method it lacks, such as the Deflate64 of Windows' own zip for large files) is a
    damaged archive (`BadZipFile`: the file's reject names the member and why), not a
    `RuntimeError` / `NotImplementedError` that stopped the whole stage with a traceback."""
    try:
        member = archive.open(name)
    except (RuntimeError, NotImplementedError) as exc:
        raise zipfile.BadZipFile(f"member {name[:200]!r} cannot be read: {exc}") from None
    # the compressed bytes behind what was inflated, estimated from the member's sizes (zipfile
    # holds a member to them)
    info = archive.getinfo(name)
    ratio = info.compress_size / max(info.file_size, 1)
    return _BoundedInflation(member, lambda inflated: inflated * ratio, name)  # type: ignore[return-value]


def text_stream(binary: IO[bytes]) -> IO[str]:
    """The text layer of the row parser: `newline=""` as the `csv` module requires (quoted
    fields may hold newlines), and undecodable bytes replaced rather than failing a
    multi-gigabyte file."""
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline="")


def _header_index(header: list[str], names: Iterable[str]) -> int | None:
    cleaned = [h.strip().strip('"').lstrip("\ufeff").strip().lower() for h in header]
    for name in names:
        if name in cleaned:
            return cleaned.index(name)
    return None


def _excerpt(row: list[str]) -> str:
    """The row as CSV, each of its first fields cut (reject excerpts are 2,000 characters)."""
    buf = io.StringIO()
    csv.writer(buf).writerow([field[:2000] for field in row[:20]])
    return buf.getvalue().rstrip("\r\n")


class CitationParse:
    """The per-file state of citation parsing: header columns, the reject budget, the edges
    and rejects not yet handed on, and the counts since the last batch.

    Why a class: the row parser below and the columnar fast path
    (`openmsd_build.citations.columnar`) feed the *same* state, so a file whose fast path
    gives up half-way continues with the row parser on the same counts, line numbers and
    reject budget, and both paths decide every row with the one `add_row` below.
    """

    def __init__(self, source: str, budget: RejectBudget | None = None) -> None:
        self.source = source
        self.budget = budget if budget is not None else RejectBudget()
        self.counts: Counter = Counter()
        self.rejects: list[dict] = []
        self.cols: dict[str, list] = {name: [] for name in EDGE_BATCH_SCHEMA.names}
        self.tables: list[pa.Table] = []
        self.pending = 0  # edges held (python columns + columnar tables)
        self.i_citing: int | None = None
        self.i_cited: int | None = None
        self.recognized = False
        self.need = 1

    def set_header(self, header: list[str] | BadRow | None) -> None:
        """Take the first row of the file: it decides the shape (module docstring)."""
        if isinstance(header, BadRow):
            header = []
        self.counts["files_read"] += 1
        self.i_citing = _header_index(header, _CITING_NAMES) if header else None
        self.i_cited = _header_index(header, _CITED_NAMES) if header else None
        self.recognized = self.i_citing is not None and self.i_cited is not None
        if not self.recognized:
            self.counts["files_unrecognized"] += 1
            source = self.source
            _add_reject(self.rejects, self.counts, self.budget, lambda: make_reject(
                STAGE,
                "unrecognized_header",
                key=f"{source}:1",
                detail="no citing/cited columns; not an OpenCitations citation file",
                source=source,
                raw=_excerpt(header) if header else "",
            ))
        self.need = max(self.i_citing or 0, self.i_cited or 0) + 1

    def add_row(self, line_no: int, row: list[str] | BadRow) -> None:
        """The reference decision for one data row (the columnar path only vectorizes rows
        whose outcome this function is known to give without errors)."""
        counts, source, rejects, budget = self.counts, self.source, self.rejects, self.budget
        if isinstance(row, BadRow):
            counts["rows_read"] += 1
            if not self.recognized:
                counts["rows_unrecognized_file"] += 1
                return
            counts["malformed_row"] += 1
            counts["rows_too_long"] += row.reason in ("line_too_long", "field_too_large")
            _add_reject(rejects, counts, budget, lambda: make_reject(
                STAGE, row.reason, f"{source}:{line_no}", row.detail, source, row.raw))
            return
        if not row or all(not f.strip() for f in row):
            return  # blank line: not a row
        counts["rows_read"] += 1
        if not self.recognized:
            counts["rows_unrecognized_file"] += 1
            return
        i_citing, i_cited = self.i_citing, self.i_cited
        if len(row) < self.need or not row[i_citing].strip() or not row[i_cited].strip():
            counts["malformed_row"] += 1
            _add_reject(rejects, counts, budget, lambda: make_reject(
                STAGE, "malformed_row", f"{source}:{line_no}", f"{len(row)} fields", source, _excerpt(row)))
            return
        citing_doi, citing_omid, citing_err = parse_id_field(row[i_citing])
        cited_doi, cited_omid, cited_err = parse_id_field(row[i_cited])
        ends = ((citing_doi, citing_omid, citing_err), (cited_doi, cited_omid, cited_err))
        bad = [err for d, o, err in ends if d is None and o is None and err]
        if bad:
            counts["bad_doi"] += 1
            if bad[0] == DOI_WHITESPACE:
                counts["bad_doi_whitespace"] += 1
            _add_reject(rejects, counts, budget, lambda: make_reject(
                STAGE, "bad_doi", f"{source}:{line_no}", bad[0], source, _excerpt(row)))
            return
        if any(d is None and o is None for d, o, _ in ends):
            counts["no_doi"] += 1
            return
        counts["rows_parsed"] += 1
        if citing_doi is None or cited_doi is None:
            counts["rows_needing_meta"] += 1
        cols = self.cols
        cols["citing_doi"].append(citing_doi)
        cols["cited_doi"].append(cited_doi)
        cols["citing_omid"].append(citing_omid if citing_doi is None else None)
        cols["cited_omid"].append(cited_omid if cited_doi is None else None)
        self.pending += 1

    def add_table(self, table: pa.Table) -> None:
        """Edges decided by the columnar path (already counted by it)."""
        if table.num_rows:
            self.tables.append(table)
            self.pending += table.num_rows

    def has_output(self) -> bool:
        return bool(self.counts or self.rejects or self.pending)

    def flush(self, batch_rows: int) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
        """Hand on everything held, as batches of at most `batch_rows` edges (rejects and
        counts ride with the first)."""
        tables = [*self.tables]
        if self.cols["citing_doi"]:
            tables.append(pa.Table.from_pydict(self.cols, schema=EDGE_BATCH_SCHEMA))
        table = pa.concat_tables(tables) if tables else EDGE_BATCH_SCHEMA.empty_table()
        rejects, counts = self.rejects, dict(self.counts)
        self.cols = {name: [] for name in EDGE_BATCH_SCHEMA.names}
        self.tables, self.rejects, self.counts, self.pending = [], [], Counter(), 0
        offset = 0
        while True:
            piece = table.slice(offset, batch_rows)
            yield piece, rejects, counts
            rejects, counts = [], {}
            offset += batch_rows
            if offset >= table.num_rows:
                return


def parse_citation_rows(
    rows: Iterable[list[str] | BadRow], source: str, batch_rows: int = DEFAULT_BATCH_ROWS,
    budget: RejectBudget | None = None,
) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
    """Parse the rows of one CSV (header first) into batches of (edges, rejects, counts).

    Pure: no I/O, so tests feed lists. Each yielded batch has at most `batch_rows` edges and
    `REJECT_FLUSH_ROWS` rejects; counts are per batch and add up over the file (see the
    module docstring for names). `budget` caps the reject rows (shared by a zip's members).
    This is the reference parser: the columnar fast path must give the same edges, rejects
    and counts, and falls back to it for anything it does not handle.
    """
    iterator = iter(rows)
    state = CitationParse(source, budget)
    state.set_header(next(iterator, None))
    yield from continue_citation_rows(state, iterator, 2, batch_rows)


def continue_citation_rows(
    state: CitationParse, rows: Iterable[list[str] | BadRow], first_line_no: int, batch_rows: int,
) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
    """The row loop of `parse_citation_rows` from data row `first_line_no` on, on `state`
    (the columnar path hands over here when a part of a file needs the `csv` module)."""
    try:
        for line_no, row in enumerate(rows, start=first_line_no):
            if len(state.rejects) >= REJECT_FLUSH_ROWS:
                yield from state.flush(batch_rows)
            state.add_row(line_no, row)
            if state.pending >= batch_rows:
                yield from state.flush(batch_rows)
    except _ARCHIVE_ERRORS:
        # A damaged archive: the rows before the damage are kept (module docstring), so
        # what is held goes out before the error reaches `parse_citation_file`.
        if state.has_output():
            yield from state.flush(batch_rows)
        raise
    if state.has_output():
        yield from state.flush(batch_rows)


def _add_reject(rejects: list[dict], counts: Counter, budget: RejectBudget, build) -> None:
    """Append the reject `build()` makes if the file's budget allows, else count it as
    suppressed (the row is never built: past the cap a failure costs a counter only)."""
    if budget.take():
        rejects.append(build())
    else:
        counts["rejects_suppressed"] += 1


def parse_citation_file(
    path: str, batch_rows: int = DEFAULT_BATCH_ROWS, columnar: bool = True,
) -> Iterator[tuple[pa.Table, list[dict], dict]]:
    """All batches of one input file (plain, .gz, or every CSV member of a .zip); one reject
    budget for the whole file.

    `columnar` (the default) reads each stream through the columnar fast path
    (`openmsd_build.citations.columnar`), which gives the same edges, rejects and counts as
    the row parser (`columnar=False`, kept as the reference and its fallback) at a fraction
    of the cost per row.

    Each stream's `input_lines` and `lines_parsed` (module docstring) ride with its last
    batch: the batch before it is held back until the stream has ended or failed.
    """
    from openmsd_build.citations.columnar import parse_citation_stream

    budget = RejectBudget()
    try:
        for source, binary in open_binary_streams(path):
            counted, tally = CountedLines(binary), LineTally()
            if columnar:
                batches = parse_citation_stream(counted, source, batch_rows, budget, tally)
            else:
                batches = parse_citation_rows(iter_csv_rows(text_stream(counted), tally, single_line=True), source,
                                              batch_rows, budget)
            held = None
            try:
                for batch in batches:
                    if held is not None:
                        yield held
                    held = batch
            except _ARCHIVE_ERRORS:
                yield _with_line_counts(held, counted, tally)
                raise
            yield _with_line_counts(held, counted, tally)
    except _ARCHIVE_ERRORS as exc:
        yield EDGE_BATCH_SCHEMA.empty_table(), [_unreadable(path, exc)], {"files_unreadable": 1}


def _unreadable(path: str, exc: BaseException) -> dict:
    """The one reject of an input file whose archive ends early or is damaged."""
    reason = ("compression_bomb" if isinstance(exc, CompressionBomb) else "truncated_archive"
              if isinstance(exc, EOFError) else "corrupt_archive")
    return make_reject(STAGE, reason, path, describe_failure(exc), path, None)


def _with_line_counts(
    batch: tuple[pa.Table, list[dict], dict] | None, counted: CountedLines, tally: LineTally,
) -> tuple[pa.Table, list[dict], dict]:
    """A stream's last batch (or an empty one) with its `input_lines` and `lines_parsed`."""
    table, rejects, counts = batch if batch is not None else (EDGE_BATCH_SCHEMA.empty_table(), [], {})
    counts = dict(counts)
    counts["input_lines"] = counts.get("input_lines", 0) + counted.lines
    counts["lines_parsed"] = counts.get("lines_parsed", 0) + tally.n
    return table, rejects, counts


def parse_meta_rows(rows: Iterable[list[str] | BadRow], source: str) -> tuple[pa.Table, list[dict], dict[str, int]]:
    """OpenCitations Meta rows (header first) -> (omid, doi) table, rejects, counts.

    The `id` column lists every identifier of a bibliographic resource; a row maps its
    OMID to its first valid DOI. Rows without a DOI are normal in Meta (books, ISSNs) and
    only counted; a DOI that fails normalization is rejected as `meta_bad_doi`, and a
    `BadRow` of a quoted field left open as `unbalanced_quote` (`iter_meta_csv_rows`, the
    reader that gives rows as this expects them). (All batches of `iter_meta_batches` in one;
    the stage uses the batches.)
    """
    tables: list[pa.Table] = []
    rejects: list[dict] = []
    counts: Counter = Counter()
    for table, batch_rejects, batch_counts in iter_meta_batches(rows, source):
        tables.append(table)
        rejects.extend(batch_rejects)
        counts.update(batch_counts)
    table = pa.concat_tables(tables) if tables else META_SCHEMA.empty_table()
    return table, rejects, dict(counts)


def iter_meta_batches(
    rows: Iterable[list[str] | BadRow], source: str, batch_rows: int = DEFAULT_BATCH_ROWS,
    budget: RejectBudget | None = None,
) -> Iterator[tuple[pa.Table, list[dict], dict[str, int]]]:
    """`parse_meta_rows` in batches of at most `batch_rows` mappings and
    `REJECT_FLUSH_ROWS` rejects (reject rows capped by `budget`, see the module docstring),
    so a Meta member's size does not set the worker's memory."""
    counts: Counter = Counter()
    rejects: list[dict] = []
    omids: list[str] = []
    dois: list[str] = []
    budget = budget if budget is not None else RejectBudget()
    iterator = iter(rows)
    header = next(iterator, None)
    if isinstance(header, BadRow):
        # a header whose quote is left open (cut at the first row's OMID): its columns up to
        # the quote are still on its line (the `id` column comes first)
        header = next(csv.reader([header.raw]), []) if header.reason == "unbalanced_quote" else []
    i_id = _header_index(header, ("id",)) if header else None
    if i_id is None:
        counts["meta_files_unrecognized"] += 1
        _add_reject(rejects, counts, budget, lambda: make_reject(
            STAGE, "unrecognized_meta_header", f"{source}:1", "no id column", source,
            _excerpt(header) if header else ""))

    def flush() -> tuple[pa.Table, list[dict], dict[str, int]]:
        nonlocal rejects, counts, omids, dois
        out = (pa.Table.from_pydict({"omid": omids, "doi": dois}, schema=META_SCHEMA), rejects, dict(counts))
        rejects, counts, omids, dois = [], Counter(), [], []
        return out

    try:
        for line_no, row in enumerate(iterator, start=2):
            if len(rejects) >= REJECT_FLUSH_ROWS or len(omids) >= batch_rows:
                yield flush()
            if isinstance(row, BadRow):
                counts["meta_rows_read"] += 1
                if row.reason == "unbalanced_quote":  # a quoted field left open (`_MetaLines`)
                    counts["meta_rows_unbalanced_quote"] += 1
                    _add_reject(rejects, counts, budget, lambda row=row, line_no=line_no: make_reject(
                        STAGE, "unbalanced_quote", f"{source}:{line_no}", row.detail, source, row.raw))
                    continue
                counts["meta_rows_no_omid"] += 1  # its ids are unknown
                counts["meta_rows_too_long"] += 1
                continue
            if not row or all(not f.strip() for f in row):
                continue
            counts["meta_rows_read"] += 1
            if i_id is None or len(row) <= i_id:
                counts["meta_rows_no_omid"] += 1
                continue
            doi, omid, err = parse_id_field(row[i_id])
            if omid is None and err != DOI_WHITESPACE:
                counts["meta_rows_no_omid"] += 1
            elif doi is None:  # with DOI_WHITESPACE the ids are not a list: no OMID is trusted
                if err:
                    counts["meta_bad_doi"] += 1
                    _add_reject(rejects, counts, budget, lambda row=row, line_no=line_no, err=err: make_reject(
                        STAGE, "meta_bad_doi", f"{source}:{line_no}", err, source, _excerpt(row)))
                else:
                    counts["meta_rows_no_doi"] += 1
            else:
                counts["meta_rows_mapped"] += 1
                omids.append(omid)
                dois.append(doi)
    except _ARCHIVE_ERRORS:
        # a damaged archive: the mappings read before the damage go out first, as a citation
        # file's rows do (`continue_citation_rows`); `parse_meta_file` then rejects the file
        yield flush()
        raise
    yield flush()


def parse_meta_file(path: str) -> Iterator[tuple[pa.Table, list[dict], dict]]:
    """One Meta CSV (plain, .gz or zipped members) -> (table, rejects, counts) batches, with
    one reject budget for the whole file. A truncated or corrupt archive is counted as
    `files_unreadable` with one reject, as a citation file is (its mappings before the damage
    are kept): it raised out of the stage with a traceback. Rows are read by
    `iter_meta_csv_rows`: a row with a quoted field left open is one `unbalanced_quote`
    reject, and the rows after it are read as rows."""
    budget = RejectBudget()
    try:
        for source, binary in open_binary_streams(path):
            # `CountedLines`: the bytes inflated before the damage reach the parser
            yield from iter_meta_batches(iter_meta_csv_rows(text_stream(CountedLines(binary))), source, budget=budget)
    except _ARCHIVE_ERRORS as exc:
        yield META_SCHEMA.empty_table(), [_unreadable(path, exc)], {"files_unreadable": 1}
