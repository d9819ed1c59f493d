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
    # report refused --top 0 in build_report; --rate-per-host 0, -1 or nan gave no queue time
    ("report", "--top", "0", "must be 1 or more, not 0"),
    ("report", "--rate-per-host", "0", "must be above 0, not 0"),
    ("report", "--rate-per-host", "nan", "must be above 0, not nan"),
    # inspect: --max-bytes -5 was a traceback, 0 read one byte and called it too large;
    # --max-chars 0 or below cut every field to nothing or to all but its last characters
    ("inspect", "--max-bytes", "-5", "must be 1 or more, not -5"),
    ("inspect", "--max-bytes", "0", "must be 1 or more, not 0"),
    ("inspect", "--max-chars", "-3", "must be 1 or more, not -3"),
    # sample, export, export --recipe, evaluate checked them inside their run
    ("sample", "--papers", "0", "must be 1 or more, not 0"),
    ("sample", "--papers", "10000000000", "10,000,000,000 is more than 100,000,000 (a typo? the plan alone takes 8 "
     "bytes a paper of memory before anything is written)"),
    ("export", "--negatives-per-positive", "0", "must be 1 or more, not 0"),
    ("export", "--rows-per-partition", "0", "must be 1 or more, not 0"),
    ("evaluate", "--k", "0", "must be 1 or more, not 0"),
    # enrich: --n-tokens was refused after the demo stub had started, --concurrency and
    # --retries only with an endpoint, --part-rows in run_enrich; --max-retry-wait -1 never
    # (the first retry's sleep raised ValueError)
    ("enrich", "--n-tokens", "0", "must be 1 or more, not 0"),
    ("enrich", "--concurrency", "0", "must be 1 or more, not 0"),
    ("enrich", "--retries", "-1", "must be 0 or more, not -1"),
    ("enrich", "--max-retry-wait", "-1", "must be 0 or more, not -1"),
    ("enrich", "--max-retry-wait", "nan", "must be 0 or more, not nan"),
    ("enrich", "--part-rows", "0", "must be 1 or more, not 0"),
]


def command_line(command: str, out: str, page: str) -> list[str]:
    """The command with what it needs before its flags: OUT (`report` takes it as a word),
    and `inspect` a page."""
    return {"inspect": ["inspect", page], "report": ["report", out]}.get(command, [command, "--out", out])


@pytest.mark.parametrize(("command", "flag", "value", "said"), CASES)
def test_a_number_out_of_range_is_a_usage_error_when_parsed(tmp_path, capsys, command, flag, value, said):
    out = tmp_path / "build"
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>A paper</title></head><body><p>Text.</p></body></html>")
    refused_when_parsed([*command_line(command, str(out), str(page)), flag, value], flag, said, capsys)
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
