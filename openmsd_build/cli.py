"""`openmsd-build` command line: one subcommand per stage, plus `run`, `sample`, `report`
and `inspect`.

Each stage subcommand is the `command` module of its package (listed in the stage registry,
`openmsd_build.core.stages`), exposing `add_arguments(parser)` and `run(args, beam_args)`.
Arguments the subcommand does not know are handed to Beam when Beam's own options classes
define them (`--runner DataflowRunner --project P`, either spelling); anything else is an
error naming the closest valid flag.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence

from openmsd_build.core import interrupts
from openmsd_build.core.errors import Parser, UserError
from openmsd_build.core.runner import stop_sampler_left_running
from openmsd_build.core.stages import STAGE_NAMES, STAGES

# subcommand -> (module, one-line help). Modules are imported lazily so `--help` is fast.
COMMANDS: dict[str, tuple[str, str]] = {
    "sample": ("openmsd_build.sample.command", "generate the embedded sample inputs (real formats)"),
    **{s.name: (s.command, s.help) for s in STAGES},
    "report": ("openmsd_build.report.command", "statistics tables, funnel and figures of a build"),
    "run": ("openmsd_build.run.command", "run every stage in order"),
    "inspect": ("openmsd_build.text.inspect", "show what the text stage extracts from one page or PDF"),
    "release": ("openmsd_build.release.command", "write an id-only release of a build (no text), with checksums"),
    "reconstruct": ("openmsd_build.release.reconstruct", "rebuild the text columns of an id-only release"),
    "export": ("openmsd_build.export.command", "export retrieval tasks and trainer pairs (BEIR, MTEB, HF datasets)"),
    "enrich": ("openmsd_build.enrich.command", "English summaries of non-English papers (chat / translation endpoints)"),
    "evaluate": ("openmsd_build.evaluate.command", "MAP and nDCG@10 on IDT / ODT retrieval (embeddings or BM25)"),
    "evaluate-pools": ("openmsd_build.evaluate.pools_command",
                       "large-pool citation recommendation (MDCR-style) and the typed benchmark"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI parser; only the chosen subcommand's module is imported (Beam is slow to
    import, and `openmsd-build --help` should answer at once)."""
    parser = Parser(
        prog="openmsd-build",
        description="Rebuild OpenMSD-style multilingual scientific-document datasets with Apache Beam.",
        epilog="Beam's own flags pass to Beam (e.g. --runner DataflowRunner --project P --region R); "
        "any other unknown flag is an error.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level (default WARNING)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            _module(module_name).add_arguments(p)
    return parser


def _module(name: str):
    return importlib.import_module(name)


def beam_flags() -> dict[str, object]:
    """Every flag Beam's own options classes define -> its argparse `nargs` (0: a switch,
    None: one value, "+"/"*"/"?": several or optional). Asked of Beam itself, so a flag is
    Beam's exactly when Beam would read it."""
    from apache_beam.options.pipeline_options import PipelineOptions

    parser = argparse.ArgumentParser(add_help=False)
    seen: set[type] = set()

    def walk(cls: type) -> None:
        for sub in cls.__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            try:
                sub._add_argparse_args(parser)  # type: ignore[attr-defined]
            except argparse.ArgumentError:
                pass  # a flag two options classes share
            walk(sub)

    walk(PipelineOptions)
    return {o: a.nargs for a in parser._actions for o in a.option_strings}


def split_beam_args(extra: Sequence[str], command_parser: argparse.ArgumentParser) -> list[str]:
    """The arguments the command did not know, as Beam flags in `--flag=value` form.

    Beam's own flags are accepted in both spellings (`--runner X` and `--runner=X`); any
    other flag, or a stray word, is a `UserError` naming the closest valid flag — a typo
    must never be ignored by a batch job that runs for hours."""
    import difflib

    known = beam_flags()
    out: list[str] = []
    i = 0
    while i < len(extra):
        arg = extra[i]
        name, eq, value = arg.partition("=")
        if not arg.startswith("--") or name not in known:
            own = [o for a in command_parser._actions for o in a.option_strings if o.startswith("--")]
            close = difflib.get_close_matches(name, own + list(known), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            what = "unknown flag" if arg.startswith("-") else "unexpected argument"
            raise UserError(f"{what} {arg!r}{hint} (`--help` lists the command's flags; Beam's own flags pass to Beam)")
        nargs = known[name]
        i += 1
        if eq or nargs == 0:
            out.append(arg)
            continue
        values: list[str] = []
        while i < len(extra) and not extra[i].startswith("--"):
            values.append(extra[i])
            i += 1
            if nargs in (None, "?"):
                break
        if not values and nargs not in ("?", "*"):
            raise UserError(f"Beam flag {name} needs a value")
        out += [f"{name}={v}" for v in values] or [name]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line (`sys.argv` when `argv` is None, as the `openmsd-build` program
    does); its exit code."""
    global _said_interrupted
    _said_interrupted = False
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(argv)
    ctrl_cs = interrupts.count()
    try:
        with interrupts.remembered():  # a Ctrl-C that something caught still counts
            code = _main(argv, command)
    except KeyboardInterrupt:
        # Ctrl-C at any moment (parsing, imports, the command's work): one line, no traceback
        return _interrupted(argv)
    except Exception as exc:
        # a Ctrl-C that reached us as another error: Beam re-raises one from inside a DoFn as
        # a RuntimeError ("KeyboardInterrupt [while running ...]"), which the stages'
        # `staging.stage_outputs` turn back but other commands' pipelines (release's) let
        # through; Python wraps one raised in a class body's `__set_name__` while a module
        # is imported (pymongo's dataclasses, as Beam loads) in a RuntimeError. Any error
        # after a Ctrl-C is taken as its consequence.
        if interrupts.was_interrupted(exc) or interrupts.count() != ctrl_cs:
            return _interrupted(argv)
        raise
    if interrupts.count() != ctrl_cs:  # a Ctrl-C that something caught and carried on after
        return _interrupted(argv)
    return code


def _command_of(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _no_interrupt_tracebacks(record: logging.LogRecord) -> bool:
    """Whether a log record is shown: not one that logs a Ctrl-C with its traceback. Beam logs
    every exception leaving a DoFn (`KeyboardInterrupt [while running 'EnumerateBC/...']` and
    the whole stack) before it reaches `main`, which then says the one line of `_interrupted`;
    also when the Ctrl-C is only the cause of what was logged (Beam re-raises it as a
    RuntimeError, and logs that where it closes its workers: "Error closing worker_handler")."""
    exc = record.exc_info
    return not (exc and exc[0] is not None and (issubclass(exc[0], KeyboardInterrupt)
                                                 or interrupts.was_interrupted(exc[1])))


_said_interrupted = False  # whether `_interrupted` told the user (one line, once)
_program = False  # run as the program (`console_main`), not called by a test or an application


def _fetches_live(argv: Sequence[str]) -> bool:
    """Whether the command line fetches pages from the web (`--fetch http`, as `run`, `text`
    and `reconstruct` take it, abbreviated or not): only those pages are archived under
    OUT/warc/ for a re-run to resume from; a replay of archives or local files fetches none."""
    for k, arg in enumerate(argv):
        name, equals, value = arg.partition("=")
        if len(name) >= 4 and "--fetch".startswith(name):
            return (value if equals else (argv[k + 1] if k + 1 < len(argv) else "")) == "http"
    return False


def _interrupted(argv: Sequence[str]) -> int:
    """The message and exit code of a Ctrl-C (130, as a shell reports SIGINT) for the command
    line `argv` (it names the command and says whether pages were fetched); a Beam state
    sampler the Ctrl-C left running is stopped first, or the exit would wait for it. Deaf to
    a second Ctrl-C while it does so (the command is stopping already): that one raised here,
    in the middle of the message or of stopping the sampler. Run as the program, a Ctrl-C after
    it ends the process at once (see `console_main`)."""
    global _said_interrupted
    interrupts.acknowledge()  # stopping: no Ctrl-C needs sending again
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    if previous is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        stop_sampler_left_running()
        command = _command_of(argv)
        name = f"openmsd-build {command}" if command in COMMANDS else "openmsd-build"
        again = "a re-run resumes (fetched pages are kept in OUT/warc/)" if _fetches_live(argv) else "run it again"
        if not _said_interrupted:
            print(f"{name}: interrupted; the previous outputs are intact; {again}", file=sys.stderr, flush=True)
        _said_interrupted = True
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, signal.SIG_DFL if _program else previous)
    return 130


def _check_local_out(out: str, local: str) -> None:
    """A `UserError` for a local `--out` no folder can be made at (each was a traceback from
    the first folder made under it): a file, a link to nothing, or a path under a file."""
    if os.path.exists(local) and not os.path.isdir(local):
        raise UserError(f"--out {out} is a file, not a folder (a build's output root is a folder)")
    if os.path.islink(local) and not os.path.exists(local):  # FileNotFoundError
        from openmsd_build.core.errors import short_repr

        raise UserError(f"--out {out} is a link to {short_repr(os.readlink(local))}, which does not exist: make that "
                        "folder or give another --out")
    above = os.path.dirname(os.path.normpath(local))  # `--out notes.txt/build`: NotADirectoryError
    while above and not os.path.lexists(above):
        above = os.path.dirname(above)
    if above and not os.path.isdir(above):
        raise UserError(f"--out {out} lies under {above}, which is a file, not a folder")


def _main(argv: list[str], command: str | None) -> int:
    """`main` once the command line is known."""
    if argv[:1] == ["--version"]:
        _print_version()
        return 0
    parser = build_parser(command if command in COMMANDS else None)
    args, extra = parser.parse_known_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(_no_interrupt_tracebacks)
    new_out: str | None = None  # an --out folder this command creates
    code = 1  # until the command returns: a Ctrl-C, a SystemExit or a crash is a failure too
    try:
        module = _module(COMMANDS[args.command][0])
        beam_args = split_beam_args(extra, _subparser(parser, args.command))
        if hasattr(args, "out_positional"):
            from openmsd_build.core.inputs import resolve_out

            resolve_out(args)
        # Hand the Beam flags to Beam's FileSystems before any command touches a path, so
        # `gs://` inputs and outputs work for every command, pipelines or not.
        from openmsd_build.core.runner import (
            check_cloud_credentials,
            check_local_worker_pool,
            check_runner,
            pipeline_options,
        )

        check_cloud_credentials(argv, beam_args)
        check_local_worker_pool(beam_args)
        check_runner(pipeline_options(beam_args))
        out = getattr(args, "out", None)
        local = out.removeprefix("file://") if isinstance(out, str) else None
        if local is not None and "://" not in local:
            _check_local_out(out, local)
            new_out = None if os.path.lexists(local) else local
        if args.command in STAGE_NAMES:
            from openmsd_build.core import progress, resources
            from openmsd_build.core.inputs import refuse_inputs_in_outputs

            refuse_inputs_in_outputs(args.out, [args.command],
                                     (v for k, v in vars(args).items() if k not in ("out", "out_positional",
                                                                                     "warc_prefix")),
                                     [args.warc_prefix] if getattr(args, "warc_prefix", None) else [])

            with resources.measured() as figures, progress.reporting(args.command):
                result = module.run(args, beam_args)
            from openmsd_build.core.notices import announce
            from openmsd_build.core.stage_inputs import record_inputs
            from openmsd_build.core.stages import record_provenance

            record_provenance(args.out, args.command, {"resources": figures})
            record_inputs(args.out, args.command, args)
            announce(args.out, args.command)
        else:
            result = module.run(args, beam_args)
        code = int(result) if isinstance(result, int) else 0
    except UserError as exc:
        print(f"openmsd-build {args.command}: error: {exc}", file=sys.stderr)
        code = 2
    finally:
        if code and new_out is not None:
            _remove_empty_folders(new_out)
    return code


def _remove_empty_folders(folder: str) -> None:
    """Remove `folder`, an --out this command created and then failed in, if nothing but empty
    folders is in it: a refused first run must not leave an empty build behind for the next
    command to take for one. Only `os.rmdir`, bottom-up, so a file (written meanwhile, or in a
    folder the walk could not read) or a link is never removed, and neither is its folder."""
    if os.path.islink(folder) or not os.path.isdir(folder):
        return
    for root, _dirs, _files in os.walk(folder, topdown=False):  # links to folders are not walked
        try:
            os.rmdir(root)
        except OSError:
            pass


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    return parser


class _VersionAction(argparse.Action):
    """`--version` before the command (`openmsd-build -v --version`; first on the line,
    `main` answers it before any parsing). The version is looked up only when asked:
    `importlib.metadata` takes ~0.03 s to import, which every command paid before the text
    stage could start its extractors."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):  # noqa: A002, ANN001
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
        _print_version()
        parser.exit()


def _print_version() -> None:
    print(f"openmsd-build {_version()}")  # to stdout, as argparse's own version action


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("openmsd-build")
    except PackageNotFoundError:
        return "unknown (not installed)"


def console_main() -> None:
    """The `openmsd-build` program. When the reader of its output goes away (`inspect --json
    | head`), it stops quietly with status 1, as Unix tools do, instead of a traceback; the
    output is flushed here so that the error is raised where it can be caught.

    A Ctrl-C is one line and status 130 (`main`); a second one that lands while the first is
    handled, or one as the command returns, too. Once the command has returned, the
    interpreter only winds down (threads joined, `atexit`: the pools' processes stopped, the
    gRPC and pymongo resources Beam loaded): a Ctrl-C there printed "Exception ignored in
    atexit callback" and a traceback, so from then on SIGINT has its default action, which
    ends the process at once with the status a shell reports as 130."""
    global _program
    _program = True
    _tolerant_stdout()
    try:
        code = main()
        _ctrl_c_ends_at_once()
        sys.stdout.flush()
    except KeyboardInterrupt:
        code = _interrupted(sys.argv[1:])
    except BrokenPipeError:
        if not _stdout_gone():  # another pipe broke (a child's, a socket): a real error
            raise
        # nothing more can be written: point stdout at /dev/null so that closing it at exit
        # does not raise the same error again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    _ctrl_c_ends_at_once()
    sys.exit(code)


def _tolerant_stdout() -> None:
    """Standard output that writes a character its encoding lacks as a backslash escape
    instead of raising, when that encoding is not a Unicode one (`PYTHONIOENCODING=ascii`, a
    Latin-1 locale, a Windows console). Why: the commands print the data's own text (the
    title of the page `inspect` read, a file name, a language) and their own (an em dash);
    under such an encoding one of them stopped the command with a UnicodeEncodeError and a
    traceback after its work was done. A UTF-8 stream is left as it is (standard error already
    escapes: Python gives it `backslashreplace`)."""
    stream = sys.stdout
    encoding = getattr(stream, "encoding", None)
    try:
        unicode = encoding is not None and codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        unicode = False
    if not unicode and hasattr(stream, "reconfigure"):
        stream.reconfigure(errors="backslashreplace")


def _ctrl_c_ends_at_once() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll reports an error
    condition on the writing end then)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no poll, or stdout closed or replaced
        return False


if __name__ == "__main__":
    console_main()
