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


# --------------------------------------------------------------------------- every command

# numbers any whole number of which is fine: a seed is only a seed
ANY_NUMBER = {("sample", "--seed"), ("evaluate-pools", "--seed")}
CHECKED_TYPES = {"at_least.<locals>.parse", "counts_at_least.<locals>.parse", "number_from.<locals>.parse",
                 "paper_count"}


def _flags():
    """(command, flag, argparse action) of every option of every command."""
    import argparse

    from openmsd_build.cli import COMMANDS, build_parser

    for command in COMMANDS:
        parser = build_parser(command)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        for action in sub._actions:
            flag = next((o for o in action.option_strings if o.startswith("--")), None)
            if flag and flag != "--help":
                yield command, flag, action


def test_every_numeric_flag_of_every_command_is_checked_when_parsed():
    """A plain `type=int` or `type=float` takes any number, so its range could only be checked
    in the run (or not at all: `--max-reject-rate -1`, `inspect --max-bytes -5`); every number
    is one of `core.inputs`' types but a seed's, and no number comes without a type."""
    plain, untyped = [], []
    for command, flag, action in _flags():
        if (command, flag) in ANY_NUMBER:
            continue
        if action.type in (int, float):
            plain.append(f"{command} {flag}")
        elif action.type is None and isinstance(action.default, int | float) and not isinstance(action.default, bool) \
                and action.nargs != 0:
            untyped.append(f"{command} {flag}")
    assert plain == [] and untyped == []


def test_every_numeric_flag_says_its_default_in_its_help():
    """`contexts --shards` (16, as README says) and the other stages' `--shards`, and
    `evaluate-pools --seed`, gave their range but not the value used when left out."""
    silent = [f"{command} {flag}" for command, flag, action in _flags()
              if isinstance(action.default, int | float) and not isinstance(action.default, bool)
              and action.nargs != 0 and "default" not in (action.help or "")]
    assert silent == []


def _out_of_range(parse) -> str:
    """A value `parse` (one of `CHECKED_TYPES`) refuses: one under its minimum, or nan."""
    name = getattr(parse, "__qualname__", "")
    if name == "paper_count":
        return "0"
    if name.startswith("number_from"):
        return "nan"
    cells = dict(zip(parse.__code__.co_freevars, (c.cell_contents for c in parse.__closure__ or ()), strict=True))
    return str(cells["minimum"] - 1)


def test_every_checked_flag_of_every_command_refuses_out_of_range_before_anything(capsys):
    """For every command and every flag of a checked type: a value out of range stops the
    command line in argparse (exit 2, one line naming the flag), whatever else is missing."""
    checked = 0
    for command, flag, action in _flags():
        if getattr(action.type, "__qualname__", None) not in CHECKED_TYPES:
            continue
        value = _out_of_range(action.type)
        with pytest.raises(SystemExit) as stop:
            main([command, flag, value])
        assert stop.value.code == 2, (command, flag)
        errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
        assert len(errors) == 1 and errors[0].startswith(f"openmsd-build {command}: error: argument {flag}: "), \
            (command, flag, errors)
        checked += 1
    assert checked > 50  # every command's: 65 when written
