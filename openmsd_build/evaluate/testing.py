"""A tiny hand-written build (documents, splits, citations, pairs) for the evaluation and
export tests: every relevance list, negative and pair can be checked by eye.

    train: k..p   citations k->l, l->m, l->n, k->n, m->o   (negatives (k,l,m), (l,m,o))
    idt:   a b c d e f    DC a->b, c->a, d->b;  CC (a,b), (c,d);  BC (e,f)
    odt:   g h i j        DC g->i, h->i;        CC (g,h);         BC: none
"""

from __future__ import annotations

import pyarrow as pa

from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import tables

DOCS = [
    # doi, split, language, title, abstract
    ("10.1/a", "idt", "en", "Deep learning for protein folding", "We fold proteins with neural networks."),
    ("10.1/b", "idt", "en", "Protein structure prediction", "Predicting protein structure from sequence."),
    ("10.1/c", "idt", "de", "Proteinfaltung mit neuronalen Netzen", "Wir falten Proteine mit neuronalen Netzen."),
    ("10.1/d", "idt", "zh", "蛋白质结构预测", "我们用神经网络预测蛋白质结构。"),
    ("10.1/e", "idt", "en", "Galaxy rotation curves", "Dark matter and the rotation of galaxies."),
    ("10.1/f", "idt", "ja", "銀河の回転曲線", "暗黒物質と銀河の回転。"),
    ("10.1/g", "odt", "fr", "Réseaux de neurones pour la traduction", "Nous traduisons avec des réseaux."),
    ("10.1/h", "odt", "es", "Redes neuronales para la traducción", "Traducimos con redes neuronales."),
    ("10.1/i", "odt", "en", "Neural machine translation", "Translation with neural networks."),
    ("10.1/j", "odt", "ru", "Теория графов", "Мы изучаем графы."),
    ("10.1/k", "train", "en", "Citation graphs", "Graphs of citations between papers."),
    ("10.1/l", "train", "en", "Co-citation analysis", "Papers cited together are related."),
    ("10.1/m", "train", "de", "Bibliographische Kopplung", "Gemeinsame Referenzen verbinden Arbeiten."),
    ("10.1/n", "train", "en", "Document embeddings", "Dense vectors of scientific documents."),
    ("10.1/o", "train", "fr", "Analyse des citations", "Les citations relient les articles."),
    ("10.1/p", "train", "en", "An untitled abstract-less paper", None),
]

CITATIONS = [
    ("10.1/k", "10.1/l"), ("10.1/l", "10.1/m"), ("10.1/l", "10.1/n"), ("10.1/k", "10.1/n"), ("10.1/m", "10.1/o"),
    ("10.1/a", "10.1/b"), ("10.1/c", "10.1/a"), ("10.1/d", "10.1/b"),
    ("10.1/g", "10.1/i"), ("10.1/h", "10.1/i"),
]

PAIRS = {
    ("dc", "train"): [("10.1/k", "10.1/l"), ("10.1/l", "10.1/m"), ("10.1/l", "10.1/n"), ("10.1/k", "10.1/n"),
                      ("10.1/m", "10.1/o")],
    ("cc", "train"): [("10.1/m", "10.1/n"), ("10.1/l", "10.1/n")],
    ("bc", "train"): [("10.1/l", "10.1/n")],
    ("dc", "idt"): [("10.1/a", "10.1/b"), ("10.1/c", "10.1/a"), ("10.1/d", "10.1/b")],
    ("cc", "idt"): [("10.1/a", "10.1/b"), ("10.1/c", "10.1/d")],
    ("bc", "idt"): [("10.1/e", "10.1/f")],
    ("dc", "odt"): [("10.1/g", "10.1/i"), ("10.1/h", "10.1/i")],
    ("cc", "odt"): [("10.1/g", "10.1/h")],
    ("bc", "odt"): [],
}


def _side(lang: str) -> str:
    return "en" if lang == "en" else "xx"


def write_tiny_build(out: str, papers_extra: list[dict] | None = None) -> dict[str, str]:
    """Write the tiny build under `out`; `papers_extra` (rows with doi and extra-title
    columns) becomes `papers/` when given. Returns {doi: language}."""
    lang = {d[0]: d[2] for d in DOCS}
    docs = [{"doi": d, "title": t, "abstract": a, "language": lg, "text_source": "test"} for d, _, lg, t, a in DOCS]
    parquet_io.write_table(pa.Table.from_pylist(docs, schema=tables.DOCUMENTS),
                           parquet_io.part_path(layout.documents_dir(out), 0, 1))
    splits = [{"doi": d, "split": s, "language": lg, "paper_id": i} for i, (d, s, lg, _, _) in enumerate(DOCS)]
    parquet_io.write_table(pa.Table.from_pylist(splits, schema=tables.SPLITS),
                           parquet_io.part_path(layout.splits_dir(out), 0, 1))
    cits = [{"citing_doi": a, "cited_doi": b} for a, b in CITATIONS]
    parquet_io.write_table(pa.Table.from_pylist(cits, schema=tables.CITATIONS),
                           parquet_io.part_path(layout.citations_dir(out), 0, 1))
    for (rel, split), pairs in PAIRS.items():
        rows = [{"doi_a": a, "doi_b": b, "lang_a": lang[a], "lang_b": lang[b],
                 "lang_class": f"{_side(lang[a])}-{_side(lang[b])}", "support": 1} for a, b in pairs]
        parquet_io.write_table(pa.Table.from_pylist(rows, schema=tables.PAIRS),
                               parquet_io.part_path(layout.pairs_dir(out, rel, split), 0, 1))
    if papers_extra is not None:
        parquet_io.write_table(pa.Table.from_pylist(papers_extra),
                               parquet_io.part_path(layout.papers_dir(out), 0, 1))
    return lang
