"""A dataset card for a whole build (`OUT/README.md`): each folder's schema and row count,
and how to load it with polars, DuckDB and Hugging Face `datasets`.

`export/` has its own card for the retrieval tasks and trainer tables; this one describes
the build itself, as a user who opens the output root finds it. Its YAML front matter lists
one `datasets` config per non-empty table (`export.hf_dataset.card_yaml`), so
`datasets.load_dataset(OUT, "documents")` works. Row counts come from the Parquet footers
(no data is read). Written by `report` (and so at the end of every `run`).
"""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout
from openmsd_build.core.parquet_io import footer_rows, join_path, match_paths
from openmsd_build.export.hf_dataset import Config, card_yaml
from openmsd_build.schemas import tables

PRETTY_NAME = "OpenMSD build"

# (config name, folder glob under OUT, schema, what it holds); pairs and rejects by relation / stage below
TABLES: tuple[tuple[str, str, object, str], ...] = (
    ("papers", "papers/*.parquet", tables.PAPERS, "one row per DOI of the metadata (stage papers)"),
    ("fetch", "fetch/*.parquet", tables.FETCH, "one row per URL fetched or looked up (stage text)"),
    ("documents", "documents/*.parquet", tables.DOCUMENTS, "one row per paper with text (stage text)"),
    ("citations", "citations/*.parquet", tables.CITATIONS, "kept citation edges (stage citations)"),
    ("splits", "splits/*.parquet", tables.SPLITS, "train / idt / odt of each linked paper (stage split)"),
    ("contexts", "contexts/*.parquet", tables.CONTEXTS,
     "one row per full-text sentence with a citation marker resolved to a DOI (stage contexts)"),
)


def _rows(out: str, pattern: str) -> tuple[int, int]:
    """(files, rows) of the Parquet files matching `pattern` under `out`, from their footers."""
    files = match_paths(join_path(out, *pattern.split("/")))
    return len(files), footer_rows(files)


def _schema_lines(schema) -> list[str]:
    return [f"  - `{f.name}`: {f.type}" for f in schema]


def build_card(out: str) -> str:
    """The card's Markdown for the build at `out`."""
    entries: list[tuple[str, dict[str, str], dict[str, int], object, str, int]] = []
    for name, pattern, schema, what in TABLES:
        n_files, rows = _rows(out, pattern)
        if n_files:
            entries.append((name, {"train": pattern}, {"train": rows}, schema, what, n_files))
    for rel in layout.PAIR_RELATIONS:
        files: dict[str, str] = {}
        counts: dict[str, int] = {}
        n_total = 0
        for split in layout.SPLIT_NAMES:
            pattern = f"pairs/{rel}/split={split}/*.parquet"
            n_files, rows = _rows(out, pattern)
            if n_files:
                files[split], counts[split] = pattern, rows
                n_total += n_files
        if files:
            stage = "contexts" if rel in layout.CONTEXT_RELATIONS else "pairs"
            entries.append((f"pairs-{rel}", files, counts, tables.PAIRS, f"{rel.upper()} related pairs per split "
                            f"(stage {stage})", n_total))
    n_rej, rej_rows = _rows(out, "rejects/*/*.parquet")
    configs = [Config(name, {s: p for s, p in files.items() if counts[s]}, counts, what)
               for name, files, counts, _schema, what, _n in entries if any(counts.values())]
    lines = [card_yaml(configs, [], PRETTY_NAME), f"# {PRETTY_NAME}: {out}", "",
             "The outputs of one `openmsd-build` run (zstd Parquet, explicit schemas; `schemas/tables.py`). "
             "Papers' text may not be redistributable: share `openmsd-build release` (ids, labels, hashes) and "
             "`export/` (with its own card) instead of this folder.", "",
             "## Tables", "", "| table | folder | files | rows | what |", "|---|---|---:|---:|---|"]
    for name, files, counts, _schema, what, n_files in entries:
        folder = ", ".join(f"`{p}`" for p in files.values())
        lines.append(f"| `{name}` | {folder} | {n_files:,} | {sum(counts.values()):,} | {what} |")
    if n_rej:
        lines.append(f"| rejects | `rejects/<stage>/*.parquet` | {n_rej:,} | {rej_rows:,} | every failed record, "
                     "with reason, detail and an excerpt |")
    empty = [name for name, _f, counts, *_ in entries if not any(counts.values())]
    if empty:
        lines += ["", "Empty (no config): " + ", ".join(f"`{n}`" for n in empty)
                  + ". The build's warnings (`_stats/<stage>.json`, `report/report.html`) say why."]
    if not entries:
        lines += ["", "No stage output yet."]
    lines += ["", "## Schemas", ""]
    for name, _files, _counts, schema, _what, _n in entries:
        lines += [f"- `{name}`", *_schema_lines(schema)]
    example = next((e for e in entries if any(e[2].values())), None)
    name, pattern = (example[0], next(iter(example[1].values()))) if example else ("documents", "documents/*.parquet")
    lines += [
        "", "## Loading", "",
        "```python",
        "import polars as pl",
        f'df = pl.read_parquet("{out}/{pattern}")',
        "",
        "import duckdb",
        f"duckdb.sql(\"SELECT count(*) FROM read_parquet('{out}/{pattern}')\")",
        "",
        "import datasets",
        f'ds = datasets.load_dataset("{out}", "{name}")  # configs: the tables above with rows',
        "```", "",
        "Per-stage counts, timings and input files: `_stats/<stage>.json`; statistics and figures: "
        "`report/report.html`.", "",
    ]
    return "\n".join(lines)


CARD_HEAD = f'---\npretty_name: "{PRETTY_NAME}"'  # how every card this module wrote begins


def card_path(out: str) -> str:
    """Where the build's card goes: `OUT/README.md`, unless that file is someone's own (it
    does not begin as our cards do), which is kept; then `OUT/report/dataset_card.md`."""
    path = join_path(out, "README.md")
    try:
        with FileSystems.open(path) as fh:
            head = fh.read(len(CARD_HEAD.encode("utf-8")))
    except Exception:  # noqa: BLE001 - no README.md yet (Beam wraps the error per filesystem)
        return path
    return path if head.decode("utf-8", "replace") == CARD_HEAD else join_path(layout.report_dir(out),
                                                                              "dataset_card.md")


def write_build_card(out: str) -> str:
    """Write the build's card (`card_path`: `OUT/README.md` unless a README of someone else's is
    there); returns its path."""
    path = card_path(out)
    with FileSystems.create(path) as fh:
        fh.write(build_card(out).encode("utf-8"))
    return path
