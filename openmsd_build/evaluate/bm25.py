"""The lexical baseline: BM25 (bm25s, Lucene variant, k1 = 1.5, b = 0.75) over a split pool.

Each pool document is indexed as its title and abstract (`tasks.document_text`),
tokenized with its own language (`tokenize`). A query is a pool document, tokenized the
same way; its distinct tokens form the BM25 query (a term repeated in a long abstract is
counted once), and it is scored against the *whole* pool — `bm25s.BM25.get_scores`, not a
top-k retrieval — so the evaluation's tie rule and whole-pool ranking apply exactly.
"""

from __future__ import annotations

import logging

import numpy as np

from openmsd_build.evaluate.tokenize import tokenize

K1 = 1.5
B = 0.75
METHOD = "lucene"


class BM25Scorer:
    """Scores of pool documents (as queries) against the whole pool."""

    def __init__(self, texts: list[str], languages: list[str | None], k1: float = K1, b: float = B):
        import bm25s

        # bm25s logs every index build at DEBUG on its own logger; follow the CLI's level.
        logging.getLogger("bm25s").setLevel(max(logging.getLogger().getEffectiveLevel(), logging.INFO))
        self.n = len(texts)
        self.tokens = [tokenize(t, lang) for t, lang in zip(texts, languages, strict=True)]
        self.model = bm25s.BM25(k1=k1, b=b, method=METHOD)
        # bm25s needs at least one token per corpus; empty documents get the empty token.
        self.model.index(self.tokens, show_progress=False)
        self.vocab = self.model.vocab_dict

    def params(self) -> dict:
        return {"k1": self.model.k1, "b": self.model.b, "method": METHOD, "library": "bm25s"}

    def query_tokens(self, q: int) -> list[str]:
        return [t for t in dict.fromkeys(self.tokens[q]) if t in self.vocab]

    def scores(self, q: int) -> np.ndarray:
        """BM25 scores of every pool document for pool document `q` as the query."""
        tokens = self.query_tokens(q)
        if not tokens:
            return np.zeros(self.n, dtype=np.float64)
        return np.asarray(self.model.get_scores(tokens), dtype=np.float64)

    def score_batch(self, queries: np.ndarray) -> np.ndarray:
        return np.stack([self.scores(int(q)) for q in queries]) if len(queries) else np.zeros((0, self.n))


def bm25_scorer(pool) -> BM25Scorer:
    """The BM25 scorer of a `tasks.Pool`."""
    return BM25Scorer([pool.text(i) for i in range(len(pool))], list(pool.languages))
