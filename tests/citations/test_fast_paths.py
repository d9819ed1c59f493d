"""The citations stage's fast paths give the reference answers exactly.

Why: the stage was made ~2x faster by new code paths that must not change a single output
value: the padded-matrix string hash (shards of the partitioned joins, and the split
stage's duplicate key), the batched `paper_ids`, the bare-DOI shortcut and `split_exact`
field cut of the columnar parser, the read-ahead/in-order thread helpers, and the cited
join writing `citations/` itself. Each test compares a fast path with the reference it
replaced, on inputs chosen to hit its edges.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.citations import columnar
from openmsd_build.citations import graph as cg
from openmsd_build.citations.opencitations import parse_citation_file, parse_id_field
from openmsd_build.citations.overlap import InOrderPool, read_ahead
from openmsd_build.core import frames, hashing, layout, parquet_io

# Values of `hash_strings` computed by the implementation before the fast path (cumulative
# sums over every byte): pinned so that shard assignment and the split stage's duplicate
# keys can never drift.
PINNED = {
    "10.1000/a": 3313707134354902617,
    "": 12035550249420947055,
    None: 0,
    "10.1000/ä": 16067703835710294971,
    "10.1038/sj.cdd.4401289": 13627288196153340726,
    "x" * 300: 6243967780118907373,
}


def _reference_hash(values: list[str | None]) -> np.ndarray:
    """The original formulation: cumulative sums over all bytes, then splitmix64."""
    filled = pa.array(["" if v is None else v for v in values], pa.string())
    sums = frames._cumsum_sums(filled)
    lengths = np.array([len(v.encode()) if v is not None else 0 for v in values], dtype=np.uint64)
    h = frames.mix64(sums ^ frames.mix64(lengths))
    h[[v is None for v in values]] = 0
    return h


def test_hash_strings_pinned_values():
    values = list(PINNED)
    assert [int(x) for x in frames.hash_strings(pa.array(values, pa.string()))] == list(PINNED.values())


@pytest.mark.parametrize("mixed_lengths", [False, True])
def test_hash_strings_fast_path_equals_reference(monkeypatch, mixed_lengths):
    monkeypatch.setattr(frames, "_PADDED_ROWS", 64)  # many blocks, some padded wide
    rng = random.Random(5)
    values: list[str | None] = []
    for _ in range(3000):
        r = rng.random()
        if r < 0.05:
            values.append(None)
        elif r < 0.08:
            values.append("")
        elif r < 0.10:
            values.append("10.1000/é" + "x" * rng.randrange(5))  # not ASCII: reference path
        elif r < 0.12:
            values.append("\x00" * rng.randrange(1, 4) + "10.1/a")  # leading NULs count
        elif r < 0.13:
            values.append("z" * rng.choice([255, 256, 257, 600]))  # around the padded cap
        else:
            n = rng.randrange(1, 200) if mixed_lengths else rng.randrange(15, 20)
            values.append("".join(chr(rng.randrange(1, 128)) for _ in range(n)))
    if not mixed_lengths:
        values = [v for v in values if v is None or len(v) < 40]
    expected = _reference_hash(values)
    arr = pa.array(values, pa.string())
    assert (frames.hash_strings(arr) == expected).all()
    assert (frames.hash_strings(pl.Series(values, dtype=pl.String)) == expected).all()
    assert (frames.hash_strings(arr.slice(7)) == expected[7:]).all()
    assert (frames.hash_strings(pa.chunked_array([arr.slice(0, 100), arr.slice(100)])) == expected).all()
    assert (frames.hash_strings(arr.cast(pa.large_string())) == expected).all()
    assert len(frames.hash_strings(pa.array([], pa.string()))) == 0


def test_padded_order_sorts_only_mixed_lengths(monkeypatch):
    monkeypatch.setattr(frames, "_PADDED_ROWS", 4)
    rows = np.arange(8)
    assert frames._padded_order(np.array([18, 18, 19, 18, 18, 17, 18, 18]), rows) is rows
    mixed = np.array([5, 200, 5, 5, 5, 5, 5, 199])
    assert list(frames._padded_order(mixed, rows)) == [0, 2, 3, 4, 5, 6, 7, 1]


def test_mix64_leaves_its_input_alone():
    keys = np.arange(5, dtype=np.uint64)
    out = frames.mix64(keys)
    assert list(keys) == [0, 1, 2, 3, 4] and out[0] != 0


def test_paper_ids_equal_hash64():
    rng = random.Random(3)
    dois = [None, "", "10.1000/ä", *("".join(chr(rng.randrange(1, 0x2FF)) for _ in range(rng.randrange(60)))
                                     for _ in range(500))]
    assert hashing.paper_ids(dois) == [None if d is None else hashing.hash64(d) for d in dois]
    keys = pl.DataFrame({"doi": ["a", "b", "c"], "has_abstract": [True, False, None]})
    assert cg.with_paper_ids(keys)["paper_id"].to_list() == [hashing.paper_id("a"), None, None]


TRICKY_FIELDS = [
    "10.1000/abc", "10.1000/ABC", "doi:10.1000/abc", "DOI:10.1000/abc", "https://doi.org/10.1000/x",
    "10.1000/abc.", "10.1000/abc)", "10.1000/a-", "10.100/abc", "10.1000.5/abc", "10.1000/" + "a" * 300,
    "10.1000/" + "a" * 5000, "omid:br/0601", "omid:br/0601 doi:10.1000/q", "pmid:1 10.1000/r", "doi:bad doi:10.1/x",
    "", " ", "10.1000/a b", "10.1000/~", "10.1000/%41", "not-a-doi", "10.1000/a,b",
]


def test_parse_id_fields_bare_shortcut_equals_general_path():
    fields = pl.Series("f", TRICKY_FIELDS * 3)
    fast = columnar.parse_id_fields(fields)
    general = columnar._parse_id_fields_general(fields)
    assert fast.equals(general)
    for value, (doi, omid, sure) in zip(fields.to_list(), fast.rows(), strict=True):
        if sure:  # where the columnar path decides, it is `parse_id_field`'s answer
            assert (doi, omid) == parse_id_field(value)[:2], value


def _parsed(path: Path, fast: bool) -> tuple[list, list, dict]:
    """(edges sorted, rejects, non-zero counts summed) of one file on one path."""
    edges, rejects, counts = [], [], {}
    for table, rej, c in parse_citation_file(str(path), columnar=fast):
        edges += table.to_pylist()
        rejects += rej
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
    return sorted(edges, key=repr), rejects, {k: v for k, v in counts.items() if v}


def _same_as_row_parser(path: Path) -> None:
    assert _parsed(path, True) == _parsed(path, False)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_split_exact_field_cut_on_short_and_quoted_rows(tmp_path, eol):
    """Two-column files (the cited field is the last one, so it touches the line end),
    rows with too few / extra / empty fields, quoted and unquoted."""
    rows = ["10.1000/a,10.1000/b", '"10.1000/c","10.1000/d"', "10.1000/e", "10.1000/f,", ",10.1000/g",
            "10.1000/h,10.1000/i,", "10.1000/j,10.1000/k,extra,more", '"10.1000/l",10.1000/M', " , ", ",",
            '10.1000/n," 10.1000/o"', "10.1000/p ,10.1000/q", "doi:10.1000/r,doi:10.1000/s"]
    body = eol.join(["citing,cited", *rows * 40]) + eol
    (tmp_path / "two.csv").write_bytes(body.encode())
    _same_as_row_parser(tmp_path / "two.csv")
    index = eol.join(['"citing_id","x","cited_id"', *(f'"{a}","y","{b}"' for a, b in
                                                       [("omid:br/1 doi:10.1/a", "doi:10.1/b"), ("", "x")] * 30)])
    (tmp_path / "index.csv").write_bytes((index + eol).encode())
    _same_as_row_parser(tmp_path / "index.csv")


def test_read_ahead_keeps_order_and_raises_in_place():
    assert list(read_ahead(lambda: iter(range(50)), depth=2)) == list(range(50))

    def failing():
        yield 1
        yield 2
        raise ValueError("boom")

    got = []
    with pytest.raises(ValueError, match="boom"):
        for item in read_ahead(failing):
            got.append(item)
    assert got == [1, 2]


def test_read_ahead_stops_its_producer_when_closed():
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    before = threading.active_count()
    stream = read_ahead(endless, depth=1)
    assert next(stream) == 0
    stream.close()
    time.sleep(0.3)
    assert threading.active_count() == before
    assert len(produced) <= 4


def test_in_order_pool_hands_results_back_in_order_and_bounded():
    pool: InOrderPool[int] = InOrderPool(workers=2, depth=2)
    out = []
    try:
        for i in range(10):
            taken = list(pool.submit(lambda x: (time.sleep(0.01 * (x % 3)), x)[1], i))
            assert len(pool._pending) <= 2
            out += taken
        out += list(pool.drain())
    finally:
        pool.close()
    assert out == list(range(10))


def test_stage_writes_sorted_shards_and_shard0_when_empty(tmp_path):
    """The cited join writes `citations/` itself: every kept edge once, each part sorted and
    holding the edges of its cited shard, shard 0 written even with no edge; same rows and
    counts as the one-frame reference `filter_edges`."""
    from openmsd_build.citations.command import run_citations

    shards = 5
    dois = [f"10.{1000 + i}/x{i}" for i in range(40)]
    docs = pl.DataFrame({"doi": dois, "abstract": ["An abstract." if i % 4 else "" for i in range(40)]})
    directory = Path(layout.documents_dir(str(tmp_path)))
    directory.mkdir(parents=True)
    parquet_io.write_table(docs.to_arrow(), parquet_io.part_path(str(directory), 0, 1))
    rng = random.Random(9)
    # cited DOIs only from shards other than 0, so shard 0 gets no kept edge
    cited_pool = [d for d in dois if frames.shard_strings(pa.array([d]), shards)[0] != 0]
    lines = ["oci,citing,cited"]
    for i in range(300):
        a = rng.choice(dois + ["10.9/missing"])
        lines.append(f"{i},{a.upper() if i % 7 == 0 else a},{rng.choice(cited_pool + [a])}")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "c.csv").write_text("\n".join(lines) + "\n")
    counts = run_citations(str(tmp_path), [str(tmp_path / "in")], None, [], shards=shards)

    files = sorted(Path(layout.citations_dir(str(tmp_path))).glob("*.parquet"))
    assert files[0].name == parquet_io.part_path("", 0, shards)
    got = []
    for f in files:
        table = pq.read_table(f)
        frame = pl.from_arrow(table)
        assert frame.equals(frame.sort("citing_doi", "cited_doi"))
        shard = int(f.name.split("-")[1])
        assert all(s == shard for s in frames.shard_strings(table["cited_doi"], shards))
        got += frame.rows()
    assert pq.read_table(files[0]).num_rows == 0

    edges = []
    for table, _, _ in parse_citation_file(str(tmp_path / "in" / "c.csv"), columnar=False):
        edges.append(table.select(["citing_doi", "cited_doi"]))
    keys = cg.document_keys(docs)
    expected, expected_counts = cg.filter_edges(pl.from_arrow(pa.concat_tables(edges)), keys)
    assert sorted(got) == sorted(expected.rows())
    for name, value in expected_counts.items():
        assert counts.get(name, 0) == value, name
    stats = json.loads(Path(layout.stats_path(str(tmp_path), "citations")).read_text())["counts"]
    assert stats["edges_kept"] == len(got)


def _lines_with(bad: str, at: int, n: int = 6000, quoted: bool = False) -> str:
    rows = [",".join(f'"{f}"' if quoted else f for f in (str(i), f"10.1000/a{i}", f"10.1000/b{i % 97}", "x"))
            for i in range(n)]
    rows.insert(at, bad)
    return "\n".join(["oci,citing,cited,creation", *rows]) + "\n"


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize("cut", [None, 0.5, 0.9])  # 0.9: damage *after* the quoted-newline hand-over
def test_read_ahead_hand_over_and_damage_match_the_row_parser(tmp_path, monkeypatch, quoted, cut):
    """Blocks are decided ahead on helper threads; a line that makes the row parser take
    over (quoted newline), damage in the archive before or after it, and quoted files (which
    may not be read ahead) must still give the row parser's edges, rejects and counts, and
    every complete line before the damage (the hand-over once lost ~100 of them silently)."""
    import gzip

    monkeypatch.setattr(columnar, "BLOCK_BYTES", 8192)
    reads = []
    original = columnar._StreamParse._next_block

    def next_block(self):
        assert not any(p.final for p in self.queue)  # never read past a block that may hand over
        reads.append(len(self.queue))
        return original(self)

    monkeypatch.setattr(columnar._StreamParse, "_next_block", next_block)
    text = _lines_with('9,"10.1000/multi\nline",10.1000/z,x', 4000, quoted=quoted)
    data = gzip.compress(text.encode())
    if cut is not None:
        data = data[: int(len(data) * cut)]
    path = tmp_path / "c.csv.gz"
    path.write_bytes(data)
    _same_as_row_parser(path)
    assert quoted or max(reads) >= 1  # plain blocks were read ahead
    # what the damaged archive still holds, read independently of the parser
    whole = bytearray()
    with gzip.open(path) as stream:
        try:
            while piece := stream.read1(4096):
                whole += piece
        except EOFError:
            pass
    complete = whole.count(b"\n")  # the header and the rows
    # no citation field spans lines: the line that opens the quote is a reject of its own, and
    # the next one a row (its citing field `line"` no DOI)
    split = bytes(whole).count(b"multi\nline")
    _, rejects, counts = _parsed(path, True)
    assert counts["input_lines"] == counts["lines_parsed"] == complete
    assert counts["rows_read"] == complete - 1 and counts["rows_parsed"] == complete - 1 - 2 * split
    assert sorted(r["reason"] for r in rejects) == sorted(["unbalanced_quote", "bad_doi"] * split
                                                          + ([] if cut is None else ["truncated_archive"]))


def test_line_counts_see_lines_lost_after_decompression(tmp_path, monkeypatch):
    """`input_lines` (counted on the decompressed bytes) and `lines_parsed` (counted where
    lines reach the CSV decision) differ when a layer between them drops bytes, which
    `rows_read == rows_parsed` cannot show; reconciliation checks them."""
    import gzip
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
    from reconcile import check_citations

    monkeypatch.setattr(columnar, "BLOCK_BYTES", 8192)
    path = tmp_path / "c.csv.gz"
    path.write_bytes(gzip.compress(_lines_with('9,"10.1000/multi\nline",10.1000/z,x', 4000).encode()))
    original = columnar._Chained.readinto
    calls = []

    def lossy(self, buffer):  # a hand-over that drops its third read
        n = original(self, buffer)
        calls.append(n)
        return original(self, buffer) if len(calls) == 3 else n

    monkeypatch.setattr(columnar._Chained, "readinto", lossy)
    _, _, counts = _parsed(path, True)
    # rows reconcile (a row cut in two is a counted drop): blind to the lost lines
    drops = sum(counts.get(k, 0) for k in ("malformed_row", "bad_doi", "no_doi"))
    assert counts["rows_read"] == counts["rows_parsed"] + drops and counts["rows_read"] < 6000
    assert counts["lines_parsed"] < counts["input_lines"] == 6003
    stats = tmp_path / "out" / "_stats"
    stats.mkdir(parents=True)
    (stats / "citations.json").write_text(json.dumps({"counts": {**counts, "edges_kept": counts["rows_parsed"]}}))
    assert [p for p in check_citations(tmp_path / "out") if "lines" in p] == [
        f"citations: input_lines = lines_parsed: 6,003 != {counts['lines_parsed']:,}"]


def test_read_ahead_ready_takes_only_what_is_produced():
    """`ReadInputs` hands document batches on between parser batches with `ready()`: it
    must never block, lose or reorder an item, and raise the producer's error."""
    from openmsd_build.citations.overlap import ReadAhead

    gate = threading.Event()

    def slow():
        yield 1
        gate.wait(5)
        yield 2
        yield 3

    ahead = ReadAhead(slow, depth=4)
    try:
        deadline = time.monotonic() + 5
        got: list[int] = []
        while not got and time.monotonic() < deadline:
            got += list(ahead.ready())
        assert got == [1] and not ahead.done
        assert list(ahead.ready()) == []  # nothing more yet, and no waiting
        gate.set()
        got += list(ahead)
        assert got == [1, 2, 3] and ahead.done and list(ahead.ready()) == []
    finally:
        ahead.close()

    def broken():
        yield 1
        raise OSError("disk")

    failing = ReadAhead(broken)
    with pytest.raises(OSError, match="disk"):
        list(failing)
    failing.close()
