"""Stage 2, `openmsd-build text`: fetch pages and PDFs, extract and clean text, detect
language -> `fetch/` (one row per fetched URL) and `documents/` (one row per kept paper).

Flags, input checks and the run; the Beam graph is `pipelines/text.py`.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

# Nothing here imports Beam at import time: `prepare` starts the extractor children while the
# worker then imports Beam (~1 s), and the run's Beam pieces are imported by `run_text`. Nor
# the fetch layer (~0.15 s, `text.fetch`'s package imports warcio, fsspec and the HTTP
# client): this module is imported before `prepare` starts the fork server, and every
# millisecond here is one the other cores wait for their first document.
from openmsd_build.core.errors import UserError
from openmsd_build.text.extract.isolate import DEFAULT_MAX_BYTES, close_spares, prewarm, start_fork_server
from openmsd_build.text.jobs import AHEAD_JOB, STAGE_JOBS

if TYPE_CHECKING:
    from openmsd_build.text.fetch.config import FetchConfig

LOG = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of the build (reads OUT/papers/)")
    parser.add_argument("--fetch", default="none",
                        help="none (metadata only) | http (live, polite) | warc:GLOB (offline from WARC archives) | "
                             "cc-index:GLOB (offline from a Common Crawl columnar-index extract, Parquet)")
    parser.add_argument("--warc-prefix", default="",
                        help="with --fetch cc-index: where the WARC files the index names (warc_filename) live, "
                             "e.g. /data/commoncrawl or gs://BUCKET/commoncrawl (default: the names as they are)")
    parser.add_argument("--max-urls-per-paper", type=int, default=3, help="fetch at most this many URLs per paper")
    parser.add_argument("--host-shards", type=int, default=4,
                        help="split each host's queue into this many keys (per-key rate = rate / shards)")
    parser.add_argument("--rate-per-host", type=float, default=1.0, help="requests per second per host (http)")
    parser.add_argument("--user-agent", default=None, help="User-Agent for http fetching")
    parser.add_argument("--contact", default=None, help="contact address added to the User-Agent (e.g. mailto:...)")
    parser.add_argument("--allow-network", action="extend", nargs="+", default=[], metavar="CIDR",
                        help="allow fetching from this private/loopback network (e.g. 127.0.0.0/8 for tests)")
    parser.add_argument("--no-robots", action="store_true", help="do not honour robots.txt (only for your own servers)")
    parser.add_argument("--extract-timeout", type=float, default=60.0, help="hard limit per document extraction (s)")
    parser.add_argument("--extract-workers", type=int, default=0,
                        help="extractor processes working at once per fetching worker (default: one per core, plus "
                             "one, on the local runner; 1 on Dataflow / Flink, which already run a worker per core)")
    parser.add_argument("--no-follow-pdf", action="store_true", help="do not follow citation_pdf_url from landing pages")
    parser.add_argument("--shards", type=int, default=0, help="output files (default: as many as papers/)")


def run(args: argparse.Namespace, beam_args: list[str]) -> dict:
    from openmsd_build.text.fetch.config import FetchConfig

    config_kwargs: dict = {
        "per_host_rate": args.rate_per_host / max(1, args.host_shards),
        "allow_networks": tuple(args.allow_network),
        "respect_robots": not args.no_robots,
        "contact": args.contact,
    }
    if args.user_agent:
        config_kwargs["user_agent"] = args.user_agent
    counts = run_text(
        args.out, args.fetch, beam_args, FetchConfig(**config_kwargs), cap=args.max_urls_per_paper,
        host_shards=args.host_shards, extract_timeout=args.extract_timeout, follow=not args.no_follow_pdf,
        shards=args.shards, warc_prefix=args.warc_prefix, extract_workers=args.extract_workers,
    )
    print(summary_line(counts))
    return counts


def run_text(
    out: str,
    fetch: str,
    beam_args: list[str],
    fetch_config: FetchConfig | None = None,
    cap: int = 3,
    host_shards: int = 4,
    extract_timeout: float = 60.0,
    follow: bool = True,
    shards: int = 0,
    warc_prefix: str = "",
    extract_workers: int = 0,
) -> dict:
    """Build `fetch/` and `documents/` from `papers/`; returns the stage's counts.
    `extract_workers` 0 means one per core plus one on the local runner, else 1 (`default_extract_workers`).
    The children started for it (here or by `prepare`) are stopped when it returns or fails."""
    try:
        return _run_text(out, fetch, beam_args, fetch_config, cap, host_shards, extract_timeout, follow, shards,
                         warc_prefix, extract_workers)
    finally:
        release_children()


def _run_text(out: str, fetch: str, beam_args: list[str], fetch_config: FetchConfig | None, cap: int,
              host_shards: int, extract_timeout: float, follow: bool, shards: int, warc_prefix: str,
              extract_workers: int) -> dict:
    import apache_beam as beam

    from openmsd_build.core import layout, parquet_io
    from openmsd_build.core.runner import cores_per_local_worker, pipeline_options, runs_in_this_process
    from openmsd_build.core.staging import stage_outputs
    from openmsd_build.core.stats import read_stage_counts
    from openmsd_build.pipelines.text import build
    from openmsd_build.text.fetch.config import FetchConfig

    options = pipeline_options(beam_args)  # first: OUT may be gs:// (FileSystems options)
    if extract_workers < 0:
        raise UserError(f"--extract-workers must be 0 (automatic) or more, not {extract_workers}")
    extract_workers = extract_workers or default_extract_workers(options)
    if fetch not in ("none", "http") and not fetch.startswith(("warc:", "cc-index:")):
        raise UserError(f"--fetch must be none, http, warc:GLOB or cc-index:GLOB, not {fetch!r}")
    if warc_prefix and not fetch.startswith("cc-index:"):
        raise UserError("--warc-prefix applies only to --fetch cc-index:GLOB")
    papers_parts = parquet_io.list_parts(layout.papers_dir(out))
    if not papers_parts:
        raise UserError(f"no papers under {layout.papers_dir(out)}: run `openmsd-build papers` first")
    if fetch.startswith("warc:"):
        from openmsd_build.core.inputs import expand_globs

        expand_globs(fetch[len("warc:") :].split(","), "--fetch warc:")  # a typo must fail before the run
    if fetch.startswith("cc-index:"):
        check_cc_index(fetch[len("cc-index:") :])
    num_shards = shards or len(papers_parts)
    warc_dir = layout.warc_dir(out)
    resume = parquet_io.match_paths(parquet_io.join_path(warc_dir, "*.warc.gz")) if fetch == "http" else []

    started = time.time()
    if fetch != "none" and runs_in_this_process(options) and _STARTED != (fetch, extract_workers, extract_timeout):
        # the DoFns will run here: their fork server imports while Beam plans and reads
        # papers (`prepare` did it already when the command line said enough)
        close_spares()
        start_children(fetch, extract_workers, cores_per_local_worker(options), extract_timeout)
    # documents/, fetch/, rejects/text/ and _stats/text.json are written under a temporary
    # root and swapped in on success; warc/ stays in place (append-only resume store).
    with stage_outputs(out, "text") as dest, beam.Pipeline(options=options) as p:
        build(p, out, fetch, fetch_config or FetchConfig(), num_shards, resume=resume, cap=cap,
              host_shards=host_shards, extract_timeout=extract_timeout, follow=follow, dest=dest,
              warc_prefix=warc_prefix, extract_workers=extract_workers)
    result = read_stage_counts(out, "text")
    result["seconds"] = round(time.time() - started, 2)
    return result


# What `start_children` last started: (fetch, extract_workers, extract_timeout).
_STARTED: tuple[str, int, float] | None = None
# Extract local archives ahead of the pipeline (tests compare runs with and without it).
HEAD_START = True


def start_children(fetch: str, extract_workers: int, cores: int, extract_timeout: float) -> None:
    """Start the stage's children for a run in this process (`isolate.prewarm`: forks of one
    warm server, which imports on a core the worker leaves it); with local `warc:` archives,
    one child per such core extracts the archives' documents ahead of the pipeline
    (`extract/ahead.py`). The server is started first: it imports for ~0.35 s, meanwhile
    this process works out the head start's job (which imports the fetch layer)."""
    if extract_workers > 0:
        start_fork_server(STAGE_JOBS)
    from openmsd_build.text.extract.ahead import local_archives
    from openmsd_build.text.fetch.result import DEFAULT_ACCEPTED_TYPES
    from openmsd_build.text.fetch.warc_backend import DEFAULT_REPLAY_MAX_BYTES

    global _STARTED
    ahead = None
    archives = local_archives(fetch)
    if archives and cores > 1 and HEAD_START:
        ahead = (AHEAD_JOB, {"paths": archives, "timeout": extract_timeout,
                             "max_bytes": min(DEFAULT_REPLAY_MAX_BYTES, DEFAULT_MAX_BYTES),
                             "accepted_types": list(DEFAULT_ACCEPTED_TYPES)})
    prewarm(extract_workers, spare_cores=cores - 1, ahead=ahead, extractors=STAGE_JOBS, timeout=extract_timeout)
    _STARTED = (fetch, extract_workers, extract_timeout)


def release_children() -> None:
    """Stop the children `start_children` started (and drop what they extracted ahead)."""
    global _STARTED
    close_spares()
    _STARTED = None


def prepare(args: argparse.Namespace, extra: Sequence[str]) -> Callable[[], None] | None:
    """Called by the CLI before Beam is imported: when the command line asks for the default
    local run (no runner or local-worker flags among the arguments left for Beam), start the
    children now, so they import -- and extract ahead -- while this process imports Beam.
    Anything unusual is left to `run_text`, which checks the options and starts them itself.
    Returns what stops them if the command fails before `run_text` does (`release_children`)."""
    flags = [arg.partition("=")[0] for arg in extra]
    if (args.fetch == "none" or args.extract_workers < 0
            or any(flag.startswith(("--runner", "--direct_")) for flag in flags)):
        return None
    if args.fetch != "http" and not args.fetch.startswith(("warc:", "cc-index:")):
        return None  # `run_text` rejects it
    from openmsd_build.core.runner import local_cores

    cores = local_cores()
    try:
        start_children(args.fetch, args.extract_workers or cores + 1, cores, args.extract_timeout)
    except Exception as exc:  # noqa: BLE001 - a head start only; `run_text` reports real problems
        LOG.info("children not started early: %s", exc)
        release_children()
        return None
    return release_children


def default_extract_workers(options) -> int:
    """Extractor processes per fetching DoFn when the user gives none: one per core plus one
    in a local run with one Beam worker (the default), one per core share with several, 1
    on a distributed runner, whose workers already run one SDK process per core
    (`core.runner.cores_per_local_worker`).

    Why one more than the cores: the local runner's one Beam worker needs CPU too (replaying
    or fetching the next response, passing answers on). With one child per core, a child
    that has answered waits idle until the worker gets round to handing it the next document
    (children were busy ~87% of the extraction phase); a spare child keeps every core
    extracting meanwhile (the bench sample's text stage: 0.94x the wall time). With several
    local Beam workers, each keeping its own children, a spare each would crowd the cores."""
    from openmsd_build.core.runner import cores_per_local_worker, is_local_runner, local_beam_workers

    workers = cores_per_local_worker(options)
    return workers + 1 if is_local_runner(options) and local_beam_workers(options) == 1 else workers


def check_cc_index(globs: str) -> None:
    """The extract's files exist and the first carries Common Crawl's index columns (one
    footer read): a wrong export must fail before the run, naming what is missing."""
    from openmsd_build.core.inputs import expand_globs
    from openmsd_build.text.fetch.warc_index import missing_cc_columns

    for path, _size in expand_globs(globs.split(","), "--fetch cc-index:")[:1]:
        try:
            missing = missing_cc_columns(path)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's input
            raise UserError(f"--fetch cc-index: {path} is not a readable Parquet file ({exc})") from exc
        if missing:
            raise UserError(f"--fetch cc-index: {path} lacks the index columns {missing} "
                            "(see README, 'Pages from Common Crawl')")


def summary_line(counts: dict) -> str:
    kept = counts.get("documents.kept", 0)
    dropped = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith("documents.") and k != "documents.kept"}
    fetched_ok = counts.get("fetch.ok", 0)
    errors = {k.split(".", 2)[2]: v for k, v in counts.items() if k.startswith("fetch.error.")}
    return (
        f"text: {kept} documents kept, dropped {dropped}; fetched ok {fetched_ok}, errors {errors}; "
        f"{counts.get('with_content', 0)} with full content"
    )
