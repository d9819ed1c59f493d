"""What a user reads on the command line: every flag of every command has a help text,
`run --help` names every --fetch form, a Ctrl-C at any moment is one line (no traceback),
the last progress line of a finished stage says 100%, and a bundle that archived nothing
leaves no empty WARC file."""

from __future__ import annotations

import argparse
import io

import pytest

from openmsd_build import cli
from openmsd_build.core import progress


def _parsers(parser: argparse.ArgumentParser, path: str):
    """`parser` and every subparser under it, with their command paths."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


@pytest.mark.parametrize("command", [None, *cli.COMMANDS])
def test_every_flag_of_every_command_has_a_help_text(command):
    parser = cli.build_parser(command)
    undocumented = []
    for path, sub in _parsers(parser, "openmsd-build"):
        if command is not None and path != f"openmsd-build {command}" and path != "openmsd-build":
            continue
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            text = action.help
            if not text or text == argparse.SUPPRESS or not str(text).strip():
                undocumented.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert undocumented == []


def test_run_help_lists_every_fetch_form(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for form in ("none", "http", "warc:GLOB", "cc-index:GLOB", "local:FOLDER", "local:FOLDER@MANIFEST"):
        assert form in text, form


def test_ctrl_c_while_the_command_starts_is_one_line(tmp_path, monkeypatch, capsys):
    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "split_beam_args", interrupted)  # while Beam and the command load
    code = cli.main(["text", "--out", str(tmp_path), "--fetch", "http"])
    err = capsys.readouterr().err
    assert code == 130
    assert err.startswith("openmsd-build text: interrupted; the previous outputs are intact")
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_ctrl_c_while_parsing_is_one_line(monkeypatch, capsys):
    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["papers", "--out", "x"]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_finished_stage_progress_ends_at_100_percent():
    stream = io.StringIO()
    with progress.reporting("text", interval=3600, stream=stream):
        # three tasks planned, two URLs done: one URL was planned by two papers
        progress.add("text", {"planned.pdf": 3, "fetch.ok": 1, "fetch.error.not_in_archive": 1})
    last = stream.getvalue().strip().splitlines()[-1]
    assert "2 / 2 URLs (100%)" in last, last


def test_interrupted_stage_progress_keeps_its_share():
    stream = io.StringIO()
    with pytest.raises(KeyboardInterrupt), progress.reporting("text", interval=3600, stream=stream):
        progress.add("text", {"planned.pdf": 4, "fetch.ok": 1})
        raise KeyboardInterrupt
    assert "1 / 4 URLs (25%)" in stream.getvalue()


def test_a_bundle_that_archives_nothing_leaves_no_file(tmp_path):
    from openmsd_build.text.beam import WholeRecordFile

    empty = WholeRecordFile(str(tmp_path / "warc" / "a.warc.gz"))
    empty.write(b"half a record")  # cut short: dropped
    empty.close()
    assert not (tmp_path / "warc").exists()
    kept = WholeRecordFile(str(tmp_path / "warc" / "b.warc.gz"))
    kept.write(b"a record")
    kept.flush()
    kept.close()
    assert (tmp_path / "warc" / "b.warc.gz").read_bytes() == b"a record"


@pytest.mark.parametrize("argv", [["papers", "--out", "o", "--unpaywall", "u.jsonl", "--shards", "-2"],
                                  ["text", "--out", "o", "--fetch", "none", "--shards", "-1"],
                                  ["release", "o", "--shards", "-3"]])
def test_a_negative_shard_count_is_a_usage_error(argv, capsys):
    """`--shards -3` wrote files named part--0001-of--0003.parquet."""
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert "argument --shards: must be 0 or more" in capsys.readouterr().err


def test_a_ctrl_c_inside_a_pipeline_is_not_logged_with_its_traceback():
    """Beam logs every exception leaving a DoFn with its stack, a Ctrl-C too ("KeyboardInterrupt
    [while running 'EnumerateBC/...']" and a traceback above the command's one line). Records
    carrying a KeyboardInterrupt are not shown; other errors are."""
    import logging
    import sys

    def record(exc: BaseException) -> logging.LogRecord:
        try:
            raise exc
        except BaseException:  # noqa: BLE001 - the record of whatever was raised
            return logging.LogRecord("apache_beam.runners.common", logging.ERROR, __file__, 1,
                                     "KeyboardInterrupt [while running 'X']", None, sys.exc_info())

    assert not cli._no_interrupt_tracebacks(record(KeyboardInterrupt()))
    wrapped = RuntimeError("KeyboardInterrupt [while running 'ReadSourceFiles/ParDo(ReadSourceFile)']")
    assert not cli._no_interrupt_tracebacks(record(wrapped))  # as Beam logs it where it closes its workers
    assert cli._no_interrupt_tracebacks(record(ValueError("a real failure")))
    assert cli._no_interrupt_tracebacks(logging.LogRecord("x", logging.WARNING, __file__, 1, "plain", None, None))


def test_a_missing_upstream_folder_names_the_stage_that_writes_it(tmp_path, capsys):
    """`contexts` on a build without splits/ said 'run the previous stage first': the previous
    stage is pairs, which does not write splits/. The message names the stage that does."""
    from openmsd_build.evaluate.testing import write_tiny_build

    out = tmp_path / "build"
    write_tiny_build(str(out))
    import shutil

    shutil.rmtree(out / "splits")
    (out / "_stats").mkdir()
    (out / "_stats" / "text.json").write_text("{}")
    assert cli.main(["contexts", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"no Parquet files under {out / 'splits'}; run the split stage first" in err, err


_CTRL_C_AS_A_SAMPLER_STARTS = r'''
import sys
import threading

from apache_beam.runners.worker import statesampler

base_start = statesampler.statesampler_impl.StateSampler.start


def start(self):
    # Beam's own order (tracked thread, current tracker, the thread started), then the Ctrl-C
    # lands before `started` is set: the window a terminal's Ctrl-C can hit
    self.tracked_thread = threading.current_thread()
    statesampler.set_current_tracker(self)
    base_start(self)
    raise KeyboardInterrupt


statesampler.StateSampler.start = start
from openmsd_build import cli

sys.exit(cli.main(sys.argv[1:]))
'''


def test_a_ctrl_c_as_a_bundle_starts_exits_instead_of_hanging(tmp_path):
    """A Ctrl-C between Beam starting a bundle's sampler thread and marking it started left the
    thread running, and the command hung at exit after printing "interrupted"."""
    import subprocess
    import sys

    inputs = tmp_path / "inputs"
    assert cli.main(["sample", "--out", str(inputs), "--papers", "20", "--seed", "3"]) == 0
    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_A_SAMPLER_STARTS, "run", "--inputs", str(inputs),
                           "--out", str(tmp_path / "build"), "--fetch", "none"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr[-3000:]
    assert "interrupted; the previous outputs are intact" in done.stderr
    assert "Traceback" not in done.stderr


_CTRL_C_AS_BEAM_CLOSES_ITS_WORKERS = r'''
import os
import signal
import sys
import time

from openmsd_build.papers import beam as papers_beam


def teardown(self):
    # a terminal's Ctrl-C as Beam closes its workers after the last bundle (where the papers
    # stage's pool waits for its processes): Beam logs what the DoFn raised and carries on
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)


papers_beam._PooledDoFn.teardown = teardown
from openmsd_build import cli

sys.exit(cli.main(sys.argv[1:]))
'''


def test_a_ctrl_c_that_beam_catches_still_stops_the_stage_and_keeps_the_outputs(tmp_path):
    """A Ctrl-C in a DoFn's teardown (Beam closing its workers at the end of the pipeline)
    reached Beam as a RuntimeError, which it logged with a traceback ("Error closing
    worker_handler") and ignored: the stage swapped its new outputs in and the command exited
    0. A stage that saw a Ctrl-C is now not swapped in, and the command says the one line."""
    import subprocess
    import sys

    inputs, out = tmp_path / "inputs", tmp_path / "build"
    assert cli.main(["sample", "--out", str(inputs), "--papers", "20", "--seed", "3"]) == 0
    papers = ["papers", "--out", str(out), "--unpaywall", str(inputs / "unpaywall" / "*"),
              "--crossref", str(inputs / "crossref" / "*")]
    assert cli.main(papers) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_BEAM_CLOSES_ITS_WORKERS, *papers, "--shards", "3"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Error closing" not in done.stderr, done.stderr[-3000:]
    # the stage's last progress line, then the one line of the Ctrl-C
    assert done.stderr.strip().splitlines()[-1] == ("openmsd-build papers: interrupted; the previous outputs are "
                                                    "intact; run it again"), done.stderr[-3000:]
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


_CTRL_C_AS_THE_INTERPRETER_WINDS_DOWN = r'''
import atexit
import os
import signal
import sys
import time

from openmsd_build import cli


def late():
    os.kill(os.getpid(), signal.SIGINT)  # a terminal's Ctrl-C while the interpreter winds down
    time.sleep(1)


atexit.register(late)
sys.argv[1:] = ["--version"]
cli.console_main()
'''


def test_a_ctrl_c_after_the_command_returned_is_no_traceback():
    """Once the command returned, the interpreter joins threads and runs `atexit` (the pools'
    processes, gRPC and pymongo resources Beam loaded): a Ctrl-C there printed "Exception
    ignored in atexit callback" and a KeyboardInterrupt traceback. It now ends the process."""
    import signal
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_THE_INTERPRETER_WINDS_DOWN], capture_output=True,
                          text=True, timeout=60)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == -signal.SIGINT, (done.returncode, done.stderr[-3000:])


_A_SECOND_CTRL_C = r'''
import os
import signal
import sys
import time

from openmsd_build import cli


def first(*_args, **_kwargs):
    raise KeyboardInterrupt  # the first Ctrl-C, while the command line is parsed


def second():
    os.kill(os.getpid(), signal.SIGINT)  # the second, while the first one is handled
    time.sleep(0.5)


cli.build_parser = first
cli.stop_sampler_left_running = second
sys.argv[1:] = ["split", "--out", "x"]
cli.console_main()
'''


def test_a_second_ctrl_c_while_the_first_is_handled_is_still_one_line():
    """A second Ctrl-C (an impatient user) while the first was handled raised in the middle of
    the handler, and its traceback was printed instead of (or after) the one line."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _A_SECOND_CTRL_C], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr[-3000:]
    assert done.stderr.strip() == "openmsd-build split: interrupted; the previous outputs are intact; run it again", \
        done.stderr[-3000:]


_CTRL_C_IN_A_RELEASE_PIPELINE = r'''
import os
import signal
import sys
import time

from openmsd_build.release import beam as release_beam

base = release_beam.WriteIdsShard.process


def process(self, element):
    os.kill(os.getpid(), signal.SIGINT)  # a terminal's Ctrl-C inside a DoFn: Beam wraps it
    time.sleep(1)
    yield from base(self, element)


release_beam.WriteIdsShard.process = process
from openmsd_build import cli

sys.exit(cli.main(sys.argv[1:]))
'''


def test_a_ctrl_c_inside_the_pipeline_of_a_command_that_is_no_stage_is_one_line(tmp_path):
    """Beam re-raises a Ctrl-C from inside a DoFn as a RuntimeError ("KeyboardInterrupt [while
    running ...]"). The stages turn it back into an interrupt (`staging.stage_outputs`); the
    pipelines of other commands (release's) let it through: a traceback and status 1."""
    import subprocess
    import sys

    from openmsd_build.evaluate.testing import write_tiny_build

    write_tiny_build(str(tmp_path / "build"))
    done = subprocess.run([sys.executable, "-c", _CTRL_C_IN_A_RELEASE_PIPELINE, "release", str(tmp_path / "build"),
                           "--to", str(tmp_path / "release")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr[-3000:]
    assert done.stderr.strip() == "openmsd-build release: interrupted; the previous outputs are intact; run it again", \
        done.stderr[-3000:]


def _split_running_10_s(preamble: str, first: str) -> str:
    """A script (`python -c SCRIPT OUT`) that runs `split --out OUT` as the program does, its
    stage replaced by 10 s of work that starts with `first` (indented as a function body);
    `preamble` holds what `first` uses."""
    return f'''
import os
import signal
import sys
import time

from openmsd_build import cli
from openmsd_build.split import command
{preamble}

def run(*_args, **_kwargs):
{first}
    started = time.monotonic()
    while time.monotonic() - started < 10:  # the stage's long work
        time.sleep(0.05)
    print("the stage ran to its end", file=sys.stderr)
    return {{}}


command.run = run
sys.argv[1:] = ["split", "--out", sys.argv[1]]
cli.console_main()
'''


def _split_stops_at_once(script: str, tmp_path) -> None:
    """`script` (`_split_running_10_s`) ends with 130 and the one line within 8 s, not after
    its stage's 10 s."""
    import subprocess
    import sys
    import time

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "build")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr[-3000:]
    assert done.stderr.strip() == "openmsd-build split: interrupted; the previous outputs are intact; run it again", \
        done.stderr[-3000:]
    assert time.monotonic() - started < 8


_CTRL_C_INSIDE_A_FINALIZER = _split_running_10_s('''

class Finalized:
    def __del__(self):
        # a terminal's Ctrl-C handled while a finalizer runs (a weakref callback, the GC): the
        # KeyboardInterrupt cannot leave it
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
''', "    Finalized()")


def test_a_ctrl_c_inside_a_finalizer_stops_the_command_at_once_without_a_traceback(tmp_path):
    """Python cannot raise a KeyboardInterrupt out of a weakref callback, `__del__` or the GC:
    a Ctrl-C handled there printed "Exception ignored in: <function WeakSet...>" and a
    traceback, and was lost (the command ran on). It is sent again and stops the command."""
    _split_stops_at_once(_CTRL_C_INSIDE_A_FINALIZER, tmp_path)


_CTRL_C_AS_A_CLASS_BODY_RUNS = r'''
import os
import signal
import sys
import time

from openmsd_build import cli


class Field:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGINT)  # a terminal's Ctrl-C while a class body is set up
        time.sleep(1)


load = cli._module


def module(name):
    class Imported:  # as a module the command imports defines its classes (pymongo's, as Beam loads)
        field = Field()

    return load(name)


cli._module = module
sys.argv[1:] = ["export", "--out", sys.argv[1]]
cli.console_main()
'''


def test_a_ctrl_c_that_python_wraps_as_the_command_loads_is_one_line(tmp_path):
    """Python wraps an exception raised in a descriptor's `__set_name__` in a RuntimeError
    ("Error calling __set_name__ on 'Field' instance 'clientId' in 'OIDCIdPInfo'"): a Ctrl-C
    while the command's modules were imported (Beam importing pymongo) was a traceback and
    status 1, before the command's own handler was in place."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_A_CLASS_BODY_RUNS, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 130, done.stderr[-3000:]
    assert done.stderr.strip() == "openmsd-build export: interrupted; the previous outputs are intact; run it again", \
        done.stderr[-3000:]


_CTRL_C_THAT_A_LIBRARY_SWALLOWS = _split_running_10_s("", '''    try:
        os.kill(os.getpid(), signal.SIGINT)  # a terminal's Ctrl-C ...
        time.sleep(1)
    except BaseException:  # ... that a library takes for something else and goes on after
        pass''')


def test_a_ctrl_c_that_something_swallows_still_stops_the_command_at_once(tmp_path):
    """A KeyboardInterrupt that a library caught (an import guard taking a wrapped one for a
    missing dependency; Beam logging one from a teardown) let the command run on: 1 in ~200
    Ctrl-Cs of pairs and of run in their first second ran the whole pipeline, 6-16 s, and only
    then said "interrupted". One nobody handles half a second later is sent again."""
    _split_stops_at_once(_CTRL_C_THAT_A_LIBRARY_SWALLOWS, tmp_path)


@pytest.mark.parametrize(("argv", "resumes"), [
    (["text", "--out", "B", "--fetch", "http"], True),
    (["run", "--fetch=http", "--out", "B"], True),
    (["reconstruct", "--fetc", "http"], True),  # argparse takes an abbreviated flag
    (["text", "--out", "B", "--fetch", "warc:A/*.warc.gz"], False),  # a replay fetches nothing
    (["run", "--inputs", "S", "--out", "B"], False),  # run replays the sample's WARC by default
    (["reconstruct", "--fetch", "local:F"], False),
    (["text", "--out", "B"], False),  # text's default is --fetch none
    (["split", "--out", "B"], False),
])
def test_ctrl_c_message_names_the_fetched_pages_only_when_pages_are_fetched(argv, resumes, capsys, monkeypatch):
    """'fetched pages are kept in OUT/warc/' is said only of a live fetch: a `--fetch warc:`
    replay or a local-files build keeps nothing there for a re-run to resume from."""
    monkeypatch.setattr(cli, "_said_interrupted", False)  # said once a process
    assert cli._interrupted(argv) == 130
    said = capsys.readouterr().err.strip()
    again = "a re-run resumes (fetched pages are kept in OUT/warc/)" if resumes else "run it again"
    assert said == f"openmsd-build {argv[0]}: interrupted; the previous outputs are intact; {again}"


def test_a_usage_error_is_its_line_and_where_the_help_is(capsys):
    """argparse printed the command's whole usage above the error: 24 lines for `run`, the
    flag's name buried. Now the error line, then where the help is; exit 2 as before."""
    from openmsd_build.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "--out", "x", "--max-degree", "0"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "openmsd-build run: error: argument --max-degree: must be 2 or more, not 0",
        "  (see openmsd-build run --help)"]
    with pytest.raises(SystemExit):
        main(["no-such-command"])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith("openmsd-build: error: argument COMMAND: invalid choice"), err


def test_a_refused_first_run_leaves_no_empty_build(tmp_path, capsys):
    """`papers` on an empty input is refused; it left the --out folder it had created, empty,
    for the next command to take for a build. A folder that was there before is left alone."""
    from openmsd_build.cli import main

    empty = tmp_path / "u.jsonl"
    empty.write_text("")
    out = tmp_path / "build"
    assert main(["papers", "--out", str(out), "--unpaywall", str(empty)]) == 2
    assert "held no records" in capsys.readouterr().err
    assert not out.exists()
    out.mkdir()
    assert main(["papers", "--out", str(out), "--unpaywall", str(empty)]) == 2
    assert out.is_dir()


def test_an_interrupted_first_run_leaves_no_empty_build(tmp_path, monkeypatch):
    """The same for a Ctrl-C (or any exception) before the command wrote a file; a file in the
    folder keeps it, whoever wrote it."""
    import importlib
    import os
    from types import SimpleNamespace

    real = importlib.import_module(cli.COMMANDS["papers"][0])

    def interrupted(args, _beam_args, write=None):
        os.makedirs(os.path.join(args.out, "_tmp", "papers"))  # as staging does
        if write:
            with open(os.path.join(args.out, write), "w") as fh:
                fh.write("x")
        raise KeyboardInterrupt

    for write, kept in ((None, False), ("notes.txt", True)):
        fake = SimpleNamespace(add_arguments=real.add_arguments,
                               run=lambda args, beam_args, w=write: interrupted(args, beam_args, w))
        monkeypatch.setattr(cli, "_module", lambda name, fake=fake: fake)
        out = tmp_path / f"build-{kept}"
        empty = tmp_path / "u.jsonl"
        empty.write_text("")
        try:
            cli._main(["papers", "--out", str(out), "--unpaywall", str(empty)], "papers")
        except KeyboardInterrupt:
            pass
        assert out.exists() == kept
        if kept:
            assert (out / "notes.txt").exists() and not (out / "_tmp" / "papers").exists()


def test_a_runner_beam_does_not_know_or_refuses_is_one_line_before_any_stage(tmp_path, capsys):
    """`--runner=DirectRuner` (a typo) and Dataflow without its options were tracebacks from
    inside the first stage's run (`run` had printed "== papers" and begun)."""
    from openmsd_build.cli import main
    from openmsd_build.core.errors import UserError
    from openmsd_build.core.runner import check_runner, pipeline_options

    with pytest.raises(UserError, match="^--runner DirectRuner: Unexpected pipeline runner"):
        check_runner(pipeline_options(["--runner=DirectRuner"]))
    with pytest.raises(UserError, match="^--runner DataflowRunner needs --project, --region, --temp_location"):
        check_runner(pipeline_options(["--runner=DataflowRunner"]))
    with pytest.raises(UserError, match="^--runner DataflowRunner needs --temp_location"):
        check_runner(pipeline_options(["--runner=DataflowRunner", "--project=p", "--region=r"]))
    # offline and at once: Beam's own validator would probe (or create) the temp bucket
    check_runner(pipeline_options(["--runner=DataflowRunner", "--project=p", "--region=r", "--temp_location=gs://b/t"]))
    check_runner(pipeline_options(["--runner=FlinkRunner"]))
    check_runner(pipeline_options([]))  # the local runner: nothing to check
    assert main(["split", "--out", str(tmp_path / "b"), "--runner=DirectRuner"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--runner DirectRuner: Unexpected pipeline runner" in err[0], err
