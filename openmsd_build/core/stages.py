"""The stage registry: the one list of the build's stages, in build order.

Each entry says what the stage reads (upstream stages), which folders of the output root it
owns (replaced when it runs), the schema of its main table and the module of its command.
The CLI, `run`, the layout, the report and the reconciliation checks read this list, so
adding or renaming a stage is one entry here plus its package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str
    command: str  # module with add_arguments(parser) and run(args, beam_args)
    help: str
    upstream: tuple[str, ...]  # stages whose outputs this one reads
    outputs: tuple[str, ...]  # folders of the output root this stage writes (besides rejects/ and _stats/)
    schema: str  # name in schemas.tables of the main output table


STAGES: tuple[Stage, ...] = (
    Stage("papers", "openmsd_build.papers.command", "stage 1: join Unpaywall, Crossref, OpenAlex by DOI",
          (), ("papers",), "PAPERS"),
    Stage("text", "openmsd_build.text.command", "stage 2: fetch, extract and clean text, detect language",
          ("papers",), ("documents", "fetch"), "DOCUMENTS"),
    Stage("citations", "openmsd_build.citations.command", "stage 3: OpenCitations edges between kept papers",
          ("text",), ("citations",), "CITATIONS"),
    Stage("split", "openmsd_build.split.command", "stage 4: train / IDT / ODT split",
          ("text", "citations"), ("splits",), "SPLITS"),
    Stage("pairs", "openmsd_build.pairs.command", "stage 5: DC / CC / BC pairs per split",
          ("citations", "split"), ("pairs", "negatives"), "PAIRS"),
)

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
_BY_NAME = {s.name: s for s in STAGES}


def stage(name: str) -> Stage:
    """The registry entry of `name` (KeyError names the known stages)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown stage {name!r}; stages are {', '.join(STAGE_NAMES)}") from None


def downstream(name: str) -> tuple[str, ...]:
    """Every stage that reads `name`'s outputs, directly or through another stage, in build order."""
    found: set[str] = {name}
    for s in STAGES:
        if any(u in found for u in s.upstream):
            found.add(s.name)
    return tuple(s.name for s in STAGES if s.name in found and s.name != name)
