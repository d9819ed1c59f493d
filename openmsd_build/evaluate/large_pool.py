"""Large-pool citation-recommendation evaluation (the MDCR way), per relation, language
class and language.

Why: small or random candidate pools flatter models (an encoder's MAP that is ~48 on 25
candidates falls to ~5 on 200k-2M candidates while BM25 stays hard to beat), so a realistic
evaluation ranks a large pool of papers a recommender could actually have proposed.

Sampling (`sample_pool`, seeded by `(seed, size, resample)`, plus a stable hash of the field's
name for a field-level pool: `sample_seed`):
- queries: papers of the split published in its latest `latest_years` year(s) (1 or more; optionally
  of one subject category: a *field-level* pool) with at least one related paper (by any of
  the chosen relations: DC, CC, BC) published in or before the query's year; at most
  `max_queries`, drawn at random;
- positives: every such related paper of every query is in the pool (a related paper newer
  than its query is not a positive for it, and is counted as `positives_newer`);
- the rest of the pool is drawn at random from the split's papers published in or before the
  newest query's year (field-level: from the papers cited by the field's papers), up to
  `size` (capped by what the split holds: `size` is then the real pool size, and
  `size_requested` the asked one);
- each query ranks only the candidates published in or before its own year, never itself.

Scoring: `BM25Model` (the sparse index is built on each pool) and `DenseModel` (vectors of
any encoder, exact cosine search in batches) give a batch of queries x pool scores; the top
K (`topk`) is taken per query, per language class (X-Y: side-Y candidates for side-X
queries, en = English, xx = other) and summarised as MAP@K, nDCG@K, R@k (k = 30 and the mean
number of positives, `r@mean`) and MRR, per relation and per query language.

`r@mean`'s cut-off is the mean number of positives of the sample's queries (rounded up),
capped at K: recall is measured on the top-K list, so a cut-off past K was R@K under another
name (a top-10 list of queries with 40 positives on average reported "R@40"). Each result
records the cut-off used (`r@mean_k`, at most K) and the mean it came from
(`r@mean_positives`); the command warns when the cap applied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from openmsd_build.core.hashing import hash64
from openmsd_build.evaluate import tasks, topk
from openmsd_build.evaluate.corpus import NO_YEAR, Corpus
from openmsd_build.evaluate.sparse_bm25 import SparseBM25, count_matrix
from openmsd_build.evaluate.tokenize import tokenize
from openmsd_build.evaluate.vectors import unit_rows

SAMPLING = (
    "Queries: papers of the split's latest publication year(s) with at least one related paper (the chosen "
    "relations) published in or before their year, at most max_queries drawn at random. Every such related "
    "paper of every query is in the pool; the rest is drawn at random from the split's papers published in or "
    "before the newest query's year (field-level pools: from the papers cited by the field's papers), up to the "
    "pool size. Each query ranks only the candidates published in or before its own year, never itself. "
    "Seeded by (seed, size, resample), and for a field-level pool a stable hash of the field's name."
)
FIELD_SEED_KEY = "openmsd-pool-field-v1"
"""The key of `hash64` for a field's part of a pool's seed (a new key draws other field pools)."""
BATCH = 32  # queries scored at once: 32 x 1M float32 = 128 MB


def sample_seed(seed: int, size: int, resample: int, field: str | None = None) -> list[int]:
    """The seed sequence of one sample (recorded with its results). A field-level pool adds
    `hash64(field)` (blake2b, keyed): the same on every run and machine, and different for
    different names. It was the sum of the name's bytes, so anagrams ("Biology" and
    "Bioglyo") and any names of equal byte sum drew the same queries' order and filler."""
    extra = [hash64(field, FIELD_SEED_KEY)] if field else []
    return [int(seed), int(size), int(resample), *extra]


@dataclass
class PoolSample:
    queries: np.ndarray  # corpus positions, ascending
    candidates: np.ndarray  # corpus positions, ascending
    size_requested: int
    seed: list[int]
    field: str | None = None
    positives: int = 0  # distinct positives placed in the pool
    positives_newer: int = 0  # (query, related paper) links dropped: the paper is newer

    def describe(self) -> dict:
        return {"size_requested": self.size_requested, "size": int(self.candidates.size),
                "queries": int(self.queries.size), "positives": self.positives,
                "positives_newer": self.positives_newer, "seed": self.seed, "field": self.field}


def positives_of(corpus: Corpus, q: int, relations) -> np.ndarray:
    """The related papers of `q` (union over `relations`) published in or before its year."""
    parts = [corpus.relevance[r].of(q) for r in relations]
    pos = np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    y = corpus.years[pos]
    return pos[(y != NO_YEAR) & (y <= corpus.years[q])]


def in_field(corpus: Corpus, field: str) -> np.ndarray:
    return np.array([field in c for c in corpus.categories], dtype=bool)


def query_candidates(corpus: Corpus, relations, latest_years: int = 1, field: str | None = None) -> np.ndarray:
    """Positions that may be queries (see the module docstring): papers of the latest
    `latest_years` (1 or more) publication years. A `ValueError` below 1: 0 took every year
    (`known[-0:]`) and -1 every year but the oldest, for a caller from Python (as
    `bench/eval_bench.py`) that the command line's check does not cover."""
    if latest_years < 1:
        raise ValueError(f"latest_years must be 1 or more, not {latest_years}")
    years = corpus.years
    known = np.unique(years[years != NO_YEAR])
    if known.size == 0:
        return np.zeros(0, dtype=np.int64)
    newest = known[-latest_years:]
    ok = np.isin(years, newest)
    if field:
        ok &= in_field(corpus, field)
    return np.asarray([q for q in np.flatnonzero(ok) if positives_of(corpus, int(q), relations).size], dtype=np.int64)


def sample_pool(corpus: Corpus, size: int, seed: list[int], relations=("dc", "cc", "bc"), latest_years: int = 1,
                max_queries: int = 1000, field: str | None = None, eligible_queries: np.ndarray | None = None
                ) -> PoolSample:
    """One pool of about `size` candidates (see the module docstring)."""
    rng = np.random.default_rng(seed)
    eligible = query_candidates(corpus, relations, latest_years, field) if eligible_queries is None \
        else eligible_queries
    if eligible.size > max_queries:
        eligible = np.sort(rng.choice(eligible, size=max_queries, replace=False))
    queries = eligible.astype(np.int64)
    positives: list[np.ndarray] = []
    newer = 0
    for q in queries:
        p = positives_of(corpus, int(q), relations)
        all_rel = np.unique(np.concatenate([corpus.relevance[r].of(int(q)) for r in relations]))
        newer += int(all_rel.size - p.size)
        positives.append(p)
    pos = np.unique(np.concatenate(positives)) if positives else np.zeros(0, dtype=np.int64)
    if queries.size == 0:
        return PoolSample(queries, pos, size, seed, field)
    max_year = int(corpus.years[queries].max())
    fill_ok = (corpus.years != NO_YEAR) & (corpus.years <= max_year)
    if field:
        field_papers = np.flatnonzero(in_field(corpus, field))
        cited = np.zeros(len(corpus), dtype=bool)
        if corpus.cites is not None:
            for p in field_papers:
                cited[corpus.cites.of(int(p))] = True
        fill_ok &= cited
    fill_ok[pos] = False
    pool_fill = np.flatnonzero(fill_ok)
    need = max(0, min(size - pos.size, pool_fill.size))
    filler = rng.choice(pool_fill, size=need, replace=False) if need else np.zeros(0, dtype=np.int64)
    candidates = np.union1d(pos, filler).astype(np.int64)
    return PoolSample(queries, candidates, size, seed, field, positives=int(pos.size), positives_newer=newer)


# --------------------------------------------------------------------------- models


class BM25Model:
    """BM25 over each pool (IDF of the pool, as a deployed index would have); the corpus is
    tokenized once."""

    def __init__(self, corpus: Corpus, k1: float = 1.5, b: float = 0.75, tokens: list[list[str]] | None = None):
        self.corpus = corpus
        self.k1, self.b = k1, b
        self.tokens = tokens if tokens is not None else [tokenize(corpus.text(i), corpus.languages[i])
                                                         for i in range(len(corpus))]
        self._counts = None

    def with_params(self, k1: float, b: float) -> BM25Model:
        other = BM25Model(self.corpus, k1, b, self.tokens)
        other._counts = self.counts
        return other

    def params(self) -> dict:
        return {"k1": self.k1, "b": self.b, "method": "lucene", "library": "openmsd sparse (scipy)"}

    @property
    def counts(self):
        """The corpus's term counts (built once, shared by re-weighted copies): a pool's
        index is its rows, a query its row."""
        if self._counts is None:
            self._counts = count_matrix(self.tokens)
        return self._counts

    def prepare(self, candidates: np.ndarray):
        tf, vocab = self.counts
        index = SparseBM25.from_counts(tf[candidates], vocab, self.k1, self.b)
        return lambda queries: index.score_counts(tf[np.asarray(queries, dtype=np.int64)])


class DenseModel:
    """Exact cosine search over vectors in corpus order (any encoder, or precomputed)."""

    def __init__(self, vectors: np.ndarray, name: str = "dense"):
        self.unit = unit_rows(vectors)
        self.name = name

    def params(self) -> dict:
        return {"dim": int(self.unit.shape[1]), "similarity": "cosine", "search": "exact, batched"}

    def prepare(self, candidates: np.ndarray):
        cand_t = np.ascontiguousarray(self.unit[candidates].T)
        return lambda queries: self.unit[np.asarray(queries, dtype=np.int64)] @ cand_t


# --------------------------------------------------------------------------- evaluation


def mean_positives(corpus: Corpus, sample: PoolSample, rel: str) -> int:
    """The mean number of `rel` positives of the sample's queries that have one, rounded up
    (1 when none has): R@mean's cut-off before the cap."""
    sizes = [positives_of(corpus, int(q), (rel,)).size for q in sample.queries]
    sizes = [s for s in sizes if s]
    return max(1, math.ceil(float(np.mean(sizes)))) if sizes else 1


def recall_cutoffs(recall_k: int, positives: int, top_k: int) -> dict[str, int]:
    """{"r@<recall_k>": recall_k, "r@mean": min(positives, top_k)}: R@mean at the mean number
    of positives, but never past the retrieved list (the module docstring says why)."""
    return {f"r@{recall_k}": recall_k, "r@mean": min(positives, top_k)}


def check_cutoffs(top_k: int, recall_k: int) -> None:
    """Refuse (`ValueError`) a retrieved list under 1 or a recall cut-off outside 1..`top_k`:
    recall is measured on the top-`top_k` list, so R@`recall_k` past its end would be
    R@`top_k` under another name (`evaluate-pools --recall-k` is refused the same way)."""
    if top_k < 1:
        raise ValueError(f"top_k must be 1 or more, not {top_k}")
    if recall_k < 1:
        raise ValueError(f"recall_k must be 1 or more, not {recall_k}")
    if recall_k > top_k:
        raise ValueError(f"recall_k must be at most top_k ({top_k}), not {recall_k}: recall is measured on the "
                         f"top-k list, so R@{recall_k} would be R@{top_k}")


def evaluate_sample(corpus: Corpus, sample: PoolSample, model, relations=("dc", "cc", "bc"),
                    top_k: int = topk.DEFAULT_TOP_K, recall_k: int = topk.DEFAULT_RECALL_K, batch: int = BATCH,
                    per_language: bool = True) -> dict:
    """Metrics of one model on one pool sample: {relation: {class or "lang:xx": metrics}}.

    A `ValueError` for a `top_k` under 1 or a `recall_k` outside 1..`top_k`, as the command
    refuses the flags: every metric is of the top-`top_k` list, so `recall_k=30` with
    `top_k=10` returned recall at 10 under the key "r@30" (only `evaluate-pools` checked,
    not a caller from Python)."""
    check_cutoffs(top_k, recall_k)
    cand = sample.candidates
    cand_years = corpus.years[cand]
    cand_en = corpus.is_en[cand]
    positives = {rel: mean_positives(corpus, sample, rel) for rel in relations}
    recall = {rel: recall_cutoffs(recall_k, positives[rel], top_k) for rel in relations}
    acc: dict[str, dict[str, topk.TopKSum]] = {rel: {} for rel in relations}

    def sums(rel: str, key: str) -> topk.TopKSum:
        if key not in acc[rel]:
            acc[rel][key] = topk.TopKSum(recall_ks=recall[rel])
        return acc[rel][key]

    for rel in relations:
        for key in ("all", *tasks.LANG_CLASSES):
            sums(rel, key)
    score = model.prepare(cand)
    for start in range(0, sample.queries.size, batch):
        queries = sample.queries[start : start + batch]
        scores = np.asarray(score(queries), dtype=np.float32)
        q_years = corpus.years[queries]
        allowed = cand_years[None, :] <= q_years[:, None]
        self_pos = np.searchsorted(cand, queries)
        for row, q in enumerate(queries):
            if self_pos[row] < cand.size and cand[self_pos[row]] == q:
                allowed[row, self_pos[row]] = False
        masked = np.where(allowed, scores, -np.inf)
        ranked = {"all": topk.top_k(masked, top_k)}
        for side_en in (True, False):
            side = np.where(cand_en[None, :] == side_en, masked, -np.inf)
            ranked["en" if side_en else "xx"] = topk.top_k(side, top_k)
        for row, q in enumerate(queries):
            q = int(q)
            x = "en" if corpus.is_en[q] else "xx"
            lang = f"lang:{corpus.languages[q] or 'und'}"
            for rel in relations:
                pos = positives_of(corpus, q, (rel,))
                if pos.size == 0:
                    continue
                rel_idx = np.searchsorted(cand, pos)  # every positive is in the pool
                sums(rel, "all").add(ranked["all"][row], rel_idx)
                if per_language:
                    sums(rel, lang).add(ranked["all"][row], rel_idx)
                for y in tasks.SIDES:
                    ry = rel_idx[cand_en[rel_idx] == (y == "en")]
                    sums(rel, f"{x}-{y}").add(ranked[y][row], ry)
    out = {}
    for rel in relations:
        res = {key: s.result() for key, s in acc[rel].items()}
        for key in res:
            res[key]["r@mean_k"] = recall[rel]["r@mean"]
            res[key]["r@mean_positives"] = positives[rel]
        out[rel] = dict(sorted(res.items(), key=lambda kv: (kv[0].startswith("lang:"), kv[0] != "all", kv[0])))
    return out


def aggregate(per_sample: list[dict]) -> dict:
    """Mean and spread over resamples of every metric, per relation and class (counts are
    kept per resample)."""
    out: dict = {}
    for res in per_sample:
        for rel, by_key in res.items():
            for key, m in by_key.items():
                slot = out.setdefault(rel, {}).setdefault(key, {})
                for name, v in m.items():
                    slot.setdefault(name, []).append(v)
    final: dict = {}
    for rel, by_key in out.items():
        final[rel] = {}
        for key, slot in by_key.items():
            final[rel][key] = {name: (topk.mean_and_spread(vals) if name not in ("queries", "relevant", "r@mean_k", "r@mean_positives")
                                      else vals) for name, vals in slot.items()}
    return final


def tune_bm25(corpus: Corpus, model: BM25Model, sample: PoolSample, relation: str, grid_k1, grid_b,
              top_k: int = topk.DEFAULT_TOP_K) -> dict:
    """Grid search of (k1, b) by MAP@K of `relation` on a validation sample; returns the
    chosen values and the whole grid (recorded with the results). Only MAP is used: the recall
    cut-off is the default one, kept within `top_k` (`evaluate_sample` refuses one past it)."""
    grid = []
    recall_k = min(topk.DEFAULT_RECALL_K, top_k)
    for k1 in grid_k1:
        for b in grid_b:
            res = evaluate_sample(corpus, sample, model.with_params(k1, b), relations=(relation,), top_k=top_k,
                                  recall_k=recall_k, per_language=False)
            grid.append({"k1": k1, "b": b, "map": res[relation]["all"]["map"]})
    scored = [g for g in grid if g["map"] is not None]
    best = max(scored, key=lambda g: (g["map"], -abs(g["k1"] - 1.5), -abs(g["b"] - 0.75))) if scored else \
        {"k1": model.k1, "b": model.b, "map": None}
    return {"k1": best["k1"], "b": best["b"], "validation_map": best["map"], "relation": relation,
            "validation": sample.describe(), "grid": grid}
