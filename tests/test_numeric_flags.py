"""Every command's numeric flags are checked when the command line is parsed: a number out of
range is a usage error (exit 2, one `argument --FLAG: ...` line) before any input is read or
any output touched, never a check inside the command's run (`core.inputs.at_least`,
`counts_at_least`, `number_from`). Checked in a run, a wrong number was found only after the
work before it: `run --max-degree 1` built papers, text, citations and split, then stopped at
pairs."""

from __future__ import annotations

import pytest

from openmsd_build.cli import main


def refused_when_parsed(argv: list[str], flag: str, said: str, capsys) -> None:
    """`argv` stops in argparse: exit 2 and one error line, `argument FLAG: SAID`."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2, argv
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert errors == [f"openmsd-build {argv[0]}: error: argument {flag}: {said}"], err
    assert "Traceback" not in err, err


CASES = [
    # pairs checked them in run_pairs, with one message for the three flags
    ("pairs", "--shards", "0", "must be 1 or more, not 0"),
    ("pairs", "--max-degree", "1", "must be 2 or more, not 1"),
    ("pairs", "--hard-negatives", "-1", "must be 0 or more, not -1"),
    # split, citations and contexts checked them in run_split / run_citations / run_contexts
    ("split", "--top-k", "0", "must be 1 or more, not 0"),
    ("split", "--idt-fraction", "1", "must be 0 or more and below 1, not 1"),
    ("split", "--odt-fraction", "-0.1", "must be 0 or more and below 1, not -0.1"),
    ("split", "--odt-fraction", "nan", "must be 0 or more and below 1, not nan"),
    ("split", "--shards", "0", "must be 1 or more, not 0"),
    ("citations", "--shards", "0", "must be 1 or more, not 0"),
    ("contexts", "--shards", "-1", "must be 1 or more, not -1"),
    # papers checked --parse-workers in run_papers; --max-reject-rate was never checked: -1
    # refused every run after it had read everything, nan none, 50 (for 50 %) took any share
    ("papers", "--parse-workers", "-1", "must be 0 or more, not -1"),
    ("papers", "--max-reject-rate", "-1", "must be from 0 to 1, not -1"),
    ("papers", "--max-reject-rate", "nan", "must be from 0 to 1, not nan"),
    ("citations", "--max-reject-rate", "50", "must be from 0 to 1, not 50"),
]


@pytest.mark.parametrize(("command", "flag", "value", "said"), CASES)
def test_a_number_out_of_range_is_a_usage_error_when_parsed(tmp_path, capsys, command, flag, value, said):
    out = tmp_path / "build"
    refused_when_parsed([command, "--out", str(out), flag, value], flag, said, capsys)
    assert not out.exists()


def test_run_refuses_a_later_stage_flag_before_the_first_stage(tmp_path, capsys):
    """`run --max-degree 1` built papers, text, citations and split (every stage before pairs)
    and only then stopped with pairs' message; the run's flags are the stages' own types, so
    it is a usage error before the first stage."""
    out = tmp_path / "build"
    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x", "title": "T"}\n')
    refused_when_parsed(["run", "--out", str(out), "--unpaywall", str(snapshot), "--fetch", "none",
                         "--max-degree", "1"], "--max-degree", "must be 2 or more, not 1", capsys)
    assert not out.exists()
