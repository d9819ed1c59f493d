"""Benchmark `openmsd-build report` on a synthetic full-shape output root.

Why: the report scans every stage folder (documents' text columns, a citations-by-language
join, per-host fetch groups, every pairs folder); this measures whether that stays in
seconds and within memory at 1M papers / ~5M citations, generated directly as Parquet with
numpy and pyarrow (not through the pipeline, which would take far longer than the report).

The report runs in a child process so its peak RSS is measured alone (not the generator's).

    .venv/bin/python bench/report_bench.py --papers 1000000 [--out DIR] [--keep] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import tables

LANGS = [
    "en",
    "de",
    "fr",
    "es",
    "pt",
    "ru",
    "ja",
    "zh",
    "it",
    "nl",
    "pl",
    "id",
    "tr",
    "ko",
    "uk",
    "cs",
    "sv",
    "fi",
    "hu",
    "ar",
]
LANGS += [f"l{i:02d}" for i in range(83)]  # 103 languages, a long tail like the real build


def _zipf_choice(rng: np.random.Generator, n_items: int, size: int, a: float = 1.6) -> np.ndarray:
    """Indices in [0, n_items) with a Zipf-like skew (a few items dominate, as languages,
    categories and hosts do in the real data)."""
    weights = 1.0 / np.arange(1, n_items + 1) ** a
    return rng.choice(n_items, size=size, p=weights / weights.sum())


def _dois(idx: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("10.5555/p", pc.cast(pa.array(idx), pa.string()), "")


def _take(values: list[str], idx: np.ndarray) -> pa.Array:
    return pa.array(values, pa.string()).take(pa.array(idx))


def _write_parts(directory: str, table: pa.Table, parts: int) -> None:
    """Split into `parts` files, as a sharded stage writes them."""
    bounds = np.linspace(0, table.num_rows, parts + 1).astype(int)
    for i in range(parts):
        parquet_io.write_table(
            table.slice(bounds[i], bounds[i + 1] - bounds[i]), parquet_io.part_path(directory, i, parts)
        )


def _with_schema(columns: dict, schema: pa.Schema) -> pa.Table:
    n = len(next(iter(columns.values())))
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays([a.cast(f.type) for a, f in zip(arrays, schema, strict=True)], schema=schema)


def generate(out: str, n: int, seed: int = 0) -> dict:
    """Write papers/, fetch/, documents/, citations/, splits/, pairs/, rejects/, _stats/."""
    rng = np.random.default_rng(seed)
    sizes: dict[str, int] = {}
    parts = max(1, n // 125_000)

    # papers: 1.3 n joined DOIs, of which n end up with text
    n_pap = int(n * 1.3)
    pap_idx = np.arange(n_pap)
    papers = _with_schema(
        {"doi": _dois(pap_idx), "abstract": pa.array(np.where(rng.random(n_pap) < 0.7, "abstract", None))},
        tables.PAPERS,
    )
    _write_parts(layout.papers_dir(out), papers, parts)
    sizes["papers"] = n_pap

    # fetch: one URL per paper over 20k hosts (Zipf), 75% success
    hosts = [f"host{i}.example.org" for i in range(20_000)]
    host_idx = _zipf_choice(rng, len(hosts), n_pap, a=1.1)
    urls = pc.binary_join_element_wise(
        "https://", _take(hosts, host_idx), "/article/", pc.cast(pa.array(pap_idx), pa.string()), ""
    )
    ok = rng.random(n_pap) < 0.75
    failure = rng.choice(4, n_pap)  # which of the failures below, where not ok
    fail_status = np.array([404, 403, 500, -1])[failure]
    status = np.where(ok, 200, fail_status)
    status_arr = pa.array(status.astype(np.int32), mask=status < 0)
    err = pa.array(np.where(ok, None, np.array(["http_404", "http_403", "http_500", "timeout"], dtype=object)[failure]))
    fetch = _with_schema({"url": urls, "doi": _dois(pap_idx), "status": status_arr, "error": err}, tables.FETCH)
    _write_parts(layout.fetch_dir(out), fetch, parts)
    sizes["fetch"] = n_pap

    # documents: n papers; abstracts for 90%, full content for ~50%
    idx = np.arange(n)
    lang = _take(LANGS, _zipf_choice(rng, len(LANGS), n, a=1.8))
    n_cats = rng.integers(0, 4, n)
    cat_values = _zipf_choice(rng, 340, int(n_cats.sum()), a=1.05)
    offsets = np.concatenate([[0], np.cumsum(n_cats)]).astype(np.int32)
    categories = pa.ListArray.from_arrays(pa.array(offsets), _take([f"Category {i}" for i in range(340)], cat_values))
    has_abs = rng.random(n) < 0.9
    has_content = rng.random(n) < 0.5
    abstract = pa.array(np.where(has_abs, "We study a synthetic problem and report results on it.", None))
    content = pa.array(np.where(has_content, "Introduction. " + "Body text of the paper. " * 10, None))
    docs = _with_schema(
        {
            "doi": _dois(idx),
            "title": pa.array(np.full(n, "A synthetic title")),
            "abstract": abstract,
            "content": content,
            "language": lang,
            "categories": categories,
            "n_tokens_title": pa.array(rng.integers(3, 20, n).astype(np.int32)),
            "n_tokens_abstract": pa.array(np.where(has_abs, rng.integers(50, 400, n), 0).astype(np.int32)),
            "n_tokens_content": pa.array(np.where(has_content, rng.integers(2000, 12000, n), 0).astype(np.int32)),
            "text_source": pa.array(np.full(n, "synthetic")),
        },
        tables.DOCUMENTS,
    )
    _write_parts(layout.documents_dir(out), docs, parts)
    sizes["documents"] = n

    # citations: ~5 per paper
    n_cit = 5 * n
    citing, cited = rng.integers(0, n, n_cit), _zipf_choice(rng, n, n_cit, a=0.6)
    # the report reads only the DOI columns; the id columns are left null here
    cit = pa.table({"citing_doi": _dois(citing), "cited_doi": _dois(cited),
                    "citing_id": pa.nulls(n_cit, pa.int64()), "cited_id": pa.nulls(n_cit, pa.int64())},
                   schema=tables.CITATIONS)
    _write_parts(layout.citations_dir(out), cit, parts * 4)
    sizes["citations"] = n_cit

    # splits: 70% of papers, train 99% / idt 0.5% / odt 0.5%
    in_split = idx[rng.random(n) < 0.7]
    which = rng.choice(3, len(in_split), p=[0.99, 0.005, 0.005])
    split_names = _take(list(layout.SPLIT_NAMES), which)
    splits = _with_schema(
        {
            "doi": _dois(in_split),
            "paper_id": pa.array(in_split),
            "split": split_names,
            "language": lang.take(pa.array(in_split)),
        },
        tables.SPLITS,
    )
    _write_parts(layout.splits_dir(out), splits, parts)
    sizes["splits"] = len(in_split)

    # pairs: DC ~ citations, CC and BC a few per paper, idt/odt small
    classes = ["en-en", "en-xx", "xx-en", "xx-xx"]
    total_pairs = 0
    for rel, per_paper in (("dc", 3), ("cc", 5), ("bc", 5)):
        for split, frac in (("train", 1.0), ("idt", 0.005), ("odt", 0.005)):
            m = max(1, int(n * per_paper * frac))
            a, b = rng.integers(0, n, m), rng.integers(0, n, m)
            pairs = _with_schema(
                {
                    "doi_a": _dois(a),
                    "doi_b": _dois(b),
                    "lang_class": _take(classes, rng.choice(4, m, p=[0.8, 0.08, 0.08, 0.04])),
                    "support": pa.array(rng.integers(1, 20, m)),
                },
                tables.PAIRS,
            )
            _write_parts(layout.pairs_dir(out, rel, split), pairs, max(1, parts if split == "train" else 1))
            total_pairs += m
    sizes["pairs"] = total_pairs

    # rejects and _stats
    for stage, reasons in (("papers", ["bad_doi", "json_error"]), ("text", ["http_404", "no_text", "timeout"])):
        m = n // 20
        rej = _with_schema(
            {
                "key": _dois(np.arange(m)),
                "stage": pa.array(np.full(m, stage)),
                "reason": _take(reasons, rng.choice(len(reasons), m)),
            },
            tables.REJECTS,
        )
        _write_parts(layout.rejects_dir(out, stage), rej, 1)
    os.makedirs(os.path.join(out, "_stats"), exist_ok=True)
    with open(layout.stats_path(out, "papers"), "w") as f:
        json.dump({"counts": {"read.unpaywall": int(n * 1.4), "read.crossref": int(n * 1.35), "written": n_pap}}, f)
    return sizes


def _report_child(out: str, top: int) -> None:
    """Runs in the child process: time build_report alone and print the result as JSON."""
    from openmsd_build.report.command import build_report

    t0 = time.perf_counter()
    stats = build_report(out, top=top)
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "table1": stats["table1"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--out", help="output root to generate into (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated output root")
    parser.add_argument("--reuse", action="store_true", help="do not regenerate when --out already has documents/")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child:
        _report_child(args.out, args.top)
        return

    out = args.out or tempfile.mkdtemp(prefix="report_bench_")
    try:
        if not (args.reuse and parquet_io.list_parts(layout.documents_dir(out))):
            t0 = time.perf_counter()
            sizes = generate(out, args.papers, args.seed)
            print(f"generated {sizes} in {time.perf_counter() - t0:.1f} s under {out}")
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--_child", "--out", out, "--top", str(args.top)],
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - t0
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KiB
        print(
            f"build_report: {result['seconds']:.2f} s (child process wall incl. imports {wall:.2f} s), peak RSS {peak_mb:,.0f} MB"
        )
        print(f"table1: {json.dumps(result['table1'])}")
    finally:
        if not args.keep and not args.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
