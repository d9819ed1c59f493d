"""`openmsd-build` command line: one subcommand per stage, plus `run`, `sample`, `report`
and `inspect`.

Each stage subcommand is the `command` module of its package (listed in the stage registry,
`openmsd_build.core.stages`), exposing `add_arguments(parser)` and `run(args, beam_args)`.
Arguments the subcommand does not know are handed to Beam unchanged (e.g.
`--runner=DataflowRunner --project=...`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from openmsd_build.core.errors import UserError
from openmsd_build.core.stages import STAGES

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
    "evaluate": ("openmsd_build.evaluate.command", "MAP and nDCG@10 on IDT / ODT retrieval (embeddings or BM25)"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI parser; only the chosen subcommand's module is imported (Beam is slow to
    import, and `openmsd-build --help` should answer at once)."""
    parser = argparse.ArgumentParser(
        prog="openmsd-build",
        description="Rebuild OpenMSD-style multilingual scientific-document datasets with Apache Beam.",
        epilog="Unknown --flags are passed to Beam (e.g. --runner=DataflowRunner --project=P --region=R).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level (default WARNING)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            _module(module_name).add_arguments(p)
    return parser


def _module(name: str):
    return importlib.import_module(name)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    args, beam_args = parser.parse_known_args(argv)
    stray = [a for a in beam_args if not a.startswith("-")]
    if stray:
        parser.error(f"unexpected arguments: {' '.join(stray)}")
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    module = _module(COMMANDS[args.command][0])
    # Hand the Beam flags to Beam's FileSystems before any command touches a path, so
    # `gs://` inputs and outputs work for every command, pipelines or not.
    from openmsd_build.core.runner import pipeline_options

    pipeline_options(beam_args)
    try:
        result = module.run(args, beam_args)
    except UserError as exc:
        print(f"openmsd-build {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
