"""Top-K retrieval and its metrics for large candidate pools (pure numpy, no I/O).

Unlike `metrics` (whole-pool ranking of small split pools), a large pool is searched for
the top K candidates only (K = 500 by default), as a deployed retriever would be, and every
metric is computed from that list; a relevant candidate outside the top K counts as not
retrieved. For one query with R >= 1 relevant candidates (all of them in the pool) and
relevant hits at 1-based ranks r_1 < ... < r_m <= K:

- AP@K     = (1/R) * sum_i i / r_i                       (trec_eval's map_cut_K)
- nDCG@K   = sum_i 1/log2(r_i + 1) / sum_{j<=min(R,K)} 1/log2(j + 1)   (ndcg_cut_K)
- R@k      = |{i : r_i <= k}| / R                         (recall_k)
- RR       = 1 / r_1, 0 when nothing relevant is retrieved (recip_rank)

Ties: score descending, then candidate position ascending (the `metrics` rule); masked
candidates (newer than the query, the query itself, the other language side) score -inf
and are never returned. These equal `pytrec_eval`'s values (tests/evaluate/test_topk.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from openmsd_build.evaluate import metrics

DEFAULT_TOP_K = 500
DEFAULT_RECALL_K = 30


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Per row, the positions of the `k` best finite scores in rank order (tie rule above);
    rows with fewer finite scores return them all, padded with -1."""
    scores = np.asarray(scores)
    n_rows, n = scores.shape
    k = min(k, n)
    out = np.full((n_rows, k), -1, dtype=np.int64)
    if k == 0:
        return out
    for i in range(n_rows):
        s = scores[i]
        if k < n:
            part = np.argpartition(-s, k - 1)[:k]
            kth = s[part].min() if np.isfinite(s[part]).any() else -np.inf
            # every candidate tied with the K-th score competes on position
            cand = np.flatnonzero(s >= kth) if np.isfinite(kth) else part
        else:
            cand = np.arange(n)
        cand = cand[np.isfinite(s[cand])]
        order = cand[np.lexsort((cand, -s[cand]))][:k]
        out[i, : len(order)] = order
    return out


def query_metrics(ranked: np.ndarray, relevant: np.ndarray, recall_ks: dict[str, int]) -> dict[str, float]:
    """Metrics of one query from its ranked positions (-1 padding ignored) and its relevant
    positions (R = len(relevant) >= 1); `recall_ks` maps a name ("r@30") to its cut-off."""
    k_cut = max(len(ranked), 1)  # K (the padded list's length)
    ranked = ranked[ranked >= 0]
    r_total = len(relevant)
    hits = np.flatnonzero(np.isin(ranked, relevant)) + 1  # 1-based ranks
    out = {"map": metrics.average_precision(hits, n_relevant=r_total),
           "ndcg": metrics.ndcg_at_k(hits, n_relevant=r_total, k=k_cut),
           "mrr": float(1.0 / hits[0]) if len(hits) else 0.0}
    for name, k in recall_ks.items():
        out[name] = float(np.sum(hits <= k) / r_total)
    return out


@dataclass
class TopKSum:
    """Running sums of per-query top-K metrics; `result()` gives the means and counts."""

    recall_ks: dict[str, int] = field(default_factory=lambda: {f"r@{DEFAULT_RECALL_K}": DEFAULT_RECALL_K})
    queries: int = 0
    relevant: int = 0
    sums: dict[str, float] = field(default_factory=dict)

    def add(self, ranked: np.ndarray, relevant: np.ndarray) -> None:
        if len(relevant) == 0:
            return
        self.queries += 1
        self.relevant += len(relevant)
        for key, v in query_metrics(ranked, relevant, self.recall_ks).items():
            self.sums[key] = self.sums.get(key, 0.0) + v

    def result(self) -> dict:
        q = self.queries
        keys = ["map", "ndcg", "mrr", *self.recall_ks]
        res: dict = {key: (self.sums.get(key, 0.0) / q if q else None) for key in keys}
        res.update(queries=q, relevant=self.relevant)
        return res


def mean_and_spread(values: list[float | None]) -> dict:
    """Mean, sample standard deviation and count over resamples (None values skipped)."""
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    if v.size == 0:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0, "n": int(v.size)}
