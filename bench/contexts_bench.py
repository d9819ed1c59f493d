"""Cost per document of the contexts stage: the rule alone (sentences, markers, resolution)
and the whole stage through Beam, next to the text stage's cost per document of the same build.

    .venv/bin/python bench/contexts_bench.py --build demo/build --crossref 'demo/inputs/crossref/*.json.gz' [--turns 3]

* rule — `contexts.extract.document_contexts` on every document with full text of the build
  (with its Crossref reference list), in one process: best of `--turns`; µs per document,
  per sentence and per 1,000 characters;
* stage — `openmsd-build contexts` on the build (FnApiRunner; it rewrites contexts/ and
  pairs/ccs/): wall and CPU of the process (children included);
* text — the text stage's own wall / CPU from the build's `_stats/text.json` (`resources`),
  per document kept and per document with full text.

With `--real DIR` (the build `bench/contexts_real.py` leaves in bench/data/contexts-real/build)
the rule is also timed on the real full texts (long PDFs and pages).
"""

from __future__ import annotations

import argparse
import glob
import json
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "openmsd_build.cli"]


def _documents(build: Path) -> list[dict]:
    rows = pq.read_table(build / "documents", columns=["doi", "content", "language"]).to_pylist()
    return [r for r in rows if r["content"]]


def _lists(crossref: list[str]) -> dict[str, tuple[list, int]]:
    from openmsd_build.contexts.references import lists_of_files

    return lists_of_files(crossref)


def time_rule(docs: list[dict], lists: dict[str, tuple[list, int]], turns: int) -> dict:
    from openmsd_build.contexts.extract import document_contexts
    from openmsd_build.core.language import forget_answers

    best = float("inf")
    counts: Counter = Counter()
    for _ in range(turns):
        forget_answers()  # each turn detects every sentence's language anew
        counts = Counter()
        start = time.perf_counter()
        for d in docs:
            refs, listed = lists.get(d["doi"], (None, None))
            document_contexts(d["doi"], d["content"], d["language"], refs, counts, listed)
        best = min(best, time.perf_counter() - start)
    chars = sum(len(d["content"]) for d in docs)
    return {"documents": len(docs), "sentences": counts["sentences_seen"], "markers": counts["markers_found"],
            "chars": chars, "seconds": round(best, 3), "us_per_document": round(1e6 * best / max(1, len(docs)), 1),
            "us_per_sentence": round(1e6 * best / max(1, counts["sentences_seen"]), 2),
            "us_per_1000_chars": round(1e9 * best / max(1, chars), 1)}


def time_stage(build: Path, crossref: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*CLI, "contexts", "--out", str(build), "--crossref", *crossref], check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, default=Path("demo/build"))
    parser.add_argument("--crossref", default="demo/inputs/crossref/*.json.gz")
    parser.add_argument("--real", type=Path, default=HERE / "data" / "contexts-real" / "build")
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args(argv)
    crossref = sorted(glob.glob(args.crossref))
    docs = _documents(args.build)
    result: dict = {"rule": time_rule(docs, _lists(crossref), args.turns), "stage": time_stage(args.build, crossref)}
    stage = result["stage"]
    stage["ms_per_document_with_text_wall"] = round(1000 * stage["wall_s"] / max(1, len(docs)), 2)
    stage["ms_per_document_with_text_cpu"] = round(1000 * stage["cpu_s"] / max(1, len(docs)), 2)
    text = json.loads((args.build / "_stats" / "text.json").read_text("utf-8"))
    kept = text["counts"].get("documents.kept", 0)
    res = text.get("resources") or {}
    result["text"] = {"wall_s": res.get("wall_s"), "cpu_s": res.get("cpu_s"), "documents_kept": kept,
                      "with_content": text["counts"].get("with_content", 0),
                      "ms_per_document_kept_cpu": round(1000 * (res.get("cpu_s") or 0) / max(1, kept), 2),
                      "ms_per_document_with_text_cpu": round(
                          1000 * (res.get("cpu_s") or 0) / max(1, text["counts"].get("with_content", 0)), 2)}
    if (args.real / "documents").is_dir():
        from contexts_real import CROSSREF, SAMPLES

        real_docs = _documents(args.real)
        result["rule_real"] = time_rule(real_docs, _lists([str(SAMPLES / c) for c in CROSSREF]), args.turns)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
