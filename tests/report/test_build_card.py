"""The build's own dataset card (`OUT/README.md`, written by `report`): every table's
schema and row count, and every config it lists loads with `datasets` as counted."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
from test_report import ALL, _build

from openmsd_build.export.hf_dataset import parse_configs
from openmsd_build.report.command import build_report


def test_build_card_lists_every_table_and_datasets_loads_each(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    out = tmp_path / "build"
    _build(out, ALL)
    build_report(str(out))
    card = (out / "README.md").read_text(encoding="utf-8")
    configs = parse_configs(card)
    assert {"papers", "fetch", "documents", "citations", "splits", "pairs-dc"} <= set(configs)
    for folder in ("papers", "documents", "citations"):
        rows = sum(pq.ParquetFile(p).metadata.num_rows for p in (out / folder).glob("*.parquet"))
        assert f"| `{folder}` | `{folder}/*.parquet` |" in card and f"| {rows:,} |" in card
    assert "- `documents`" in card and "  - `abstracts`:" in card  # schemas
    assert "pl.read_parquet(" in card and "duckdb.sql(" in card and "datasets.load_dataset(" in card
    for name, files in configs.items():
        ds = datasets.load_dataset(str(out), name, cache_dir=str(tmp_path / "cache"))
        for split, pattern in files.items():
            want = sum(pq.ParquetFile(p).metadata.num_rows for p in Path(out).glob(pattern))
            assert ds[split].num_rows == want > 0, (name, split)


def test_a_readme_of_someone_elses_is_kept(tmp_path, capsys):
    """`report` (and so every `run`) wrote the build's card over any `OUT/README.md`: a user's
    notes kept in the build folder were lost. A README that does not begin as our cards do is
    kept, the card goes to `report/dataset_card.md` and a warning says so; our own card is
    rewritten in place."""
    out = tmp_path / "build"
    _build(out, ALL)
    (out / "README.md").write_text("my notes on this build\n")
    build_report(str(out))
    assert (out / "README.md").read_text() == "my notes on this build\n"
    assert parse_configs((out / "report" / "dataset_card.md").read_text(encoding="utf-8"))
    assert "is not a card this tool wrote: kept as it is" in capsys.readouterr().err
    (out / "README.md").unlink()
    build_report(str(out))
    first = (out / "README.md").read_text(encoding="utf-8")
    build_report(str(out))
    assert (out / "README.md").read_text(encoding="utf-8") == first and parse_configs(first)
    assert "not a card" not in capsys.readouterr().err
