"""`openmsd-build evaluate`: MAP and nDCG@10 of a model (embeddings) or of the BM25
baseline on the IDT / ODT retrieval tasks, per relation and per language class.

Protocol (the OpenMSD paper's, not SciDocs' groups of 30): every paper of the split pool
is a query and ranks the whole pool except itself (`metrics`); its relevant documents are
its DC / CC / BC partners in the pool (`tasks`). Per language class X-Y (X, Y in en / xx):
the queries are the pool papers of side X, the candidates the pool papers of side Y (the
query excluded), the relevant documents its partners of side Y. "all" ranks the whole pool.
Queries without a relevant document are left out of the means and counted.

Embeddings: a Parquet file with a `doi` column and a float vector column (list or
fixed-size list; `--vector-column`, else the only list column), or a `.npy` matrix whose
rows are named by `--ids` (a text file with one DOI per line, or a Parquet file with a
`doi` column). Similarity is cosine. Every pool paper needs a vector.

Text (`--text raw|enriched`, `tasks`): enriched is the paper's
`Title: {title}. Abstract: ({English summary}) {abstract}` with `openmsd-build enrich`'s
summaries. `--baseline bm25 --compare-enriched` scores both and prints them side by side
per relation and language class: the summaries put English words into non-English papers,
which is where the paper sees its gain (en-xx and xx-en pairs).

Output: `OUT/evaluation/<name>_<split>.json` (`bm25_<split>.json` for the baseline), which
the report shows.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.doi import try_normalize_doi
from openmsd_build.core.errors import UserError, damaged, shorten
from openmsd_build.core.inputs import at_least
from openmsd_build.core.notices import warn
from openmsd_build.core.parquet_io import join_path
from openmsd_build.core.staging import path_exists
from openmsd_build.evaluate import metrics, tasks
from openmsd_build.evaluate.encoders import load_npy
from openmsd_build.evaluate.vectors import unit_rows

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
BATCH = 64  # queries scored at once: 64 x pool floats (about 63 MB at a 247K-paper pool)


def evaluation_dir(out: str) -> str:
    return join_path(out, "evaluation")


def result_path(out: str, name: str, split: str) -> str:
    return join_path(evaluation_dir(out), f"{name}_{split}.json")


# --------------------------------------------------------------------------- scoring


class EmbeddingScorer:
    """Cosine similarity of pool documents (rows of `vectors`, in pool order)."""

    def __init__(self, vectors: np.ndarray):
        self.unit = unit_rows(vectors)

    def score_batch(self, queries: np.ndarray) -> np.ndarray:
        return self.unit[queries] @ self.unit.T


def evaluate_pool(
    pool: tasks.Pool, relevance: dict[str, tasks.Relevance], scorer, k: int = metrics.DEFAULT_K, batch: int = BATCH
) -> dict[str, dict[str, dict]]:
    """Metrics per relation and language class ("all" first) for one scorer over one pool.
    A query with no relevant document in any relation is counted without being scored."""
    n = len(pool)
    is_en = pool.is_en
    masks = {"en": is_en, "xx": ~is_en}
    acc = {rel: {cls: metrics.MetricSum(k=k) for cls in ("all", *tasks.LANG_CLASSES)} for rel in relevance}
    empty = np.zeros(0, dtype=np.int64)
    active = []
    for q in range(n):
        if any(r.of(q).size for r in relevance.values()):
            active.append(q)
            continue
        for rel in relevance:
            acc[rel]["all"].add_ranks(empty)
            for y in tasks.SIDES:
                acc[rel][f"{'en' if is_en[q] else 'xx'}-{y}"].add_ranks(empty)
    active_arr = np.asarray(active, dtype=np.int64)
    for start in range(0, len(active_arr), batch):
        queries = active_arr[start : start + batch]
        scores = scorer.score_batch(queries)
        for row, q in enumerate(queries):
            s = scores[row]
            x = "en" if is_en[q] else "xx"
            for rel, relv in relevance.items():
                r = relv.of(q)
                acc[rel]["all"].add_ranks(metrics.relevant_ranks(s, r, exclude=int(q)) if r.size else empty)
                for y in tasks.SIDES:
                    ry = r[masks[y][r]]
                    ranks = metrics.relevant_ranks(s, ry, exclude=int(q), mask=masks[y]) if ry.size else empty
                    acc[rel][f"{x}-{y}"].add_ranks(ranks)
    return {rel: {cls: a.result() for cls, a in by_cls.items()} for rel, by_cls in acc.items()}


def evaluate_split(
    out: str,
    split: str,
    model: str,
    scorer_factory,
    relations=layout.RELATIONS,
    k: int = metrics.DEFAULT_K,
    params: dict | None = None,
    text: str = "raw",
) -> dict:
    """Load the pool and relevance of `split`, score with `scorer_factory(pool)`, and
    return the result document (what `<name>_<split>.json` holds)."""
    started = time.time()
    pool = tasks.load_pool(out, split, text=text)
    relevance = {rel: tasks.load_relevance(out, rel, pool) for rel in relations}
    result = {
        "format_version": FORMAT_VERSION,
        "model": model,
        "split": split,
        "k": k,
        "pool": len(pool),
        "pool_english": int(pool.is_en.sum()),
        "tie_rule": metrics.TIE_RULE,
        "protocol": "every pool paper is a query ranking the whole pool except itself; binary relevance; "
        "language class X-Y ranks the side-Y papers for side-X queries",
        "pairs": {
            rel: {"read": r.pairs_read, "outside_pool": r.pairs_outside_pool, "links": r.n_links}
            for rel, r in relevance.items()
        },
        "params": dict(params or {}),
        "text": text,
    }
    if len(pool) == 0:
        result["relations"] = {
            rel: {cls: metrics.MetricSum(k=k).result() for cls in ("all", *tasks.LANG_CLASSES)} for rel in relations
        }
    else:
        scorer = scorer_factory(pool)
        if hasattr(scorer, "params"):
            result["params"].update(scorer.params())
        result["relations"] = evaluate_pool(pool, relevance, scorer, k=k)
    result["seconds"] = round(time.time() - started, 3)
    return result


def write_result(out: str, name: str, result: dict) -> str:
    """The result's JSON file, put in place whole (`parquet_io.write_bytes`): written in place,
    a Ctrl-C or a full disk during the write left the earlier result truncated."""
    path = result_path(out, name, result["split"])
    if "://" not in path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    parquet_io.write_bytes(json.dumps(result, indent=2, sort_keys=True).encode("utf-8"), path)
    return path


def run_bm25_baseline(out: str, splits=tasks.EVAL_SPLITS, relations=layout.RELATIONS) -> dict[str, dict]:
    """The BM25 baseline on each split: writes `OUT/evaluation/bm25_<split>.json` and
    returns the results by split (what `run` calls before the report)."""
    from openmsd_build.evaluate.bm25 import bm25_scorer

    results = {}
    for split in splits:
        result = evaluate_split(out, split, "bm25", bm25_scorer, relations=relations)
        write_result(out, "bm25", result)
        results[split] = result
    return results


# --------------------------------------------------------------------------- embeddings


def _read_table(path: str) -> pa.Table:
    """The whole file (`parquet_io.read_file_bytes`: a refused file's exit must not abort)."""
    with FileSystems.open(path) as f:
        return parquet_io.read_file_bytes(f.read(), path=path)


def _vector_column(table: pa.Table, name: str | None) -> str:
    if name:
        if name not in table.column_names:
            raise UserError(f"--vector-column {name}: not in {table.column_names}")
        return name
    lists = [f.name for f in table.schema if pa.types.is_list(f.type) or pa.types.is_fixed_size_list(f.type)
             or pa.types.is_large_list(f.type)]
    if len(lists) != 1:
        raise UserError(f"embeddings file has list columns {lists}: name the vector column with --vector-column")
    return lists[0]


def read_embeddings(path: str, ids: str | None = None, vector_column: str | None = None) -> tuple[list[str], np.ndarray]:
    """(DOIs, matrix) from a Parquet file or a .npy matrix plus ids (see the module doc)."""
    if path.endswith(".npy"):
        if not ids:
            raise UserError("--embeddings X.npy needs --ids (one DOI per line, or a Parquet file with a doi column)")
        matrix = load_npy(path)
        if ids.endswith(".parquet"):
            dois = _dois(_read_table(ids), ids)
        else:
            with FileSystems.open(ids) as f:
                data = f.read()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise damaged(ids, "is not UTF-8 text (one DOI a line)", exc) from None
            dois = [line.strip() for line in text.splitlines() if line.strip()]
        if matrix.ndim != 2 or matrix.shape[0] != len(dois):
            raise UserError(f"{path}: shape {matrix.shape} does not match {len(dois)} ids in {ids}")
        return _checked(path, dois, lambda: matrix.astype(np.float32), named_in=ids)
    table = _read_table(path)
    dois = _dois(table, path)
    column = table.column(_vector_column(table, vector_column)).combine_chunks()
    if column.null_count:
        missing = np.asarray(column.is_null().to_numpy(zero_copy_only=False))
        raise UserError(f"{path}: {column.null_count:,} vectors are missing (null), e.g. the one of "
                        f"{dois[int(np.argmax(missing))]}")
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    if len(lengths) and np.any(lengths != lengths[0]):
        odd = lengths != lengths[0]
        first = int(np.argmax(odd))
        raise UserError(f"{path}: {int(odd.sum()):,} vectors are not of length {int(lengths[0])} (the first "
                        f"vector's), e.g. the one of {dois[first]} (length {int(lengths[first])})")
    dim = int(lengths[0]) if len(lengths) else 0
    return _checked(path, dois, lambda: pc.list_flatten(column).to_numpy(
        zero_copy_only=False).astype(np.float32).reshape(len(column), dim))


def _dois(table: pa.Table, path: str) -> list[str]:
    """The `doi` column of an embeddings or ids table, as strings."""
    if "doi" not in table.column_names:
        raise UserError(f"{shorten(path)}: no doi column (columns: {shorten(table.column_names)})")
    return [str(d) for d in table.column("doi").to_pylist()]


def _checked(path: str, dois: list[str], matrix_of, named_in: str | None = None) -> tuple[list[str], np.ndarray]:
    """(DOIs, matrix) once they can rank anything: numbers (`matrix_of` builds the matrix),
    of one length above 0, finite, not all zero (no direction to compare), one vector a DOI
    (as DOIs match: `_doi_key`). NaN, infinite or empty vectors were scored silently (the
    ranking by DOI order), and of a DOI given twice the first vector was taken. `named_in`:
    the file listing the DOIs when it is not `path` (a .npy's --ids)."""
    try:
        matrix = matrix_of()
    except (ValueError, TypeError) as exc:
        raise UserError(f"{path}: vectors must be numbers ({type(exc).__name__}: {str(exc)[:120]})") from None
    if matrix.ndim != 2 or (len(matrix) and matrix.shape[1] == 0):
        raise UserError(f"{path}: vectors of length 0")
    for bad, what in ((~np.isfinite(matrix).all(axis=1), "hold NaN or infinite values"),
                      (~matrix.any(axis=1), "are all zeros (no direction to compare)")):
        if bad.any():
            first = dois[int(np.argmax(bad))]
            raise UserError(f"{path}: {int(bad.sum()):,} vectors {what}, e.g. the one of {first}")
    spellings: dict[str, list[str]] = {}
    for doi in dois:
        spellings.setdefault(_doi_key(doi), []).append(doi)
    if len(spellings) < len(dois):
        raise UserError(duplicate_dois_message(named_in or path, [rows for rows in spellings.values() if len(rows) > 1]))
    return dois, matrix


DUPLICATES_SHOWN = 3
"""Repeated DOIs a refusal names; the rest are counted (one mistake usually repeats them all)."""


def duplicate_dois_message(path: str, repeated: list[list[str]]) -> str:
    """The refusal of DOIs given more than one vector, `repeated` holding each such DOI's
    spellings in file order. Which of a DOI's vectors is the model's cannot be told (the
    first was taken silently before), so the user is told which DOIs, how many, and what to
    do; the spellings are shown because DOIs match as `_doi_key` does, and "10.1000/X" next
    to "https://doi.org/10.1000/x" is not visibly the same DOI."""
    shown = []
    for rows in repeated[:DUPLICATES_SHOWN]:
        others = sorted(set(rows[1:]) - {rows[0]})
        shown.append(f"{rows[0]} ({len(rows)} vectors" + (f", also written {', '.join(others)})" if others else ")"))
    more = len(repeated) - len(shown)
    return (f"{path}: {len(repeated):,} DOI{'s' if len(repeated) > 1 else ''} "
            f"{'have' if len(repeated) > 1 else 'has'} more than one vector: {'; '.join(shown)}"
            + (f"; and {more:,} more" if more else "")
            + ". Evaluation needs one vector per DOI (DOIs match ignoring case and a doi.org or doi: prefix): "
            "keep one row for each DOI and run again")


def _doi_key(doi: str) -> str:
    """DOIs match case-insensitively and with or without a resolver prefix."""
    return try_normalize_doi(doi) or doi.strip().lower()


def embedding_scorer_factory(dois: list[str], matrix: np.ndarray):
    """A scorer factory placing the embedding rows in pool order (DOIs normalized)."""
    row_of = {}
    for i, d in enumerate(dois):
        row_of.setdefault(_doi_key(d), i)

    def factory(pool: tasks.Pool) -> EmbeddingScorer:
        rows = [row_of.get(_doi_key(d), -1) for d in pool.dois]
        missing = [d for d, r in zip(pool.dois, rows, strict=True) if r < 0]
        if missing:
            raise UserError(f"{len(missing)} of {len(pool)} {pool.split} papers have no embedding (e.g. {missing[0]})")
        return EmbeddingScorer(matrix[np.asarray(rows, dtype=np.int64)])

    return factory


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of a build")
    parser.add_argument("--split", action="extend", nargs="+", choices=tasks.EVAL_SPLITS, default=None,
                        help="split to evaluate (repeatable; default idt and odt)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--embeddings", metavar="FILE",
                      help="Parquet (doi + vector column) or .npy (with --ids); one vector per DOI")
    what.add_argument("--baseline", choices=("bm25",), help="the lexical baseline")
    parser.add_argument("--ids", metavar="FILE", help="the DOIs of a .npy's rows (text, one a line, or Parquet doi)")
    parser.add_argument("--vector-column", help="the embeddings' vector column (default: the only list column)")
    parser.add_argument("--name", help="result name: OUT/evaluation/<name>_<split>.json (letters, digits and . _ + -; default: file "
                        "stem or bm25)")
    parser.add_argument("--relations", default=",".join(layout.RELATIONS), help="comma-separated (default dc,cc,bc)")
    parser.add_argument("--k", type=at_least(1), default=metrics.DEFAULT_K,
                        help=f"nDCG cut-off (1 or more, default {metrics.DEFAULT_K})")
    parser.add_argument("--text", choices=tasks.TEXT_MODES, default="raw",
                        help="document text: raw (title + abstract) or enriched (with `enrich`'s English summaries)")
    parser.add_argument("--compare-enriched", action="store_true",
                        help="with --baseline bm25: score raw and enriched text and print them side by side")


def format_result(result: dict) -> str:
    """A plain-text table of one result (what the command prints)."""
    k = result["k"]
    lines = [f"{result['model']} on {result['split']} (pool {result['pool']:,} papers)",
             f"{'relation':8} {'class':6} {'MAP':>7} {f'nDCG@{k}':>8} {'queries':>8} {'no rel.':>8}"]
    for rel, by_cls in result["relations"].items():
        for cls, m in by_cls.items():
            mp = "—" if m["map"] is None else f"{m['map']:.4f}"
            nd = "—" if m[f"ndcg@{k}"] is None else f"{m[f'ndcg@{k}']:.4f}"
            lines.append(f"{rel.upper():8} {cls:6} {mp:>7} {nd:>8} {m['queries']:>8,} {m['queries_without_relevant']:>8,}")
    return "\n".join(lines)


def format_comparison(raw: dict, enriched: dict) -> str:
    """Raw vs enriched, per relation and language class (what `--compare-enriched` prints)."""
    k = raw["k"]
    nd = f"ndcg@{k}"
    lines = [f"{raw['model']} on {raw['split']}: raw vs enriched text (pool {raw['pool']:,} papers)",
             f"{'relation':8} {'class':6} {'MAP raw':>8} {'MAP enr':>8} {'ΔMAP':>8} "
             f"{'nDCG raw':>9} {'nDCG enr':>9} {'ΔnDCG':>8} {'queries':>8}"]

    def f(v: float | None) -> str:
        return "—" if v is None else f"{v:.4f}"

    def d(a: float | None, b: float | None) -> str:
        return "—" if a is None or b is None else f"{b - a:+.4f}"

    for rel, by_cls in raw["relations"].items():
        for cls, m in by_cls.items():
            e = enriched["relations"][rel][cls]
            lines.append(f"{rel.upper():8} {cls:6} {f(m['map']):>8} {f(e['map']):>8} {d(m['map'], e['map']):>8} "
                         f"{f(m[nd]):>9} {f(e[nd]):>9} {d(m[nd], e[nd]):>8} {m['queries']:>8,}")
    return "\n".join(lines)


def empty_warning(result: dict) -> list[str]:
    """A warning when nothing could be scored: an empty pool, or no query with a relevant
    paper in it (every score would be "—", which a table of dashes does not say loudly)."""
    scored = sum(m["queries"] - m["queries_without_relevant"] for by_cls in result["relations"].values()
                 for m in by_cls.values())
    if scored:
        return []
    return [f"evaluate on {result['split']}: no query has a relevant paper in the pool of {result['pool']:,} papers, "
            "nothing was scored: does the build have pairs of these relations in this split (_stats/pairs.json)?"]


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    if beam_args:
        raise UserError(f"evaluate runs no Beam pipeline; unknown options: {' '.join(beam_args)}")
    relations = tuple(r.strip() for r in args.relations.split(",") if r.strip())
    bad = [r for r in relations if r not in layout.RELATIONS]
    if bad or not relations:
        raise UserError(f"--relations: choose from {', '.join(layout.RELATIONS)}")
    if not path_exists(args.out):  # a gs:// folder is no object: any object under it
        raise UserError(f"output root not found: {args.out}")
    from openmsd_build.core.stages import require_fresh

    require_fresh(args.out, "evaluate")  # scores of a stale build describe outputs of other inputs
    splits = args.split or list(tasks.EVAL_SPLITS)
    if args.name is not None:  # OUT/evaluation/<name>_<split>.json: one file of that folder
        layout.check_name(args.name, "--name")
    if args.compare_enriched:
        if not args.baseline:
            raise UserError("--compare-enriched needs --baseline bm25")
        from openmsd_build.evaluate.bm25 import bm25_scorer

        base = args.name or "bm25"
        for split in splits:
            raw = evaluate_split(args.out, split, base, bm25_scorer, relations=relations, k=args.k, text="raw")
            enr = evaluate_split(args.out, split, f"{base}_enriched", bm25_scorer, relations=relations, k=args.k,
                                 text="enriched")
            paths = [write_result(args.out, base, raw), write_result(args.out, f"{base}_enriched", enr)]
            print(format_comparison(raw, enr))
            print(f"written: {', '.join(paths)}")
            warn(empty_warning(raw))
        return 0
    if args.baseline:
        from openmsd_build.evaluate.bm25 import bm25_scorer

        name, factory = args.name or ("bm25" if args.text == "raw" else "bm25_enriched"), bm25_scorer
    else:
        if not FileSystems.exists(args.embeddings):
            raise UserError(f"--embeddings {args.embeddings}: not found")
        dois, matrix = read_embeddings(args.embeddings, args.ids, args.vector_column)
        name = args.name or os.path.splitext(os.path.basename(args.embeddings))[0]
        factory = embedding_scorer_factory(dois, matrix)
    for split in splits:
        result = evaluate_split(args.out, split, name, factory, relations=relations, k=args.k, text=args.text)
        path = write_result(args.out, name, result)
        print(format_result(result))
        print(f"written: {path}")
        warn(empty_warning(result))
    return 0
