"""The report's large-pool section: `openmsd-build evaluate-pools` results
(`evaluation/large_pool/<split>.json`) as tables of MAP / nDCG / R@k / MRR by model, pool
size and language class (mean ± std over resamples), per query language, the BM25 tuning
and the benchmark's candidate types. Absent when the command has not run."""

from __future__ import annotations

from openmsd_build.core.parquet_io import join_path, match_paths
from openmsd_build.core.stats import read_optional_json
from openmsd_build.report.render import CLASS_LABELS, Block, fmt_int

CLASSES = ("all", "en-en", "en-xx", "xx-en", "xx-xx")


def large_pool_section(out: str) -> dict | None:
    """{split: result document}; None when there is none."""
    found = {}
    for path in match_paths(join_path(out, "evaluation", "large_pool", "*.json")):
        # a broken or foreign JSON file (or one of the wrong shape inside) is skipped, not fatal
        doc = read_optional_json(path, _usable, "large-pool result")
        if doc is not None:
            found[str(doc["split"])] = doc
    return dict(sorted(found.items())) or None


def _usable(doc: dict) -> dict | None:
    """`doc` when it is a large-pool result the report can show, None when it is another
    tool's JSON; raises when it has the keys but not the shape inside (its tables are
    rendered here, on this file alone)."""
    if not {"split", "runs", "relations"} <= set(doc):
        return None
    large_pool_blocks({"large_pool": {"split": doc}})
    return doc


def _ms(m: dict | None) -> str:
    if not m or m.get("mean") is None:
        return "—"
    return f"{100 * m['mean']:.2f} ± {100 * (m.get('std') or 0):.2f}"


def large_pool_blocks(stats: dict) -> list[Block]:
    sections = stats.get("large_pool")
    if not sections:
        return []
    res = [Block("h2", "Large-pool citation recommendation (MDCR-style) — by pool size and language class")]
    first = next(iter(sections.values()))
    res.append(Block("p", f"{first.get('sampling', '')} Metrics in % over the top {first.get('top_k')} "
                          f"(MAP@K, nDCG@K, R@{first.get('recall_k')}, R@mean = recall at the mean number of "
                          "positives, capped at the top K, MRR), mean ± standard deviation over resamples; class X-Y ranks the side-Y "
                          "candidates for side-X queries (en = English, xx = other)."))
    for split, doc in sections.items():
        rel = doc["relations"][0]
        rk = f"r@{doc['recall_k']}"
        res.append(Block("h3", f"{split}: {fmt_int(doc.get('papers'))} papers, relation {rel.upper()}, "
                               f"{doc.get('resamples')} resamples, seed {doc.get('seed')}"))
        tune = doc.get("bm25_tuning")
        if tune:
            res.append(Block("p", f"bm25: k1 1.5, b 0.75. bm25_tuned: k1 {tune.get('k1')}, b {tune.get('b')} "
                                  f"(grid search on a train validation pool; {tune.get('note', 'MAP there')} "
                                  f"{'' if tune.get('validation_map') is None else round(tune['validation_map'], 4)})."))
        rows = []
        for run in doc["runs"]:
            for model, by_rel in run["models"].items():
                for cls in CLASSES:
                    m = by_rel.get(rel, {}).get(cls)
                    if not m:
                        continue
                    q = m.get("queries") or [0]
                    rows.append([model, run.get("field") or "—", fmt_int(run.get("size")), CLASS_LABELS.get(cls, cls),
                                 _ms(m.get("map")), _ms(m.get("ndcg")), _ms(m.get(rk)), _ms(m.get("r@mean")),
                                 _ms(m.get("mrr")), fmt_int(round(sum(q) / len(q)))])
        res.append(Block("table", headers=["model", "field", "pool", "class", "MAP", "nDCG", rk.upper(), "R@mean",
                                           "MRR", "queries"], rows=rows))
        plain = [r for r in doc["runs"] if not r.get("field")]
        if plain:
            run = max(plain, key=lambda r: r.get("size") or 0)
            langs = sorted({k for by_rel in run["models"].values() for k in by_rel.get(rel, {}) if k.startswith("lang:")})
            if langs:
                res.append(Block("p", f"Per query language, pool {fmt_int(run.get('size'))} (MAP, all candidates):"))
                rows = [[lang[5:], *(_ms(by_rel.get(rel, {}).get(lang, {}).get("map"))
                                     for by_rel in run["models"].values())] for lang in langs]
                res.append(Block("table", headers=["language", *run["models"]], rows=rows))
        bench = doc.get("benchmark")
        if bench:
            types = ", ".join(f"{t} {fmt_int(n)}" for t, n in (bench.get("by_type") or {}).items())
            res.append(Block("p", f"Benchmark ({split}): {fmt_int(bench.get('queries'))} queries, "
                                  f"{fmt_int(bench.get('rows'))} candidates by type: {types}."))
    return res
