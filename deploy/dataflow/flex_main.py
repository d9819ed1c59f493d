"""Flex template entry point: one template launch runs one `openmsd-build` command.

Dataflow passes the template parameters as `--name=value` flags (plus its own pipeline
options). `--command` chooses the subcommand (papers, text, citations, split, pairs,
contexts, release, reconstruct); `--build_root` becomes the command's positional argument where it
has one (release OUT, reconstruct RELEASE) and `--out` otherwise. Glob parameters may hold
several globs separated by `;`. Everything else goes to the command unchanged, so Beam and
Dataflow options pass through as they do on the command line.
"""

from __future__ import annotations

import sys

from openmsd_build.cli import main
from openmsd_build.papers.sources.registry import SOURCES

# Source flags come from the source registry, so a new source is a template parameter too.
REPEATABLE = (*(s.flag for s in SOURCES), "--opencitations", "--meta", "--allow-network")
POSITIONAL = {"release": "--build_root", "reconstruct": "--release_root"}
# Template parameter names cannot hold "-": these are our flags spelled with "_".
HYPHENATED = {"--rate_per_host": "--rate-per-host", "--host_shards": "--host-shards"}


def translate(argv: list[str]) -> list[str]:
    command, rest, positional = None, [], None
    for arg in argv:
        name, _, value = arg.partition("=")
        if name in HYPHENATED:
            name, arg = HYPHENATED[name], f"{HYPHENATED[name]}={value}"
        if name == "--command":
            command = value
        elif name in ("--build_root", "--release_root"):
            positional = value
        elif name in REPEATABLE and ";" in value:
            rest += [f"{name}={v}" for v in value.split(";") if v]
        else:
            rest.append(arg)
    if not command:
        raise SystemExit("flex template: --command is required")
    head = [command] + ([positional] if positional and command in POSITIONAL else [])
    if positional and command not in POSITIONAL:
        rest = ["--out", positional, *rest]
    return head + rest


if __name__ == "__main__":
    sys.exit(main(translate(sys.argv[1:])))
