"""`sample` and the stages against a damaged or mistyped `--out` / `--papers`: one line,
exit 2, and a sample cut short can be written again."""

from __future__ import annotations

from pathlib import Path

import pytest

from openmsd_build.cli import main
from openmsd_build.sample import generator


@pytest.mark.parametrize("command", ["sample", "papers"])
def test_an_out_that_links_to_nothing_is_one_line(tmp_path: Path, capsys, command: str) -> None:
    """Every folder made under a dangling link raised FileNotFoundError (a traceback)."""
    (tmp_path / "out").symlink_to(tmp_path / "gone")
    (tmp_path / "u.jsonl").write_text('{"doi": "10.1000/a"}\n')
    argv = {"sample": ["sample", "--out", str(tmp_path / "out"), "--papers", "3"],
            "papers": ["papers", "--out", str(tmp_path / "out"), "--unpaywall", str(tmp_path / "u.jsonl")]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a link to" in err[0] and "does not exist" in err[0]
    assert not (tmp_path / "gone").exists()
