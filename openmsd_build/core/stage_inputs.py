"""The input files each stage read, recorded in its `_stats/<stage>.json` (`inputs`).

The papers stage records its snapshot files itself (with their source). For the others this
lists, after the stage ran, what it read: the files its flags named (OpenCitations dumps,
WARC archives, an index extract, a local folder's manifest) and the Parquet parts of the
upstream stages' folders, so a `_stats` file alone says what a stage was built from.
"""

from __future__ import annotations

import argparse

from openmsd_build.core import parquet_io
from openmsd_build.core.stages import stage as stage_entry


def sized_inputs(paths: list[str], source: str) -> list[dict]:
    """`paths` as input rows `{"source", "path", "bytes"}`, each size read from its filesystem
    (None for a file gone since the stage read it)."""
    from apache_beam.io.filesystems import FileSystems

    out = []
    for path in paths:
        try:
            size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
        except Exception:  # noqa: BLE001 - a file gone since the stage read it: listed without a size
            size = None
        out.append({"source": source, "path": path, "bytes": size})
    return out


def globbed_inputs(patterns: list[str], what: str, source: str) -> list[dict]:
    """The files `patterns` match as input rows, with the sizes the one listing found."""
    from openmsd_build.core.inputs import expand_globs

    return [{"source": source, "path": path, "bytes": size} for path, size in expand_globs(patterns, what)]


def flag_inputs(stage: str, args: argparse.Namespace) -> list[dict]:
    """The files the stage's own flags named (what it read besides upstream outputs): the
    stage's command module says, through its `flag_inputs(args)` when it has one (core
    imports no stage; the registry names the module)."""
    import importlib

    module = importlib.import_module(stage_entry(stage).command)
    getter = getattr(module, "flag_inputs", None)
    return list(getter(args)) if getter is not None else []


def stage_inputs(out: str, stage: str, args: argparse.Namespace) -> list[dict]:
    """Every input file of `stage` (flag inputs, then upstream Parquet parts)."""
    files = flag_inputs(stage, args)
    for upstream in stage_entry(stage).upstream:
        for folder in stage_entry(upstream).outputs:
            parts = parquet_io.list_parts(parquet_io.join_path(out, folder))
            files += [{"source": f"{upstream}/{folder}", "path": p, "bytes": None} for p in parts]
    return files


def record_inputs(out: str, stage: str, args: argparse.Namespace) -> None:
    """Write `inputs` into `_stats/<stage>.json` unless the stage recorded them itself."""
    from openmsd_build.core.stages import read_stage_stats
    from openmsd_build.core.stats import update_stage_stats

    stats = read_stage_stats(out, stage)
    if stats is None or "inputs" in stats:
        return
    update_stage_stats(out, stage, {"inputs": stage_inputs(out, stage, args)})
