"""`export --recipe`: wall time, CPU and peak RSS of a recipe export, and whether memory
stays flat as the number of pairs grows.

Two measurements, each export in its own subprocess reporting its own peak (`VmHWM` from
`/proc/self/status`, as `scale_memory.py`, not `ru_maxrss`, which carries the launcher's):

* `--build DIR`: the given recipes on a real build (e.g. `openmsd-build sample --papers 10000`
  + `run` + `enrich --demo-stub`);
* `--pairs N1,N2,...`: a generated build with a fixed number of papers (`--papers`, en / ru /
  de / zh, non-English ones with an English summary, a fifth with a second abstract) and N
  DC and N CC pairs (uniform ends), exported with the cross-lingual recipe without the anchor
  cap (every pair becomes an example). Same papers, more pairs: a flat peak means memory
  does not grow with the pairs.

Usage:
    .venv/bin/python bench/recipe_bench.py [--build DIR] [--recipes a,b] [--pairs 250000,1000000]
        [--papers 10000] [--json bench/results_recipe.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "recipe"
LANGS = ("en", "ru", "de", "zh")


def _peak_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def generate(out: Path, papers: int, pairs: int, seed: int = 3) -> None:
    """A build with `papers` train papers and `pairs` DC and `pairs` CC pairs."""
    import numpy as np
    import pyarrow as pa

    from openmsd_build.core import layout, parquet_io
    from openmsd_build.enrich import enriched_dir
    from openmsd_build.schemas import tables

    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(2000)]

    def text(n: int) -> str:
        return " ".join(words[j] for j in rng.integers(0, len(words), n))

    docs, splits, enriched = [], [], []
    for i in range(papers):
        doi, lang = f"10.77/p{i:07d}", LANGS[i % len(LANGS)]
        abstracts = [{"text": text(120), "language": lang, "source": "crossref"}]
        if lang != "en" and i % 5 == 1:
            abstracts.append({"text": text(120), "language": "de" if lang != "de" else "ru", "source": "pdf"})
        if lang != "en":
            enriched.append({"doi": doi, "language": lang, "summary": text(25)})
        docs.append({"doi": doi, "title": text(10), "abstract": abstracts[0]["text"], "abstracts": abstracts,
                     "language": lang, "text_source": "bench"})
        splits.append({"doi": doi, "split": "train", "language": lang, "paper_id": i})
    parquet_io.write_table(pa.Table.from_pylist(docs, schema=tables.DOCUMENTS),
                           parquet_io.part_path(layout.documents_dir(str(out)), 0, 1))
    parquet_io.write_table(pa.Table.from_pylist(splits, schema=tables.SPLITS),
                           parquet_io.part_path(layout.splits_dir(str(out)), 0, 1))
    parquet_io.write_table(pa.Table.from_pylist(enriched, schema=tables.ENRICHED),
                           parquet_io.part_path(enriched_dir(str(out)), 0, 1))
    dois = np.array([d["doi"] for d in docs], dtype=object)
    per_part = 250_000
    for rel in ("dc", "cc"):
        a = rng.integers(0, papers, pairs)
        b = (a + rng.integers(1, papers, pairs)) % papers  # never a self-pair
        parts = max(1, -(-pairs // per_part))
        for k in range(parts):
            s = slice(k * per_part, (k + 1) * per_part)
            table = pa.table({"doi_a": dois[a[s]].tolist(), "doi_b": dois[b[s]].tolist()})
            table = table.append_column("lang_a", pa.nulls(table.num_rows, pa.string()))
            cols = {f.name: (table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type))
                    for f in tables.PAIRS}
            parquet_io.write_table(pa.table(cols, schema=tables.PAIRS),
                                   parquet_io.part_path(layout.pairs_dir(str(out), rel, "train"), k, parts))


def child(out: str, recipe: str, no_cap: bool) -> None:
    """One export in this process; prints its measurements as JSON."""
    from dataclasses import replace

    from openmsd_build.export import recipe_export, recipes

    r = recipes.resolve(recipe)
    if no_cap:
        r = replace(r, max_per_anchor=None)
    dest = tempfile.mkdtemp(prefix="recipe-bench-")
    t0, c0 = time.perf_counter(), time.process_time()
    summary = recipe_export.export_recipe(out, r, dest)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    counts = summary["counts"]["train"]
    print(json.dumps({"recipe": r.name, "candidates": counts["candidates"], "written": counts["written"],
                      "partitions": counts["partitions"], "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                      "peak_rss_mb": round(_peak_mb(), 1),
                      "children_peak_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}))
    import shutil

    shutil.rmtree(dest, ignore_errors=True)


def _run(out: str, recipe: str, no_cap: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", out, "--recipe-name", recipe] + (["--no-cap"] if no_cap else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="a real build to export")
    ap.add_argument("--recipes", default="xling-title-abstract-citation,openmsd-dc_or_cc")
    ap.add_argument("--pairs", default="250000,1000000", help="pairs per relation of the generated builds ('' = none)")
    ap.add_argument("--papers", type=int, default=10_000)
    ap.add_argument("--json", default=str(HERE / "results_recipe.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--recipe-name", help=argparse.SUPPRESS)
    ap.add_argument("--no-cap", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.recipe_name, args.no_cap)
        return
    results: dict = {"machine": f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start", "build": [],
                     "flat": []}
    if args.build:
        for name in args.recipes.split(","):
            row = {"build": args.build, **_run(args.build, name, False)}
            results["build"].append(row)
            print(row, flush=True)
    for n in [int(x) for x in args.pairs.split(",") if x]:
        out = DATA / f"papers{args.papers}-pairs{n}"
        if not (out / "_done").exists():
            subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r}); "
                            f"from recipe_bench import generate; from pathlib import Path; "
                            f"generate(Path({str(out)!r}), {args.papers}, {n})"], check=True)
            (out / "_done").write_text("ok")
        row = {"papers": args.papers, "pairs_per_relation": n,
               **_run(str(out), "xling-title-abstract-citation", True)}
        results["flat"].append(row)
        print(row, flush=True)
    Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
