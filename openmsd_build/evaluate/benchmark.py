"""A fixed small benchmark per split, built the MDCR way: per query a few positives and
negatives of labelled types, so a model can be reported per type of difficulty.

Candidate types (each candidate has exactly one; a candidate that fits several keeps the
first in this order):
- `positive`: related to the query by the benchmark's relation(s), published in or before
  the query's year;
- `bm25`: the best BM25 candidates (over the split's papers published in or before the
  query's year) that are not related to the query by any relation (DC, CC, BC);
- `graph`: citation-graph neighbours: papers cited by or citing the query's references,
  that the query does not cite and that are not related to it;
- `popular`: the most cited papers of the query's field (its first subject category) that
  are not related to it;
- `random`: any other paper of the split published in or before the query's year.

Every candidate is from the same split and never newer than its query; the query itself is
never a candidate. Seeded: the same corpus and seed give the same tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openmsd_build.evaluate.corpus import NO_YEAR, Corpus
from openmsd_build.evaluate.large_pool import positives_of
from openmsd_build.evaluate.sparse_bm25 import SparseBM25
from openmsd_build.evaluate.tokenize import tokenize
from openmsd_build.evaluate.topk import top_k

TYPES = ("positive", "bm25", "graph", "popular", "random")


@dataclass
class BenchmarkConfig:
    queries: int = 100
    positives: int = 5
    per_type: int = 5  # negatives of each type per query
    relations: tuple[str, ...] = ("dc",)
    seed: int = 0

    def describe(self) -> dict:
        return {"queries": self.queries, "positives": self.positives, "per_type": self.per_type,
                "relations": list(self.relations), "seed": self.seed}


def related(corpus: Corpus, q: int) -> np.ndarray:
    """Every paper related to `q` by any relation the corpus has (never a negative)."""
    parts = [r.of(q) for r in corpus.relevance.values()]
    if corpus.cites is not None:
        parts += [corpus.cites.of(q), corpus.cited_by.of(q)]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


def graph_neighbours(corpus: Corpus, q: int) -> np.ndarray:
    """Papers cited by or citing the query's references, except the query's references."""
    refs = corpus.cites.of(q)
    if refs.size == 0:
        return np.zeros(0, dtype=np.int64)
    hop = np.unique(np.concatenate([np.concatenate([corpus.cites.of(int(r)), corpus.cited_by.of(int(r))])
                                    for r in refs]))
    return np.setdiff1d(hop, np.append(refs, q))


def _pick(cands, n: int, ok: np.ndarray) -> list[int]:
    """The first `n` candidates (in the given order) that `ok` admits."""
    got: list[int] = []
    for c in cands:
        if len(got) >= n:
            break
        if ok[int(c)]:
            got.append(int(c))
            ok[int(c)] = False
    return got


def build_benchmark(corpus: Corpus, config: BenchmarkConfig, tokens: list[list[str]] | None = None) -> list[dict]:
    """Rows (query, candidate, label, type) of the benchmark (see the module docstring)."""
    rng = np.random.default_rng([config.seed, len(corpus)])
    years = corpus.years
    eligible = [q for q in range(len(corpus)) if years[q] != NO_YEAR
                and positives_of(corpus, q, config.relations).size]
    if len(eligible) > config.queries:
        eligible = sorted(rng.choice(eligible, size=config.queries, replace=False).tolist())
    tokens = tokens if tokens is not None else [tokenize(corpus.text(i), corpus.languages[i])
                                                for i in range(len(corpus))]
    index = SparseBM25([], [], token_lists=tokens) if eligible else None
    in_cit = corpus.in_citations if corpus.in_citations is not None else np.zeros(len(corpus))
    by_popularity = np.lexsort((np.arange(len(corpus)), -in_cit))
    rows: list[dict] = []
    for q in eligible:
        q = int(q)
        allowed = (years != NO_YEAR) & (years <= years[q])  # never newer than the query
        allowed[q] = False
        negative_ok = allowed.copy()
        negative_ok[related(corpus, q)] = False  # a negative is related by no relation

        def add(cands, kind: str, n: int, ok: np.ndarray, q: int = q) -> None:
            for c in _pick(cands, n, ok):  # `ok` loses each pick: one type per candidate
                rows.append({"query": q, "candidate": c, "label": int(kind == "positive"), "type": kind})

        add(rng.permutation(positives_of(corpus, q, config.relations)), "positive", config.positives, allowed)
        scores = np.where(negative_ok, index.score_tokens([tokens[q]])[0], -np.inf)
        best = top_k(scores[None, :], config.per_type)[0]
        add((c for c in best if c >= 0 and scores[c] > 0), "bm25", config.per_type, negative_ok)
        add(rng.permutation(graph_neighbours(corpus, q)), "graph", config.per_type, negative_ok)
        field = corpus.categories[q][0] if corpus.categories[q] else None
        if field is not None:
            add((c for c in by_popularity if field in corpus.categories[c]), "popular", config.per_type, negative_ok)
        add(rng.permutation(np.flatnonzero(negative_ok)), "random", config.per_type, negative_ok)
    return rows
