"""The columnar fast path of OpenCitations parsing gives the row parser's outputs exactly.

Why: `parse_citation_file` now reads through `citations.columnar` by default; the row
parser (`columnar=False`) is the reference definition. Every input here — the real samples,
generated COCI / Index / OMID-only files, and corrupted variants (quotes, CR, NUL, huge
lines, bad bytes, truncated archives) — must give the same edges (as a multiset), the same
reject rows in the same order and the same summed counts on both paths.
"""

from __future__ import annotations

import gzip
import random
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from openmsd_build.citations import columnar
from openmsd_build.citations.opencitations import MAX_CSV_FIELD_CHARS, parse_citation_file


def _run(path: Path, columnar_path: bool, batch_rows: int = 200_000) -> tuple[list, list, Counter]:
    edges: list = []
    rejects: list = []
    counts: Counter = Counter()
    for table, rej, c in parse_citation_file(str(path), batch_rows=batch_rows, columnar=columnar_path):
        assert table.num_rows <= batch_rows
        edges += list(zip(*[table[n].to_pylist() for n in table.column_names], strict=True))
        rejects += rej
        counts.update(c)
    return sorted(edges, key=repr), rejects, +counts


def _same(path: Path, batch_rows: int = 200_000) -> tuple[list, list, Counter]:
    fast = _run(path, True, batch_rows)
    slow = _run(path, False, batch_rows)
    assert fast[2] == slow[2], (fast[2], slow[2])
    assert fast[1] == slow[1]
    assert fast[0] == slow[0]
    return fast


def _coci_lines(n: int, seed: int, quoted: bool = False) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = f"10.{1000 + rng.randrange(50)}/x{rng.randrange(n)}", f"10.{1000 + rng.randrange(50)}/y{rng.randrange(n)}"
        fields = [f"{i}-{i}", a, b, "2019-01", "P1Y", "no", "yes"]
        out.append(",".join(f'"{f}"' for f in fields) if quoted else ",".join(fields))
    return out


HEADER = "oci,citing,cited,creation,timespan,journal_sc,author_sc"

# Rows that each exercise one branch of the row parser (and its fallbacks).
ODD_ROWS = [
    "1,10.1000/A,10.1000/b,x,y,n,n",  # upper case: full normalizer
    "2,https://doi.org/10.1000/c,10.1000/d,,,,",  # URL prefix
    "3,10.1000/e.,10.1000/f,,,,",  # trailing punctuation
    "4,,10.1000/g,,,,",  # empty end: malformed
    "5,10.1000/h",  # too few fields: malformed
    "6,not-a-doi,10.1000/i,,,,",  # bad doi
    "7,pmid:123,10.1000/j,,,,",  # no doi
    "8,10.1000/k,10.1000/k,,,,",  # self citation (kept by the parser)
    "",  # blank line
    " , ,",  # blank row
    '"",""',  # blank quoted row
    '9,"10.1000/l,m",10.1000/n,,,,',  # quoted comma
    "10,10.1000/ä,10.1000/o,,,,",  # non-ASCII
    "11,10.1000/p\t,10.1000/q,,,,",  # tab
    "12,omid:br/0601 doi:10.1000/r pmid:1,omid:br/0602,,,,",  # Index ids, OMID-only end
    "13,doi:10.1000/S omid:br/0603,doi:10.1000/t,,,,",  # prefixed upper case
    "14,omid:,10.1000/u,,,,",  # empty omid
    "15,OMID:BR/0604,10.1000/v,,,,",  # upper-case omid
    "16,wikidata:Q1 10.1000/w,10.1000/x,,,,",  # other scheme then bare doi
    "17,doi:bad doi:10.1000/y,10.1000/z,,,,",  # first doi fails, second wins
    "18,10.1000/" + "a" * 500 + ",10.1000/z,,,,",  # too long for the canonical shortcut
    "26,10.1000/ab cd,10.1000/z,,,,",  # whitespace inside a bare DOI: no list of ids, rejected
    "27,omid:br/0605 doi:10.1000/q r,doi: 10.1000/Z,,,,",  # a bare token among ids; a DOI after `doi: `
]


def _write(path: Path, lines: list[str], eol: str = "\n") -> Path:
    path.write_bytes((eol.join(lines) + eol).encode("utf-8", "surrogatepass"))
    return path


@pytest.mark.parametrize("name", ["coci_rows_from_citecorp_api.csv", "files_as_found/oc_meta__example_citations.csv",
                                  "files_as_found/opencitations_index__citations_data.csv",
                                  "files_as_found/opencitations_index__citations_prov.csv",
                                  "files_as_found/opencitations_index__crossref_citations.csv"])
def test_real_samples(real_sample, name):
    path = real_sample("opencitations/" + name)
    edges, _, counts = _same(path)
    if "prov" not in name:
        assert edges and counts["rows_parsed"] == len(edges)


def test_generated_and_odd_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 4096)  # many blocks, lines cut at block ends
    lines = _coci_lines(3000, 1)
    rng = random.Random(2)
    for row in ODD_ROWS * 5:
        lines.insert(rng.randrange(len(lines)), row)
    _same(_write(tmp_path / "c.csv", [HEADER, *lines]), batch_rows=700)
    _same(_write(tmp_path / "crlf.csv", [HEADER, *lines], "\r\n"))
    quoted = _coci_lines(2000, 3, quoted=True)
    _same(_write(tmp_path / "q.csv", ['"oci","citing","cited","creation","timespan","journal_sc","author_sc"', *quoted]))


@pytest.mark.parametrize("bad", [
    '19,"10.1000/multi\nline",10.1000/a,,,,',  # quoted newline: row parser from here on
    '20,ab"c,10.1000/a,,,,',  # stray quote
    '21,10.1000/a,"10.1000/b",x"y',  # text after a closing quote
    "22,10.1000/a\r,10.1000/b,,,,",  # bare CR
    "23,10.1000/a\x00,10.1000/b,,,,",  # NUL
    "24,10.1000/a," + "y" * (MAX_CSV_FIELD_CHARS + 5) + ",x",  # field over the cap
    '25,10.1000/a,"' + "z\n" * 2000,  # unterminated quote swallowing the rest
])
def test_hostile_rows_hand_over_to_the_row_parser(tmp_path, monkeypatch, bad):
    monkeypatch.setattr(columnar, "BLOCK_BYTES", 1 << 16)
    lines = _coci_lines(2000, 4)
    lines.insert(700, bad)
    lines.insert(1500, ODD_ROWS[3])
    _same(_write(tmp_path / "h.csv", [HEADER, *lines]))


def test_headers_and_shapes(tmp_path):
    _same(_write(tmp_path / "empty.csv", []))
    (tmp_path / "nothing.csv").write_bytes(b"")
    _same(tmp_path / "nothing.csv")
    _same(_write(tmp_path / "only_header.csv", [HEADER]))
    _same(_write(tmp_path / "prov.csv", ["oci,snapshot,agent", "1,2,3", "", "4,5,6"]))
    _same(_write(tmp_path / "bom.csv", ["\ufeffciting,cited", "10.1000/a,10.1000/b"]))
    _same(_write(tmp_path / "qheader.csv", ['"cit\ning",cited', "10.1000/a,10.1000/b"]))
    (tmp_path / "noeol.csv").write_bytes(b"citing,cited\n10.1000/a,10.1000/b")
    _same(tmp_path / "noeol.csv")
    (tmp_path / "badbytes.csv").write_bytes(b"citing,cited\n10.1000/a\xff\xfe,10.1000/b\n10.1000/c,10.1000/d\n")
    _same(tmp_path / "badbytes.csv")


def test_many_rejects_are_capped_the_same(tmp_path):
    lines = [f"{i},bad{i},10.1000/x" for i in range(12_500)] + _coci_lines(100, 5)
    edges, rejects, counts = _same(_write(tmp_path / "bad.csv", ["oci,citing,cited", *lines]))
    assert counts["rejects_suppressed"] == 2_500 and len(rejects) == 10_000


def test_archives_whole_and_damaged(tmp_path):
    body = ("\n".join([HEADER, *_coci_lines(30_000, 6), *ODD_ROWS]) + "\n").encode()
    gz = tmp_path / "c.csv.gz"
    gz.write_bytes(gzip.compress(body))
    _same(gz)
    for cut in (0.3, 0.7):
        bad = tmp_path / f"cut{cut}.csv.gz"
        bad.write_bytes(gz.read_bytes()[: int(gz.stat().st_size * cut)])
        _same(bad)
    zipped = tmp_path / "c.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.csv", body)
        archive.writestr("b.csv.gz", gzip.compress(body))
        archive.writestr("readme.txt", b"x")
    _same(zipped)


def test_a_quote_left_open_costs_its_own_line_only(tmp_path):
    """A stray quote opened a field that the `csv` module filled with the lines after it until
    the field cap (1 MiB): ~16,800 rows of 200,000 vanished as one `field_too_large` reject.
    No citation field spans lines: the line is one `unbalanced_quote` reject and every
    following row is read, by both parsers alike."""
    lines = _coci_lines(3000, 5)
    lines.insert(100, 'z2,"10.1000/a,10.1000/b')  # the quote never closes
    lines.insert(2000, '"quoted","10.1000/c","10.1000/d","","","",""')  # balanced: a row as usual
    edges, rejects, counts = _same(_write(tmp_path / "open.csv", [HEADER, *lines]))
    assert counts["rows_read"] == 3002 and counts["malformed_row"] == 1 and "rows_too_long" not in counts
    assert [r["reason"] for r in rejects] == ["unbalanced_quote"]
    assert counts["rows_parsed"] == len(edges) == 3001


def test_a_line_ends_inside_a_quoted_field_exactly_when_csv_reads_on():
    """`ends_in_quoted_field` against the `csv` module itself: a line ends inside a quoted field
    when the module reads the next line into a field. A quote inside an unquoted field
    (`10.1000/ab"c`) is a literal and leaves nothing open; one opening a later field does."""
    import csv

    from openmsd_build.citations.opencitations import ends_in_quoted_field

    assert not ends_in_quoted_field('1-2,10.1000/ab"c,10.1000/x\n')
    assert ends_in_quoted_field('3-4,10.1000/q"r,"10.1000/y,z\n')
    rng = random.Random(7)
    for _ in range(20_000):
        line = "".join(rng.choice('ab,"') for _ in range(rng.randint(0, 9))) + rng.choice(["\n", "\r\n", ""])
        rows = list(csv.reader([line, "X,Y\n"]))
        reads_on = len(rows) == 1 or any("\n" in field for field in rows[0])
        assert ends_in_quoted_field(line) == reads_on, line
