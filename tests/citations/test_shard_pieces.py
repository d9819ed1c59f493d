"""The cut of a batch into per-shard pieces that every partitioned shuffle of the graph
stages uses (`citations.graph.split_by_shard`, `shard_pieces`): every row lands in the
piece of its shard, once, in input order, and pieces come in shard order."""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from openmsd_build.citations import graph as cg
from openmsd_build.core import frames
from openmsd_build.core.ipc import from_ipc


@pytest.mark.parametrize("shards", [1, 3, 16, 300, 70_000])
def test_rows_go_to_their_shard_in_input_order(shards: int) -> None:
    rng = random.Random(shards)
    n = 5_000
    frame = pl.DataFrame({"key": [f"10.{rng.randint(1000, 99999)}/x{i}" for i in range(n)],
                          "n": list(range(n))})
    of = frames.shard_strings(frame["key"], shards)
    pieces = frames.split_by_shard(frame, of)
    assert [s for s, _ in pieces] == sorted(set(of.tolist()))  # present shards, in order
    for shard, table in pieces:
        assert table.column("n").to_pylist() == [i for i in range(n) if of[i] == shard]
        assert table.column("key").to_pylist() == [k for k, s in zip(frame["key"], of, strict=True) if s == shard]
    assert sum(t.num_rows for _, t in pieces) == n


def test_shard_pieces_of_a_frame_and_of_its_arrow_table_are_the_same_bytes() -> None:
    frame = pl.DataFrame({"citing_doi": [f"10.1000/a{i % 97}" for i in range(2_000)],
                          "cited_doi": [f"10.2000/b{i}" for i in range(2_000)]})
    from_frame = frames.shard_pieces(frame, "citing_doi", 16)
    from_table = frames.shard_pieces(frame.to_arrow(), "citing_doi", 16)
    assert from_frame == from_table
    for _shard, data in from_frame:  # 32-bit string offsets on the wire
        assert all(f.type == pa.string() for f in from_ipc(data).schema)
    assert frames.shard_pieces(frame.head(0), "citing_doi", 16) == []


def test_self_citations_are_dropped_alike_from_a_frame_and_a_table() -> None:
    frame = pl.DataFrame({"citing_doi": ["10.1/a", "10.1/b", "10.1/c"], "cited_doi": ["10.1/a", "10.1/c", "10.1/c"]})
    kept_frame, counts_frame = cg.drop_self_citations(frame)
    kept_table, counts_table = cg.drop_self_citations(frame.to_arrow())
    assert counts_frame == counts_table == {"self_citation": 2}
    assert kept_table.to_pylist() == kept_frame.to_dicts() == [{"citing_doi": "10.1/b", "cited_doi": "10.1/c"}]
    assert np.array_equal(frames._narrow(np.array([0, 255])), np.array([0, 255], dtype=np.uint8))


def test_pieces_are_narrowed_after_the_cut() -> None:
    """A batch from polars arrives with 64-bit string offsets; the cut runs on it as it is and
    each piece is narrowed to 32-bit offsets on its own (a whole citing shard's column can be
    past what 32-bit offsets address, a sixteenth of it is not)."""
    frame = pl.DataFrame({"cited_doi": [f"10.3000/c{i}" for i in range(1_000)], "n": list(range(1_000))})
    table = frame.to_arrow()
    assert table.schema.field("cited_doi").type == pa.large_string()
    pieces = frames.shard_pieces(table, "cited_doi", 16)
    assert {from_ipc(data).schema.field("cited_doi").type for _, data in pieces} == {pa.string()}
    assert sorted(n for _, data in pieces for n in from_ipc(data).column("n").to_pylist()) == list(range(1_000))
