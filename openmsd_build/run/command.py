"""`openmsd-build run`: every stage in order, each exactly as its own subcommand runs it.

Wiring only: this builds each stage's command-line arguments from the run's options and
calls the stage's `run`, so `run` and the per-stage commands cannot drift apart. The
report is written at the end and its headline table printed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from openmsd_build.core import layout, parquet_io, progress, resources
from openmsd_build.core.errors import Parser, UserError
from openmsd_build.core.inputs import expand_globs
from openmsd_build.core.notices import announce, warn
from openmsd_build.core.paths import UnsafePath, confined_path
from openmsd_build.core.stage_inputs import record_inputs
from openmsd_build.core.stages import (
    DERIVED_FOLDERS,
    STAGES,
    derived_present,
    downstream,
    is_built,
    present_outputs,
    record_provenance,
    stale_stages,
)
from openmsd_build.core.stages import stage as stage_entry
from openmsd_build.papers.sources.registry import SOURCES, add_source_arguments, source_argv, source_globs
from openmsd_build.text.command import FETCH_HELP

# (stage, module) in build order, from the stage registry.
STAGE_MODULES = tuple((s.name, s.command) for s in STAGES)
STAGE_MODULES_INDEX = {name: i for i, (name, _) in enumerate(STAGE_MODULES)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of the build (local path or gs://)")
    parser.add_argument("--inputs", metavar="DIR",
                        help="a folder written by `openmsd-build sample` (reads its manifest.json)")
    add_source_arguments(parser)
    parser.add_argument("--opencitations", action="extend", nargs="+", default=[], metavar="GLOB",
                        help="OpenCitations CSV files, globs or folders (COCI, Index or OMID-only; .csv, .csv.gz, "
                             ".zip); repeatable (default: the sample's with --inputs)")
    parser.add_argument("--meta", "--opencitations-meta", dest="opencitations_meta", action="extend", nargs="+",
                        default=[],
                        metavar="GLOB", help="OpenCitations Meta CSV, needed for OMID-only citation dumps")
    parser.add_argument("--fetch", default=None,
                        help=f"{FETCH_HELP} (default: the sample's WARC with --inputs, else none)")
    parser.add_argument("--from-stage", choices=[s for s, _ in STAGE_MODULES], default="papers",
                        help="skip the stages before this one (their outputs must exist)")
    parser.add_argument("--to-stage", choices=[s for s, _ in STAGE_MODULES], default=STAGE_MODULES[-1][0],
                        help=f"stop after this stage (default {STAGE_MODULES[-1][0]}, the last)")
    parser.add_argument("--no-report", action="store_true", help="do not write the report at the end")
    parser.add_argument("--plan", action="store_true",
                        help="dry run: print the inputs found, the stages to run, the outputs they replace and the "
                        "fetch queue's estimated time, and run nothing")
    add_stage_arguments(parser)


class _Recorder:
    """Stands in for an argparse parser to record a stage's `add_argument` calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def add_argument(self, *names: str, **kwargs) -> None:
        self.calls.append((names, kwargs))


def stage_flags(stage: str) -> list[tuple[tuple, dict]]:
    """The `(option strings, add_argument kwargs)` of one stage's command."""
    recorder = _Recorder()
    importlib.import_module(dict(STAGE_MODULES)[stage]).add_arguments(recorder)
    return recorder.calls


def _dest(names: tuple, kwargs: dict) -> str:
    long = next((n for n in names if n.startswith("--")), names[0])
    return kwargs.get("dest") or long.lstrip("-").replace("-", "_")


def add_stage_arguments(parser: argparse.ArgumentParser) -> None:
    """Every flag of every stage, so `run` accepts what each stage accepts. A flag several
    stages define (`--shards`) applies to each of them. Defaults stay the stages' own: a
    flag not given is not passed, so `run` and a stage alone can never differ."""
    taken = {o for a in parser._actions for o in a.option_strings}
    for stage, _ in STAGE_MODULES:
        group = parser.add_argument_group(f"{stage} stage flags")
        for names, kwargs in stage_flags(stage):
            if any(n in taken for n in names):
                continue
            taken.update(names)
            group.add_argument(*names, **{**kwargs, "default": argparse.SUPPRESS, "required": False})


MAX_SAMPLE_MANIFEST_BYTES = 1 << 20
"""A sample's manifest.json is a few KB; a larger one is no sample's."""


def _sample_inputs(directory: str) -> dict:
    manifest_path = os.path.join(directory, "manifest.json")
    if not os.path.exists(manifest_path):
        raise UserError(f"--inputs {directory}: no manifest.json (was it written by `openmsd-build sample`?)")
    from openmsd_build.core.errors import short_repr
    from openmsd_build.core.stats import read_json

    # a damaged manifest (not JSON, not UTF-8, a list, a folder of that name) is one line
    # naming it, not json's traceback
    listed = read_json(manifest_path, MAX_SAMPLE_MANIFEST_BYTES).get("inputs") or {}
    if not isinstance(listed, dict):
        raise UserError(f"--inputs {directory}: manifest.json's inputs is a JSON {type(listed).__name__}, not an "
                        "object of input name -> path (damaged? write the sample again)")
    inputs: dict[str, str] = {}
    for key, glob in listed.items():
        if not isinstance(glob, str):
            raise UserError(f"--inputs {directory}: manifest.json input {short_repr(key)} is {short_repr(glob)}, "
                            "not a path (damaged? write the sample again)")
        try:  # a manifest's paths are data: only inside the sample's folder, and so are the files they match
            inputs[key] = confined_path(directory, glob)
            if "://" not in inputs[key]:  # what the stage will read, expanded as it expands it
                try:
                    matched = expand_globs([inputs[key]], key)
                except UserError:
                    matched = []  # matches nothing: the stage says so
                for match, _size in matched:
                    confined_path(directory, os.path.relpath(match, directory))
        except UnsafePath as exc:
            raise UserError(f"--inputs {directory}: manifest.json input {key!r} refused ({exc}: a file it matches, "
                            "or the pattern, leads out of the folder)") from None
    return inputs


def recorded_crossref(out: str, say_missing: bool = False) -> list[str]:
    """The Crossref files the build's papers stage read (its `_stats` `inputs`): what the
    contexts stage reads when a run from a later stage is given no `--crossref`; with
    `say_missing`, those not found are warned about."""
    from openmsd_build.core.stages import read_stage_stats

    inputs = (read_stage_stats(out, "papers") or {}).get("inputs") or []
    recorded = [row["path"] for row in inputs if isinstance(row, dict) and row.get("source") == "crossref"
                and isinstance(row.get("path"), str)]
    # local files are checked (recorded absolute; an older build may hold relative ones); remote ones
    # are taken as listed, not asked for one by one
    found = [p for p in recorded if "://" in p and not p.startswith("file://") or os.path.isfile(p.removeprefix(
        "file://"))]
    if say_missing and len(found) < len(recorded):
        warn([f"contexts: {len(recorded) - len(found):,} of the {len(recorded):,} Crossref files the papers stage "
              f"read are not found from here (e.g. {next(p for p in recorded if p not in found)}): their reference "
              "lists are missing; give --crossref"])
    return found


def stage_argv(stage: str, args: argparse.Namespace, say: bool = False) -> list[str]:
    """The command line of one stage inside this run; `say`: warn about what it lacks (once
    a run: it is built several times, to check, to plan and to run)."""
    sample = _sample_inputs(args.inputs) if args.inputs else {}
    argv = ["--out", args.out]
    if stage == "papers":
        given = source_globs(args)
        argv += source_argv({name: globs or ([sample[name]] if name in sample else []) for name, globs in given.items()})
    elif stage == "text":
        fetch = args.fetch or (f"warc:{sample['warc']}" if "warc" in sample else "none")
        argv += ["--fetch", fetch]
    elif stage == "citations":
        for glob in args.opencitations or ([sample["opencitations"]] if "opencitations" in sample else []):
            argv += ["--opencitations", glob]
        for glob in args.opencitations_meta:
            argv += ["--meta", glob]
    elif stage == "contexts":  # the reference lists are in the Crossref files the papers stage read
        for glob in source_globs(args).get("crossref") or ([sample["crossref"]] if "crossref" in sample else
                                                            recorded_crossref(args.out, say)):
            argv += ["--crossref", glob]
    handled = set(argv) | {"--fetch", "--opencitations", "--meta", *(s.flag for s in SOURCES)}
    for names, kwargs in stage_flags(stage):
        flag = next((n for n in names if n.startswith("--")), names[0])
        dest = _dest(names, kwargs)
        if flag in handled or not hasattr(args, dest):
            continue
        value = getattr(args, dest)
        if kwargs.get("action") in ("store_true", "store_false"):
            if value != (kwargs["action"] == "store_false"):
                argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, *map(str, value)] if value else [flag]
        else:
            argv += [flag, str(value)]
    return argv


def check_inputs(args: argparse.Namespace, stages: list[str]) -> list[str]:
    """Match every input glob of the stages to run before the first one starts, so a wrong
    `--opencitations` fails in a second, naming its flag, not after hours of text. Returns
    one `flag: N files, B bytes` line per input."""
    from openmsd_build.core.inputs import expand_globs

    refuse_missing_upstream(args.out, stages)
    lines: list[str] = []

    def note(flag: str, files: list[tuple[str, int]]) -> None:
        lines.append(f"{flag}: {len(files):,} files, {sum(size for _, size in files):,} bytes")

    for stage in stages:
        argv = stage_argv(stage, args)
        if stage == "papers":
            source_flags = {s.flag for s in SOURCES}
            for flag, glob in zip(argv, argv[1:], strict=False):
                if flag in source_flags:
                    note(f"{flag} {glob}", expand_globs([glob], flag))
        elif stage == "text":
            from openmsd_build.text import command as text_command
            from openmsd_build.text.fetch.spec import FetchSpec

            fetch = FetchSpec.parse(argv[argv.index("--fetch") + 1])
            if fetch.local:
                text_command.check_local(fetch)
                lines.append(f"--fetch {fetch}: folder found")
            elif fetch.globs:
                note(f"--fetch {fetch}", expand_globs(list(fetch.globs), f"--fetch {fetch.mode}:"))
        elif stage == "citations":
            for flag in ("--opencitations", "--meta"):
                globs = [argv[i + 1] for i, a in enumerate(argv) if a == flag]
                if globs:
                    note(f"{flag} {' '.join(globs)}", expand_globs(globs, flag))
                elif flag == "--opencitations":
                    raise UserError("citations: no --opencitations input given (and --inputs has none)")
    return lines


def refuse_missing_upstream(out: str, stages: list[str]) -> None:
    """A `UserError` when a stage to run reads a stage this run does not (`--from-stage`)
    whose outputs OUT does not hold (neither `_stats/<stage>.json` nor Parquet in its folders,
    as a reconstructed release has them): said before anything runs, and by `--plan`, instead
    of the first stage failing on a folder with no Parquet in it. The stage suggested to start
    from is the earliest one missing, its own upstream stages included."""
    from openmsd_build.core.stages import read_stage_stats

    def built(name: str) -> bool:
        return read_stage_stats(out, name) is not None or any(
            parquet_io.list_parts(parquet_io.join_path(out, folder)) for folder in stage_entry(name).outputs)

    missing: set[str] = set()
    todo = [u for name in stages for u in stage_entry(name).upstream if u not in stages]
    while todo:
        name = todo.pop()
        if name not in missing and not built(name):
            missing.add(name)
            todo += stage_entry(name).upstream
    if missing:
        order = sorted(missing, key=lambda u: STAGE_MODULES_INDEX.get(u, 99))
        raise UserError(f"--from-stage {stages[0]} reads what {', '.join(order)} "
                        f"{'writes' if len(order) == 1 else 'write'}, and {out} holds no outputs of "
                        f"{'it' if len(order) == 1 else 'them'}: start from an earlier stage (--from-stage {order[0]})")


def plan_text(args: argparse.Namespace, to_run: list[str], found: list[str], serial: bool = False) -> str:
    """What `run --plan` prints: nothing is run or written. Each stage to run is shown with
    the outputs it replaces, or as not built yet; after it, the built stages that read what
    the run rebuilds (they are stale until re-run) and, apart, the later stages never built
    (no `_stats`, no output folder: not stale, only not built); last, the folders describing a
    whole build that the run removes first, those OUT holds (`stages.derived_present`), and nothing
    when it holds none. `serial`: the run's one worker fetches the hosts one after another
    (the local runner)."""
    from openmsd_build.core.stages import stage as stage_entry

    lines = [f"plan for {args.out} (nothing is run)"]
    # the stages this run starts from: stale ones before it would be built on old inputs
    upstream_stale = {s: why for s, why in stale_stages(args.out).items() if to_run
                      and STAGE_MODULES_INDEX[s] < STAGE_MODULES_INDEX[to_run[0]]}
    for name, why in upstream_stale.items():
        lines.append(f"warning: {name} is stale ({why}): this run would build on its old outputs; "
                     f"use --from-stage {next(iter(upstream_stale))} instead")
    lines.append("inputs:")
    lines += [f"  {x}" for x in found] or ["  (none to check)"]
    lines.append("stages, in order, and the outputs each replaces:")
    for name in to_run:
        entry = stage_entry(name)
        present = present_outputs(args.out, name)
        if present:
            note = f" (replaces existing {', '.join(present)})"
        else:
            note = "" if is_built(args.out, name) else " (not built yet: this run builds it)"
        lines.append(f"  {name}: {', '.join(entry.outputs)}, rejects/{name}, _stats/{name}.json{note}")
        lines.append(f"    {' '.join(stage_argv(name, args))}")
    # stale after this run: the built stages that read what it rebuilds (directly or not); a
    # stage never built is not stale, and one that reads none of it (contexts after pairs) neither
    rebuilt_downstream = {d for name in to_run for d in downstream(name)} - set(to_run)
    after_last = [s for s, _ in STAGE_MODULES if to_run and STAGE_MODULES_INDEX[s] > STAGE_MODULES_INDEX[to_run[-1]]]
    later = [s for s in after_last if s in rebuilt_downstream and is_built(args.out, s)]
    unbuilt = [s for s in after_last if not is_built(args.out, s)]
    if "text" in to_run:  # enrich is no stage of `run`: its summaries are refused once text is rebuilt
        from openmsd_build.core.staging import path_exists

        if path_exists(parquet_io.join_path(args.out, "enriched")):
            later.append("enrich")
    if later:
        lines.append(f"after this run, stale unless re-run: {', '.join(later)}")
    if unbuilt:
        lines.append(f"not built yet, nor by this run: {', '.join(unbuilt)}")
    removed = derived_present(args.out)
    if removed:  # only what is there: a plan of a new build named all four, none of which existed
        lines.append(f"removed once the first stage is rebuilt (they describe a whole build): "
                     f"{', '.join(f + '/' for f in removed)}")
    if "text" in to_run:
        lines += _queue_plan(args, serial)
    return "\n".join(lines)


def _queue_plan(args: argparse.Namespace, serial: bool = False) -> list[str]:
    """The fetch queue's biggest hosts and wall time at the configured rate, from `papers/`
    (only known once papers exist; a plan that also runs papers cannot know it yet). Hosts
    fetched in parallel are bounded by the slowest; the local runner's one worker fetches
    them one after another (`serial`), bounded by the sum."""
    from openmsd_build.text.fetch.spec import FetchSpec

    fetch = stage_argv("text", args)
    mode = fetch[fetch.index("--fetch") + 1]
    if not FetchSpec.parse(mode).live:
        return [f"text: --fetch {mode} (no live fetching; no queue estimate)"]
    from openmsd_build.core.stages import stage_default
    from openmsd_build.report.stats import queue_section

    rate = getattr(args, "rate_per_host", None) or stage_default("text", "rate_per_host")
    queue = queue_section(args.out, 5, rate)
    if queue is None:
        return ["text: fetch queue unknown until papers/ exists (run --to-stage papers first for an estimate)"]
    bound = (f"the local runner fetches the hosts one after another: {_duration(queue['sum_seconds'])} at that rate, "
             "plus the servers' own time" if serial
             else f"wall time bounded by the slowest host: {_duration(queue['max_host_seconds'])}")
    lines = [f"text: fetch queue {queue['urls']:,} URLs on {queue['hosts']:,} hosts at {rate:g} req/s per host; "
             f"{bound} (upper bound: papers/ lists more URLs than the planner keeps)"]
    lines += [f"    {h['host']}: {h['urls']:,} URLs, {_duration(h['seconds'])}" for h in queue["top_hosts"]]
    return lines


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:,.1f} h"


def _flag_values(argv: list[str], flag: str | None = None) -> list[str]:
    """The values of a stage's arguments but `--out` (the root is no input) and
    `--warc-prefix` (no folder read whole); with `flag`, that flag's values only."""
    after = [argv[k - 1] if k else None for k in range(len(argv))]
    if flag is not None:
        return [v for v, a in zip(argv, after, strict=True) if a == flag]
    return [v for v, a in zip(argv, after, strict=True) if not v.startswith("--") and a not in ("--out", "--warc-prefix")]


def run(args: argparse.Namespace, beam_args: list[str]) -> dict:
    names = [s for s, _ in STAGE_MODULES]
    first, last = names.index(args.from_stage), names.index(args.to_stage)
    if first > last:
        raise UserError(f"--from-stage {args.from_stage} comes after --to-stage {args.to_stage}")
    to_run = [s for s, _ in STAGE_MODULES[first : last + 1]]
    counted = [s for s in to_run if s not in ("papers", "text")]  # 0 means "as the inputs" only there
    if getattr(args, "shards", 1) < 1 and counted:
        raise UserError(f"--shards {args.shards}: {', '.join(counted)} need 1 or more (0, as the inputs, is for papers "
                        "and text alone)")
    found = check_inputs(args, to_run)
    from openmsd_build.core.inputs import refuse_foreign_folders, refuse_inputs_in_outputs
    from openmsd_build.core.staging import delete_path, owned_paths

    # every stage's inputs against every replaced folder: papers/ is swapped before citations reads
    argvs = [stage_argv(name, args, say=True) for name in to_run]
    refuse_inputs_in_outputs(args.out, to_run, [v for argv in argvs for v in _flag_values(argv)],
                             [v for argv in argvs for v in _flag_values(argv, "--warc-prefix")])
    refuse_foreign_folders(args.out, [*DERIVED_FOLDERS, *(path for name in to_run
                                                          for path in owned_paths(name, stage_entry(name).outputs))])
    if args.plan:
        from openmsd_build.core.runner import one_worker_in_this_process, pipeline_options

        print(plan_text(args, to_run, found, serial=one_worker_in_this_process(pipeline_options(beam_args))))
        return {}
    derived = derived_present(args.out)  # removed once the first stage is rebuilt (below)
    results: dict[str, dict] = {}
    timings: dict[str, dict] = {}
    warnings: dict[str, list[str]] = {}
    for stage, module_name in STAGE_MODULES[first : last + 1]:
        module = importlib.import_module(module_name)
        parser = Parser(prog=f"openmsd-build {stage}")
        module.add_arguments(parser)
        stage_args = parser.parse_args(stage_argv(stage, args))
        print(f"== {stage}", flush=True)
        with resources.measured() as figures, progress.reporting(stage):
            results[stage] = module.run(stage_args, beam_args) or {}
        # evaluation/, export/, release/ and report/ describe a whole build: once a stage is
        # rebuilt they would show an earlier build's numbers, so they go -- not before, so
        # that a Ctrl-C or a failure in the first stage leaves the build as it was, them too
        while derived:  # a link is removed, never what it points to
            delete_path(parquet_io.join_path(args.out, derived.pop(0)))
        record_provenance(args.out, stage, {"resources": figures})
        record_inputs(args.out, stage, stage_args)
        warnings[stage] = announce(args.out, stage, stale=False)
        timings[stage] = figures
        print(f"   {stage} took {figures['wall_s']:.1f} s (cpu {figures['cpu_s']:.1f} s, "
              f"peak {figures['peak_rss_mb']:.0f} MB)", flush=True)
    if not args.no_report:
        from openmsd_build.evaluate.command import run_bm25_baseline
        from openmsd_build.report.command import build_report, headline_table

        if last >= names.index("pairs"):  # the lexical baseline needs the splits and pairs
            print("== evaluation (BM25 baseline on IDT and ODT)", flush=True)
            stale = stale_stages(args.out)
            if stale:  # as `evaluate` refuses it: its numbers would mix two builds
                print(f"   skipped: {', '.join(stale)} {'is' if len(stale) == 1 else 'are'} stale (see the warnings "
                      "below)", flush=True)
            else:
                for split, result in run_bm25_baseline(args.out).items():
                    print(f"   {split}: {bm25_line(result)}")
        stats = build_report(args.out)
        print(headline_table(stats))
    print(resources.timing_table(timings))
    repeated = [f"{stage}: {line}" for stage, lines in warnings.items() for line in lines]
    repeated += [f"{stage} is stale ({why}); re-run with --from-stage {stage}"
                 for stage, why in stale_stages(args.out).items()]
    if repeated:
        print(f"== {len(repeated)} warning{'s' if len(repeated) > 1 else ''} (also in _stats/<stage>.json and the "
              "report)", file=sys.stderr, flush=True)
        warn(repeated)
    if not args.no_report:
        print(f"outputs: {args.out}/  report: {layout.report_dir(args.out)}/report.html")
    return results


def bm25_line(result: dict) -> str:
    """MAP / nDCG@10 per relation of one split's baseline result, on one line."""
    parts = []
    relations = result.get("relations") or {}
    for relation in [r for r in layout.RELATIONS if r in relations]:
        overall = (relations[relation] or {}).get("all") or {}
        if overall.get("map") is None:
            parts.append(f"{relation.upper()} -")
        else:
            parts.append(f"{relation.upper()} MAP {overall['map']:.3f} nDCG@10 {overall['ndcg@10']:.3f}")
    if parts and all(p.endswith(" -") for p in parts):
        return ", ".join(parts) + " (no query has a related paper in the pool)"
    return ", ".join(parts) or "no pool"
