"""A quote left open in an OpenCitations Meta row (`"Rust, a` in a title) runs the `csv`
module's field over the next lines, up to the next quote: the rows there were lost (last
round: counted as `meta_rows_swallowed` and named in one reject, but still lost). Now a line
that opens with an OMID while the field is open is another row: only the damaged row is
rejected (`unbalanced_quote`, counted in `meta_rows_unbalanced_quote`), the rows after it are
read as rows, and the counts reconcile. A title that really spans two lines is one row."""

from __future__ import annotations

import csv
import random
import time
from collections import Counter

import pytest

from openmsd_build.citations.opencitations import ends_in_quoted_field, parse_meta_file
from openmsd_build.core.notices import stage_warnings

HEADER = "id,title,author\n"
# a Meta row ends as one of these: mapped, without a DOI, without an OMID, DOI rejected, quote left open
OUTCOMES = ("meta_rows_mapped", "meta_rows_no_doi", "meta_rows_no_omid", "meta_bad_doi", "meta_rows_unbalanced_quote")


def _parse(tmp_path, text: str):
    path = tmp_path / "meta.csv"
    path.write_text(text)
    mapped, rejects, counts = [], [], Counter()
    for table, batch_rejects, batch in parse_meta_file(str(path)):
        mapped += table.column("doi").to_pylist()
        rejects += batch_rejects
        counts.update(batch)
    assert counts["meta_rows_read"] == sum(counts[k] for k in OUTCOMES)  # every row read has one outcome
    return mapped, rejects, counts


def test_rows_inside_a_field_left_open_are_read_as_rows(tmp_path) -> None:
    rows = [f'omid:br/{i} doi:10.1000/m{i},Title {i},Author {i}' for i in range(6)]
    rows[1] = 'omid:br/1 doi:10.1000/m1,"Rust, a title left open,Author 1'
    rows[4] = 'omid:br/4 doi:10.1000/m4,Title "quoted" 4,Author 4'  # the quote that used to close it
    mapped, rejects, counts = _parse(tmp_path, HEADER + "\n".join(rows) + "\n")
    assert mapped == ["10.1000/m0", "10.1000/m2", "10.1000/m3", "10.1000/m4", "10.1000/m5"]
    assert [(r["reason"], r["key"].rsplit(":", 1)[1]) for r in rejects] == [("unbalanced_quote", "3")]
    assert "line 3" in rejects[0]["detail"] and "rows from line 4 on are read" in rejects[0]["detail"]
    assert rejects[0]["raw"].startswith('omid:br/1 doi:10.1000/m1,"Rust')
    assert counts == {"meta_rows_read": 6, "meta_rows_mapped": 5, "meta_rows_unbalanced_quote": 1}
    warning = stage_warnings("citations", {"rows_read": 10, "edges_kept": 10, **counts})
    assert warning == ["1 OpenCitations Meta row left a quoted field open (see rejects/citations/, reason "
                       "unbalanced_quote): it was rejected, so its OMID resolves to no DOI; the rows after it were "
                       "read as rows"]
    assert "meta_rows_swallowed" not in counts


def test_a_title_on_two_lines_is_one_row(tmp_path) -> None:
    text = (HEADER + '"omid:br/1 doi:10.1000/a","A title\non two lines",X\n"omid:br/2 doi:10.1000/b",T,Y\n'
            + 'omid:br/3 doi:10.1000/c,"A ""quoted""\ntitle\n",Z\n')
    mapped, rejects, counts = _parse(tmp_path, text)
    assert mapped == ["10.1000/a", "10.1000/b", "10.1000/c"] and rejects == []
    assert counts == {"meta_rows_read": 3, "meta_rows_mapped": 3}


@pytest.mark.parametrize("opening", ['omid:br/', '"omid:br/', 'OMID:BR/'])
def test_every_damaged_row_alone_is_rejected(tmp_path, opening) -> None:
    """Quotes left open on several rows, on consecutive rows, in the id column itself, on a
    row whose next line is quoted, and on the last row (open to the end of the file)."""
    rows = [f'{opening}{i} doi:10.1000/m{i}{chr(34) if opening[0] == chr(34) else ""},T{i},A{i}' for i in range(10)]
    for i in (2, 3, 6):
        rows[i] = f'omid:br/{i} doi:10.1000/m{i},"T{i} open,A{i}'
    rows[8] = f'"omid:br/8 doi:10.1000/m{8},T8,A8'  # the id column's own quote never closes
    rows[9] = 'omid:br/9 doi:10.1000/m9,T9,"A9 open'
    mapped, rejects, counts = _parse(tmp_path, HEADER + "\n".join(rows) + "\n")
    assert mapped == [f"10.1000/m{i}" for i in (0, 1, 4, 5, 7)]
    assert [r["key"].rsplit(":", 1)[1] for r in rejects] == ["4", "5", "8", "10", "11"]
    assert all(r["reason"] == "unbalanced_quote" for r in rejects)
    assert "end of the file" in rejects[-1]["detail"]
    assert counts["meta_rows_read"] == 10 and counts["meta_rows_unbalanced_quote"] == 5


def test_a_stray_quote_before_many_rows_costs_one_row_in_linear_time(tmp_path) -> None:
    """One stray quote near the start of a large file, no quote after it: the `csv` module ran
    its field to the field cap (1 MiB, ~15,000 rows here) and lost them; now each following
    line is read once (no re-parsing from the damaged row)."""
    n = 50_000
    lines = [f"omid:br/{i} doi:10.1000/m{i} issn:1234-5678,A title {i},Author {i}; Other {i}" for i in range(n)]
    lines[3] = 'omid:br/3 doi:10.1000/m3,"A stray quote,X'
    started = time.perf_counter()
    mapped, rejects, counts = _parse(tmp_path, HEADER + "\n".join(lines) + "\n")
    elapsed = time.perf_counter() - started
    assert len(mapped) == counts["meta_rows_mapped"] == n - 1 and "10.1000/m3" not in mapped
    assert [r["reason"] for r in rejects] == ["unbalanced_quote"]
    assert counts["meta_rows_read"] == n and counts["meta_rows_unbalanced_quote"] == 1
    assert elapsed < 5, elapsed  # ~0.3 s here; a hang guard on a shared machine, not a benchmark


def test_a_field_open_past_the_field_cap_without_omid_lines_is_still_bounded(tmp_path) -> None:
    """Lines that open with no OMID stay in the open field, as in a title on two lines, up to
    the `csv` module's field cap: that row is one `field_too_large` BadRow (counted in
    `meta_rows_too_long`), and reading goes on after it."""
    limit = csv.field_size_limit(10_000)
    try:
        body = 'omid:br/1 doi:10.1000/a,"open\n' + "continued;\n" * 2_000 + "omid:br/2 doi:10.1000/b,T,A\n"
        mapped, _, counts = _parse(tmp_path, HEADER + body)
    finally:
        csv.field_size_limit(limit)
    assert counts["meta_rows_too_long"] == 1 and mapped == ["10.1000/b"]


@pytest.mark.parametrize("seed", range(3))
def test_random_quotes_cost_exactly_the_rows_that_leave_one_open(tmp_path, seed) -> None:
    """Rows of one line each with random quotes and commas in their title and author: a row is
    rejected exactly when its own line leaves a quoted field open (`ends_in_quoted_field`,
    itself checked against the `csv` module), and every other row is mapped, however the
    quotes of the rows before it fell."""
    rng = random.Random(seed)

    def junk() -> str:
        return "".join(rng.choice('ab ,"') for _ in range(rng.randint(0, 8)))

    lines = [f"omid:br/{i} doi:10.1000/m{i},{junk()},{junk()}" for i in range(2_000)]
    mapped, rejects, counts = _parse(tmp_path, HEADER + "\n".join(lines) + "\n")
    damaged = [i for i, line in enumerate(lines) if ends_in_quoted_field(line + "\n")]
    assert 100 < len(damaged) < 1_900  # both kinds, many times
    assert mapped == [f"10.1000/m{i}" for i in range(len(lines)) if i not in set(damaged)]
    assert [r["key"].rsplit(":", 1)[1] for r in rejects] == [str(i + 2) for i in damaged]
    assert counts["meta_rows_read"] == len(lines) and counts["meta_rows_unbalanced_quote"] == len(damaged)


def test_a_header_left_open_keeps_its_id_column(tmp_path) -> None:
    """The header is cut at the first row's OMID like any row: its columns up to the quote
    still name the id column, so the file is read (the `csv` module had read the rows up to
    the next quote into the header)."""
    mapped, rejects, counts = _parse(tmp_path, 'id,"title,author\nomid:br/1 doi:10.1000/a,T,A\nomid:br/2 doi:10.1000/b,"T",A\n')
    assert mapped == ["10.1000/a", "10.1000/b"] and rejects == []
    assert counts == {"meta_rows_read": 2, "meta_rows_mapped": 2}
