"""A SYNTHETIC build for evaluation at scale: the tables `evaluate-pools` reads (papers,
documents, citations, splits, pairs), written with `schemas.tables` exactly, at sizes the
pipeline cannot reach on a 2-core machine in minutes (200k-1M papers).

It is not a sample of real data and not the `sample` generator's output (that one goes
through every stage and is the pipeline's test bed); it exists so that the large-pool
evaluation and its bench can be run at the pool sizes the MDCR protocol needs. How it is
made (all from one seed):
- each paper has a language (English about half), a year (2000-2023, recent years more
  frequent), a topic and a field (a topic group, its `categories`);
- its title and abstract are words of its language: topic words, general words, and a few
  language-independent topic terms (formula or gene names), so lexical retrieval works
  within a language and only partly across languages;
- it cites about `refs` papers of the same or earlier years, most of them of its topic, with
  a preference for older papers (a few become very cited);
- splits: train / idt / odt by a hash of the DOI, the three smallest languages in odt
  (fractions `split_fractions`); pairs per split: DC (citation in the split), CC (co-cited
  by at least `min_support` papers) and BC (at least `min_support` shared references),
  counting only references cited at most `max_bridge` times for CC / BC (as the pairs
  stage's bridge cap).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.hashing import hash64
from openmsd_build.schemas import tables

LANGUAGES = ("en", "zh", "de", "fr", "es", "ja", "ru", "pt", "it", "ko", "pl", "tr")
LANGUAGE_WEIGHTS = (0.5, 0.12, 0.08, 0.07, 0.06, 0.05, 0.04, 0.03, 0.02, 0.012, 0.01, 0.008)
ODT_LANGUAGES = ("ko", "pl", "tr")
TITLE_WORDS, ABSTRACT_WORDS = 8, 60
GENERAL_WORDS = 3000  # per language
TOPIC_WORDS = 40  # per topic and language
TOPIC_TERMS = 4  # language-independent terms per topic


def _word(lang: str, i: int) -> str:
    return f"{lang}w{i}"


def topic_word(lang: str, topic: int, j: int) -> str:
    return f"{lang}t{topic}x{j}"


def topic_term(topic: int, j: int) -> str:
    return f"term{topic}z{j}"


def _text(rng, lang: str, topic: int, n_words: int) -> str:
    kind = rng.random(n_words)
    general = rng.integers(0, GENERAL_WORDS, n_words)
    tw = rng.integers(0, TOPIC_WORDS, n_words)
    tt = rng.integers(0, TOPIC_TERMS, n_words)
    words = [topic_term(topic, tt[i]) if k < 0.05 else topic_word(lang, topic, tw[i]) if k < 0.45
             else _word(lang, general[i]) for i, k in enumerate(kind)]
    return " ".join(words)


def _write(table: pa.Table, directory: str, shards: int = 4) -> None:
    n = table.num_rows
    for s in range(shards):
        part = table.slice(s * n // shards, (s + 1) * n // shards - s * n // shards)
        parquet_io.write_table(part, parquet_io.part_path(directory, s, shards))


def _full(rows: dict, schema: pa.Schema, n: int) -> pa.Table:
    """A table of `schema` with the given columns, every other column null."""
    cols = [pa.array(rows[f.name], f.type) if f.name in rows else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def _pairs_from(product: sp.csr_matrix, min_support: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = sp.triu(product, k=1).tocoo()
    keep = m.data >= min_support
    return m.row[keep], m.col[keep], m.data[keep].astype(np.int64)


def synthetic_papers(n: int, seed: int = 0) -> dict:
    """Languages, years, topics, titles and abstracts of `n` synthetic papers (see the
    module docstring); also what bench/eval_bench.py times BM25 and search on."""
    rng = np.random.default_rng([seed, n])
    n_topics = max(8, n // 400)
    lang_idx = rng.choice(len(LANGUAGES), size=n, p=np.asarray(LANGUAGE_WEIGHTS) / sum(LANGUAGE_WEIGHTS))
    years = (2000 + np.floor(24 * rng.random(n) ** 0.6)).astype(np.int32)
    topics = rng.integers(0, n_topics, n)
    langs = [LANGUAGES[i] for i in lang_idx]
    titles = [_text(rng, langs[i], int(topics[i]), TITLE_WORDS) for i in range(n)]
    abstracts = [_text(rng, langs[i], int(topics[i]), ABSTRACT_WORDS) for i in range(n)]
    return {"rng": rng, "topics_n": n_topics, "lang_idx": lang_idx, "years": years, "topics": topics,
            "languages": langs, "titles": titles, "abstracts": abstracts}


def synthetic_build(out: str, n: int, seed: int = 0, refs: int = 8, split_fractions=(0.2, 0.8),
                    min_support: int = 2, max_bridge: int = 200) -> dict:
    """Write the synthetic build under `out`; returns its counts. `split_fractions` is
    (train, idt) of the non-ODT papers."""
    p = synthetic_papers(n, seed)
    rng = p["rng"]
    n_topics, lang_idx, years, topics = p["topics_n"], p["lang_idx"], p["years"], p["topics"]
    langs, titles, abstracts = p["languages"], p["titles"], p["abstracts"]
    fields = topics % max(4, n_topics // 10)
    order = np.lexsort((np.arange(n), years))  # by year: citations point backwards in this order
    dois = [f"10.9999/syn.{i:07d}" for i in range(n)]
    cats = [[f"field-{int(f):02d}"] for f in fields]

    # citations: rank within the topic's year order, targets biased to older papers
    citing, cited = [], []
    by_topic = {t: order[topics[order] == t] for t in range(n_topics)}
    rank = np.empty(n, dtype=np.int64)
    for members in by_topic.values():
        rank[members] = np.arange(members.size)
    n_refs = rng.poisson(refs, n)
    for i in range(n):
        k = int(n_refs[i])
        members = by_topic[int(topics[i])]
        r = int(rank[i])
        if k == 0 or r == 0:
            continue
        same = rng.random(k) < 0.8
        t_local = members[np.floor(r * rng.random(int(same.sum())) ** 2).astype(np.int64)]
        pos_global = int(np.searchsorted(years[order], years[i], side="right"))
        t_other = order[rng.integers(0, max(pos_global, 1), int((~same).sum()))]
        targets = np.unique(np.concatenate([t_local, t_other]))
        targets = targets[(targets != i) & (years[targets] <= years[i])]
        citing.append(np.full(targets.size, i))
        cited.append(targets)
    citing_a = np.concatenate(citing) if citing else np.zeros(0, dtype=np.int64)
    cited_a = np.concatenate(cited) if cited else np.zeros(0, dtype=np.int64)

    # splits
    # a stable hash: Python's hash() of a string changes with every process (PYTHONHASHSEED)
    h = np.array([hash64(d, f"split-{seed}") & 0xFFFF for d in dois]) / 0x10000
    split = np.where(np.isin(lang_idx, [LANGUAGES.index(x) for x in ODT_LANGUAGES]), "odt",
                     np.where(h < split_fractions[0], "train", "idt"))
    papers = {"doi": dois, "title": titles, "abstract": abstracts, "year": years.tolist(),
              "categories": cats, "publisher_language": langs, "sources": [["synthetic"]] * n,
              "n_records": [1] * n, "title_source": ["synthetic"] * n, "abstract_source": ["synthetic"] * n}
    _write(_full(papers, tables.PAPERS, n), layout.papers_dir(out))
    docs = {"doi": dois, "title": titles, "abstract": abstracts, "language": langs, "year": years.tolist(),
            "categories": cats, "text_source": ["synthetic"] * n, "publisher_language": langs}
    _write(_full(docs, tables.DOCUMENTS, n), layout.documents_dir(out))
    _write(_full({"citing_doi": [dois[i] for i in citing_a], "cited_doi": [dois[i] for i in cited_a]},
                 tables.CITATIONS, citing_a.size), layout.citations_dir(out))
    _write(_full({"doi": dois, "paper_id": list(range(n)), "split": split.tolist(), "language": langs},
                 tables.SPLITS, n), layout.splits_dir(out))

    cmat = sp.csr_matrix((np.ones(citing_a.size, dtype=np.int32), (citing_a, cited_a)), shape=(n, n))
    in_deg = np.asarray(cmat.sum(axis=0)).ravel()
    bridge = cmat[:, np.flatnonzero(in_deg <= max_bridge)]
    counts: dict = {"papers": n, "citations": int(citing_a.size), "topics": n_topics,
                    "splits": {s: int((split == s).sum()) for s in layout.SPLIT_NAMES}, "pairs": {}}
    relations = {
        "dc": (citing_a, cited_a, np.ones(citing_a.size, dtype=np.int64)),
        "cc": _pairs_from((cmat.T.tocsr() @ cmat).tocsr(), min_support),
        "bc": _pairs_from((bridge @ bridge.T).tocsr(), min_support),
    }
    side = np.where(lang_idx == 0, "en", "xx")
    for rel, (a, b, support) in relations.items():
        a, b = np.asarray(a), np.asarray(b)
        for s in layout.SPLIT_NAMES:
            keep = (split[a] == s) & (split[b] == s)
            ka, kb = a[keep], b[keep]
            rows = {"doi_a": [dois[i] for i in ka], "doi_b": [dois[i] for i in kb],
                    "lang_a": [langs[i] for i in ka], "lang_b": [langs[i] for i in kb],
                    "lang_class": [f"{side[x]}-{side[y]}" for x, y in zip(ka, kb, strict=True)],
                    "support": support[keep].tolist()}
            parquet_io.write_table(_full(rows, tables.PAIRS, int(keep.sum())),
                                   parquet_io.part_path(layout.pairs_dir(out, rel, s), 0, 1))
            counts["pairs"][f"{rel}/{s}"] = int(keep.sum())
    return counts


def synthetic_static_encoder(n_topics: int, dim: int = 64, seed: int = 0, noise: float = 0.6):
    """A static-embedding encoder for the synthetic vocabulary, made here (never downloaded):
    a topic's words share the topic's direction in every language (plus noise), so it is a
    cross-lingual model of modest quality; general words are noise."""
    from openmsd_build.evaluate.encoders import StaticEncoder

    rng = np.random.default_rng([seed, n_topics, dim])
    topic_vec = rng.normal(size=(n_topics, dim)).astype(np.float32)
    vocab: list[str] = []
    vecs: list[np.ndarray] = []
    for lang in LANGUAGES:
        for t in range(n_topics):
            for j in range(TOPIC_WORDS):
                vocab.append(topic_word(lang, t, j))
                vecs.append(topic_vec[t] + noise * rng.normal(size=dim).astype(np.float32))
        for i in range(GENERAL_WORDS):
            vocab.append(_word(lang, i))
            vecs.append(0.5 * rng.normal(size=dim).astype(np.float32))
    for t in range(n_topics):
        for j in range(TOPIC_TERMS):
            vocab.append(topic_term(t, j))
            vecs.append(topic_vec[t] + noise * rng.normal(size=dim).astype(np.float32))
    return StaticEncoder(vocab, np.stack(vecs))
