"""Print N citation contexts of a build for checking by hand: the sentence, each marker, the
DOI it resolved to, the reference entry it matched (order, key, author, year, unstructured)
and, for a generated sample, whether the generator's truth has that DOI in the sentence's
marker group.

    .venv/bin/python bench/contexts_sample.py --build demo/build --inputs demo/inputs [--n 20] [--seed 38]

Contexts are drawn with a seeded shuffle, at most two per (language, first marker style),
one Chinese and one Cyrillic author-year context first when the build has them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq


def pick(rows: list[dict], n: int, seed: int) -> list[dict]:
    shuffled = random.Random(seed).sample(rows, len(rows))
    first = [next((r for r in shuffled if r["language"] == "zh"), None),
             next((r for r in shuffled if re.search("[А-Яа-я]+(?: и др\\.)?, \\d{4}", r["sentence"])), None)]
    picked = [r for r in first if r is not None]
    seen = Counter((r["language"], r["markers"][0]["style"]) for r in picked)
    for r in shuffled:
        key = (r["language"], r["markers"][0]["style"])
        if len(picked) >= n:
            break
        if seen[key] < 2 and r not in picked:
            seen[key] += 1
            picked.append(r)
    return picked


def main(argv: list[str] | None = None) -> int:
    from openmsd_build.contexts.references import lists_of_files

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, default=Path("demo/build"))
    parser.add_argument("--inputs", type=Path, default=Path("demo/inputs"))
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args(argv)
    lists = {doi: refs for doi, (refs, _listed) in
             lists_of_files(str(path) for path in sorted((args.inputs / "crossref").glob("*.json.gz"))).items()}
    truth_path = args.inputs / "truth.jsonl.gz"
    truth = {json.loads(line)["doi"]: json.loads(line) for line in gzip.open(truth_path)} if truth_path.exists() else {}
    rows = pq.read_table(args.build / "contexts").to_pylist()
    for k, row in enumerate(pick(rows, args.n, args.seed), 1):
        print(f"{k}. {row['citing_doi']} [{row['language']}] {row['sentence']}")
        refs = {r["order"]: r for r in lists.get(row["citing_doi"], [])}
        groups = (truth.get(row["citing_doi"]) or {}).get("context_citations") or []
        for m in row["markers"]:
            ref = refs.get(m["reference_order"]) or {}
            entry = ", ".join(f"{f}={ref[f]}" for f in ("order", "author", "year", "unstructured") if ref.get(f))
            check = "" if not truth or not m["cited_doi"] else f" truth={'yes' if any(m['cited_doi'] in g for g in groups) else 'NO'}"
            outcome = m["cited_doi"] or m["reason"]
            print(f"   {m['text']} -> {outcome} ({m['method']}) [{entry}]{check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
