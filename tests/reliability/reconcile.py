"""Reusable reconciliation checks over a build's output root (no pytest, no Beam run).

Every stage writes `_stats/<stage>.json`; these functions check, per stage, that the
records that went in equal the records that came out plus the rejects (plus the merges each
stage documents), and that the counters agree with the rows actually written to Parquet.
`output_digest` gives a content hash of every Parquet table (rows sorted), so two runs can
be compared for identical outputs.

Use from any test:

    from reconcile import check_build, output_digest   # tests/reliability is on sys.path
    assert check_build(out) == []                       # [] or a list of readable problems
    assert output_digest(out_a) == output_digest(out_b)

Each `check_<stage>` returns a list of problem strings (empty when the stage reconciles); a
stage without its stats file is a problem (`check_build` names the stages expected to have
run), never a pass.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from openmsd_build.citations import command as citations_checks  # noqa: E402
from openmsd_build.contexts import command as contexts_checks  # noqa: E402
from openmsd_build.core.stages import STAGE_NAMES as STAGES  # noqa: E402
from openmsd_build.pairs import command as pairs_checks  # noqa: E402
from openmsd_build.papers import command as papers_checks  # noqa: E402
from openmsd_build.split import command as split_checks  # noqa: E402
from openmsd_build.text import command as text_checks  # noqa: E402

SPLITS = ("train", "idt", "odt")
# Columns that legitimately differ between two live (http) fetch runs: archive file names
# carry a random bundle id and timestamps are wall-clock. WARC replays have none of these.
VOLATILE_COLUMNS = {"fetch": ("fetched_at", "warc_file", "warc_offset", "warc_length")}
# Counters that are timing, not data.
VOLATILE_COUNTS = ("seconds",)


# ------------------------------------------------------------------ reading


def stage_counts(out: str | Path, stage: str) -> dict[str, int] | None:
    """The counters of `_stats/<stage>.json`, or None when the stage did not run."""
    path = Path(out) / "_stats" / f"{stage}.json"
    if not path.exists():
        return None
    return dict(json.loads(path.read_text("utf-8")).get("counts", {}))


def read_rows(directory: str | Path) -> pa.Table | None:
    """Every `*.parquet` directly under `directory` as one table (None: no such folder)."""
    directory = Path(directory)
    if not directory.is_dir():
        return None
    parts = sorted(directory.glob("*.parquet"))
    if not parts:
        return None
    tables = [pq.read_table(p) for p in parts]
    return pa.concat_tables(tables, promote_options="default")


def n_rows(directory: str | Path) -> int:
    """Rows under a stage folder; 0 when it has no part files."""
    directory = Path(directory)
    if not directory.is_dir():
        return 0
    return sum(pq.ParquetFile(p).metadata.num_rows for p in directory.glob("*.parquet"))


def _no_stats(stage: str) -> str:
    return f"{stage}: no _stats/{stage}.json (the stage did not run, or its stats were lost)"


def _eq(problems: list[str], stage: str, what: str, left: int, right: int) -> None:
    if left != right:
        problems.append(f"{stage}: {what}: {left} != {right}")


# ------------------------------------------------------------------ per stage


def check_papers(out: str | Path) -> list[str]:
    """read = written + rejected + merged_records; papers rows = written; rejects rows =
    rejected (see `paper_join.merge_shard`)."""
    c = stage_counts(out, "papers")
    if c is None:
        return [_no_stats("papers")]
    return [f"papers: {problem}" for problem in papers_checks.check_counts(c) + papers_checks.check_outputs(str(out), c)]


def check_text(out: str | Path) -> list[str]:
    """The stage's own checks of its counts and of the rows it wrote (`text.command.check_counts`
    and `check_outputs`: it refuses a run that fails one), then what it does not check itself:
    every papers/ row counted, and papers dropped for a shared abstract <= abstracts dropped as
    shared (abstracts_wrong.abstract_duplicate_across_dois)."""
    c = stage_counts(out, "text")
    if c is None:
        return [_no_stats("text")]
    # the stage's own checks (it refuses a run that fails one), then what it cannot see itself
    p: list[str] = [f"text: {problem}" for problem in text_checks.check_counts(c) + text_checks.check_outputs(str(out), c)]
    papers = c.get("papers", 0)
    _eq(p, "text", "papers counted = papers/ rows", papers, n_rows(Path(out) / "papers"))
    shared = c.get("documents.abstract_duplicate_across_dois", 0)
    if shared > c.get("abstracts_wrong.abstract_duplicate_across_dois", 0):
        p.append(f"text: {shared} papers dropped for a shared abstract, more than the abstracts dropped as shared")
    return p



def check_citations(out: str | Path) -> list[str]:
    """rows_read = sum of drop reasons + edges_kept (pipelines/citations.py docstring);
    input_lines = lines_parsed (no line lost between decompression and parsing);
    citations/ rows = edges_kept; documents_read = documents/ rows."""
    c = stage_counts(out, "citations")
    if c is None:
        return [_no_stats("citations")]
    p: list[str] = [f"citations: {problem}" for problem in citations_checks.check_counts(c)]
    _eq(p, "citations", "citations/ rows = edges_kept", n_rows(Path(out) / "citations"), c.get("edges_kept", 0))
    _eq(p, "citations", "documents_read = documents/ rows", c.get("documents_read", 0),
        n_rows(Path(out) / "documents"))
    return p


def check_split(out: str | Path) -> list[str]:
    """documents_read = no_link + papers_linked = documents/ rows; papers_linked = train +
    idt + odt = splits/ rows, each split's rows matching its counter."""
    c = stage_counts(out, "split")
    if c is None:
        return [_no_stats("split")]
    p: list[str] = [f"split: {problem}" for problem in split_checks.check_counts(c)]
    _eq(p, "split", "documents_read = documents/ rows", c.get("documents_read", 0), n_rows(Path(out) / "documents"))
    table = read_rows(Path(out) / "splits")
    rows = table.num_rows if table is not None else 0
    _eq(p, "split", "splits/ rows = papers_linked", rows, c.get("papers_linked", 0))
    if table is not None:
        col = table.column("split").to_pylist()
        per = {s: col.count(s) for s in SPLITS}
        for s in SPLITS:
            _eq(p, "split", f"splits/ rows with split={s}", per[s], c.get(s, 0))
        dois = table.column("doi").to_pylist()
        if len(set(dois)) != len(dois):
            p.append(f"split: {len(dois) - len(set(dois))} DOIs appear twice in splits/")
    return p


def check_pairs(out: str | Path) -> list[str]:
    """edges_read = citations/ rows = edges_unannotated + edges_split_ambiguous + edges_annotated; edges_annotated =
    dc_kept.* + dc_cross_split + dc_odt_en_en; for cc and bc, `r_pairs.<s>` = rows of
    pairs/r/split=<s> and `r_instances` = the sum of their supports (pairing.py docstring)."""
    c = stage_counts(out, "pairs")
    if c is None:
        return [_no_stats("pairs")]
    p: list[str] = [f"pairs: {problem}" for problem in pairs_checks.check_counts(c)]
    _eq(p, "pairs", "edges_read = citations/ rows", c.get("edges_read", 0), n_rows(Path(out) / "citations"))
    for relation in ("cc", "bc"):
        supports = _check_pair_folders(p, out, "pairs", relation, c)
        _eq(p, "pairs", f"{relation}_instances = sum of {relation} supports", c.get(f"{relation}_instances", 0),
            supports)
    return p


def _check_pair_folders(p: list[str], out: str | Path, stage: str, relation: str, c: Mapping[str, int]) -> int:
    """`<relation>_pairs.<s>` = rows of pairs/<relation>/split=<s>, no pair written twice;
    returns the sum of the supports written."""
    supports = 0
    for s in SPLITS:
        table = read_rows(Path(out) / "pairs" / relation / f"split={s}")
        rows = table.num_rows if table is not None else 0
        _eq(p, stage, f"pairs/{relation}/split={s} rows = {relation}_pairs.{s}", rows, c.get(f"{relation}_pairs.{s}", 0))
        if table is not None and rows:
            supports += sum(table.column("support").to_pylist())
            keys = list(zip(table.column("doi_a").to_pylist(), table.column("doi_b").to_pylist(), strict=True))
            if len(set(keys)) != len(keys):
                p.append(f"{stage}: {relation}/{s} has {len(keys) - len(set(keys))} duplicate pairs")
    return supports


def check_contexts(out: str | Path) -> list[str]:
    """The stage's own equations (`contexts.command.check_counts`), documents_read = rows of
    documents/, contexts_written = rows of contexts/, and for pairs/ccs: `ccs_pairs.<s>` = rows
    of pairs/ccs/split=<s>, `ccs_instances_kept` = the sum of their supports, no pair twice."""
    c = stage_counts(out, "contexts")
    if c is None:
        return [_no_stats("contexts")]
    p: list[str] = [f"contexts: {problem}" for problem in contexts_checks.check_counts(c)
                    + contexts_checks.check_outputs(str(out), c)]
    _eq(p, "contexts", "documents_read = documents/ rows", c.get("documents_read", 0), n_rows(Path(out) / "documents"))
    supports = _check_pair_folders(p, out, "contexts", "ccs", c)
    _eq(p, "contexts", "ccs_instances_kept = sum of ccs supports", c.get("ccs_instances_kept", 0), supports)
    return p


CHECKS = {
    "papers": check_papers,
    "text": check_text,
    "citations": check_citations,
    "split": check_split,
    "pairs": check_pairs,
    "contexts": check_contexts,
}


def check_build(out: str | Path, stages: Iterable[str] = STAGES) -> list[str]:
    """Every stage's reconciliation problems (empty list: the build reconciles)."""
    problems: list[str] = []
    for stage in stages:
        problems += CHECKS[stage](out)
    return problems


def records_lost(out: str | Path) -> int:
    """Sum of the absolute imbalances of the in = out + rejects (+ merges) equations; 0 for
    a build that lost nothing (used by the soak script's table)."""
    import re

    lost = 0
    for problem in check_build(out):
        # "what: 20,000 != 19,864" (an identity) or "folder/ holds 18,759 rows where the counts say 18,978"
        sides = re.search(r"([\d,]+) != ([\d,]+)$", problem) or re.search(r"holds ([\d,]+) rows .* say ([\d,]+)$", problem)
        lost += abs(int(sides[1].replace(",", "")) - int(sides[2].replace(",", ""))) if sides else 1
    return lost


# ------------------------------------------------------------------ determinism


def _canonical(value):
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes):
        return value.hex()
    return value


def table_digest(table: pa.Table, drop: Iterable[str] = ()) -> str:
    """SHA-256 of the table's rows, each serialized canonically, sorted (row order and file
    layout do not matter; contents and column names do)."""
    drop = set(drop)
    columns = sorted(n for n in table.column_names if n not in drop)
    lines = sorted(
        json.dumps(_canonical(row), sort_keys=True, ensure_ascii=False, default=str)
        for row in table.select(columns).to_pylist()
    )
    h = hashlib.sha256()
    h.update(json.dumps(columns).encode())
    for line in lines:
        h.update(line.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def parquet_folders(out: str | Path) -> list[str]:
    """Relative paths of every folder under `out` that holds Parquet part files."""
    out = Path(out)
    found = set()
    for dirpath, _dirs, files in os.walk(out):
        if any(f.endswith(".parquet") for f in files):
            found.add(os.path.relpath(dirpath, out))
    return sorted(found)


def output_digest(out: str | Path, volatile: Mapping[str, Iterable[str]] | None = None) -> dict[str, str]:
    """`{folder: content hash}` for every Parquet table of a build, plus `_stats/<stage>`
    counters (timings removed). Compare two of these for identical outputs."""
    volatile = VOLATILE_COLUMNS if volatile is None else volatile
    out = Path(out)
    digests: dict[str, str] = {}
    for folder in parquet_folders(out):
        table = read_rows(out / folder)
        top = folder.split(os.sep, 1)[0]
        digests[folder] = table_digest(table, volatile.get(top, ()) if table is not None else ())
    for stage in STAGES:
        c = stage_counts(out, stage)
        if c is not None:
            c = {k: v for k, v in c.items() if k not in VOLATILE_COUNTS}
            digests[f"_stats/{stage}"] = hashlib.sha256(json.dumps(c, sort_keys=True).encode()).hexdigest()
    return digests


def diff_digests(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """Readable differences between two `output_digest` results."""
    return [f"{k}: {a.get(k)} != {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
