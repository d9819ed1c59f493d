"""A split's retrieval tasks, read from a build: the pool and the relevance per relation.

- Pool of split S: every paper of `splits/` with `split == S` (a paper `splits/` lists more than
  once is in no pool, `core.split_rows`), sorted by DOI (the pool
  position is the tie-break of `metrics`). Title and abstract come from `documents/`;
  the language is the split's (the one the split stage used), else the document's.
- Relevance of relation R (dc, cc, bc) in S: the pairs of `pairs/R/split=S/`, made
  symmetric (a DC pair A cites B makes B relevant to A and A relevant to B; CC and BC are
  unordered already), without self pairs and duplicates. A pair with an end outside the
  pool (a stale pairs folder) is dropped and counted in `pairs_outside_pool`.
- Text (`--text`): `raw` is title and abstract (`document_text`); `enriched` is the OpenMSD
  paper's format, `Title: {title}. Abstract: ({English summary}) {abstract}`, with the
  summary of `OUT/enriched/` (`openmsd-build enrich`) and without the parenthesis for the
  papers that have none (English, or rejected), so the two differ by the summaries only.
- Language side of a paper: `en` when its language is "en", else `xx` (a null language is
  `xx`, as in the pairs stage). Language class X-Y of a query-candidate pair: the query's
  side, then the candidate's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.scan import collect, scan
from openmsd_build.core.split_rows import scan_listed_once
from openmsd_build.schemas import tables

EVAL_SPLITS = ("idt", "odt")
TEXT_MODES = ("raw", "enriched")
SIDES = ("en", "xx")
LANG_CLASSES = ("en-en", "en-xx", "xx-en", "xx-xx")


@dataclass
class Pool:
    """The papers of one split, sorted by DOI."""

    split: str
    dois: list[str]
    titles: list[str | None]
    abstracts: list[str | None]
    languages: list[str | None]
    index: dict[str, int] = field(default_factory=dict)
    # `--text enriched`: per paper its English summary or None; None here means raw text
    summaries: list[str | None] | None = None

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {d: i for i, d in enumerate(self.dois)}

    def __len__(self) -> int:
        return len(self.dois)

    @property
    def is_en(self) -> np.ndarray:
        return np.array([lang == "en" for lang in self.languages], dtype=bool)

    def text(self, i: int) -> str:
        if self.summaries is not None:
            from openmsd_build.enrich.text import enriched_text

            return enriched_text(self.titles[i], self.abstracts[i], self.summaries[i])
        return document_text(self.titles[i], self.abstracts[i])

    def abstract_text(self, i: int) -> str:
        """The abstract alone (a BEIR corpus's `text`), with the summary when enriched."""
        if self.summaries is not None:
            from openmsd_build.enrich.text import enriched_abstract

            return enriched_abstract(self.abstracts[i], self.summaries[i])
        return self.abstracts[i] or ""


def document_text(title: str | None, abstract: str | None) -> str:
    """The text a paper is represented by (BM25, trainer exports): title and abstract,
    one per line, the missing one left out."""
    return "\n".join(t.strip() for t in (title, abstract) if t and t.strip())


@dataclass
class Relevance:
    """Symmetric relevance lists over pool positions, in CSR form: the relevant documents
    of query q are `indices[indptr[q]:indptr[q + 1]]`, ascending."""

    relation: str
    indptr: np.ndarray
    indices: np.ndarray
    pairs_read: int = 0
    pairs_outside_pool: int = 0

    def of(self, q: int) -> np.ndarray:
        return self.indices[self.indptr[q] : self.indptr[q + 1]]

    @property
    def n_links(self) -> int:
        return int(self.indices.shape[0])


def relevance_from_pairs(relation: str, a: np.ndarray, b: np.ndarray, n: int) -> Relevance:
    """CSR relevance from pair ends given as pool positions (-1 = outside the pool)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    inside = (a >= 0) & (b >= 0)
    outside = int((~inside).sum())
    a, b = a[inside], b[inside]
    q = np.concatenate([a, b])
    d = np.concatenate([b, a])
    keep = q != d
    q, d = q[keep], d[keep]
    key = np.unique(q * n + d) if n else np.zeros(0, dtype=np.int64)
    q, d = key // max(n, 1), key % max(n, 1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(indptr, q + 1, 1)
    indptr = np.cumsum(indptr)
    return Relevance(relation, indptr, d.astype(np.int64), pairs_read=len(inside), pairs_outside_pool=outside)


def load_summaries(out: str) -> dict[str, str]:
    """doi -> English summary from `OUT/enriched/`; a `UserError` when enrich has not run, or
    ran on documents the text stage has replaced since (`enrich.check_current`)."""
    from openmsd_build.enrich import check_current, enriched_dir

    check_current(out)

    lf = scan(enriched_dir(out), ["doi", "summary"], tables.ENRICHED)
    if lf is None:
        raise UserError(f"{enriched_dir(out)}: no Parquet files (run `openmsd-build enrich` first, or use --text raw)")
    df = collect(lf.filter(pl.col("summary").is_not_null()).unique(subset="doi", keep="first"), [enriched_dir(out)],
                 "auto")
    return dict(zip(df["doi"].to_list(), df["summary"].to_list(), strict=True))


def load_pool(out: str, split: str, text: str = "raw") -> Pool:
    """The pool of `split` (see the module docstring); `text` is raw or enriched."""
    if text not in TEXT_MODES:
        raise UserError(f"text {text!r}: choose from {', '.join(TEXT_MODES)}")
    sp = scan(layout.splits_dir(out), ["doi", "split", "language"], tables.SPLITS)
    if sp is None:
        raise UserError(f"{layout.splits_dir(out)}: no Parquet files (run the split stage first)")
    members = scan_listed_once(sp).filter(pl.col("split") == split).select(
        "doi", pl.col("language").alias("split_language"))
    docs = scan(layout.documents_dir(out), ["doi", "title", "abstract", "language"], tables.DOCUMENTS)
    if docs is None:
        raise UserError(f"{layout.documents_dir(out)}: no Parquet files (run the text stage first)")
    docs = docs.join(members.select("doi"), on="doi", how="semi").unique(subset="doi", keep="first")
    df = collect(
        members.join(docs, on="doi", how="left")
        .select("doi", "title", "abstract", pl.coalesce("split_language", "language").alias("language"))
        .sort("doi"),
        [layout.splits_dir(out), layout.documents_dir(out)], "auto",
    )
    dois = df["doi"].to_list()
    summaries = None
    if text == "enriched":
        by_doi = load_summaries(out)
        summaries = [by_doi.get(d) for d in dois]
    return Pool(
        split=split,
        dois=dois,
        titles=df["title"].to_list(),
        abstracts=df["abstract"].to_list(),
        languages=df["language"].to_list(),
        summaries=summaries,
    )


def load_pairs(out: str, relation: str, split: str) -> pl.DataFrame:
    """(doi_a, doi_b) of one relation in one split; empty when the folder has no parts."""
    lf = scan(layout.pairs_dir(out, relation, split), ["doi_a", "doi_b"], tables.PAIRS)
    if lf is None:
        return pl.DataFrame(schema={"doi_a": pl.String, "doi_b": pl.String})
    return collect(lf, [layout.pairs_dir(out, relation, split)], "auto")


def load_relevance(out: str, relation: str, pool: Pool) -> Relevance:
    """The symmetric relevance of `relation` over `pool` (see the module docstring)."""
    pairs = load_pairs(out, relation, pool.split)
    # explicit dtypes: an empty pool must still join as strings (no null-typed column)
    positions = pl.DataFrame(
        {"doi": list(pool.dois), "pos": np.arange(len(pool), dtype=np.int64)},
        schema={"doi": pl.String, "pos": pl.Int64},
    )
    joined = (
        pairs.join(positions.rename({"doi": "doi_a", "pos": "a"}), on="doi_a", how="left")
        .join(positions.rename({"doi": "doi_b", "pos": "b"}), on="doi_b", how="left")
        .select(pl.col("a").fill_null(-1), pl.col("b").fill_null(-1))
    )
    return relevance_from_pairs(relation, joined["a"].to_numpy(), joined["b"].to_numpy(), len(pool))
