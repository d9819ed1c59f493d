"""A damaged or hostile build (a truncated or foreign part file, a column of the wrong type,
a `_stats/*.json` that is not JSON, a list, nested past the recursion limit, too large) stops
`report` and `export` with exit 2 and one line naming the file, not a traceback; a damaged
optional file (an evaluation result, a recipe export's stats) is skipped with a warning
naming it. Before, each of these printed polars', Arrow's or json's traceback (exit 1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main
from openmsd_build.core import parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.core.stats import read_json, read_stage_counts
from openmsd_build.evaluate.testing import write_tiny_build

PAIRS_STATS = {"stage": "pairs", "counts": {"dc_kept.idt": 1, "cc_pairs.idt": 1}, "built_from": {}}


@pytest.fixture()
def build(tmp_path: Path) -> Path:
    """The tiny build with the pairs stage's stats (export's `refuse_empty` reads them)."""
    out = tmp_path / "build"
    write_tiny_build(str(out))
    (out / "_stats").mkdir()
    (out / "_stats" / "pairs.json").write_text(json.dumps(PAIRS_STATS))
    return out


def _first_part(out: Path, folder: str) -> Path:
    return Path(sorted(parquet_io.list_parts(str(out / folder)))[0])


def _retype(path: Path, column: str, values: pa.Array) -> None:
    table = pq.read_table(path)
    pq.write_table(table.set_column(table.schema.get_field_index(column), column, values), path)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# name -> (damage, the file the error must name)
PARQUET_DAMAGE = {
    "documents_truncated": (lambda out: _truncate(_first_part(out, "documents")), "documents"),
    "documents_empty": (lambda out: _first_part(out, "documents").write_bytes(b""), "documents"),
    "documents_garbage": (lambda out: _first_part(out, "documents").write_bytes(b"not parquet at all"), "documents"),
    "documents_language_int": (lambda out: _retype(_first_part(out, "documents"), "language",
                                                   pa.array(range(pq.read_metadata(_first_part(out, "documents"))
                                                                  .num_rows), pa.int64())), "documents"),
    "pairs_truncated": (lambda out: _truncate(_first_part(out, "pairs/dc/split=idt")), "pairs/dc/split=idt"),
    "citations_doi_int": (lambda out: _retype(_first_part(out, "citations"), "citing_doi",
                                              pa.array([1] * pq.read_metadata(_first_part(out, "citations")).num_rows,
                                                       pa.int64())), "citations"),
}

STATS_DAMAGE = {
    "not_json": b"{not json",
    "binary": bytes(range(128, 256)) * 4,
    "a_list": b"[1, 2, 3]",
    "deeply_nested": b"[" * 100_000 + b"]" * 100_000,
    "counts_a_list": json.dumps({**PAIRS_STATS, "counts": [1, 2]}).encode(),
    "built_from_an_int": json.dumps({**PAIRS_STATS, "built_from": 5}).encode(),
}


def _one_error_line(err: str, command: str, names: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith(f"openmsd-build {command}: error:")]
    assert len(lines) == 1, err
    assert names in lines[0] and len(lines[0]) < 600
    return lines[0]


@pytest.mark.parametrize("command", ["report", "export"])
@pytest.mark.parametrize("damage", sorted(PARQUET_DAMAGE))
def test_damaged_parquet_is_one_line_naming_the_file(build, tmp_path, capsys, command, damage) -> None:
    hurt, folder = PARQUET_DAMAGE[damage]
    hurt(build)
    argv = [command, str(build)] if command == "report" else [command, "--out", str(build), "--dest",
                                                               str(tmp_path / "x")]
    assert main(argv) == 2
    line = _one_error_line(capsys.readouterr().err, command, str(build / folder / "part-00000-of-00001.parquet"))
    assert ("int64, expected string" in line) == damage.endswith("_int")


@pytest.mark.parametrize("command", ["report", "export"])
@pytest.mark.parametrize("damage", sorted(STATS_DAMAGE))
def test_damaged_stats_is_one_line_naming_the_file(build, tmp_path, capsys, command, damage) -> None:
    (build / "_stats" / "pairs.json").write_bytes(STATS_DAMAGE[damage])
    argv = [command, str(build)] if command == "report" else [command, "--out", str(build), "--dest",
                                                               str(tmp_path / "x")]
    assert main(argv) == 2
    _one_error_line(capsys.readouterr().err, command, str(build / "_stats" / "pairs.json"))


def test_a_stats_file_past_the_cap_is_refused_unread(build, monkeypatch) -> None:
    """A planted 300 MB stats file cost the report 29 s and 1.8 GB: past the cap it is not parsed."""
    from openmsd_build.core import stats

    monkeypatch.setattr(stats, "MAX_JSON_BYTES", 1 << 20)
    path = build / "_stats" / "pairs.json"
    path.write_text(json.dumps({**PAIRS_STATS, "junk": "x" * (2 << 20)}))
    with pytest.raises(UserError, match=r"pairs\.json: is larger than 1 MB"):
        read_stage_counts(str(build), "pairs")
    assert read_json(str(path), limit=4 << 20)["stage"] == "pairs"


def test_nan_and_huge_counts_are_left_out_of_the_report(build, capsys) -> None:
    (build / "_stats" / "pairs.json").write_text(
        json.dumps({**PAIRS_STATS, "counts": {"a": float("nan"), "b": 10**400, "c": "x", "d": None, "e": 3}}))
    assert main(["report", str(build)]) == 0
    counts = json.loads((build / "report" / "stats.json").read_text())["stage_counts"]["pairs"]
    assert counts == {"b": 10**400, "e": 3}


EVALUATION = {"model": "m", "split": "idt", "k": 10,
              "relations": {"dc": {"all": {"map": 0.5, "ndcg@10": 0.5, "queries": 3}}}}

# file under the build -> a document with the right top-level keys but the wrong shape inside
OPTIONAL_DAMAGE = {
    "evaluation_relation_a_list": ("evaluation/m_idt.json", {**EVALUATION, "relations": {"dc": [1, 2]}}),
    "evaluation_relations_a_list": ("evaluation/m_idt.json", {**EVALUATION, "relations": ["dc"]}),
    "evaluation_metric_a_string": ("evaluation/m_idt.json",
                                   {**EVALUATION, "relations": {"dc": {"all": {"map": "x", "queries": "y"}}}}),
    "evaluation_not_json": ("evaluation/m_idt.json", "{"),
    "large_pool_without_recall_k": ("evaluation/large_pool/idt.json", {"split": "idt", "runs": [], "relations": ["dc"]}),
    "large_pool_runs_a_string": ("evaluation/large_pool/idt.json",
                                 {"split": "idt", "runs": "x", "relations": ["dc"], "recall_k": 5}),
    "recipe_table_an_int": ("export/recipes/r/stats.json", {"recipe": {"name": "r"}, "table": 5}),
    "recipe_not_json": ("export/recipes/r/stats.json", "{"),
}


@pytest.mark.parametrize("damage", sorted(OPTIONAL_DAMAGE))
def test_a_damaged_optional_result_is_skipped_with_a_warning(build, capsys, damage) -> None:
    """evaluation/, large-pool results and recipe stats are "skipped, not fatal": only their
    top-level keys were checked, so a list inside one crashed the report's renderer."""
    relative, doc = OPTIONAL_DAMAGE[damage]
    path = build / relative
    os.makedirs(path.parent, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    assert main(["report", str(build)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if str(path) in line and line.endswith("; skipped")]
    stats = json.loads((build / "report" / "stats.json").read_text())
    assert stats["evaluation"] is None and stats["large_pool"] is None and stats["training_recipes"] == []


def test_a_sound_optional_result_is_still_shown(build, capsys) -> None:
    (build / "evaluation").mkdir()
    (build / "evaluation" / "m_idt.json").write_text(json.dumps(EVALUATION))
    assert main(["report", str(build)]) == 0
    assert "skipped" not in capsys.readouterr().err
    stats = json.loads((build / "report" / "stats.json").read_text())
    assert stats["evaluation"]["m"]["idt"]["relations"]["dc"]["all"]["map"] == 0.5


def test_check_parts_accepts_the_types_a_reader_treats_alike(tmp_path) -> None:
    """Other widths of one family (int32 for int64, large_string for string) are not damage."""
    from openmsd_build.schemas import tables

    path = tmp_path / "part-00000-of-00001.parquet"
    pq.write_table(pa.table({"citing_doi": pa.array(["a"], pa.large_string()), "cited_doi": pa.array([None])}), path)
    parquet_io.check_parts([str(path)], tables.CITATIONS)
    pq.write_table(pa.table({"citing_doi": pa.array([["a"]])}), path)
    with pytest.raises(UserError, match=r"column .citing_doi. is list<\w+: string>, expected string"):
        parquet_io.check_parts([str(path)], tables.CITATIONS)
    with pytest.raises(UserError, match="has no 'cited_doi' column"):
        parquet_io.check_parts([str(path)], required=["cited_doi"])
