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
    # folders of the output root this stage writes (besides rejects/ and _stats/); pairs/ is
    # shared: the pairs stage owns pairs/{dc,cc,bc,mix}, contexts owns pairs/ccs
    outputs: tuple[str, ...]
    schema: str  # name in schemas.tables of the main output table
    defaults: tuple[tuple[str, object], ...] = ()  # settings other commands quote (report, run --plan)


STAGES: tuple[Stage, ...] = (
    Stage("papers", "openmsd_build.papers.command", "stage 1: join Unpaywall, Crossref, OpenAlex by DOI",
          (), ("papers",), "PAPERS"),
    Stage("text", "openmsd_build.text.command", "stage 2: fetch, extract and clean text, detect language",
          ("papers",), ("documents", "fetch"), "DOCUMENTS", (("rate_per_host", 1.0),)),
    Stage("citations", "openmsd_build.citations.command", "stage 3: OpenCitations edges between kept papers",
          ("text",), ("citations",), "CITATIONS"),
    Stage("split", "openmsd_build.split.command", "stage 4: train / IDT / ODT split",
          ("text", "citations"), ("splits",), "SPLITS"),
    Stage("pairs", "openmsd_build.pairs.command", "stage 5: DC / CC / BC pairs per split",
          ("citations", "split"), ("pairs/dc", "pairs/cc", "pairs/bc", "pairs/mix", "negatives"), "PAIRS"),
    Stage("contexts", "openmsd_build.contexts.command",
          "stage 6: citation sentences, their markers resolved to DOIs, and CCS pairs (co-cited in one sentence)",
          ("text", "split"), ("contexts", "pairs/ccs"), "CONTEXTS"),
)

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
_BY_NAME = {s.name: s for s in STAGES}


def stage(name: str) -> Stage:
    """The registry entry of `name` (KeyError names the known stages)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown stage {name!r}; stages are {', '.join(STAGE_NAMES)}") from None


def writer_of(directory: str) -> str | None:
    """The stage whose output folder `directory` is, or is inside (`.../pairs/dc/split=idt`
    is the pairs stage's); None for any other folder."""
    path = "/" + directory.replace("\\", "/").strip("/") + "/"
    found = [(path.rfind(f"/{folder}/"), s.name) for s in STAGES for folder in s.outputs if f"/{folder}/" in path]
    return max(found)[1] if found else None  # the last folder of the path: /data/documents/b/splits is split's


def present_outputs(out: str, name: str) -> list[str]:
    """The output folders of stage `name` that exist in `out` (what running it would replace;
    a gs:// folder is found by the objects under it, `staging.path_exists`)."""
    from openmsd_build.core.parquet_io import join_path
    from openmsd_build.core.staging import path_exists

    return [folder for folder in stage(name).outputs if path_exists(join_path(out, folder))]


def is_build_root(folder: str) -> bool:
    """Whether the local `folder` is a build's output root: its `_stats/` holds a stage's
    `<stage>.json` (an empty `_stats/` of the user's is not one)."""
    import os

    return any(os.path.isfile(os.path.join(folder, "_stats", f"{s.name}.json")) for s in STAGES)


def stage_folder_holding(path: str) -> str | None:
    """The stage output folder of a local build that `path` is, or is inside (`rejects/` and
    `_stats/` too), or None. A build root is a folder whose `_stats/` holds a stage's
    `<stage>.json`; links are resolved first (a link into a stage folder is inside it). A command that
    writes somewhere of the user's choosing (`release --to`, `reconstruct --out`, `sample --out`) must not
    write there: the stage's next run clears its folder, and what was written went with it
    without a word."""
    import os

    if "://" in path and not path.startswith("file://"):
        return None
    full = os.path.realpath(path.removeprefix("file://"))
    root = os.path.dirname(full)
    while root and root != os.path.dirname(root):
        if is_build_root(root):
            for folder in (*(f for s in STAGES for f in s.outputs), "rejects", "_stats"):
                owned = os.path.join(root, folder)
                if full == owned or full.startswith(owned + os.sep):
                    return owned
        root = os.path.dirname(root)
    return None


def is_built(out: str, name: str) -> bool:
    """Whether `out` holds anything of stage `name`: its `_stats/<name>.json` or any of its
    output folders. A stage with neither was never built: not stale, only not built yet."""
    return read_stage_stats(out, name) is not None or bool(present_outputs(out, name))


def stage_default(name: str, key: str) -> object:
    """A stage's default for setting `key` (e.g. the text stage's `rate_per_host`), for the
    commands that describe a stage without importing it (report, run --plan)."""
    return dict(stage(name).defaults)[key]


def downstream(name: str) -> tuple[str, ...]:
    """Every stage that reads `name`'s outputs, directly or through another stage, in build order."""
    found: set[str] = {name}
    for s in STAGES:
        if any(u in found for u in s.upstream):
            found.add(s.name)
    return tuple(s.name for s in STAGES if s.name in found and s.name != name)


# --------------------------------------------------------------------------- provenance

DERIVED_FOLDERS = ("evaluation", "export", "release", "report")  # built from a whole build


def derived_present(out: str) -> list[str]:
    """The folders of `DERIVED_FOLDERS` that `out` holds: what `run` removes once its first
    stage is rebuilt (and `run --plan` says it would), and what a stage run alone says still
    holds the earlier build (`notices.stale_after`)."""
    from openmsd_build.core.parquet_io import join_path
    from openmsd_build.core.staging import path_exists

    return [folder for folder in DERIVED_FOLDERS if path_exists(join_path(out, folder))]


def read_stage_stats(out: str, name: str) -> dict | None:
    """`_stats/<name>.json` as written, None when the stage was not built (no such file).
    A damaged file (not JSON, a list, `built_from` not an object) is a `UserError` naming
    it (`core.stats.read_stats`), not "not built": judging staleness, or resuming a run, on a
    stage whose record cannot be read would be a guess."""
    from apache_beam.io.filesystems import FileSystems

    from openmsd_build.core import layout
    from openmsd_build.core.stats import read_stats

    path = layout.stats_path(out, name)
    try:
        if not FileSystems.exists(path):
            return None
    except Exception:  # noqa: BLE001 - a filesystem that cannot answer has no stats to read
        return None
    return read_stats(path)


def fingerprint(stats: dict) -> str:
    """A stage's identity: a hash of its `_stats` (counts, inputs, options, its own
    provenance), leaving out the timing figures that differ between identical runs."""
    import hashlib
    import json

    kept = {k: v for k, v in stats.items() if k not in ("resources",)}
    return hashlib.sha1(json.dumps(kept, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def record_provenance(out: str, name: str, extra: dict | None = None) -> None:
    """Write `built_from` (each upstream stage's fingerprint at the time `name` ran) into
    `_stats/<name>.json`, so a later look can tell whether an upstream was rebuilt since;
    `extra` fields (the stage's `resources`) go in with the same write."""
    from openmsd_build.core.stats import update_stage_stats

    update_stage_stats(out, name, {"built_from": built_from(out, name), **(extra or {})})


def built_from(out: str, name: str) -> dict[str, str]:
    """Each upstream stage's fingerprint now, as `record_provenance` records it."""
    return {u: fingerprint(s) for u in stage(name).upstream if (s := read_stage_stats(out, u)) is not None}


def stale_stages(out: str) -> dict[str, str]:
    """Stages whose outputs no longer match their inputs: an upstream stage was rebuilt (or
    removed) after they ran, directly or through another stale stage. Stage -> reason.
    A stage without `built_from` (a build from before provenance was recorded) is not judged,
    nor against an upstream that had no stats when it ran and has none now (its table written
    by other means: a user's own, a bench script's)."""
    stale: dict[str, str] = {}
    for s in STAGES:
        stats = read_stage_stats(out, s.name)
        if stats is None or "built_from" not in stats:
            continue
        recorded = stats["built_from"]
        for u in s.upstream:
            if u in stale:
                stale[s.name] = f"upstream {u} is stale"
                break
            current = read_stage_stats(out, u)
            if current is None:
                if u not in recorded:  # no stats then either (a table written by other means): nothing changed
                    continue
                stale[s.name] = f"upstream {u} was removed after {s.name} ran (no _stats/{u}.json)"
                break
            if recorded.get(u) != fingerprint(current):
                stale[s.name] = f"upstream {u} was rebuilt after {s.name} ran"
                break
    return stale


def require_fresh(out: str, what: str) -> None:
    """A `UserError` when any stage of `out` is stale (release, export and evaluate use it)."""
    from openmsd_build.core.errors import UserError

    stale = stale_stages(out)
    if stale:
        detail = "; ".join(f"{k}: {v}" for k, v in stale.items())
        raise UserError(f"{what} refused: stale stages ({detail}); re-run them, e.g. "
                        f"`openmsd-build run ... --from-stage {next(iter(stale))}`")
