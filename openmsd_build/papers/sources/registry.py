"""The source registry: every metadata snapshot the papers stage can read.

One entry per source: its name (the `--<name>` flag of `papers`, `run` and `reconstruct`,
and the value of `papers.sources`), the flag's help, how its files are laid out (JSON
Lines, or JSON documents holding a list of records under `list_keys`), the record parser,
and its precedence in the merge (`ranks`: field -> rank, lower wins; `"*"` for every field
not named). The merge tables, the CLI flags and the Dataflow template are generated from
this list, so adding a source (Semantic Scholar, OpenAIRE, ...) is one reader module, one
entry here and its tests.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Source:
    name: str
    help: str
    parser: str  # "module:function" turning one decoded record into a projected dict
    line_based: bool  # JSON Lines (one record a line) rather than JSON documents
    list_keys: tuple[tuple[str, ...], ...] = ()  # key paths of a document's record list ({"items": [...]})
    ranks: Mapping[str, int] = field(default_factory=dict)  # merge precedence, lower wins

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def rank(self, field_name: str) -> int:
        return self.ranks.get(field_name, self.ranks.get("*", 99))

    def parse_function(self) -> Callable[[Any], dict]:
        import importlib

        module, _, function = self.parser.partition(":")
        return getattr(importlib.import_module(module), function)


SOURCES: tuple[Source, ...] = (
    Source(
        "unpaywall",
        "Unpaywall snapshot JSON Lines (gzip or plain); repeatable",
        "openmsd_build.papers.sources.unpaywall:parse_unpaywall",
        line_based=True,
        ranks={"*": 2, "publisher": 1, "license": 0, "is_oa": 0, "urls": 0},
    ),
    Source(
        "crossref",
        "Crossref public data file (*.json.gz with {items:[...]}), JSON Lines or REST exports; repeatable",
        "openmsd_build.papers.sources.crossref:parse_crossref",
        line_based=False,
        list_keys=(("items",), ("message", "items")),
        ranks={"*": 0, "license": 2, "is_oa": 2, "urls": 2},
    ),
    Source(
        "openalex",
        "optional OpenAlex works snapshot (JSON Lines); repeatable",
        "openmsd_build.papers.sources.openalex:parse_openalex",
        line_based=False,
        list_keys=(("results",),),
        ranks={"*": 1, "publisher": 2, "license": 1, "is_oa": 1, "urls": 1},
    ),
)

SOURCE_NAMES: tuple[str, ...] = tuple(s.name for s in SOURCES)
_BY_NAME = {s.name: s for s in SOURCES}


def source(name: str) -> Source:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; sources are {', '.join(SOURCE_NAMES)}") from None


def precedence(field_name: str) -> tuple[str, ...]:
    """Source names in the order the merge prefers them for `field_name`."""
    return tuple(s.name for s in sorted(SOURCES, key=lambda s: (s.rank(field_name), s.name)))


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """One repeatable `--<source> GLOB` flag per registered source."""
    for s in SOURCES:
        parser.add_argument(s.flag, dest=s.name, action="extend", nargs="+", default=[], metavar="GLOB", help=s.help)


def source_globs(args: argparse.Namespace) -> dict[str, list[str]]:
    """`{source: [glob, ...]}` from parsed flags, every registered source present."""
    return {s.name: list(getattr(args, s.name, None) or []) for s in SOURCES}


def source_argv(globs: Mapping[str, Sequence[str]]) -> list[str]:
    """The inverse of `source_globs`: command-line flags for the given globs."""
    argv: list[str] = []
    for s in SOURCES:
        for glob in globs.get(s.name) or ():
            argv += [s.flag, glob]
    return argv
