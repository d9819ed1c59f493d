"""Vectorized edge work on batches: stable partition hashes, OMID resolution, self-citation
and duplicate removal, and the "both ends kept with an abstract" filter.

Why vectorized: the citations stage sees ~1.4B OpenCitations rows; per-row Python costs
tens of microseconds in Beam, so every function here takes and returns whole polars frames
and the Beam pipeline only moves `(shard, table)` pairs. Partitioning uses `hash_strings` / `mix64` (`core.frames`) rather than polars.
`hash` (documented as unstable across releases) or Python's salted `hash()`: both sides of
a partitioned join must agree on every worker and in every re-run.

Counters returned here (the citations stage sums them into `_stats/citations.json`):

* `no_doi` — an OMID-only end that the Meta mapping could not resolve (or no `--meta`);
* `self_citation` — citing DOI equals cited DOI after normalization;
* `duplicate_edge` — a repeat of an edge already counted (same normalized DOI pair);
* `citing_missing` / `cited_missing` — that end is not in `documents/` (the citing side is
  checked first, so an edge missing both ends counts as `citing_missing`);
* `no_abstract` — that end is in `documents/` but its abstract is empty (citing first);
* `edges_kept` — written to `citations/`.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from openmsd_build.core.frames import (  # noqa: F401 - re-exported for the citations stage
    hash_strings,
    mix64,
    shard_ints,
    shard_pieces,
    shard_strings,
    split_by_shard,
    to_frame,
)
from openmsd_build.core.hashing import paper_ids


def resolve_omids(edges: pl.DataFrame, meta: pl.DataFrame, side: str) -> pl.DataFrame:
    """Fill `{side}_doi` from the Meta mapping (omid -> doi) where it is null.

    Meta may list one OMID twice (re-exports); the smallest DOI wins so the result does not
    depend on input order.
    """
    mapping = meta.group_by("omid").agg(pl.col("doi").min().alias("__doi"))
    joined = edges.join(mapping, left_on=f"{side}_omid", right_on="omid", how="left")
    return joined.with_columns(pl.coalesce(f"{side}_doi", "__doi").alias(f"{side}_doi")).drop("__doi")


def finish_resolution(edges: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Keep edges whose two DOIs are known; count the rest as `no_doi`."""
    ok = edges.filter(pl.col("citing_doi").is_not_null() & pl.col("cited_doi").is_not_null())
    return ok.select("citing_doi", "cited_doi"), {"no_doi": edges.height - ok.height}


def drop_self_citations(edges: pl.DataFrame | pa.Table) -> tuple[pl.DataFrame | pa.Table, dict[str, int]]:
    """Remove A->A edges (after normalization two spellings of one DOI are one paper). An
    Arrow table (the parser's batches, on their way to `shard_pieces`) stays one."""
    if isinstance(edges, pa.Table):
        kept = edges.filter(pc.not_equal(edges.column("citing_doi"), edges.column("cited_doi")))
        return kept, {"self_citation": edges.num_rows - kept.num_rows}
    kept = edges.filter(pl.col("citing_doi") != pl.col("cited_doi"))
    return kept, {"self_citation": edges.height - kept.height}


def dedup_edges(edges: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Remove repeated (citing, cited) pairs. Correct inside a shard keyed by the citing DOI,
    because every copy of an edge lands in the same shard."""
    kept = edges.unique(subset=["citing_doi", "cited_doi"], maintain_order=False)
    return kept, {"duplicate_edge": edges.height - kept.height}


def document_keys(docs: pl.DataFrame) -> pl.DataFrame:
    """(doi, has_abstract, paper_id) per document; a DOI listed twice keeps 'has abstract'
    if any copy has. `paper_id = hashing.hash64(doi)` (the split stage's key) is computed
    here, once per document with an abstract, and travels onto the kept edges as
    `citing_id` / `cited_id` (null for documents without one: their edges are dropped)."""
    keys = docs.select(
        pl.col("doi"),
        (pl.col("abstract").is_not_null() & (pl.col("abstract").str.strip_chars().str.len_chars() > 0)).alias(
            "has_abstract"
        ),
    ).group_by("doi").agg(pl.col("has_abstract").any())
    return with_paper_ids(keys)


def with_paper_ids(keys: pl.DataFrame) -> pl.DataFrame:
    """Add `paper_id` (hash64 of the DOI) to (doi, has_abstract) rows that have an abstract."""
    if "paper_id" in keys.columns:
        return keys
    ids = pl.Series("paper_id", [None] * keys.height, dtype=pl.Int64)
    rows = keys["has_abstract"].fill_null(False).arg_true()
    if len(rows):
        ids = ids.scatter(rows, pl.Series(paper_ids(keys["doi"].gather(rows).to_list()), dtype=pl.Int64))
    return keys.with_columns(ids)


def filter_side(edges: pl.DataFrame, keys: pl.DataFrame, side: str) -> tuple[pl.DataFrame, dict[str, int]]:
    """Keep edges whose `side` end is a document with an abstract, attaching its paper id as
    `{side}_id`; count the two drop reasons."""
    keys = with_paper_ids(keys).rename({"paper_id": f"{side}_id"})
    joined = edges.drop(f"{side}_id", strict=False).join(keys, left_on=f"{side}_doi", right_on="doi", how="left")
    missing = int(joined["has_abstract"].is_null().sum())
    kept = joined.filter(pl.col("has_abstract").fill_null(False))
    no_abstract = joined.height - missing - kept.height
    return kept.drop("has_abstract"), {f"{side}_missing": missing, "no_abstract": no_abstract}


def sorted_citations(edges: pl.DataFrame) -> pl.DataFrame:
    """Kept edges in `citations/` column order, sorted by (citing_doi, cited_doi): the
    order of every part file (byte-wise, as Arrow's sort of the same strings)."""
    # Single-threaded: shards are sorted two at a time already (`overlap.InOrderPool`).
    return edges.select("citing_doi", "cited_doi", "citing_id", "cited_id").sort(
        "citing_doi", "cited_doi", multithreaded=False)


def filter_edges(edges: pl.DataFrame, keys: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """The whole per-graph filter on one frame (used by tests and small inputs): self-citations,
    duplicates, then the citing and cited document checks, in the stage's order."""
    counts: dict[str, int] = {}
    for step in (drop_self_citations, dedup_edges):
        edges, c = step(edges)
        counts.update(c)
    for side in ("citing", "cited"):
        edges, c = filter_side(edges, keys, side)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
    counts["edges_kept"] = edges.height
    return edges.select("citing_doi", "cited_doi", "citing_id", "cited_id"), counts
