"""`openmsd-build release OUT`: an id-only release of a build, with checksums.

Writes (default `OUT/release/`, or `--to DIR`; local or gs://):

    ids/split={train,idt,odt,none}/part-*.parquet  one row per document: DOI, split, language,
                                                   categories, year, token counts and a sha256 of
                                                   title / abstract / content (no text)
    citations/  pairs/{dc,cc,bc}/split=*/  [pairs/mix/  negatives/]  fetch/   copied as built (fetch/ rows
                                                   naming local files or archives: by their file names)
    _stats/release.json                            the release's own counts (`papers_split_ambiguous`: papers
                                                   `splits/` lists more than once, released in no split)
    MANIFEST.json   format, our version, build config, stage counts (`_stats/*.json`), source
                    snapshot files (names, sizes, modification times where still reachable),
                    every file's bytes, rows and sha256, and (`split_ambiguous_examples`) a
                    few DOIs of the papers `splits/` lists more than once, when there are any
    SHA256SUMS      the same checksums in `sha256sum -c` format

Two small Beam pipelines do the work (ids: a sharded join of documents and splits; checksums:
one element per file), so a full-scale release runs on the same runners as the build; the
copies of the id-only tables are `FileSystems.copy` (server-side on Cloud Storage).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

import openmsd_build
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.beam_io import WriteCounts
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import absolute_path, add_out_argument, at_least
from openmsd_build.core.paths import inside
from openmsd_build.core.runner import pipeline_options
from openmsd_build.core.stages import require_fresh, stage_folder_holding
from openmsd_build.core.staging import recover_entries, write_then_replace
from openmsd_build.core.stats import read_json
from openmsd_build.release.beam import (
    AMBIGUOUS_EXAMPLES,
    AMBIGUOUS_TAG,
    SPLIT_FOLDERS,
    FileChecksum,
    ShardTable,
    WriteIdsShard,
    seed_side,
)
from openmsd_build.release.schema import FORMAT, NO_SPLIT
from openmsd_build.schemas import DOCUMENTS

DOC_COLUMNS = (
    "doi", "title", "abstract", "content", "language", "language_prob", "categories", "year", "text_source",
    "n_tokens_title", "n_tokens_abstract", "n_tokens_content",
)
# Id-only tables of the build copied unchanged into the release: (pattern below OUT).
COPIED = (
    "citations/*.parquet",
    "pairs/*/split=*/*.parquet",
    "pairs/mix/*/split=*/*.parquet",
    "negatives/split=*/*.parquet",
    "fetch/*.parquet",
)
MANIFEST = "MANIFEST.json"
SUMS = "SHA256SUMS"
ENTRIES = ("ids", "citations", "pairs", "negatives", "fetch", "_stats", MANIFEST, SUMS)
"""What a release writes at the top of its folder; a new release replaces them whole."""
PARTIAL = ".release-partial"
"""Where a release is written before it replaces the earlier one (`staging.write_then_replace`)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_out_argument(parser, "output root of a finished build (local folder or gs://...)")
    parser.add_argument("--to", default=None, help="release folder (default OUT/release)")
    parser.add_argument("--allow-partial", action="store_true",
                        help="release a build whose split stage has not run (every document gets split=none)")
    parser.add_argument("--no-fetch-table", action="store_true", help="do not include fetch/ (URLs and statuses)")
    parser.add_argument("--shards", type=at_least(0), default=0, help="files per split folder (default: as documents/)")


def run(args: argparse.Namespace, beam_args: list[str]) -> dict:
    release = args.to or parquet_io.join_path(args.out, "release")
    manifest = write_release(args.out, release, beam_args, allow_partial=args.allow_partial,
                             include_fetch=not args.no_fetch_table, shards=args.shards)
    ids = manifest["release_counts"]
    print(
        "release: " + ", ".join(f"{s} {ids.get(f'ids.{s}', 0)}" for s in SPLIT_FOLDERS)
        + f" documents; {len(manifest['files'])} files, {sum(f['bytes'] for f in manifest['files']):,} bytes"
        + f" -> {release}/{MANIFEST}"
    )
    from openmsd_build.core.notices import build_warnings, listed_twice_said, warn

    # a release of a build that kept nothing is allowed (ids of what there is), but never silent
    lines = [f"{stage}: {line}" for stage, lines in build_warnings(args.out).items() for line in lines]
    without_doi = ids.get("documents_without_doi", 0)
    if without_doi:
        lines.append(f"release: {without_doi:,} {'document' if without_doi == 1 else 'documents'} of documents/ "
                     f"{'has' if without_doi == 1 else 'have'} no DOI (a hand edit?): not released "
                     "(`documents_without_doi` in _stats/release.json)")
    twice = ids.get("papers_split_ambiguous", 0)
    if twice:  # counted per shard, warned once here
        shown = ", ".join(manifest.get("split_ambiguous_examples", []))
        lines.append(f"release: {listed_twice_said(twice)}: released in no split "
                     f"(ids/split={NO_SPLIT} when it has a document; core.split_rows), e.g. {shown}")
    in_splits = sum(ids.get(f"ids.{s}", 0) for s in SPLIT_FOLDERS if s != NO_SPLIT)
    if not in_splits and not manifest["build"]["partial"]:
        lines.append(f"release: none of its {ids.get(f'ids.{NO_SPLIT}', 0):,} documents is in train, idt or odt (the "
                     "split stage linked no paper): the release holds ids without a split only")
    warn(lines)
    return manifest


def _public_path(path: str) -> str:
    """What a published manifest may say of a path: a remote URI as it is, a local path by
    its file name only (a release must not leak the builder's folders)."""
    if "://" in path and not path.startswith("file://"):
        return path
    return os.path.basename(path.removeprefix("file://").rstrip("/")) or path


def _public_spec(value: str) -> str:
    """A source spec or path of a build's config as a published manifest may show it: a local
    path by its file name (`_public_path`), in a `warc:` / `cc-index:` glob list or a
    `local:FOLDER[@MANIFEST]` too; anything else as it is."""
    for prefix in ("warc:", "cc-index:"):
        if value.startswith(prefix):
            return prefix + ",".join(_public_path(p) for p in value[len(prefix) :].split(","))
    if value.startswith("local:"):
        return "local:" + "@".join(_public_path(p) for p in value[len("local:") :].split("@"))
    return _public_path(value) if value.startswith(("/", "file://")) else value


def _public_config(value):  # noqa: ANN001, ANN202 - any JSON value of a stage's stats
    """A stage's stats (its config: options, inputs) with every string made public (`_public_spec`)."""
    if isinstance(value, dict):
        return {k: _public_config(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_public_config(v) for v in value]
    return _public_spec(value) if isinstance(value, str) else value


def _public_fetch_part(src: str, dst: str) -> bool:
    """Write the `fetch/` part `src` to `dst` with its local paths made public -- a `file://`
    URL (a `--fetch local:` file) by its file name, `file:NAME`, a local WARC or file path by
    its name -- and say whether it did; False (nothing written) when the part holds none, so
    the caller copies it as it is (server-side on Cloud Storage: a full build's fetch rows name
    gs:// archives and http URLs)."""
    import pyarrow as pa

    with FileSystems.open(src) as f:
        table = parquet_io.read_file_bytes(f.read())
    urls, files = table.column("url").to_pylist(), table.column("warc_file").to_pylist()
    local = [u is not None and u.startswith("file://") for u in urls]
    local_files = [w is not None and "://" not in w for w in files]
    if not any(local) and not any(local_files):
        return False
    urls = ["file:" + _public_path(u) if is_file else u for u, is_file in zip(urls, local, strict=True)]
    files = [_public_path(w) if is_local else w for w, is_local in zip(files, local_files, strict=True)]
    table = table.set_column(table.schema.get_field_index("url"), "url", pa.array(urls, pa.string()))
    table = table.set_column(table.schema.get_field_index("warc_file"), "warc_file", pa.array(files, pa.string()))
    parquet_io.write_table(table, dst)
    return True


def _match(pattern: str) -> list:
    try:
        return sorted(FileSystems.match([pattern])[0].metadata_list, key=lambda m: m.path)
    except Exception:  # noqa: BLE001 - Beam raises for "no match" on some filesystems
        return []


MAX_MANIFEST_BYTES = 512 << 20
"""A release's `MANIFEST.json` lists every input file (with `--fetch warc:`, every WARC of
the crawls: ~16 MB indented for one Common Crawl of ~90,000 files), so it gets more room than
a `_stats` file's `MAX_JSON_BYTES`; still bounded, since it is data from elsewhere."""


def _read_json(path: str, limit: int | None = None) -> dict | None:
    """A JSON object file, None when absent. Read as a build's `_stats` files are
    (`core.stats.read_json`): at most `limit` bytes (`MAX_JSON_BYTES` unless given), and one
    that is larger, not JSON or not an object is a `UserError` naming it. A release's manifest
    is data: a hostile one of gigabytes was read whole into memory before anything was checked."""
    if not FileSystems.exists(path):
        return None
    return read_json(path, limit)


def _write_bytes(path: str, data: bytes) -> None:
    with FileSystems.create(path, compression_type="uncompressed") as f:
        f.write(data)


def _check_release_folder(release: str) -> None:
    """Refuse a folder that holds anything but an earlier release, which the new one replaces:
    the folder's files must be those its release manifest (a JSON object of our `format`)
    lists. A `MANIFEST.json` of any other kind, or files the manifest does not list (a typo in
    --to, a project folder with its own manifest), must not be deleted, nor checksummed into
    the new release."""
    stale = [m.path for m in _match(parquet_io.join_path(release, "**"))]
    stale = [p for p in stale if not p.endswith("/")]
    if not stale:
        return
    try:
        manifest = _read_json(parquet_io.join_path(release, MANIFEST), MAX_MANIFEST_BYTES)
    except (UserError, OSError):  # not a release's manifest: refused below
        manifest = None
    files = manifest.get("files") if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None
    if not isinstance(files, list):
        raise UserError(f"{release} holds files but no release {MANIFEST}: not overwriting it (choose an empty folder)")
    listed = {parquet_io.join_path(release, name) for name in (MANIFEST, SUMS)}
    listed |= {parquet_io.join_path(release, f["path"]) for f in files if isinstance(f, dict) and isinstance(f.get("path"), str)}
    foreign = [p for p in stale if p not in listed]
    if foreign:
        shown = ", ".join(p[len(release.rstrip("/")) + 1:] for p in foreign[:3])
        raise UserError(f"{release} holds {len(foreign)} file(s) its earlier release does not list ({shown}"
                        f"{' ...' if len(foreign) > 3 else ''}): not overwriting it (choose an empty folder)")


def write_release(
    out: str, release: str, beam_args: list[str], allow_partial: bool = False, include_fetch: bool = True,
    shards: int = 0,
) -> dict:
    """Write the id-only release of build `out` to `release`; returns the manifest.

    The release is written whole under `release/.release-partial/` and then replaces the
    earlier one (`staging.write_then_replace`): it used to delete the earlier release first and
    write in place, so a Ctrl-C or a failure left neither, and files without a manifest that
    the next run refused to overwrite."""
    options = pipeline_options(beam_args)
    if shards < 0:
        raise UserError(f"--shards must be 0 (as documents/) or more, not {shards}")
    out, release = absolute_path(out), absolute_path(release)
    require_fresh(out, "release")
    doc_parts = parquet_io.list_parts(layout.documents_dir(out))
    if not doc_parts:
        raise UserError(f"no documents under {layout.documents_dir(out)}: run the build (at least `text`) first")
    split_parts = parquet_io.list_parts(layout.splits_dir(out))
    if not split_parts and not allow_partial:
        raise UserError(f"no splits under {layout.splits_dir(out)}: run `split` (or pass --allow-partial)")
    if inside(release, out):
        raise UserError(f"the release folder must not be the build's output root or hold it ({out} is inside "
                        f"{release})")
    if (owned := stage_folder_holding(release)) is not None:
        raise UserError(f"--to {release} is inside {owned}, a stage's output folder, which its next run clears: "
                        "give a folder outside it")
    num_shards = shards or len(doc_parts)
    partial = parquet_io.join_path(release, PARTIAL)
    recover_entries(release, partial, ENTRIES)  # first: what a killed or interrupted run left
    _check_release_folder(release)
    return write_then_replace(release, partial, ENTRIES, lambda: _write_release(
        out, partial, options, split_parts, num_shards, include_fetch))


def _write_release(out: str, release: str, options, split_parts: list, num_shards: int,
                   include_fetch: bool) -> dict:
    """`write_release`'s files, written under `release` (the partial folder); the manifest."""
    started = time.time()
    ids_root = parquet_io.join_path(release, "ids")
    ambiguous_tmp = parquet_io.join_path(release, "_split_ambiguous.tmp.json")  # read and deleted below
    with beam.Pipeline(options=options) as p:
        docs = (
            p | "ReadDocuments" >> beam.io.ReadFromParquetBatched(
                parquet_io.join_path(layout.documents_dir(out), "*.parquet"), columns=list(DOC_COLUMNS))
            | "ShardDocuments" >> beam.ParDo(ShardTable("docs", "doi", num_shards))
        )
        sides = [docs, seed_side(p, "Shard0", "docs", DOCUMENTS.empty_table().select(list(DOC_COLUMNS)).schema)]
        if split_parts:
            sides.append(
                p | "ReadSplits" >> beam.io.ReadFromParquetBatched(
                    parquet_io.join_path(layout.splits_dir(out), "*.parquet"), columns=["doi", "split"])
                | "ShardSplits" >> beam.ParDo(ShardTable("splits", "doi", num_shards))
            )
        written = (
            tuple(sides) | "AllSides" >> beam.Flatten() | "GroupByShard" >> beam.GroupByKey()
            | "WriteIds" >> beam.ParDo(WriteIdsShard(ids_root, num_shards)).with_outputs(AMBIGUOUS_TAG, main="counts")
        )
        _ = written.counts | "WriteCounts" >> WriteCounts(parquet_io.join_path(release, "_stats", "release.json"),
                                                          {"stage": "release", "shards": num_shards})
        _ = (written[AMBIGUOUS_TAG] | "FewAmbiguous" >> beam.combiners.Top.Smallest(AMBIGUOUS_EXAMPLES)
             | "WriteAmbiguous" >> beam.Map(_write_list, ambiguous_tmp))
    with FileSystems.open(ambiguous_tmp, compression_type="uncompressed") as f:
        ambiguous = json.loads(f.read().decode("utf-8"))
    FileSystems.delete([ambiguous_tmp])

    copied = []
    for pattern in COPIED:
        if pattern.startswith("fetch/") and not include_fetch:
            continue
        for meta in _match(parquet_io.join_path(out, pattern)):
            rel = meta.path[len(out.rstrip("/")) + 1 :]
            if rel.startswith("release/"):
                continue
            copied.append((meta.path, parquet_io.join_path(release, rel)))
    copied = sorted(dict(copied).items())
    for _, dst in copied:
        if "://" not in dst:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
    # the fetch rows of a local build name the builder's folders: written with public names
    copied = [(src, dst) for src, dst in copied if not (src[len(out.rstrip("/")) + 1 :].startswith("fetch/")
                                                         and _public_fetch_part(src, dst))]
    if copied:
        FileSystems.copy([s for s, _ in copied], [d for _, d in copied])

    files = _checksums(release, options)
    stages = {}
    for stage in layout.STAGES:
        stats = _read_json(layout.stats_path(out, stage))
        if stats is not None:
            stages[stage] = stats
    release_stats = _read_json(parquet_io.join_path(release, "_stats", "release.json")) or {}
    manifest = {
        "format": FORMAT,
        "openmsd_build_version": openmsd_build.__version__,
        "created_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "build": {
            "out": _public_path(out),
            "stages_present": sorted(stages),
            "partial": not split_parts,
            "config": {stage: _public_config({k: v for k, v in s.items() if k not in ("counts", "inputs")})
                       for stage, s in stages.items()},
        },
        "sources": _sources(stages),
        "stage_counts": {stage: s.get("counts", {}) for stage, s in stages.items()},
        "release_counts": release_stats.get("counts", {}),
        **({"split_ambiguous_examples": ambiguous} if ambiguous else {}),
        "splits": list(SPLIT_FOLDERS),
        "no_split_label": NO_SPLIT,
        "hashes": "sha256 of the UTF-8 text of title / abstract / content (null: the build had none)",
        "files": files,
        "seconds": round(time.time() - started, 2),
    }
    _write_bytes(parquet_io.join_path(release, MANIFEST), json.dumps(manifest, indent=2, sort_keys=True).encode())
    sums = "".join(f"{f['sha256']}  {f['path']}\n" for f in files)
    _write_bytes(parquet_io.join_path(release, SUMS), sums.encode())
    return manifest


def _checksums(release: str, options) -> list[dict]:
    paths = [m.path for m in _match(parquet_io.join_path(release, "**"))]
    paths = sorted(p for p in paths if not p.endswith("/") and os.path.basename(p) not in (MANIFEST, SUMS))
    tmp = parquet_io.join_path(release, "_checksums.tmp.json")
    paths = [p for p in paths if p != tmp]
    with beam.Pipeline(options=options) as p:
        _ = (
            p | "Files" >> beam.Create(paths, reshuffle=False) | "Spread" >> beam.Reshuffle()
            | "Checksum" >> beam.ParDo(FileChecksum(release))
            | "All" >> beam.combiners.ToList()
            | "Write" >> beam.Map(_write_list, tmp)
        )
    with FileSystems.open(tmp, compression_type="uncompressed") as f:
        files = json.loads(f.read().decode("utf-8"))
    FileSystems.delete([tmp])
    return sorted(files, key=lambda f: f["path"])


def _write_list(items: list, path: str) -> int:
    _write_bytes(path, json.dumps(items).encode("utf-8"))
    return len(items)


def _sources(stages: dict) -> dict:
    """What the build knows of its source snapshots: the files the papers stage read (with
    their sizes then, and size / modification time now where still reachable), the text
    stage's fetch mode and WARC files, the citation files' count."""
    sources: dict = {}
    inputs = (stages.get("papers") or {}).get("inputs")
    if inputs:
        files = []
        for item in inputs:
            entry = dict(item, path=_public_path(item["path"]))
            metas = _match(item["path"])
            if metas:
                entry["bytes_now"] = metas[0].size_in_bytes
                mtime = getattr(metas[0], "last_updated_in_seconds", None)
                if mtime:
                    entry["modified"] = _dt.datetime.fromtimestamp(mtime, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            files.append(entry)
        sources["metadata_files"] = files
    else:
        sources["metadata_files"] = "not recorded by this build's papers stage"
    fetch = (stages.get("text") or {}).get("fetch")
    if fetch:
        sources["text_fetch"] = _public_spec(fetch)
        if fetch.startswith("warc:"):
            warcs = []
            for pattern in fetch[len("warc:") :].split(","):
                for m in _match(pattern):
                    warcs.append({"path": _public_path(m.path), "bytes": m.size_in_bytes})
            sources["warc_files"] = warcs
    citations = (stages.get("citations") or {}).get("counts", {})
    if citations:
        sources["opencitations"] = {k: citations[k] for k in ("files_read", "rows_read") if k in citations}
    return sources
