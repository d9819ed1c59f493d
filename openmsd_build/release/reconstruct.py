"""`openmsd-build reconstruct RELEASE --unpaywall G --crossref G [--openalex G]
--fetch none|http|warc:GLOB|cc-index:GLOB|local:FOLDER[@MANIFEST] --out DIR`: rebuild the text columns of an id-only release.

Steps (each a Beam pipeline on the runner the Beam flags choose; paths local or gs://):

1. the papers stage on the given snapshots -> `DIR/_unrestricted/papers/`;
2. restrict: a sharded join of those papers with the release's DOIs -> `DIR/papers/`
   (release DOIs missing from the snapshots are counted);
3. the text stage on `DIR` exactly as in a build -> `DIR/documents/`, `DIR/fetch/`;
4. verify: a sharded join of the release's hashes with the rebuilt documents ->
   `DIR/reconstruct/mismatches/` (one row per field that differs or is missing) and
   `DIR/reconstruct/recovery.json` (counts and recovery rate per split and field).

A field is *recovered* when the sha256 of the rebuilt text equals the release's.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Mapping, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout, parquet_io, paths
from openmsd_build.core.beam_io import WriteCounts, WriteParquetShards
from openmsd_build.core.errors import Parser, UserError
from openmsd_build.core.inputs import absolute_path, at_least, number_from
from openmsd_build.core.runner import pipeline_options
from openmsd_build.core.staging import delete_path
from openmsd_build.papers.sources.registry import add_source_arguments, source_globs
from openmsd_build.release.beam import MISMATCH_TAG, RestrictPapersShard, ShardTable, VerifyShard, seed_side
from openmsd_build.release.command import MANIFEST, MAX_MANIFEST_BYTES, _read_json, _write_bytes
from openmsd_build.release.hashes import FIELDS, recovery_rates
from openmsd_build.release.schema import MISMATCHES, NO_SPLIT, RELEASE_IDS
from openmsd_build.release.verify import UnsafePath, check_ids_labels, output_path, verified_files, verify_ids
from openmsd_build.schemas import PAPERS

DOC_COLUMNS = ["doi", "title", "abstract", "content", "language"]
LOG = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("release", help="an id-only release folder (local or gs://) written by `openmsd-build release`")
    parser.add_argument("--out", required=True, help="where to rebuild (a build output root)")
    add_source_arguments(parser)
    parser.add_argument("--fetch", default="none", help="where the pages come from, as the text stage's --fetch: "
                        "none | http | warc:GLOB | cc-index:GLOB | local:FOLDER[@MANIFEST]")
    parser.add_argument("--warc-prefix", default="",
                        help="with --fetch cc-index: where the WARC files the index names live (as text)")
    # as the text stage's flags, and checked as they are when parsed: out of range, they failed
    # the text step only after the papers step had read the whole snapshots
    parser.add_argument("--max-urls-per-paper", type=at_least(1), default=3,
                        help="fetch at most this many URLs per paper (as text; 1 or more, default 3)")
    parser.add_argument("--rate-per-host", type=number_from(0, inclusive=False), default=1.0,
                        help="requests per second per host (http; above 0, default 1)")
    parser.add_argument("--contact", default=None, help="contact address added to the User-Agent (e.g. mailto:...)")
    parser.add_argument("--allow-network", action="extend", nargs="+", default=[], metavar="CIDR",
                        help="allow fetching from this private/loopback network (e.g. 127.0.0.0/8 for tests)")
    parser.add_argument("--no-robots", action="store_true", help="do not honour robots.txt (only for your own servers)")
    parser.add_argument("--extract-timeout", type=number_from(0, inclusive=False), default=60.0,
                        help="hard limit per document extraction (s; above 0, default 60)")


def run(args: argparse.Namespace, beam_args: list[str]) -> dict:
    text_argv = ["--max-urls-per-paper", str(args.max_urls_per_paper), "--rate-per-host", str(args.rate_per_host),
                 "--extract-timeout", str(args.extract_timeout)]
    if args.contact:
        text_argv += ["--contact", args.contact]
    for cidr in args.allow_network:
        text_argv += ["--allow-network", cidr]
    if args.no_robots:
        text_argv.append("--no-robots")
    if args.warc_prefix:
        text_argv += ["--warc-prefix", args.warc_prefix]
    result = reconstruct(args.release, args.out, source_globs(args), args.fetch,
                         beam_args, text_argv)
    # what the papers and text steps would say run alone (files named after no DOI, a
    # host's addresses refused, ...), said here too: the rates below show only their effect
    from openmsd_build.core.notices import announce

    for name in ("papers", "text"):
        announce(args.out, name, stale=False)
    print(format_rates(result["rates"]))
    for line in recovery_warnings(result):
        print(f"warning: {line}", file=sys.stderr)
    graph = result["graph"]
    refused = {k.split(".", 1)[1]: v for k, v in graph.items() if k.startswith("files_refused.")}
    print(f"graph: {graph['files_copied']:,} release files copied, {graph['split_rows']:,} split rows"
          + (f"; refused {sum(refused.values()):,} ({', '.join(f'{k} {v}' for k, v in sorted(refused.items()))})"
             if refused else ""))
    if refused:
        print(f"warning: {sum(refused.values()):,} release files were not copied (see the log above and "
              "recovery.json's graph counts): the rebuilt graph lacks them", file=sys.stderr)
    if graph.get("stats_not_restored"):
        print(f"warning: the release's stage counts of {graph['stats_not_restored']} stage(s) are not counts: their "
              "_stats/ files were not restored (see the log above)", file=sys.stderr)
    print(f"recovery: {parquet_io.join_path(args.out, 'reconstruct', 'recovery.json')}")
    return result


def read_manifest(release: str) -> dict:
    """The release's `MANIFEST.json`, or a `UserError`: missing, a link that leads out of the
    release (the manifest is the data every other file is checked against, so it is confined
    like them), larger than `command.MAX_MANIFEST_BYTES`, not JSON, or not an object
    (`command._read_json`)."""
    try:
        path = paths.confined_path(release, MANIFEST)
    except UnsafePath:
        raise UserError(f"{release}/{MANIFEST} leads outside the release (a symbolic link?): refused") from None
    manifest = _read_json(path, MAX_MANIFEST_BYTES)
    if manifest is None:
        raise UserError(f"{release}: no {MANIFEST} (is it a release written by `openmsd-build release`?)")
    return manifest


def reconstruct(
    release: str, out: str, globs: Mapping[str, Sequence[str]], fetch: str,
    beam_args: list[str], text_argv: list[str] | None = None,
) -> dict:
    import importlib

    from openmsd_build.core.stages import STAGE_NAMES, present_outputs, stage, stage_folder_holding

    # the stages' commands through the registry: release depends on no stage package
    papers_stage = importlib.import_module(stage("papers").command)
    text_stage = importlib.import_module(stage("text").command)

    options = pipeline_options(beam_args)
    release, out = absolute_path(release), absolute_path(out)
    if paths.inside(release, out):  # its stages would clear the release's own citations/, fetch/, ...
        raise UserError(f"--out {out} is the release folder or inside it: reconstruct into another folder")
    if paths.inside(out, release):  # the build a release was written from: rebuilding it destroys both
        raise UserError(f"the release {release} is inside --out {out}: reconstruct into a new or empty folder")
    if (owned := stage_folder_holding(out)) is not None:
        raise UserError(f"--out {out} is inside {owned}, a stage's output folder of another build, which its next "
                        "run clears: reconstruct into a folder outside it")
    held = [f"{folder}/" for name in STAGE_NAMES for folder in present_outputs(out, name)]
    if held:  # the release's graph files would mix with (or half replace) an earlier build's
        raise UserError(f"--out {out} already holds a build ({', '.join(held)}): reconstruct into a new or empty "
                        "folder")
    manifest = read_manifest(release)
    ids_glob = parquet_io.join_path(release, "ids", "split=*", "*.parquet")
    try:  # checksums verified before any use (`release.verify`)
        verify_ids(release, manifest, sorted(parquet_io.match_paths(ids_glob)))
    except ValueError as exc:
        raise UserError(f"{release}: {exc}") from None
    # A checksum says the file is the one signed, not that it is an ids table: one of another
    # schema (integer or null DOIs, no split column) failed deep inside Beam, after the papers
    # and text steps had run. Its footer says so before any pipeline runs, and its rows'
    # labels and DOIs are checked then too.
    ids_files = sorted(parquet_io.match_paths(ids_glob))
    parquet_io.check_parts(ids_files, RELEASE_IDS, required=("doi", "split"), non_null=("doi", "split"))
    try:
        check_ids_labels(ids_files)
    except ValueError as exc:
        raise UserError(f"{release}: {exc}") from None
    # the text step's flags and inputs, before the papers step reads the whole snapshots
    text_stage.check_fetch_inputs(fetch, _flag_value(text_argv or [], "--warc-prefix"))
    before = _entries(out)
    try:
        return _reconstruct(release, out, manifest, ids_glob, globs, fetch, beam_args, text_argv, options,
                            papers_stage, text_stage)
    except BaseException:
        # what this run made would block the next one ("already holds a build"): removed, but
        # not warc/, the fetched pages a next `--fetch http` try resumes from
        for name in sorted(_entries(out) - before - {"warc"}):
            delete_path(parquet_io.join_path(out, name))
        raise


def _flag_value(argv: Sequence[str], flag: str) -> str:
    """The value given to `flag` in `argv` ("" when absent)."""
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else ""


def _entries(out: str) -> set[str]:
    """The names directly under a local `out` (empty for a folder that is not there, or remote)."""
    import os

    try:
        return set(os.listdir(out)) if "://" not in out else set()
    except OSError:
        return set()


def _reconstruct(release: str, out: str, manifest: dict, ids_glob: str, globs, fetch: str, beam_args: list[str],
                 text_argv: list[str] | None, options, papers_stage, text_stage) -> dict:
    """`reconstruct`'s steps once its inputs are checked."""
    started = time.time()

    # 1. papers on the whole snapshots (the cheap stage); 2. restricted to the release.
    full = parquet_io.join_path(out, "_unrestricted")
    papers_stage.run_papers(full, globs, beam_args)
    full_parts = parquet_io.list_parts(layout.papers_dir(full))
    num_shards = max(1, len(full_parts))
    papers_dir = layout.papers_dir(out)
    parquet_io.clear_directory(papers_dir)
    with beam.Pipeline(options=options) as p:
        papers = (
            p | "ReadPapers" >> beam.io.ReadFromParquetBatched(parquet_io.join_path(layout.papers_dir(full), "*.parquet"))
            | "ShardPapers" >> beam.ParDo(ShardTable("papers", "doi", num_shards))
        )
        ids = (
            p | "ReadIds" >> beam.io.ReadFromParquetBatched(ids_glob, columns=["doi"])
            | "ShardIds" >> beam.ParDo(ShardTable("ids", "doi", num_shards))
        )
        _ = (
            (papers, ids, seed_side(p, "Shard0", "papers", PAPERS)) | "AllSides" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "Restrict" >> beam.ParDo(RestrictPapersShard(papers_dir, num_shards))
            | "WriteCounts" >> WriteCounts(parquet_io.join_path(out, "reconstruct", "restrict.json"),
                                           {"stage": "reconstruct.restrict"})
        )
    for path in full_parts:  # the unrestricted copy is only a step
        FileSystems.delete([path])

    # 3. the text stage, unchanged.
    text_parser = Parser(prog="openmsd-build text")
    text_stage.add_arguments(text_parser)
    text_args = text_parser.parse_args(["--out", out, "--fetch", fetch, *(text_argv or [])])
    text_stage.run(text_args, beam_args)

    # 4. verify against the release's hashes.
    verify_dir = parquet_io.join_path(out, "reconstruct")
    mismatch_dir = parquet_io.join_path(verify_dir, "mismatches")
    parquet_io.clear_directory(mismatch_dir)
    verify_shards = max(1, len(parquet_io.list_parts(layout.documents_dir(out))))
    with beam.Pipeline(options=options) as p:
        expected = (
            p | "ReadIds" >> beam.io.ReadFromParquetBatched(ids_glob, columns=RELEASE_IDS.names)
            | "ShardIds" >> beam.ParDo(ShardTable("ids", "doi", verify_shards))
        )
        rebuilt = (
            p | "ReadDocuments" >> beam.io.ReadFromParquetBatched(
                parquet_io.join_path(layout.documents_dir(out), "*.parquet"), columns=DOC_COLUMNS)
            | "ShardDocuments" >> beam.ParDo(ShardTable("docs", "doi", verify_shards))
        )
        verified = (
            (expected, rebuilt, seed_side(p, "Shard0", "ids", RELEASE_IDS)) | "AllSides" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "Verify" >> beam.ParDo(VerifyShard()).with_outputs(MISMATCH_TAG, main="counts")
        )
        _ = verified[MISMATCH_TAG] | "WriteMismatches" >> WriteParquetShards(
            mismatch_dir, MISMATCHES, verify_shards, sort_by=("doi", "field"))
        _ = verified.counts | "WriteCounts" >> WriteCounts(
            parquet_io.join_path(verify_dir, "counts.json"), {"stage": "reconstruct.verify"})

    counts = (_read_json(parquet_io.join_path(verify_dir, "counts.json")) or {}).get("counts", {})
    restrict = (_read_json(parquet_io.join_path(verify_dir, "restrict.json")) or {}).get("counts", {})
    result = {
        "release": release,
        "release_version": manifest.get("openmsd_build_version"),
        "fetch": fetch,
        "rates": recovery_rates(counts),
        "restrict": restrict,
        "counts": counts,
        "seconds": round(time.time() - started, 2),
    }
    result["graph"] = restore_graph(release, out, manifest)  # its counts are part of the record
    _write_bytes(parquet_io.join_path(verify_dir, "recovery.json"),
                 json.dumps(result, indent=2, sort_keys=True).encode("utf-8"))
    return result


GRAPH_COPIED = ("citations/", "pairs/", "negatives/")


def restore_graph(release: str, out: str, manifest: dict) -> dict[str, int]:
    """Make the reconstruction a usable build: the release's citations, pairs (and mixes,
    negatives) are copied in as released, `splits/` is written from the release's split
    labels (`paper_id` recomputed from the DOI; `group` is not released), and the release's
    stage counts become `_stats/{citations,split,pairs}.json`, so `export`, `evaluate` and
    `report` work on it as on the original build. One output file per ids file: no step
    holds the whole release."""

    import pyarrow as pa
    import pyarrow.compute as pc

    from openmsd_build.core.hashing import paper_ids
    from openmsd_build.schemas import SPLITS

    copied = 0
    prefix = release.rstrip("/") + "/"
    # manifest paths are data: confined to the release (read) and to `out` (written), and
    # each file's checksum verified before it is copied (`release.verify`)
    def graph_file(rel: str) -> bool:
        return rel.startswith(GRAPH_COPIED) and rel.endswith(".parquet")

    verified, refused = verified_files(release, manifest, graph_file)
    for path in parquet_io.match_paths(parquet_io.join_path(release, "**.parquet")):  # present, not listed
        rel = path[len(prefix):] if path.startswith(prefix) else path
        if graph_file(rel) and rel not in verified and rel not in refused:
            refused[rel] = "not_in_manifest"
    for rel in verified:
        try:
            dst = output_path(out, rel)
        except UnsafePath as exc:
            refused[rel] = exc.reason
            continue
        if "://" not in dst:
            import os

            os.makedirs(os.path.dirname(dst), exist_ok=True)
        if FileSystems.exists(dst):
            FileSystems.delete([dst])
        FileSystems.copy([prefix + rel], [dst])
        copied += 1
    for rel, reason in sorted(refused.items()):
        LOG.warning("release file %.200r not copied: %s", rel, reason)
    ids = sorted(parquet_io.match_paths(parquet_io.join_path(release, "ids", "split=*", "*.parquet")))
    splits_dir = layout.splits_dir(out)
    parquet_io.clear_directory(splits_dir)
    rows = 0
    for i, path in enumerate(ids):
        with FileSystems.open(path) as f:
            table = parquet_io.read_file_bytes(f.read(), ["doi", "split", "language"])
        table = table.filter(pc.not_equal(table["split"], NO_SPLIT)).sort_by("doi")
        dois = table["doi"].to_pylist()
        out_table = pa.table({
            "doi": table["doi"],
            "paper_id": pa.array(paper_ids(dois), pa.int64()),
            "split": table["split"],
            "language": table["language"],
            "group": pa.nulls(table.num_rows, pa.string()),
        }, schema=SPLITS)
        parquet_io.write_table(out_table, parquet_io.part_path(splits_dir, i, max(1, len(ids))))
        rows += out_table.num_rows
    stage_counts = manifest.get("stage_counts")
    stats_refused: list[str] = []
    for stage, counts in (stage_counts if isinstance(stage_counts, dict) else {}).items():
        if stage in ("citations", "split", "pairs"):
            if not (isinstance(counts, dict) and all(isinstance(k, str) and isinstance(v, int)
                                                     and not isinstance(v, bool) for k, v in counts.items())):
                LOG.warning("the release's stage_counts of %s are not counts: _stats/%s.json not restored", stage, stage)
                stats_refused.append(stage)
                continue
            _write_bytes(layout.stats_path(out, stage), json.dumps(
                {"stage": stage, "counts": counts, "restored_from_release": True}, indent=2, sort_keys=True
            ).encode("utf-8"))
    result = {"files_copied": copied, "split_rows": rows}
    if stats_refused:
        result["stats_not_restored"] = len(stats_refused)
    for reason in refused.values():
        key = f"files_refused.{reason}"
        result[key] = result.get(key, 0) + 1
    return result


def recovery_warnings(result: dict) -> list[str]:
    """What a low recovery comes from, when the run knows: snapshots that hold none (or only
    some) of the release's papers, or no text fetched at all. The rates alone said 0/N for
    every field, exit 0, and the cause sat in recovery.json's `restrict` counts."""
    restrict = result.get("restrict") or {}
    wanted, missing = restrict.get("release.dois", 0), restrict.get("release.no_paper_in_inputs", 0)
    lines = []
    if wanted and missing == wanted:
        lines.append(f"none of the release's {wanted:,} papers is in the given snapshots ({restrict.get('papers.read', 0):,} "
                     "papers read): are these the snapshots the release was built from?")
    elif missing:
        lines.append(f"{missing:,} of the release's {wanted:,} papers are not in the given snapshots "
                     "(release.no_paper_in_inputs): nothing of theirs can be recovered")
    content = [fields.get("content", {}) for fields in (result.get("rates") or {}).values()]
    expected = sum(f.get("expected", 0) for f in content)
    if result.get("fetch") == "none" and expected and not sum(f.get("recovered", 0) for f in content):
        lines.append("no content recovered: --fetch none rebuilds from the snapshots' metadata alone; "
                     "--fetch http (or warc:GLOB, local:FOLDER) reads the papers' pages and PDFs")
    return lines


def format_rates(rates: dict) -> str:
    """A plain-text table: one line per split, recovered / expected (rate) per field."""
    lines = ["recovered (rebuilt sha256 = release sha256) / expected, per split and field:"]
    for split, fields in rates.items():
        cells = []
        for field in FIELDS:
            f = fields[field]
            if f["expected"]:
                cells.append(f"{field} {f['recovered']}/{f['expected']} ({100 * f['rate']:.1f}%)")
        lines.append(f"  {split:<6} " + ", ".join(cells))
    return "\n".join(lines)
