"""`openmsd-build export`: the build as retrieval tasks and trainer tables.

Layout under `--dest` (default `OUT/export/`), a Hugging Face datasets folder:

    README.md                                   dataset card; YAML `configs:` list every file
    export.json                                 counts of everything written
    retrieval/<split>/corpus.parquet            _id, title, text (abstract), language   [MTEB]
    retrieval/<split>/<rel>/queries.parquet     _id, text (title + abstract), title, language
    retrieval/<split>/<rel>/qrels.parquet       query-id, corpus-id, score (1)
    beir/<split>/<rel>/corpus.jsonl             {"_id", "title", "text", "language"}     [BEIR]
    beir/<split>/<rel>/queries.jsonl            {"_id", "text", "title", "language"}
    beir/<split>/<rel>/qrels/test.tsv           query-id  corpus-id  score (with header)
    trainer/<split>/pairs_<mix>.parquet         anchor, positive, ids, languages, relations
    trainer/<split>/triplets.parquet            anchor, positive, negative (Specter), ids, languages
    trainer/<split>/title_abstract.parquet      anchor (title), positive, doi, languages, variant

Retrieval tasks (split = idt, odt; rel = dc, cc, bc): the corpus is the whole split pool
(`tasks.Pool`); the queries are the pool papers with at least one relevant paper; qrels
list every relevant (query, paper) pair, symmetric (`tasks`). Every query is also in the
corpus: rank the corpus *without the query itself* (BEIR's `ignore_identical_ids`), as
`openmsd-build evaluate` does. Trainer tables: `trainer`.

`--text enriched` writes the OpenMSD paper's enriched text (`openmsd-build enrich`):
queries and trainer texts become `Title: {title}. Abstract: ({English summary}) {abstract}`
(without the parenthesis when a paper has no summary), the corpus `text` column
`({English summary}) {abstract}` (its title stays in `title`). `export.json` records the mode.
"""

from __future__ import annotations

import argparse
import json
import logging
import os

import numpy as np
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least
from openmsd_build.core.parquet_io import join_path, write_table
from openmsd_build.core.stages import require_fresh
from openmsd_build.core.staging import path_exists, write_then_replace
from openmsd_build.evaluate import tasks
from openmsd_build.export import hf_dataset, trainer
from openmsd_build.export.build_checks import (
    EXPORT_ENTRIES,
    EXPORT_FILES,
    PARTIAL,
    check_dest,
    check_dest_folder,
    recover_export,
    refuse_empty,
    refuse_foreign_files,
)
from openmsd_build.export.recipe_command import recipe_arguments, run_recipe

log = logging.getLogger(__name__)

DEFAULT_MIXES = ("dc+cc",)
PRETTY_NAME = "OpenMSD build: retrieval tasks and trainer pairs"

CARD_BODY = """\
Multilingual scientific-document similarity data exported by `openmsd-build export` from
one build (papers with title and abstract, detected language, and citation-derived
relations: direct citation DC, co-citation CC, bibliographic coupling BC).

**Retrieval configs** (`<split>-<relation>-{corpus,queries,qrels}`, split `test`): IDT is
the in-distribution test split, ODT the out-of-distribution one (other languages, no
English-English pairs). The corpus is the whole split; every paper with a related paper in
the split is a query; qrels are binary and symmetric. Every query is also a corpus
document: leave the query itself out of its ranking. `openmsd-build evaluate` computes MAP
and nDCG@10 this way, per relation and language class, with ties broken by DOI.

**Trainer configs**: `pairs-<mix>` (anchor, positive) for a relation mix (`dc_or_cc` =
DC ∪ CC, each relation down-sampled to the smaller one's size, deterministically);
`triplets` (anchor, positive, negative) with Specter hard negatives (A cites B, B cites C,
A does not cite C); `title-abstract` (a title and its paper's abstract; `cross-lingual`
rows only when the build kept a second-language title, which a standard build does not).
Text columns come first; select them with `ds.select_columns(["anchor", "positive"])`.

Licenses: each paper keeps its own open-access license (see the build's `papers/`).
"""


# --------------------------------------------------------------------------- writing


def _makedirs(path: str) -> None:
    if "://" not in path:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)


def _write_bytes(path: str, data: bytes) -> None:
    _makedirs(path)
    with FileSystems.create(path) as f:
        f.write(data)


def _write_parquet(table: pa.Table, path: str) -> int:
    _makedirs(path)
    return write_table(table, path)


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


# --------------------------------------------------------------------------- retrieval


CORPUS_SCHEMA = pa.schema([("_id", pa.string()), ("title", pa.string()), ("text", pa.string()),
                           ("language", pa.string())])
QUERIES_SCHEMA = pa.schema([("_id", pa.string()), ("text", pa.string()), ("title", pa.string()),
                            ("language", pa.string())])
QRELS_SCHEMA = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()), ("score", pa.int64())])


def corpus_table(pool: tasks.Pool) -> pa.Table:
    return pa.table(
        {
            "_id": pool.dois,
            "title": [t or "" for t in pool.titles],
            "text": [pool.abstract_text(i) for i in range(len(pool))],
            "language": pool.languages,
        },
        schema=CORPUS_SCHEMA,
    )


def queries_qrels(pool: tasks.Pool, relevance: tasks.Relevance) -> tuple[pa.Table, pa.Table]:
    """Queries (pool papers with >= 1 relevant) and their qrels, in pool (DOI) order."""
    counts = np.diff(relevance.indptr)
    qs = np.flatnonzero(counts > 0)
    queries = pa.table(
        {
            "_id": [pool.dois[q] for q in qs],
            "text": [pool.text(int(q)) for q in qs],
            "title": [pool.titles[q] or "" for q in qs],
            "language": [pool.languages[q] for q in qs],
        },
        schema=QUERIES_SCHEMA,
    )
    q_idx = np.repeat(np.arange(len(pool)), counts)
    qrels = pa.table(
        {
            "query-id": [pool.dois[q] for q in q_idx],
            "corpus-id": [pool.dois[d] for d in relevance.indices],
            "score": np.ones(len(q_idx), dtype=np.int64),
        },
        schema=QRELS_SCHEMA,
    )
    return queries, qrels


def write_beir(directory: str, corpus: pa.Table, queries: pa.Table, qrels: pa.Table) -> None:
    """One BEIR task folder: corpus.jsonl, queries.jsonl, qrels/test.tsv (with header)."""
    _write_bytes(join_path(directory, "corpus.jsonl"), _jsonl(corpus.to_pylist()))
    _write_bytes(join_path(directory, "queries.jsonl"), _jsonl(queries.to_pylist()))
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{s}" for q, d, s in zip(*(qrels.column(c).to_pylist() for c in QRELS_SCHEMA.names),
                                                   strict=True)]
    _write_bytes(join_path(directory, "qrels", "test.tsv"), ("\n".join(lines) + "\n").encode("utf-8"))


# --------------------------------------------------------------------------- the export


def export_build(
    out: str,
    dest: str | None = None,
    splits=tasks.EVAL_SPLITS,
    relations=layout.RELATIONS,
    mixes=DEFAULT_MIXES,
    trainer_splits=("train",),
    per_positive: int = 1,
    max_bridge_degree: int = 1000,
    beir: bool = True,
    detect=None,
    text: str = "raw",
) -> dict:
    """Write the whole export (see the module docstring) and return its counts. A build
    without a single related pair is refused (`refuse_empty`): an export of it would have
    no config, and a card that `datasets` cannot load."""
    require_fresh(out, "export")
    refuse_empty(out)
    final = dest or join_path(out, "export")
    dest = join_path(final, PARTIAL)  # written whole here, then swapped in (`staging.write_then_replace`)
    recover_export(final, dest)  # first: a killed swap left DEST half of each export
    check_dest_folder(out, final)
    refuse_foreign_files(final, EXPORT_FILES)  # the swap replaces retrieval/, trainer/, ... whole
    return write_then_replace(final, dest, EXPORT_ENTRIES, lambda: _write_export(
        out, final, dest, splits, relations, mixes, trainer_splits, per_positive, max_bridge_degree, beir, detect,
        text))


def _write_export(out: str, final: str, dest: str, splits, relations, mixes, trainer_splits, per_positive: int,
                  max_bridge_degree: int, beir: bool, detect, text: str) -> dict:
    """`export_build`'s tables, card and summary written under `dest` (the partial folder of
    the export folder `final`)."""
    configs: list[hf_dataset.Config] = []
    skipped: list[str] = []
    summary: dict = {"out": out, "dest": final, "text": text, "retrieval": {}, "trainer": {}}
    languages: set[str] = set()

    def add(name: str, split: str, rel_path: str, rows: int, what: str) -> None:
        if rows == 0:
            skipped.append(f"{name} ({split})")
            return
        for c in configs:
            if c.name == name:
                c.data_files[split], c.rows[split] = rel_path, rows
                return
        configs.append(hf_dataset.Config(name, {split: rel_path}, {split: rows}, what))

    for split in splits:
        pool = tasks.load_pool(out, split, text=text)
        languages.update(lang for lang in pool.languages if lang)
        corpus = corpus_table(pool)
        corpus_rel = f"retrieval/{split}/corpus.parquet"
        _write_parquet(corpus, join_path(dest, *corpus_rel.split("/")))
        summary["retrieval"][split] = {"corpus": corpus.num_rows}
        if text == "enriched":  # enrich summarizes non-English papers; one it rejected stays plain
            other = [s for s, lang in zip(pool.summaries or [], pool.languages, strict=True) if lang != "en"]
            with_summary = sum(s is not None for s in other)
            summary["retrieval"][split]["enriched"] = {"non_english": len(other), "with_summary": with_summary}
            if with_summary < len(other):
                from openmsd_build.core.notices import warn

                warn([f"export --text enriched: {split}: {len(other) - with_summary:,} of {len(other):,} non-English "
                      "papers have no summary (enrich rejected or skipped them; its counts say why): their text is "
                      "plain"])
        for rel in relations:
            relevance = tasks.load_relevance(out, rel, pool)
            queries, qrels = queries_qrels(pool, relevance)
            base = f"retrieval/{split}/{rel}"
            _write_parquet(queries, join_path(dest, *base.split("/"), "queries.parquet"))
            _write_parquet(qrels, join_path(dest, *base.split("/"), "qrels.parquet"))
            if beir:
                write_beir(join_path(dest, "beir", split, rel), corpus, queries, qrels)
            subset = f"{split}-{rel}"
            add(f"{subset}-corpus", "test", corpus_rel, corpus.num_rows if queries.num_rows else 0,
                f"{split.upper()} pool (corpus)")
            add(f"{subset}-queries", "test", f"{base}/queries.parquet", queries.num_rows, f"{rel.upper()} queries")
            add(f"{subset}-qrels", "test", f"{base}/qrels.parquet", qrels.num_rows, f"{rel.upper()} relevance")
            summary["retrieval"][split][rel] = {
                "queries": queries.num_rows,
                "qrels": qrels.num_rows,
                "pairs_outside_pool": relevance.pairs_outside_pool,
            }

    extra_titles_source = trainer.read_papers_titles(out)
    for split in trainer_splits:
        docs = trainer.split_documents(out, split, text=text)
        languages.update(lang for lang in docs["language"].to_list() if lang)
        part: dict = {}
        for mix in mixes:
            frame, counts = trainer.pairs_for_mix(out, mix, split, docs)
            rel_path = f"trainer/{split}/pairs_{trainer.mix_slug(mix)}.parquet"
            _write_parquet(frame.to_arrow(), join_path(dest, *rel_path.split("/")))
            add(f"pairs-{trainer.mix_slug(mix)}", split, rel_path, frame.height, f"{mix} pairs (anchor, positive)")
            part[f"pairs_{trainer.mix_slug(mix)}"] = counts
        frame, counts = trainer.specter_triplets(out, split, docs, per_positive, max_bridge_degree)
        rel_path = f"trainer/{split}/triplets.parquet"
        _write_parquet(frame.to_arrow(), join_path(dest, *rel_path.split("/")))
        add("triplets", split, rel_path, frame.height, "Specter triplets (anchor, positive, negative)")
        part["triplets"] = counts
        extra = trainer.cross_lingual_titles(extra_titles_source, docs, detect=detect)
        frame, counts = trainer.title_abstract_pairs(docs, extra)
        rel_path = f"trainer/{split}/title_abstract.parquet"
        _write_parquet(frame.to_arrow(), join_path(dest, *rel_path.split("/")))
        add("title-abstract", split, rel_path, frame.height, "title -> abstract (and cross-lingual titles)")
        counts["extra_title_columns"] = [c for c in trainer.EXTRA_TITLE_COLUMNS if c in extra_titles_source.columns]
        part["title_abstract"] = counts
        summary["trainer"][split] = part

    from openmsd_build.export.pools import export_pools

    summary["large_pool"] = export_pools(out, dest)
    if not configs:
        raise UserError(f"export: every table of {out} came out empty ({', '.join(skipped[:6])} ...); nothing "
                        "a dataset loader could read was written to the card")
    card = hf_dataset.card_markdown(configs, skipped, sorted(languages), PRETTY_NAME, CARD_BODY)
    _write_bytes(join_path(dest, "README.md"), card.encode("utf-8"))
    summary["configs"] = [c.name for c in configs]
    summary["skipped_empty"] = skipped
    _write_bytes(join_path(dest, "export.json"), json.dumps(summary, indent=2, sort_keys=True).encode("utf-8"))
    return summary


# --------------------------------------------------------------------------- CLI


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of a build")
    parser.add_argument("--dest", help="export folder (default OUT/export; not the build itself or another of its "
                        "folders)")
    parser.add_argument("--splits", default="idt,odt", help="retrieval splits (default idt,odt)")
    parser.add_argument("--relations", default=",".join(layout.RELATIONS), help="default dc,cc,bc")
    parser.add_argument("--mix", action="extend", nargs="+", default=None, metavar="MIX",
                        help="trainer relation mix, e.g. dc+cc (union, down-sampled) or dc&cc (intersection); "
                        "repeatable (default dc+cc)")
    parser.add_argument("--trainer-splits", default="train", help="splits of the trainer tables (default train)")
    parser.add_argument("--negatives-per-positive", type=at_least(1), default=1,
                        help="Specter negatives per (anchor, positive) when computed from citations (default 1)")
    parser.add_argument("--max-bridge-degree", type=at_least(1), default=1000,
                        help="skip bridge papers B citing more than this many papers (default 1000)")
    parser.add_argument("--no-beir", action="store_true", help="skip the BEIR JSONL copy")
    parser.add_argument("--text", choices=tasks.TEXT_MODES, default="raw",
                        help="raw (title + abstract) or enriched (with `openmsd-build enrich`'s English summaries)")
    recipe_arguments(parser)


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    if beam_args:
        raise UserError(f"export runs no Beam pipeline; unknown options: {' '.join(beam_args)}")
    if not path_exists(args.out):  # a gs:// folder is no object: any object under it
        raise UserError(f"output root not found: {args.out}")
    check_dest(args.out, args.dest)
    if args.recipe:
        return run_recipe(args)
    splits, relations, trainer_splits = _csv(args.splits), _csv(args.relations), _csv(args.trainer_splits)
    if not set(splits) <= set(tasks.EVAL_SPLITS):
        raise UserError(f"--splits: choose from {', '.join(tasks.EVAL_SPLITS)}")
    if not relations or not set(relations) <= set(layout.RELATIONS):
        raise UserError(f"--relations: choose from {', '.join(layout.RELATIONS)}")
    if not set(trainer_splits) <= set(layout.SPLIT_NAMES):
        raise UserError(f"--trainer-splits: choose from {', '.join(layout.SPLIT_NAMES)}")
    mixes = args.mix or list(DEFAULT_MIXES)
    for mix in mixes:
        try:
            trainer.parse_mix(mix)
        except ValueError as exc:
            raise UserError(str(exc)) from exc
    summary = export_build(
        args.out, args.dest, splits, relations, mixes, trainer_splits,
        args.negatives_per_positive, args.max_bridge_degree, beir=not args.no_beir, text=args.text,
    )
    for part in ("retrieval", "trainer"):
        print(f"{part}: " + ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                                      for k, v in _flatten(summary[part]).items()))
    print(f"export: {summary['dest']} ({len(summary['configs'])} configs; card README.md; "
          f"every count in export.json)")
    if summary["skipped_empty"]:  # e.g. a test split without a related pair: its tasks are not in the card
        from openmsd_build.core.notices import warn

        names = [name.split(" (", 1)[0] for name in summary["skipped_empty"]]
        warn([f"export left out {len(names):,} configs that came out empty (a split and relation without a "
              f"query, a trainer table without a row): {', '.join(names[:12])}"
              + (f" and {len(names) - 12:,} more" if len(names) > 12 else "") + " (export.json: skipped_empty)"])
    return 0


def _flatten(tree: dict, prefix: str = "") -> dict:
    """`{"idt": {"cc": {"queries": 5}}}` -> `{"idt/cc/queries": 5}` (the printed summary)."""
    flat: dict = {}
    for key, value in sorted(tree.items()):
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            flat.update(_flatten(value, name))
        else:
            flat[name] = value
    return flat
