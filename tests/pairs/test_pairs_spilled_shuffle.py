"""The pairs stage's shuffles carry paths, not rows (`split.spill`): a keyed frame becomes
one spilled piece per shard, and a shard's consumer reads back exactly its rows."""

from __future__ import annotations

import polars as pl

from openmsd_build.citations import graph as cg
from openmsd_build.core import spill
from openmsd_build.pairs.beam import key


def test_key_spills_one_piece_per_shard(tmp_path) -> None:
    frame = pl.DataFrame({"a": list(range(100)), "b": list(range(100, 200))}, schema={"a": pl.Int64, "b": pl.Int64})
    elements = list(key(str(tmp_path), frame, "a", 4, "dc"))
    assert all(isinstance(path, str) and tag == "dc" for _, (tag, path) in elements)
    shards = cg.shard_ints(frame["a"], 4)
    for shard, value in elements:
        got = cg.to_frame(spill.load([value], "dc")["dc"])
        assert got.sort("a").equals(frame.filter(pl.Series(shards == shard)).sort("a"))
    assert sum(cg.to_frame(spill.load([v], "dc")["dc"]).height for _, v in elements) == 100
