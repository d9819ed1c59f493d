"""Ranking metrics of the IDT / ODT retrieval evaluation (pure numpy, no I/O).

Setting (as in the OpenMSD paper, not SciDocs' groups of 30 candidates): every paper of a
split's pool is a query, and it ranks the *whole pool* except itself. Its relevant
documents are the papers related to it by the relation (DC in either direction, CC, BC)
that sit in the same pool. Relevance is binary.

Tie rule: documents are ordered by score, descending; documents with equal scores are
ordered by their *pool position*, ascending. Pools are sorted by DOI (see `tasks`), so a tie
is broken by DOI, ascending. The rule is deterministic and neither optimistic nor
pessimistic for the relevant documents. NaN scores rank as -inf.

Definitions, for one query with R >= 1 relevant documents at 1-based ranks r_1 < ... < r_R:

- AP       = (1/R) * sum_i i / r_i      (every relevant document is ranked: the pool is whole)
- nDCG@k   = DCG@k / IDCG@k, DCG@k = sum_{r_i <= k} 1 / log2(r_i + 1),
             IDCG@k = sum_{j=1..min(R, k)} 1 / log2(j + 1)
- MAP and mean nDCG@k are means over the queries with R >= 1. A query with no relevant
  document in the pool has no defined AP or nDCG: it is left out of both means and counted
  as `queries_without_relevant`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

TIE_RULE = "score descending; equal scores by pool position (= DOI) ascending; NaN ranks as -inf"
DEFAULT_K = 10


def _clean(scores: np.ndarray) -> np.ndarray:
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any():
        s = np.where(np.isnan(s), -np.inf, s)
    return s


def ranking(scores: Sequence[float] | np.ndarray, exclude: int | None = None, mask: np.ndarray | None = None) -> np.ndarray:
    """Pool positions in rank order under the tie rule (the reference implementation: a
    full sort). `exclude` (the query itself) and positions where `mask` is False are left
    out."""
    s = _clean(scores)
    keep = np.ones(s.shape[0], dtype=bool) if mask is None else np.asarray(mask, dtype=bool).copy()
    if exclude is not None:
        keep[exclude] = False
    positions = np.flatnonzero(keep)
    # lexsort: last key is primary -> score descending, then position ascending.
    order = np.lexsort((positions, -s[positions]))
    return positions[order]


def relevant_ranks(
    scores: Sequence[float] | np.ndarray,
    relevant: Sequence[int] | np.ndarray,
    exclude: int | None = None,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """1-based ranks (ascending) of the `relevant` pool positions in the ranking of
    `scores` under the tie rule, without sorting the whole pool: only documents scoring at
    least the lowest relevant score can precede a relevant one, so only those are sorted.
    `exclude` and masked-out positions are neither ranked nor counted; a relevant position
    that is excluded or masked out is dropped."""
    s = _clean(scores)
    rel = np.unique(np.asarray(relevant, dtype=np.int64))
    keep = np.ones(s.shape[0], dtype=bool) if mask is None else np.asarray(mask, dtype=bool).copy()
    if exclude is not None:
        keep[exclude] = False
    rel = rel[keep[rel]]
    if rel.size == 0:
        return np.zeros(0, dtype=np.int64)
    threshold = s[rel].min()
    candidates = np.flatnonzero(keep & (s >= threshold))
    order = candidates[np.lexsort((candidates, -s[candidates]))]
    is_rel = np.zeros(s.shape[0], dtype=bool)
    is_rel[rel] = True
    return np.flatnonzero(is_rel[order]).astype(np.int64) + 1


def average_precision(ranks: Sequence[int] | np.ndarray, n_relevant: int | None = None) -> float:
    """AP from the 1-based ranks of the relevant documents. `n_relevant` defaults to
    len(ranks) (whole-pool ranking retrieves every relevant document); a larger value
    counts relevant documents that were never retrieved as precision 0."""
    r = np.sort(np.asarray(ranks, dtype=np.float64))
    n = len(r) if n_relevant is None else n_relevant
    if n <= 0:
        raise ValueError("average precision is undefined without relevant documents")
    return float(np.sum(np.arange(1, len(r) + 1) / r) / n)


def ndcg_at_k(ranks: Sequence[int] | np.ndarray, n_relevant: int | None = None, k: int = DEFAULT_K) -> float:
    """Binary-relevance nDCG@k from the 1-based ranks of the relevant documents."""
    r = np.asarray(ranks, dtype=np.float64)
    n = len(r) if n_relevant is None else n_relevant
    if n <= 0:
        raise ValueError("nDCG is undefined without relevant documents")
    dcg = float(np.sum(1.0 / np.log2(r[r <= k] + 1.0)))
    idcg = float(np.sum(1.0 / np.log2(np.arange(1, min(n, k) + 1) + 1.0)))
    return dcg / idcg


@dataclass
class MetricSum:
    """Running sums of per-query metrics; `result()` gives the means and the counts."""

    k: int = DEFAULT_K
    queries: int = 0
    queries_without_relevant: int = 0
    relevant: int = 0
    ap_sum: float = 0.0
    ndcg_sum: float = 0.0

    def add_ranks(self, ranks: np.ndarray) -> None:
        """One query, from its relevant ranks (empty: no relevant document in the pool)."""
        if len(ranks) == 0:
            self.queries_without_relevant += 1
            return
        self.queries += 1
        self.relevant += len(ranks)
        self.ap_sum += average_precision(ranks)
        self.ndcg_sum += ndcg_at_k(ranks, k=self.k)

    def result(self) -> dict:
        q = self.queries
        return {
            "map": self.ap_sum / q if q else None,
            f"ndcg@{self.k}": self.ndcg_sum / q if q else None,
            "queries": q,
            "queries_without_relevant": self.queries_without_relevant,
            "relevant": self.relevant,
        }


def evaluate_rankings(
    rankings: Iterable[tuple[np.ndarray, Iterable[int], int | None]], k: int = DEFAULT_K
) -> dict:
    """MAP, mean nDCG@k and counts over `(scores, relevant positions, excluded position)`
    per query (a convenience for small cases and tests)."""
    acc = MetricSum(k=k)
    for scores, relevant, exclude in rankings:
        acc.add_ranks(relevant_ranks(scores, list(relevant), exclude=exclude))
    return acc.result()
