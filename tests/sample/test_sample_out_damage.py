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


def test_papers_past_the_limit_are_refused_before_the_earlier_sample_is_removed(tmp_path: Path, capsys) -> None:
    """`--papers 99999999999999999999` raised OverflowError, and `--papers 10000000000` asked
    for tens of GB of memory, after the sample already in `--out` had been deleted."""
    out = tmp_path / "s"
    assert main(["sample", "--out", str(out), "--papers", "5", "--no-warc"]) == 0
    before = (out / "manifest.json").read_bytes()
    capsys.readouterr()
    for papers in ("99999999999999999999", "10000000000", "0"):  # usage errors, when parsed
        with pytest.raises(SystemExit) as stop:
            main(["sample", "--out", str(out), "--papers", papers])
        assert stop.value.code == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        said = "must be 1 or more, not 0" if papers == "0" else f"{int(papers):,} is more than 100,000,000"
        assert len(errors) == 1 and errors[0].startswith(f"openmsd-build sample: error: argument --papers: {said}"), \
            errors
    assert (out / "manifest.json").read_bytes() == before


def test_a_sample_cut_short_is_written_again(tmp_path: Path, capsys) -> None:
    """A sample interrupted after the earlier one was removed (Ctrl-C, a full disk) left its
    folders and `.tmp-sample` without a manifest, and `sample` then refused the folder for ever
    ("is not a sample but holds unpaywall, ..., .tmp-sample")."""
    out = tmp_path / "s"
    for name in ("unpaywall", "crossref", "opencitations", ".tmp-sample"):
        (out / name).mkdir(parents=True)
    (out / ".tmp-sample" / "unpaywall-00000.gz").write_bytes(b"partial")
    assert generator.foreign_entries(str(out)) == []
    assert main(["sample", "--out", str(out), "--papers", "5", "--no-warc"]) == 0
    assert generator.is_sample(str(out)) and not (out / ".tmp-sample").exists()
    # someone's own folders of those names, with no trace of a sample, are still refused
    other = tmp_path / "other"
    (other / "crossref").mkdir(parents=True)
    assert generator.foreign_entries(str(other)) == ["crossref"]


@pytest.mark.parametrize("command", ["sample", "papers"])
def test_an_out_under_a_file_is_one_line(tmp_path: Path, capsys, command: str) -> None:
    """`--out notes.txt/build` raised NotADirectoryError (a traceback) when the first folder
    was made under the file."""
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "u.jsonl").write_text('{"doi": "10.1000/a"}\n')
    out = str(tmp_path / "notes.txt" / "build" / "deeper")
    argv = {"sample": ["sample", "--out", out, "--papers", "3"],
            "papers": ["papers", "--out", out, "--unpaywall", str(tmp_path / "u.jsonl")]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "which is a file, not a folder" in err[0]


def test_a_sample_into_a_build_or_its_stage_folders_is_refused(tmp_path: Path, capsys) -> None:
    """`sample --out` a build root put the sample's warc/ where the build keeps its fetched
    pages (a live fetch's resume store); inside a stage's folder the next run cleared it."""
    build = tmp_path / "build"
    (build / "_stats").mkdir(parents=True)
    (build / "_stats" / "papers.json").write_text("{}")
    (build / "papers").mkdir()
    assert main(["sample", "--out", str(build), "--papers", "3"]) == 2
    assert "holds a build (_stats/)" in capsys.readouterr().err
    assert main(["sample", "--out", str(build / "papers" / "s"), "--papers", "3"]) == 2
    assert f"is inside {build / 'papers'}, a stage's output folder" in capsys.readouterr().err
    assert sorted(p.name for p in build.iterdir()) == ["_stats", "papers"] and not any((build / "papers").iterdir())
    # a folder of the user's that only holds an empty `_stats/` is no build: its papers/ is theirs
    mine = tmp_path / "mine"
    (mine / "_stats").mkdir(parents=True)
    assert main(["sample", "--out", str(mine / "papers" / "s"), "--papers", "3"]) == 0
    # a link into a stage folder is inside it
    (tmp_path / "link").symlink_to(build / "papers")
    assert main(["sample", "--out", str(tmp_path / "link" / "s"), "--papers", "3"]) == 2
