"""Stage 2, `openmsd-build text`: fetch pages and PDFs, extract and clean text, detect
language -> `fetch/` (one row per fetched URL) and `documents/` (one row per kept paper).

Flags, input checks and the run; the Beam graph is `pipelines/text.py`.
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least, number_from
from openmsd_build.text.fetch.spec import FetchSpec, usage

if TYPE_CHECKING:
    from apache_beam.options.pipeline_options import PipelineOptions

    from openmsd_build.text.fetch.config import FetchConfig

LOG = logging.getLogger(__name__)

FETCH_HELP = (
    "where the papers' pages and PDFs come from: none (metadata abstracts only) | http (live, polite) | "
    "warc:GLOB[,GLOB...] (offline from WARC archives or folders of them: per-record or whole-file gzip, or plain) | "
    "cc-index:GLOB (offline from a Common Crawl columnar-index extract, Parquet; see --warc-prefix) | "
    "local:FOLDER (files under FOLDER named after the DOI, / as _: 10.1234_abc.pdf) | "
    "local:FOLDER@MANIFEST (a CSV or Parquet manifest with doi and/or url, and path under FOLDER)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output root of the build (reads OUT/papers/)")
    parser.add_argument("--fetch", default="none", type=_fetch_spec, metavar=usage().replace(" ", ""),
                        help=FETCH_HELP)
    parser.add_argument("--warc-prefix", default="",
                        help="with --fetch cc-index: where the WARC files the index names (warc_filename) live, "
                             "e.g. /data/commoncrawl or gs://BUCKET/commoncrawl (default: the names as they are)")
    # numbers checked when parsed (`check_flags` says why each limit): one usage line naming the
    # flag, before anything is read, in `text`, `run` and `reconstruct` alike
    parser.add_argument("--max-urls-per-paper", type=at_least(1), default=3,
                        help="fetch at most this many URLs per paper (1 or more, default 3)")
    parser.add_argument("--host-shards", type=at_least(1), default=4,
                        help="split each host's queue into this many keys (on a distributed runner each key gets rate / "
                        "shards; the local runner's one worker keeps the host's rate; 1 or more, default 4)")
    parser.add_argument("--rate-per-host", type=number_from(0, inclusive=False), default=1.0,
                        help="requests per second per host (http; above 0, default 1)")
    parser.add_argument("--user-agent", default=None, help="User-Agent for http fetching")
    parser.add_argument("--contact", default=None, help="contact address added to the User-Agent (e.g. mailto:...)")
    parser.add_argument("--allow-network", action="extend", nargs="+", default=[], metavar="CIDR",
                        help="allow fetching from this private/loopback network (e.g. 127.0.0.0/8 for tests)")
    parser.add_argument("--no-robots", action="store_true", help="do not honour robots.txt (only for your own servers)")
    parser.add_argument("--extract-timeout", type=number_from(0, inclusive=False), default=60.0,
                        help="hard limit per document extraction (s; above 0, default 60)")
    parser.add_argument("--extract-workers", type=at_least(0), default=0,
                        help="extractor processes working at once per fetching worker (default 0: one per core on "
                             "the local runner; 1 on Dataflow / Flink, which already run a worker per core)")
    parser.add_argument("--no-follow-pdf", action="store_true", help="do not follow citation_pdf_url from landing pages")
    parser.add_argument("--shards", type=at_least(0), default=0, help="output files (default: as many as papers/)")


def run(args: argparse.Namespace, beam_args: list[str]) -> dict:
    from openmsd_build.text.fetch.config import FetchConfig

    config_kwargs: dict = {
        "per_host_rate": args.rate_per_host,  # the host's; each key's share is set by `key_rate`
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


def check_flags(cap: int, host_shards: int, extract_timeout: float, rate_per_host: float | None = None) -> None:
    """A `UserError` for a number out of range, for callers from Python (`run_text`): the
    commands refuse them when their flags are parsed (the types in `add_arguments`), with the
    same limits. `--extract-timeout` 0 made every extraction a timeout (a build's documents
    replaced by the few without one), `--rate-per-host` 0 or below fetched with no limit at
    all, `--max-urls-per-paper` 0 planned no URL and blamed the metadata, `--host-shards` below
    1 was taken as 1."""
    if not 0 < extract_timeout < math.inf:  # nan compares false, and passed `<= 0`
        raise UserError(f"--extract-timeout must be above 0 seconds, not {extract_timeout:g}")
    if rate_per_host is not None and not 0 < rate_per_host < math.inf:  # inf or nan: no limit at all
        raise UserError(f"--rate-per-host must be above 0 (requests per second per host), not {rate_per_host:g}")
    if cap < 1 or host_shards < 1:
        raise UserError(f"--max-urls-per-paper and --host-shards must be at least 1, not {cap} and {host_shards}")


def key_rate(rate: float | None, host_shards: int, options: PipelineOptions) -> float | None:
    """The rate of one host key's limiter for a host rate of `rate`: a host's URLs are spread
    over `host_shards` keys (`fetch.plan.shard_host`), and on a distributed runner, or a local
    one with several workers, each key may be fetched by a fetcher of its own, so each gets
    its share; the local runner's one worker fetches every key through one fetcher, whose
    limiter is per host name, so it keeps the whole rate (a share there slowed a host to
    `rate / host_shards`)."""
    from openmsd_build.core.runner import one_worker_in_this_process

    # Beam's own worker count, not `local_beam_workers` (affinity): under `taskset -c 0`,
    # `--direct_num_workers=0` ran two workers, each at the whole rate, twice the host's
    if not rate or one_worker_in_this_process(options):
        return rate
    return rate / max(1, host_shards)


def _fetch_spec(text: str) -> FetchSpec:
    """argparse's reading of `--fetch` (the message names the forms)."""
    try:
        return FetchSpec.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def run_text(
    out: str,
    fetch: str | FetchSpec,
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
    `extract_workers` 0 means one per core on the local runner, else 1
    (`core.runner.cores_per_local_worker`)."""
    import apache_beam as beam

    from openmsd_build.core import layout, parquet_io
    from openmsd_build.core.runner import cores_per_local_worker, pipeline_options
    from openmsd_build.core.staging import stage_outputs
    from openmsd_build.core.stats import read_stage_counts, refuse_unreconciled
    from openmsd_build.pipelines.text import build
    from openmsd_build.text.extract.pool import stop_fork_server
    from openmsd_build.text.fetch.config import FetchConfig

    spec = FetchSpec.parse(fetch)
    options = pipeline_options(beam_args)  # first: OUT may be gs:// (FileSystems options)
    if extract_workers < 0:
        raise UserError(f"--extract-workers must be 0 (automatic) or more, not {extract_workers}")
    check_flags(cap, host_shards, extract_timeout)
    # one extractor per core and no spare: with the worker busy too, a spare child keeps more
    # processes running than there are cores, which cost ~5 % more CPU at 20,000 papers for
    # the same wall (bench/README, twenty-third round)
    extract_workers = extract_workers or cores_per_local_worker(options)
    papers_parts = parquet_io.list_parts(layout.papers_dir(out))
    if not papers_parts:
        raise UserError(f"no papers under {layout.papers_dir(out)}: run `openmsd-build papers` first")
    parquet_io.check_parts(papers_parts)  # a damaged or empty part: one line naming it
    check_fetch_inputs(spec, warc_prefix)
    fetch_config = fetch_config or FetchConfig()
    fetch_config = replace(fetch_config, per_host_rate=key_rate(fetch_config.per_host_rate, host_shards, options))
    num_shards = shards or len(papers_parts)
    warc_dir = layout.warc_dir(out)
    resume = parquet_io.match_paths(parquet_io.join_path(warc_dir, "*.warc.gz")) if spec.live else []

    started = time.time()
    # documents/, fetch/, rejects/text/ and _stats/text.json are written under a temporary
    # root and swapped in on success; warc/ stays in place (append-only resume store).
    try:
        with stage_outputs(out, "text") as dest:
            with beam.Pipeline(options=options) as p:
                build(p, out, spec, fetch_config, num_shards, resume=resume, cap=cap,
                      host_shards=host_shards, extract_timeout=extract_timeout, follow=follow, dest=dest,
                      warc_prefix=warc_prefix, extract_workers=extract_workers)
            counts = read_stage_counts(dest, "text")
            refuse_unreconciled("text", check_counts(counts) + check_outputs(dest, counts))
            refuse_source_that_gave_nothing(spec, counts, dest)
            refuse_emptying(out, counts, dest)
    finally:
        stop_fork_server()  # the children are gone with their DoFns; their CPU is counted here
    result = read_stage_counts(out, "text")
    result["seconds"] = round(time.time() - started, 2)
    return result


def check_counts(counts: Mapping[str, int]) -> list[str]:
    """The stage's identities its counts alone can check; [] when all hold: every paper read
    ends as one `documents.<kept or drop reason>`, every fetch task planned (`planned.*`,
    `local.files_matched.*`) or followed (`follow.citation_pdf_url`) reaches a fetch outcome
    (`tasks.answered`), every extraction sent to a paper reaches its
    paper's document (`extractions.sent` = `extractions.received`, none of them for a DOI
    without a paper: `orphan_extractions`), and every fetched body was extracted or failed
    with a reason.
    `run_text` refuses a run that breaks one; the reliability tests check them beside the
    rows of the files written."""
    from openmsd_build.core.stats import count_total, unequal

    def c(key: str) -> int:
        return int(counts.get(key, 0))

    def total(prefix: str) -> int:
        return count_total(counts, prefix)

    return unequal([
        ("papers = documents.*", c("papers"), total("documents.")),
        ("orphan_extractions = 0", c("orphan_extractions"), 0),
        ("extractions.sent = extractions.received", c("extractions.sent"), c("extractions.received")),
        ("planned.* + local.files_matched.* + follow.citation_pdf_url = tasks.answered",
         total("planned.") + total("local.files_matched.") + c("follow.citation_pdf_url"), c("tasks.answered")),
        ("fetch.ok = extracted.* + extract_failed.*", c("fetch.ok"), total("extracted.") + total("extract_failed.")),
    ])


def check_outputs(root: str, counts: Mapping[str, int]) -> list[str]:
    """The rows the run wrote under `root` (their Parquet footers) against its counts; [] when
    they agree: documents/ = `documents.kept`, fetch/ = `fetch.ok` + `fetch.error.*`, and
    rejects/text/ = the extractions that failed (`extract_failed.*`, `main_text_failed.*`)
    + the input's own rejects (archive files rejected, cut short or damaged; index rows that
    name no readable record; manifest rows and files no paper used)."""
    from openmsd_build.core import layout
    from openmsd_build.core.stats import count_total as total
    from openmsd_build.core.stats import rows_unlike_counts
    from openmsd_build.text.fetch.result import RECORD_UNREADABLE

    return rows_unlike_counts([
        ("documents/", layout.documents_dir(root), int(counts.get("documents.kept", 0))),
        ("fetch/", layout.fetch_dir(root), int(counts.get("fetch.ok", 0)) + total(counts, "fetch.error.")),
        ("rejects/text/", layout.rejects_dir(root, "text"),
         total(counts, "extract_failed.") + total(counts, "main_text_failed.") + total(counts, "archive.rejected.")
         + int(counts.get("archive.files_cut_short", 0)) + int(counts.get("archive.files_damaged", 0))
         + total(counts, "local.rejected.") + int(counts.get(f"fetch.error.{RECORD_UNREADABLE}", 0))),
    ])


def check_fetch_inputs(fetch: str | FetchSpec, warc_prefix: str = "") -> FetchSpec:
    """`--fetch` read, and its archives, index extract or local folder found, or a
    `UserError` naming what is wrong: a typo must fail before the run (and before the papers
    step `reconstruct` runs first, hours on a full snapshot). Returns the parsed spec."""
    spec = FetchSpec.parse(fetch)
    if warc_prefix and spec.mode != "cc-index":
        raise UserError("--warc-prefix applies only to --fetch cc-index:GLOB")
    if spec.mode == "warc":
        from openmsd_build.core.inputs import expand_globs

        expand_globs(list(spec.globs), "--fetch warc:")
    if spec.mode == "cc-index":
        check_cc_index(spec.globs)
    if spec.local:
        check_local(spec)
    return spec


def refuse_source_that_gave_nothing(spec: FetchSpec, counts: dict, dest: str | None = None) -> None:
    """A `UserError` (the previous outputs are kept) when archives or a local folder were given
    and not one planned URL or file was found in them, or a folder matched no paper: a wrong
    `--fetch` (another folder, `warc:` for a folder of PDFs) replaced good documents with the
    metadata-only ones of `--fetch none`. The message is the stage's own warnings. Live
    fetching is exempt: a host down for now is retried by the next run, from its archive."""
    if spec.archive_kind is None and not spec.local or counts.get("fetch.ok", 0):
        return
    tried = sum(v for k, v in counts.items() if k.startswith("fetch.error."))
    if not tried and not spec.local:
        return  # no paper has a URL: the archives could not have helped
    why = _refusal_why(counts, dest)
    what = f"gave no document for any of the {tried:,} URLs and files planned" if tried else \
        "matched no file to any paper"
    raise UserError(f"text: --fetch {spec} {what}; nothing was replaced (use --fetch none for documents from "
                    f"metadata alone){why}")


def refuse_emptying(out: str, counts: dict, dest: str | None = None) -> None:
    """`core.stats.refuse_emptying` for documents/: whatever the flags, a run that kept no
    document where the build has some is a mistake to undo (e.g. `--fetch warc:` for papers
    whose metadata gives no URL to look up)."""
    from openmsd_build.core import layout, stats

    why = _refusal_why(counts, dest)
    stats.refuse_emptying("text", layout.documents_dir(out), counts.get("documents.kept", 0), "documents", why)


def _refusal_why(counts: dict, dest: str | None) -> str:
    """The stage's warnings as a refusal's reasons, with this run's first rejects quoted: the
    run is dropped with its staging root `dest`, so the warnings' "see rejects/text/" pointed
    at the previous run's rejects (or at none)."""
    from openmsd_build.core.notices import stage_warnings
    from openmsd_build.core.stats import first_rejects

    lines = stage_warnings("text", counts)
    # the rejects the warnings point at: the source's own (a folder's files, archive files)
    reasons = {key.rsplit(".", 1)[1] for key in counts if key.startswith(("local.rejected.", "archive.rejected."))}
    examples = first_rejects(dest, "text", 5, reasons) if dest and reasons else []
    if examples:
        lines = [line.replace("see rejects/text/", "see this run's first rejects below,") for line in lines]
        lines += ["this run's first rejects (not kept: nothing was replaced):", *(f"  {e}" for e in examples)]
    return "".join(f"\n  {line}" for line in lines)


def check_local(spec: FetchSpec) -> None:
    """The folder (and manifest) of `--fetch local:` exist and the manifest has its columns:
    a wrong path must fail before the run, naming it."""
    from openmsd_build.text.fetch.local_files import load

    try:
        load(str(spec))
    except (OSError, ValueError) as exc:
        raise UserError(str(exc)) from exc


def check_cc_index(globs: tuple[str, ...]) -> None:
    """The extract's files exist and the first carries Common Crawl's index columns (one
    footer read): a wrong export must fail before the run, naming what is missing."""
    from openmsd_build.core.inputs import expand_globs
    from openmsd_build.core.paths import describe_failure
    from openmsd_build.text.fetch.warc_index import missing_cc_columns

    for path, _size in expand_globs(list(globs), "--fetch cc-index:")[:1]:
        try:
            missing = missing_cc_columns(path)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's input
            raise UserError(f"--fetch cc-index: {path} is not a readable Parquet file ({describe_failure(exc)})") from None
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


def flag_inputs(args: argparse.Namespace) -> list[dict]:
    """The archives, or the local folder and its manifest, this run read, for
    `_stats/text.json` (`core.stage_inputs`)."""
    from openmsd_build.core.stage_inputs import sized_inputs

    fetch = FetchSpec.parse(getattr(args, "fetch", "none"))
    if fetch.archive_kind is not None:
        from openmsd_build.text.fetch.warc_backend import expand_paths

        return sized_inputs(expand_paths(",".join(fetch.globs)), fetch.mode)
    if fetch.local:
        from openmsd_build.text.fetch.local_files import parse_spec

        folder, manifest = parse_spec(str(fetch))
        return [{"source": "local-folder", "path": folder, "bytes": None}] + (
            sized_inputs([manifest], "local-manifest") if manifest else [])
    return []
