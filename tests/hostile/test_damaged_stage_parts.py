"""A stage's input part that is empty or not Parquet (a copy cut short, a file put there by
hand) is one line naming it, exit 2, before any pipeline runs: the readers inside a Beam
worker (`beam_io.read_parts`: split, pairs, contexts; the text stage's papers) failed with a
worker's traceback that named neither the stage nor, readably, the file."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main
from openmsd_build.core.beam_io import read_parts
from openmsd_build.core.errors import UserError

DAMAGE = {"empty": b"", "not_parquet": b"garbage\n"}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_part_is_named_before_the_pipeline(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "splits"
    folder.mkdir()
    pq.write_table(pa.table({"doi": ["10.1/a"]}), folder / "part-00000-of-00002.parquet")
    bad = folder / "part-00001-of-00002.parquet"
    bad.write_bytes(DAMAGE[damage])
    with pytest.raises(UserError, match=f"^{bad}: is not a readable Parquet file"):
        read_parts(None, str(folder), ["doi"], "Splits")  # refused before the pipeline is touched


def test_the_text_stage_names_a_damaged_papers_part(tmp_path: Path, capsys) -> None:
    papers = tmp_path / "build" / "papers"
    papers.mkdir(parents=True)
    (papers / "part-00000-of-00001.parquet").write_bytes(b"garbage\n")
    assert main(["text", "--out", str(tmp_path / "build"), "--fetch", "none"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "part-00000-of-00001.parquet: is not a readable Parquet file" in err[0], err
