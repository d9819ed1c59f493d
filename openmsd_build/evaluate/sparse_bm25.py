"""BM25 on a sparse document-term matrix (scipy CSR), for candidate pools of 1M papers.

The same Lucene variant as `bm25` (bm25s): idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
w(d, t) = idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl)); a query is the set of its
distinct tokens (`tokenize`, each text with its own language). The scores of a batch of
queries are one sparse product `Q @ W.T` (Q binary, queries x terms), so a batch costs the
postings of its terms, not a Python loop over documents. The term frequencies are kept, so
`with_params(k1, b)` re-weights the same index for the BM25 grid search without
re-tokenizing.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import polars as pl
import scipy.sparse as sp

from openmsd_build.evaluate.tokenize import tokenize

K1 = 1.5
B = 0.75


def count_matrix(token_lists: list[list[str]]) -> tuple[sp.csr_matrix, dict[str, int]]:
    """(documents x terms counts, vocabulary) of token lists."""
    vocab: dict[str, int] = {}
    return _count_matrix(token_lists, vocab, grow=True), vocab


def _count_matrix(token_lists: list[list[str]], vocab: dict[str, int], grow: bool) -> sp.csr_matrix:
    """Rows of term counts; unknown terms are added to `vocab` when `grow`, else dropped.
    Growing an empty vocabulary (an index) maps the tokens in polars (one pass in Rust
    instead of a dict lookup per token: a 1M-paper corpus has ~70M tokens)."""
    lengths = np.fromiter((len(t) for t in token_lists), dtype=np.int64, count=len(token_lists))
    if grow and not vocab:
        flat = pl.Series("t", list(chain.from_iterable(token_lists)), dtype=pl.String)
        terms = flat.unique(maintain_order=True)
        indices = flat.cast(pl.Enum(terms.to_list())).to_physical().to_numpy().astype(np.int64)
        vocab.update(zip(terms.to_list(), range(len(terms)), strict=True))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
    else:
        ids = []
        indptr_l = [0]
        for tokens in token_lists:
            for t in tokens:
                j = vocab.get(t)
                if j is None:
                    if not grow:
                        continue
                    j = vocab[t] = len(vocab)
                ids.append(j)
            indptr_l.append(len(ids))
        indices, indptr = np.asarray(ids, dtype=np.int64), np.asarray(indptr_l, dtype=np.int64)
    data = np.ones(len(indices), dtype=np.float32)
    m = sp.csr_matrix((data, indices, indptr), shape=(len(token_lists), len(vocab)))
    m.sum_duplicates()  # repeated tokens -> one entry with their count
    return m


class SparseBM25:
    """A BM25 index of `texts` (the candidates); `score_tokens` scores outside queries."""

    def __init__(self, texts: list[str], languages: list[str | None], k1: float = K1, b: float = B,
                 token_lists: list[list[str]] | None = None):
        self.vocab: dict[str, int] = {}
        tokens = token_lists if token_lists is not None else [tokenize(t, lg) for t, lg in
                                                               zip(texts, languages, strict=True)]
        self._index(_count_matrix(tokens, self.vocab, grow=True), k1, b)

    @classmethod
    def from_counts(cls, tf: sp.csr_matrix, vocab: dict[str, int], k1: float = K1, b: float = B) -> SparseBM25:
        """An index of the rows of a term-count matrix (e.g. a pool's rows of a corpus's
        `count_matrix`): no re-tokenizing or re-mapping per pool."""
        index = object.__new__(cls)
        index.vocab = vocab
        index._index(tf, k1, b)
        return index

    def _index(self, tf: sp.csr_matrix, k1: float, b: float) -> None:
        self.tf = tf
        self.n = self.tf.shape[0]
        self.dl = np.asarray(self.tf.sum(axis=1)).ravel().astype(np.float64)
        df = np.bincount(self.tf.indices, minlength=len(self.vocab)).astype(np.float64)
        self.idf = np.log1p((self.n - df + 0.5) / (df + 0.5))
        self.k1, self.b = k1, b
        self.weights = self._weights(k1, b)

    def _weights(self, k1: float, b: float) -> sp.csc_matrix:
        avgdl = float(self.dl.mean()) if self.n and self.dl.sum() else 1.0
        rows = np.repeat(np.arange(self.n), np.diff(self.tf.indptr))
        tf = self.tf.data.astype(np.float64)
        norm = k1 * (1.0 - b + b * self.dl[rows] / avgdl)
        data = (self.idf[self.tf.indices] * tf / (tf + norm)).astype(np.float32)
        w = sp.csr_matrix((data, self.tf.indices, self.tf.indptr), shape=self.tf.shape)
        return w.T.tocsr()  # terms x documents: a query's rows are its terms' postings

    def with_params(self, k1: float, b: float) -> SparseBM25:
        """The same index re-weighted with other `k1`, `b` (shares the counts)."""
        other = object.__new__(SparseBM25)
        other.__dict__.update(self.__dict__)
        other.k1, other.b = k1, b
        other.weights = self._weights(k1, b)
        return other

    def params(self) -> dict:
        return {"k1": self.k1, "b": self.b, "method": "lucene", "library": "openmsd sparse (scipy)"}

    def query_matrix(self, token_lists: list[list[str]]) -> sp.csr_matrix:
        """Binary queries x terms: each query's distinct in-vocabulary tokens."""
        q = _count_matrix(token_lists, self.vocab, grow=False)
        q.data[:] = 1.0
        return q

    def score_tokens(self, token_lists: list[list[str]]) -> np.ndarray:
        """Dense (queries x documents) float32 scores."""
        return self.score_counts(self.query_matrix(token_lists))

    def score_counts(self, q: sp.csr_matrix) -> np.ndarray:
        """Scores of queries given as count rows over this index's vocabulary (binarized)."""
        q = q.copy()
        q.data[:] = 1.0
        return np.asarray((q @ self.weights).toarray(), dtype=np.float32)
