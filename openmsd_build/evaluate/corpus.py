"""One split's papers with what large-pool sampling needs: text, language, publication year,
subject categories, in-split relevance per relation, and the citation graph (read from a
build; `Corpus` can also be made directly, as the tests and bench/ do).

Positions are the papers sorted by DOI (as `tasks.Pool`), so ties break by DOI everywhere.
A paper without a year is never a query nor a candidate (its age cannot be checked against
a query's); it is counted as `no_year`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.scan import collect, scan
from openmsd_build.core.split_rows import scan_listed_once
from openmsd_build.evaluate import tasks
from openmsd_build.schemas import tables

NO_YEAR = -1


@dataclass
class Corpus:
    split: str
    dois: list[str]
    titles: list[str | None]
    abstracts: list[str | None]
    languages: list[str | None]
    years: np.ndarray  # int32, NO_YEAR when unknown
    categories: list[list[str]]
    relevance: dict[str, tasks.Relevance]
    # the citation graph over positions (edges with both ends in this split)
    cites: tasks.Relevance | None = None  # out-links: q -> papers q cites
    cited_by: tasks.Relevance | None = None  # in-links: q -> papers citing q
    in_citations: np.ndarray | None = None  # citations received from the whole build
    _is_en: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.dois)

    @property
    def is_en(self) -> np.ndarray:
        if self._is_en is None:
            self._is_en = np.array([lang == "en" for lang in self.languages], dtype=bool)
        return self._is_en

    def text(self, i: int) -> str:
        """The paper's title + abstract input (`tasks.document_text`)."""
        return tasks.document_text(self.titles[i], self.abstracts[i])


def directed(pairs_a: np.ndarray, pairs_b: np.ndarray, n: int) -> tasks.Relevance:
    """CSR adjacency a -> b (not symmetrised), positions; -1 ends dropped."""
    a = np.asarray(pairs_a, dtype=np.int64)
    b = np.asarray(pairs_b, dtype=np.int64)
    keep = (a >= 0) & (b >= 0) & (a != b)
    a, b = a[keep], b[keep]
    key = np.unique(a * n + b) if n else np.zeros(0, dtype=np.int64)
    a, b = key // max(n, 1), key % max(n, 1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, a + 1, 1)
    return tasks.Relevance("cites", np.cumsum(indptr), b.astype(np.int64), pairs_read=int(keep.size))


def attach_citations(corpus: Corpus, citing: np.ndarray, cited: np.ndarray, in_citations: np.ndarray) -> None:
    """Set the corpus's graph from citation ends given as positions (-1 = outside)."""
    n = len(corpus)
    corpus.cites = directed(citing, cited, n)
    corpus.cited_by = directed(cited, citing, n)
    corpus.in_citations = np.asarray(in_citations, dtype=np.int64)


def _positions(dois: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"doi": dois, "pos": np.arange(len(dois), dtype=np.int64)},
                        schema={"doi": pl.String, "pos": pl.Int64})


def load_corpus(out: str, split: str, relations=layout.RELATIONS) -> Corpus:
    """The corpus of `split` from a build (documents, splits, pairs, citations)."""
    sp = scan(layout.splits_dir(out), ["doi", "split", "language"], tables.SPLITS)
    if sp is None:
        raise UserError(f"{layout.splits_dir(out)}: no Parquet files (run the split stage first)")
    members = scan_listed_once(sp).filter(pl.col("split") == split).select(
        "doi", pl.col("language").alias("split_language"))
    docs = scan(layout.documents_dir(out), ["doi", "title", "abstract", "language", "year", "categories"],
                tables.DOCUMENTS)
    if docs is None:
        raise UserError(f"{layout.documents_dir(out)}: no Parquet files (run the text stage first)")
    docs = docs.join(members.select("doi"), on="doi", how="semi").unique(subset="doi", keep="first")
    df = collect(members.join(docs, on="doi", how="left")
                 .select("doi", "title", "abstract", pl.coalesce("split_language", "language").alias("language"),
                         "year", "categories")
                 .sort("doi"), [layout.splits_dir(out), layout.documents_dir(out)], "auto")
    dois = df["doi"].to_list()
    n = len(dois)
    pos = _positions(dois)
    relevance = {}
    for rel in relations:
        pairs = tasks.load_pairs(out, rel, split)
        j = (pairs.join(pos.rename({"doi": "doi_a", "pos": "a"}), on="doi_a", how="left")
             .join(pos.rename({"doi": "doi_b", "pos": "b"}), on="doi_b", how="left")
             .select(pl.col("a").fill_null(-1), pl.col("b").fill_null(-1)))
        relevance[rel] = tasks.relevance_from_pairs(rel, j["a"].to_numpy(), j["b"].to_numpy(), n)
    corpus = Corpus(
        split=split, dois=dois, titles=df["title"].to_list(), abstracts=df["abstract"].to_list(),
        languages=df["language"].to_list(),
        years=df["year"].fill_null(NO_YEAR).cast(pl.Int32).to_numpy().astype(np.int32),
        categories=[list(c or []) for c in df["categories"].to_list()], relevance=relevance,
    )
    cit = scan(layout.citations_dir(out), ["citing_doi", "cited_doi"], tables.CITATIONS)
    if cit is None:
        attach_citations(corpus, np.zeros(0), np.zeros(0), np.zeros(n))
        return corpus
    cit = collect(cit, [layout.citations_dir(out)], "auto")
    inc = cit.group_by("cited_doi").len().rename({"cited_doi": "doi", "len": "in"})
    in_citations = pos.join(inc, on="doi", how="left").sort("pos")["in"].fill_null(0).to_numpy()
    j = (cit.join(pos.rename({"doi": "citing_doi", "pos": "a"}), on="citing_doi", how="inner")
         .join(pos.rename({"doi": "cited_doi", "pos": "b"}), on="cited_doi", how="inner"))
    attach_citations(corpus, j["a"].to_numpy(), j["b"].to_numpy(), in_citations)
    return corpus
