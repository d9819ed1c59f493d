"""`openmsd-build evaluate-pools`: large-pool citation recommendation (`large_pool`) and the
fixed small benchmark (`benchmark`) of a build, for BM25 (default and tuned), local encoder
folders (`encoders`) and precomputed vectors.

BM25 tuning: (k1, b) are chosen by MAP@K on a validation pool sampled the same way from the
*train* split (never from the evaluated split); when train has no eligible query, the
default values are kept and the result says so.

Written under `OUT/evaluation/large_pool/` (what the report and `export` read):

    <split>.json                               config, seeds, BM25 grid, metrics (mean, std
                                               over resamples) per model, pool size, relation,
                                               language class and language; pairs read and
                                               outside the split per relation
    pools/<split>/size=<N>/resample=<i>.parquet   doi, role (query / positive / sampled),
                                                  candidate (ranked), year, language
    benchmark/<split>/corpus.jsonl, queries.jsonl, qrels/test.tsv   BEIR task
    benchmark/<split>/candidates.parquet       query-id, corpus-id, score, type, languages

A run writes all of it under `large_pool/.partial/` first and then puts each evaluated split's
three entries in place of the earlier run's (`staging.replace_entries`), so a Ctrl-C or a
failure leaves the earlier results whole (they were overwritten file by file: an interrupted
run left one split's new results beside the other's old ones, or a half-written JSON file);
the splits a run does not evaluate keep theirs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from importlib import metadata

import numpy as np
import pyarrow as pa

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least, counts_at_least
from openmsd_build.core.parquet_io import join_path, write_table
from openmsd_build.evaluate import benchmark, large_pool, tasks, topk
from openmsd_build.evaluate.corpus import Corpus, load_corpus

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
DEFAULT_SIZES = (10_000, 50_000, 200_000)
GRID_K1 = (0.6, 0.9, 1.2, 1.5, 2.0)
GRID_B = (0.3, 0.5, 0.75, 0.9)
VALIDATION_SIZE = 20_000
VALIDATION_QUERIES = 200


def results_dir(out: str) -> str:
    return join_path(out, "evaluation", "large_pool")


PARTIAL = ".partial"
"""Where a run writes its results before they replace the earlier ones (`run_pools`)."""


def split_entries(splits) -> list[str]:
    """What a run writes for each of `splits`, below `results_dir`."""
    return [entry for split in splits for entry in (f"{split}.json", f"pools/{split}", f"benchmark/{split}")]


def _versions() -> dict:
    v = {}
    for pkg in ("numpy", "scipy", "openmsd-build"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            v[pkg] = None
    return v


def tune_on_train(train: Corpus | None, relations, seed: int, top_k: int, grid_k1=GRID_K1, grid_b=GRID_B,
                  size: int = VALIDATION_SIZE, max_queries: int = VALIDATION_QUERIES) -> dict:
    """The BM25 grid search on a validation pool of the train split (see the module doc)."""
    if train is None or len(train) == 0:
        return {"k1": 1.5, "b": 0.75, "validation_map": None, "note": "no train split: defaults kept"}
    eligible = large_pool.query_candidates(train, relations)
    if eligible.size == 0:
        return {"k1": 1.5, "b": 0.75, "validation_map": None, "note": "no eligible train query: defaults kept"}
    sample = large_pool.sample_pool(train, size, [seed, size, 999], relations, max_queries=max_queries,
                                    eligible_queries=eligible)
    model = large_pool.BM25Model(train)
    return large_pool.tune_bm25(train, model, sample, relations[0], grid_k1, grid_b, top_k=top_k)


def pool_table(corpus: Corpus, sample: large_pool.PoolSample, relations) -> pa.Table:
    role = np.full(len(corpus), "", dtype=object)
    role[sample.candidates] = "sampled"
    pos = [large_pool.positives_of(corpus, int(q), relations) for q in sample.queries]
    if pos:
        role[np.unique(np.concatenate(pos))] = "positive"
    role[sample.queries] = "query"
    keep = np.union1d(sample.candidates, sample.queries)
    # a query may be a candidate too (a positive of another query, or drawn): the role says one
    # thing, `candidate` whether the paper is ranked, so the pool can be rebuilt from the file
    return pa.table({"doi": [corpus.dois[i] for i in keep], "role": [role[i] for i in keep],
                     "candidate": np.isin(keep, sample.candidates),
                     "year": corpus.years[keep].astype(np.int32),
                     "language": [corpus.languages[i] for i in keep]})


def write_benchmark(directory: str, corpus: Corpus, rows: list[dict]) -> dict:
    """The benchmark as a BEIR task plus `candidates.parquet` (the type on each row)."""
    os.makedirs(join_path(directory, "qrels"), exist_ok=True)
    queries = sorted({r["query"] for r in rows})
    docs = sorted({r["candidate"] for r in rows})

    def jsonl(path: str, items: list[dict]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(x, ensure_ascii=False) + "\n" for x in items)

    jsonl(join_path(directory, "corpus.jsonl"), [{"_id": corpus.dois[i], "title": corpus.titles[i] or "",
                                                  "text": corpus.abstracts[i] or "",
                                                  "language": corpus.languages[i]} for i in docs])
    jsonl(join_path(directory, "queries.jsonl"), [{"_id": corpus.dois[i], "text": corpus.text(i),
                                                   "language": corpus.languages[i]} for i in queries])
    with open(join_path(directory, "qrels", "test.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        f.writelines(f"{corpus.dois[r['query']]}\t{corpus.dois[r['candidate']]}\t{r['label']}\n" for r in rows)
    table = pa.table({
        "query-id": [corpus.dois[r["query"]] for r in rows],
        "corpus-id": [corpus.dois[r["candidate"]] for r in rows],
        "score": pa.array([r["label"] for r in rows], pa.int32()),
        "type": [r["type"] for r in rows],
        "query_language": [corpus.languages[r["query"]] for r in rows],
        "corpus_language": [corpus.languages[r["candidate"]] for r in rows],
    })
    write_table(table, join_path(directory, "candidates.parquet"))
    by_type = {t: sum(1 for r in rows if r["type"] == t) for t in benchmark.TYPES}
    return {"queries": len(queries), "corpus": len(docs), "rows": len(rows), "by_type": by_type}


def evaluate_split(corpus: Corpus, models: dict[str, object], sizes, resamples: int, seed: int, relations,
                   top_k: int, recall_k: int, latest_years: int, max_queries: int, fields=(),
                   pools_dir: str | None = None) -> dict:
    """Every model on every (size, resample) pool of one split, plus field-level pools."""
    eligible_all = large_pool.query_candidates(corpus, relations, latest_years)
    runs = []
    field_queries: dict[str, int] = {}
    for field in (None, *fields):
        eligible = eligible_all if field is None else large_pool.query_candidates(corpus, relations, latest_years,
                                                                                  field)
        if field is not None:
            field_queries[field] = int(eligible.size)
        for size in sizes:
            samples = []
            per_model: dict[str, list[dict]] = {m: [] for m in models}
            for i in range(resamples):
                s = large_pool.sample_pool(corpus, size, large_pool.sample_seed(seed, size, i, field), relations,
                                           latest_years, max_queries, field, eligible_queries=eligible)
                samples.append(s.describe())
                if pools_dir:
                    name = f"size={size}" if field is None else f"{field_folder(field)}/size={size}"
                    write_table(pool_table(corpus, s, relations),
                                   join_path(pools_dir, corpus.split, name, f"resample={i}.parquet"))
                for m, model in models.items():
                    started = time.time()
                    per_model[m].append(large_pool.evaluate_sample(corpus, s, model, relations, top_k, recall_k))
                    log.info("%s %s size %d resample %d: %.1fs", corpus.split, m, size, i, time.time() - started)
            runs.append({"field": field, "size_requested": size,
                         "size": int(np.median([d["size"] for d in samples])) if samples else 0,
                         "samples": samples,
                         "models": {m: large_pool.aggregate(v) for m, v in per_model.items()}})
    # a pair whose end splits/ does not put in the split (a pairs folder of another build) is no
    # relevance: counted, so that the pairs read reconcile with those used (`pool_warnings`)
    pairs = {rel: {"read": r.pairs_read, "outside_split": r.pairs_outside_pool} for rel, r in corpus.relevance.items()}
    return {"split": corpus.split, "papers": len(corpus), "eligible_queries": int(eligible_all.size), "runs": runs,
            "field_queries": field_queries, "pairs": pairs}


def field_folder(field: str) -> str:
    """The pools folder of a field-level run: `field=<the category, percent-encoded>`, as Hive
    partitions encode their values. A category is data (`Medicine`, `Arts & Humanities`, or
    whatever a user's metadata holds): written as it was, `--field ../../x` wrote its pools
    outside the build. Encoded, a `/` stays in the name, and the `field=` prefix keeps `..`
    from naming a parent."""
    from urllib.parse import quote

    return "field=" + quote(field, safe=" &,()'")


# --------------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of a build")
    parser.add_argument("--split", action="extend", nargs="+", choices=layout.SPLIT_NAMES, default=None,
                        help="splits to evaluate (default idt and odt)")
    # counts checked when parsed, as every command's: out of range, one usage line naming the
    # flag (exit 2) before the build is looked at
    parser.add_argument("--pool-sizes", type=counts_at_least(1), default=list(DEFAULT_SIZES), metavar="N[,N...]",
                        help="candidate pool sizes, each 1 or more, capped by the split (default "
                        f"{','.join(str(s) for s in DEFAULT_SIZES)})")
    parser.add_argument("--resamples", type=at_least(1), default=3, help="pools per size (1 or more, default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every sample (recorded; default %(default)s)")
    parser.add_argument("--relations", default=",".join(layout.RELATIONS), help="comma-separated (default dc,cc,bc)")
    # --latest-years 0 took every year (`years[-0:]`), --max-queries 0 evaluated pools of no query
    parser.add_argument("--latest-years", type=at_least(1), default=1,
                        help="queries from the split's latest N years (1 or more, default 1)")
    parser.add_argument("--max-queries", type=at_least(1), default=1000, help="queries per pool (1 or more, default 1000)")
    parser.add_argument("--field", action="append", default=[], help="also field-level pools of this category (seeded by --seed, size, resample and "
                        "a stable hash of the category's name)")
    parser.add_argument("--top-k", type=at_least(1), default=topk.DEFAULT_TOP_K,
                        help=f"retrieved per query (1 or more, default {topk.DEFAULT_TOP_K}); every metric is of "
                             "this list, so R@mean's cut-off (the mean number of positives) is capped at it")
    parser.add_argument("--recall-k", type=at_least(1), default=topk.DEFAULT_RECALL_K,
                        help=f"R@k cut-off (1 to --top-k, default {topk.DEFAULT_RECALL_K})")
    parser.add_argument("--no-tune", action="store_true", help="skip the BM25 grid search (bm25 defaults only)")
    parser.add_argument("--encoder", action="append", default=[], metavar="DIR",
                        help="a local encoder folder (see evaluate/encoders.py); repeatable")
    parser.add_argument("--embeddings", action="append", default=[], metavar="FILE",
                        help="precomputed vectors (Parquet doi + vector, as `evaluate`); repeatable")
    parser.add_argument("--benchmark-queries", type=at_least(0), default=100,
                        help="benchmark queries per split (0: none; default 100)")
    parser.add_argument("--benchmark-relations", default="dc", help="the benchmark's positives (default dc)")


def _models_for(corpus: Corpus, bm25_params: dict | None, encoders: dict, embeddings: dict) -> dict:
    from openmsd_build.evaluate.command import embedding_scorer_factory
    from openmsd_build.evaluate.encoders import encode_corpus

    base = large_pool.BM25Model(corpus)
    models: dict[str, object] = {"bm25": base}
    if bm25_params is not None:
        models["bm25_tuned"] = base.with_params(bm25_params["k1"], bm25_params["b"])
    texts = [corpus.text(i) for i in range(len(corpus))]
    for name, enc in encoders.items():
        models[name] = large_pool.DenseModel(encode_corpus(enc, texts, corpus.languages), name)
    for name, (dois, matrix) in embeddings.items():
        pool = tasks.Pool(split=corpus.split, dois=corpus.dois, titles=corpus.titles, abstracts=corpus.abstracts,
                          languages=corpus.languages)
        models[name] = large_pool.DenseModel(embedding_scorer_factory(dois, matrix)(pool).unit, name)
    return models


def run_pools(out: str, splits, sizes, resamples: int = 3, seed: int = 0, relations=layout.RELATIONS,
              latest_years: int = 1, max_queries: int = 1000, fields=(), top_k: int = topk.DEFAULT_TOP_K,
              recall_k: int = topk.DEFAULT_RECALL_K, tune: bool = True, encoders: dict | None = None,
              embeddings: dict | None = None, bench_config: benchmark.BenchmarkConfig | None = None) -> dict:
    """The whole evaluation of `splits`; writes `results_dir(out)` and returns {split: result}.
    A `top_k` / `recall_k` the command would refuse is a `ValueError` here, before anything is
    read or written (`large_pool.check_cutoffs`)."""
    from openmsd_build.core.staging import recover_entries, write_then_replace

    large_pool.check_cutoffs(top_k, recall_k)
    final = results_dir(out)
    dest = join_path(final, PARTIAL)
    recover_entries(final, dest)  # what a killed or interrupted run left
    return write_then_replace(final, dest, split_entries(splits), lambda: _run_pools(
        out, dest, splits, sizes, resamples, seed, relations, latest_years, max_queries, fields, top_k, recall_k, tune,
        encoders, embeddings, bench_config))


def _run_pools(out: str, dest: str, splits, sizes, resamples: int, seed: int, relations, latest_years: int,
               max_queries: int, fields, top_k: int, recall_k: int, tune: bool, encoders: dict | None,
               embeddings: dict | None, bench_config: benchmark.BenchmarkConfig | None) -> dict:
    """`run_pools`' results, written under `dest`."""
    relations = tuple(relations)
    started = time.time()
    tuning = None
    if tune:
        train = load_corpus(out, "train", relations)
        tuning = tune_on_train(train, relations, seed, top_k)
    os.makedirs(dest, exist_ok=True)
    results = {}
    for split in splits:
        corpus = load_corpus(out, split, relations)
        models = _models_for(corpus, tuning, encoders or {}, embeddings or {})
        res = evaluate_split(corpus, models, sizes, resamples, seed, relations, top_k, recall_k, latest_years,
                             max_queries, fields, pools_dir=join_path(dest, "pools"))
        res.update(format_version=FORMAT_VERSION, seed=seed, relations=list(relations), top_k=top_k,
                   recall_k=recall_k, latest_years=latest_years, max_queries=max_queries, resamples=resamples,
                   sizes=list(sizes), bm25_tuning=tuning, versions=_versions(),
                   models={m: (mod.params() if hasattr(mod, "params") else {}) for m, mod in models.items()},
                   sampling=large_pool.SAMPLING)
        if bench_config is not None and bench_config.queries > 0:
            rows = benchmark.build_benchmark(corpus, bench_config, tokens=models["bm25"].tokens)
            res["benchmark"] = {**bench_config.describe(),
                                **write_benchmark(join_path(dest, "benchmark", split), corpus, rows)}
        res["seconds"] = round(time.time() - started, 1)
        res["warnings"] = pool_warnings(res)
        os.makedirs(dest, exist_ok=True)
        with open(join_path(dest, f"{split}.json"), "w", encoding="utf-8") as f:
            json.dump(res, f, indent=2, sort_keys=True)
        results[split] = res
    return results


FEW_QUERIES = 30  # fewer queries than this: a figure's spread over resamples says little


def pool_warnings(res: dict) -> list[str]:
    """What a split's result says about itself that its table does not: no paper or no query
    (a table of dashes), pairs naming papers outside the split, pools that could not be filled to their size (the same pool for
    several sizes) or that the queries' positives alone made larger than asked, R@mean's cut-off capped at
    --top-k, queries too few for the figures to mean much, BM25 tuned on no train query."""
    split, papers = res["split"], res["papers"]
    if not papers:
        return [f"{split} holds no paper: nothing was evaluated (did split assign any to {split}?)"]
    out = []
    for rel, n in res.get("pairs", {}).items():
        if n["outside_split"]:
            out.append(f"{split}: {n['outside_split']:,} of {n['read']:,} {rel.upper()} pairs of pairs/{rel}/split={split}/ "
                       f"name a paper splits/ does not put in {split} (a pairs folder of another build?): they are no "
                       "relevance here")
    if not res["eligible_queries"]:
        out.append(f"{split}: no query has a relevant paper in its pools ({papers:,} papers): the tables are empty")
    for field, n in res.get("field_queries", {}).items():
        if not n:  # a category no query has (a typo, or another source's names): its pools are empty
            out.append(f"{split}: --field {field!r}: no query of {split} is in that category (the documents' "
                       "`categories` values, as the report lists them): its pools are empty")
    short = [r for r in res["runs"] if r["size"] < r["size_requested"]]
    if short:
        asked = ", ".join(f"{n:,}" for n in sorted({r["size_requested"] for r in short}))
        out.append(f"{split}: pools of {asked} candidates could not be filled (at most {max(r['size'] for r in short):,}"
                   f" of the split's {papers:,} papers qualify: not newer than the queries): sizes that reached the "
                   "same size are the same pools")
    grown = [r for r in res["runs"] if r["size"] > 1.1 * r["size_requested"]]
    if grown:
        worst = max(grown, key=lambda r: r["size"] / max(r["size_requested"], 1))
        out.append(f"{split}: pools larger than asked (e.g. {worst['size']:,} for {worst['size_requested']:,}): every "
                   "positive of a pool's queries is in it, and they alone outnumber the size asked; ask for larger "
                   "pools or fewer queries (--max-queries)")
    past = [p for r in res["runs"] for by_rel in r["models"].values()
            for m in (by_rel.get(rel, {}).get("all") for rel in res["relations"]) if m
            for p in m.get("r@mean_positives", []) if p > res["top_k"]]
    if past:  # recall is measured on the top-k list: R@mean is R@top-k there, not at the mean
        out.append(f"{split}: queries have up to {max(past):,} positives on average, more than --top-k "
                   f"{res['top_k']:,}: R@mean is recall at {res['top_k']:,} there (its cut-off, r@mean_k, is capped "
                   "at --top-k); raise --top-k for recall at the mean number of positives")
    queries = [int(np.mean(m["queries"])) for r in res["runs"] for by_rel in r["models"].values()
               for m in (by_rel.get(rel, {}).get("all") for rel in res["relations"]) if m]
    if res["eligible_queries"] and queries and min(queries) < FEW_QUERIES:
        out.append(f"{split}: pools with as few as {min(queries):,} queries: too few for their figures to compare "
                   "models")
    tuning = res.get("bm25_tuning")
    if tuning and tuning.get("validation_map") is None:
        out.append("BM25 was tuned on no train query (none has a relevant paper): its default parameters are used")
    return out


def format_split(res: dict, relation: str | None = None) -> str:
    """The headline table: model x pool size x language class, mean ± std over resamples."""
    rel = relation or res["relations"][0]
    rk = f"r@{res['recall_k']}"
    lines = [f"{res['split']}: {res['papers']:,} papers, {res['eligible_queries']:,} eligible queries; "
             f"relation {rel.upper()}, top {res['top_k']}, {res['resamples']} resamples (mean ± std)",
             f"{'model':14} {'field':10} {'pool (asked)':>18} {'class':6} {'MAP':>15} {'nDCG':>15} {rk.upper():>15} "
             f"{'MRR':>15} {'queries':>8}"]

    def ms(m: dict) -> str:
        return "—" if m["mean"] is None else f"{100 * m['mean']:6.2f} ± {100 * m['std']:5.2f}"

    for run in res["runs"]:
        # a pool capped by the split shows the size asked: the rows of sizes capped alike were
        # the same numbers under the same pool size, three times, with nothing to tell them apart
        pool = f"{run['size']:,}" + (f" ({run['size_requested']:,})" if run["size"] != run["size_requested"] else "")
        for model, by_rel in run["models"].items():
            for cls in ("all", *tasks.LANG_CLASSES):
                m = by_rel.get(rel, {}).get(cls)
                if not m:
                    continue
                lines.append(f"{model:14} {run['field'] or '—':10} {pool:>18} {cls:6} {ms(m['map']):>15} "
                             f"{ms(m['ndcg']):>15} {ms(m[rk]):>15} {ms(m['mrr']):>15} {int(np.mean(m['queries'])):>8}")
    return "\n".join(lines)


def run(args: argparse.Namespace, beam_args: list[str]) -> int:
    if beam_args:
        raise UserError(f"evaluate-pools runs no Beam pipeline; unknown options: {' '.join(beam_args)}")
    if args.recall_k > args.top_k:  # every metric is of the top-k list: R@30 of a top-10 list was R@10
        raise UserError(f"argument --recall-k: must be at most --top-k ({args.top_k}), not {args.recall_k}: recall is "
                        f"measured on the top-k list, so R@{args.recall_k} would be R@{args.top_k}")
    if not os.path.isdir(args.out):
        raise UserError(f"output root not found (a local folder): {args.out}")
    from openmsd_build.core.stages import require_fresh

    require_fresh(args.out, "evaluate-pools")  # as evaluate: a stale build's pools are of other inputs
    relations = tuple(r.strip() for r in args.relations.split(",") if r.strip())
    bench_rel = tuple(r.strip() for r in args.benchmark_relations.split(",") if r.strip())
    if not relations or not set(relations) | set(bench_rel) <= set(layout.RELATIONS):
        raise UserError(f"--relations: choose from {', '.join(layout.RELATIONS)}")
    from openmsd_build.evaluate.command import read_embeddings
    from openmsd_build.evaluate.encoders import load_encoder

    for field in args.field:
        if not field.strip() or len(field_folder(field)) > layout.MAX_NAME_CHARS:
            raise UserError(f"--field {field[:80]!r}: a category name of 1 to {layout.MAX_NAME_CHARS} characters "
                            "(once its / % and control characters are encoded)")
    encoder_names = [(os.path.basename(os.path.normpath(p)), p) for p in args.encoder]
    embedding_names = [(os.path.splitext(os.path.basename(p))[0], p) for p in args.embeddings]
    seen: dict[str, str] = {}
    for name, path in encoder_names + embedding_names:  # a model is reported by its name: one would vanish
        if name in seen:
            raise UserError(f"two models are named {name!r} ({seen[name]} and {path}): models are named after "
                            "their file or folder names, give them different ones")
        seen[name] = path
    encoders = {name: load_encoder(p) for name, p in encoder_names}
    embeddings = {name: read_embeddings(p) for name, p in embedding_names}
    results = run_pools(
        args.out, args.split or list(tasks.EVAL_SPLITS), args.pool_sizes, args.resamples, args.seed, relations,
        args.latest_years, args.max_queries, tuple(args.field), args.top_k, args.recall_k, not args.no_tune,
        encoders, embeddings, benchmark.BenchmarkConfig(queries=args.benchmark_queries, relations=bench_rel,
                                                        seed=args.seed),
    )
    from openmsd_build.core.notices import warn

    for res in results.values():
        print(format_split(res))
        if len(res["relations"]) > 1:
            print(f"(relations {', '.join(r.upper() for r in res['relations'][1:])}: {res['split']}.json)")
        if res.get("bm25_tuning"):
            t = res["bm25_tuning"]
            score = "—" if t["validation_map"] is None else f"{t['validation_map']:.4f}"
            print(f"BM25 tuned on train: k1 {t['k1']}, b {t['b']} (validation MAP {score})")
        warn(res["warnings"])
    print(f"written: {results_dir(args.out)}")
    return 0
