"""The partitioned split (`split.partitioned`, what the stage runs) equals the reference
`assign_splits` on generated graphs: multi-member groups (shared title+abstract, relation
chains through unlinked DOIs), small builds (rule 5's minimum) and large-fraction builds
(the threshold), for several shard counts."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from openmsd_build.core import spill
from openmsd_build.split.assign import SplitConfig, assign_splits
from openmsd_build.split.partitioned import assign_partitioned, idt_decision, merge_summaries


def generated(n: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Nodes as `assign_splits` takes them and English / non-English edges with languages."""
    rng = np.random.default_rng(seed)
    doi = [f"10.1/{int(rng.integers(0, 10**6)):06d}-{i}" for i in range(n)]
    langs = np.array(["en", "en", "en", "de", "fr", "ja", "und", "es"])[rng.integers(0, 8, n)]
    dup = [int(x) if rng.random() < 0.2 else None for x in rng.integers(0, n // 5 + 1, n)]
    rel = []
    for _ in range(n):
        r = rng.random()
        rel.append([doi[int(rng.integers(0, n))]] if r < 0.1 else [f"10.9/x{int(rng.integers(0, n // 10 + 1))}"]
                   if r < 0.2 else [])
    nodes = pl.DataFrame({"doi": doi, "language": langs, "dup_key": pl.Series(dup, dtype=pl.UInt64),
                          "relation_dois": pl.Series(rel, dtype=pl.List(pl.String))})
    a, b = rng.integers(0, n, 3 * n), rng.integers(0, n, 3 * n)
    e = pl.DataFrame({"citing_doi": [doi[i] for i in a], "cited_doi": [doi[i] for i in b]})
    e = e.filter(pl.col("citing_doi") != pl.col("cited_doi")).unique()
    lang = nodes.select("doi", "language")
    e = e.join(lang.rename({"doi": "citing_doi", "language": "citing_lang"}), on="citing_doi")
    e = e.join(lang.rename({"doi": "cited_doi", "language": "cited_lang"}), on="cited_doi")
    return nodes, e.filter((pl.col("citing_lang") == "en") != (pl.col("cited_lang") == "en"))


CASES = [
    (40, 1, SplitConfig(top_k=4)),  # tiny: minimum decides, few groups
    (600, 2, SplitConfig(top_k=3)),  # small build: minimum decides
    (3000, 3, SplitConfig(top_k=5, min_idt_groups=2)),  # threshold decides
    (3000, 4, SplitConfig(top_k=5, idt_fraction=0.05, odt_fraction=0.1)),  # wide held-back band
]


@pytest.mark.parametrize(("n", "seed", "config"), CASES)
@pytest.mark.parametrize("shards", [1, 3, 8])
def test_partitioned_equals_reference(n: int, seed: int, config: SplitConfig, shards: int) -> None:
    nodes, edges = generated(n, seed)
    ref, ref_counts = assign_splits(nodes, edges.select("citing_doi", "cited_doi"), config)
    got, got_counts = assign_partitioned(nodes, edges, config, shards)
    assert got.select(ref.columns).equals(ref)
    assert got_counts == ref_counts
    assert ref_counts["groups_multi"] > 0 and ref_counts.get("odt_english_linked", 0) > 0


def test_minimum_cut_breaks_ties_by_group() -> None:
    # Two pool groups with one draw: the n-th smallest (u, group) cut keeps group order.
    summary = merge_summaries([{"pool": 10, "below": 0, "smallest": [(0.5, "b")]},
                               {"pool": 10, "below": 0, "smallest": [(0.5, "a")]}], keep=5)
    assert summary["smallest"] == [(0.5, "a"), (0.5, "b")]
    decision = idt_decision(summary, SplitConfig(min_idt_groups=1))
    assert decision["cut"] == (0.5, "a") and decision["idt_minimum_applied"] == 1


def test_spill_round_trip(tmp_path) -> None:
    table = pa.table({"x": [1, 2, 3], "s": ["a", None, "c"]})
    elements = list(spill.put(str(tmp_path), "t", [(2, table), (5, table.slice(0, 0))]))
    assert [(s, tag) for s, (tag, _) in elements] == [(2, "t")]  # empty pieces are not written
    assert spill.load([v for _, v in elements], "t", "u") == {"t": [table], "u": []}
