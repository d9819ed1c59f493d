"""A quote left open in an OpenCitations Meta row (`"Rust, a` in a title) runs the `csv`
module's field over the next lines, up to the next quote: the rows there were lost with no
count and no reject. They are now counted (`meta_rows_swallowed`), named in one
`unbalanced_quote` reject, and warned about; a title that really spans two lines is not."""

from __future__ import annotations

from openmsd_build.citations.opencitations import parse_meta_file
from openmsd_build.core.notices import stage_warnings

HEADER = "id,title,author\n"


def _parse(tmp_path, text: str):
    path = tmp_path / "meta.csv"
    path.write_text(text)
    mapped, reasons, counts = [], [], {}
    for table, rejects, batch in parse_meta_file(str(path)):
        mapped += table.column("doi").to_pylist()
        reasons += [r["reason"] for r in rejects]
        for key, value in batch.items():
            counts[key] = counts.get(key, 0) + value
    return mapped, reasons, counts


def test_rows_inside_a_field_left_open_are_counted_and_rejected(tmp_path) -> None:
    rows = [f'omid:br/{i} doi:10.1000/m{i},Title {i},Author {i}' for i in range(6)]
    rows[1] = 'omid:br/1 doi:10.1000/m1,"Rust, a title left open,Author 1'
    rows[4] = 'omid:br/4 doi:10.1000/m4,Title "quoted" 4,Author 4'  # the quote that closes it
    mapped, reasons, counts = _parse(tmp_path, HEADER + "\n".join(rows) + "\n")
    assert mapped == ["10.1000/m0", "10.1000/m1", "10.1000/m5"]  # 2 and 3 (and 4's id) are inside the field
    assert counts["meta_rows_swallowed"] == 3 and reasons == ["unbalanced_quote"]
    warning = stage_warnings("citations", {"rows_read": 10, "edges_kept": 10, **counts})
    assert warning == ["3 OpenCitations Meta rows were lost inside a quoted field left open (see "
                       "rejects/citations/, reason unbalanced_quote): their OMIDs resolve to no DOI"]


def test_a_title_on_two_lines_is_not_a_swallowed_row(tmp_path) -> None:
    text = HEADER + '"omid:br/1 doi:10.1000/a","A title\non two lines",X\n"omid:br/2 doi:10.1000/b",T,Y\n'
    mapped, reasons, counts = _parse(tmp_path, text)
    assert mapped == ["10.1000/a", "10.1000/b"] and reasons == [] and not counts.get("meta_rows_swallowed")
