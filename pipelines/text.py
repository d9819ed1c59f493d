"""The `text` stage's Beam graph (wiring only).

With `--fetch none` papers become documents from their metadata in batches. Otherwise:

    papers -> PlanFetches -> (host key, task) -> [pass] -> extractions, fetch rows
           -> citation_pdf_url follow-ups -> [pass, no follow]
    meta + extractions -> GroupByKey(doi) -> BuildDocuments -> documents/
                                               -> CompleteMainText -> documents/

A landing page whose papers all have a PDF planned is extracted without its main text
(trafilatura) at first; BuildDocuments sends the few papers whose result that text could
change (their PDF gave no text, or weaker title evidence) to CompleteMainText, which reads
the page's archived record again and extracts it whole (`text.beam.main_text_later`,
`text.documents.main_text_needed`).

Either way, documents whose abstract is metadata text take one more step before they are
sharded by DOI and written: GroupByKey(hash of the abstract) -> DropSharedAbstracts (the same
abstract on two or more DOIs belongs to none of them for sure and is dropped from each).

A pass with `--fetch http` and nothing archived yet: GroupByKey(host key) ->
FetchLive (live, polite). With archives — `warc:GLOB`, `cc-index:GLOB`, or `http`
resuming from `OUT/warc/` — the archive is indexed in parallel (one element per WARC or
index file -> `(canonical url, ("row", row))`, tagged for the joins), and each pass joins its
tasks with the index:

    tasks -> GroupByKey(url) with index rows [+ redirect targets, first pass only]
          -> JoinArchiveIndex -> resolved units | pending units -> GroupByKey(url) with
             the hop index -> JoinArchiveIndex -> ... (max_redirects + 1 rounds in all)
          -> ReplayArchive (replays each unit's chain by offset; no politeness needed)

In http mode the units whose chain is not archived to its end go back to their host key
and are fetched live by a FetchLive step beside it (both share one extraction step). The first pass also emits the hop
index (the rows some archived redirect points to), so the later rounds and the follow-up
pass's rounds join with that small table, not the whole index: the whole index is
shuffled once per pass. Flags and input checks are in `openmsd_build.text.command`.
"""

from __future__ import annotations

from collections import Counter

import apache_beam as beam

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.beam_io import COUNTS_TAG, REJECTS_TAG, ShardRows, WriteCounts, WriteParquetShards, WriteRejects
from openmsd_build.schemas import DOCUMENTS, FETCH
from openmsd_build.text.beam import (
    FETCH_TAG,
    FOLLOW_TAG,
    HOP_TAG,
    MAIN_TEXT_TAG,
    MATCHED_TAG,
    META_FIELDS,
    META_TAG,
    PENDING_TAG,
    SHARED_TAG,
    TARGET,
    TASK,
    BuildDocuments,
    CompleteMainText,
    DropSharedAbstracts,
    FetchLive,
    FetchLocal,
    IndexArchive,
    JoinArchiveIndex,
    MetadataDocuments,
    PlanFetches,
    PlanLocalFiles,
    RejectUnmatchedLocalKeys,
    ReplayArchive,
)
from openmsd_build.text.fetch.archive_join import DEFAULT_MAX_REDIRECTS, redirect_target, rounds
from openmsd_build.text.fetch.config import FetchConfig
from openmsd_build.text.fetch.plan import canonical_url, host_key, shard_host
from openmsd_build.text.fetch.spec import FetchSpec


def archive_sources(fetch: FetchSpec, resume: list[str]) -> tuple[str, list[str]] | None:
    """(kind, files) of the archive the stage replays from: the WARCs of `warc:GLOB`, the
    index Parquet files of `cc-index:GLOB`, the resume WARCs of `http`; None when there is
    nothing to replay (`none`, or `http` with an empty `OUT/warc/`)."""
    from openmsd_build.text.fetch.warc_backend import expand_paths

    if fetch.archive_kind is not None:
        return fetch.archive_kind, expand_paths(",".join(fetch.globs))
    if fetch.live and resume:
        return "warc", sorted(resume)
    return None


def index_archives(p, kind: str, files: list[str], warc_prefix: str):
    """`(canonical url, ("row", row))` for every archived response, one Beam element per
    file (Reshuffle spreads the files over workers), plus the indexing counts and the rejects
    of files that are not archives."""
    indexed = (
        p | "ArchiveFiles" >> beam.Create(files, reshuffle=False)  # spread once, below
        | "SpreadArchiveFiles" >> beam.Reshuffle()
        | "IndexArchives" >> beam.ParDo(IndexArchive(kind, warc_prefix)).with_outputs(
            COUNTS_TAG, REJECTS_TAG, main="rows")
    )
    return indexed.rows, indexed[COUNTS_TAG], indexed[REJECTS_TAG]


def resolve_in_archive(tasks, index, hop_index, name: str, max_redirects: int = DEFAULT_MAX_REDIRECTS):
    """Tasks `(host key, task)` -> (resolved units, hop index). With `hop_index` None the
    first round also builds it (from the redirect targets of the whole index).

    Every round is one Flatten and one GroupByKey of values their producers tagged
    (`JoinArchiveIndex`): a CoGroupByKey would add a Map per input and one after the
    grouping, and the graph's two passes have a dozen rounds, so those transforms were
    most of the stage's graph (Beam's per-transform planning is start-up time of every run)."""
    by_url = tasks | f"{name}ByUrl" >> beam.Map(_url_task)
    inputs = [index, by_url]
    if hop_index is None:
        inputs.append(index | f"{name}RedirectTargets" >> beam.FlatMap(_redirect_targets))
    first = (
        _group_tagged(inputs, f"{name}JoinIndex")
        | f"{name}Hop1" >> beam.ParDo(JoinArchiveIndex(max_redirects, emit_hops=hop_index is None)).with_outputs(
            PENDING_TAG, HOP_TAG, main="resolved")
    )
    if hop_index is None:
        hop_index = first[HOP_TAG]
    resolved, pending = [first.resolved], first[PENDING_TAG]
    for n in range(2, rounds(max_redirects) + 1):
        step = (
            _group_tagged([hop_index, pending], f"{name}JoinHops{n}")
            | f"{name}Hop{n}" >> beam.ParDo(JoinArchiveIndex(max_redirects)).with_outputs(PENDING_TAG, main="resolved")
        )
        resolved.append(step.resolved)
        pending = step[PENDING_TAG]
    return tuple(resolved) | f"{name}Resolved" >> beam.Flatten(), hop_index


def _group_tagged(inputs, name: str):
    """`(key, (tag, value))` elements of several PCollections grouped by key: the canonical
    URL in the archive join rounds, the DOI before `BuildDocuments`."""
    return tuple(inputs) | f"{name}Inputs" >> beam.Flatten() | name >> beam.GroupByKey()


def _url_task(kv: tuple[str, dict]) -> tuple[str, tuple[str, dict]]:
    """A task under its host key -> under its join key, the canonical URL (as index rows are
    keyed), tagged as a task."""
    return canonical_url(kv[1]["url"]), (TASK, kv[1])


def _redirect_targets(kv: tuple[str, tuple[str, dict]]) -> list[tuple[str, tuple[str, int]]]:
    """An index row -> `(target url, ("target", 1))` when it is an archived redirect."""
    target = redirect_target(kv[1][1])
    return [(target, (TARGET, 1))] if target else []


def _live_tasks(unit: dict, shards_per_host: int):
    """A unit not archived to its end -> its tasks back under their host keys (http)."""
    url = unit["url"]
    key = shard_host(host_key(url), url, shards_per_host)
    return [(key, task) for task in unit["tasks"]]


FETCH_OUTPUTS = (FETCH_TAG, FOLLOW_TAG, REJECTS_TAG, COUNTS_TAG)


def fetch_pass(tasks, fetch: FetchSpec, fetch_dofn, index, hop_index, host_shards: int, name: str):
    """One pass of fetching / replaying and extracting `(host key, task)` elements;
    returns ({output tag or "ext": PCollection}, hop index). `fetch_dofn(DoFn class,
    **options)` makes the pass's `ReplayArchive`, `FetchLive` or `FetchLocal`."""
    parts = []
    if index is None:  # live http with nothing archived, or a local folder
        live = tasks | f"Group{name}ByHost" >> beam.GroupByKey()
    else:
        units, hop_index = resolve_in_archive(tasks, index, hop_index, name)
        if fetch.live:  # units archived to their end are replayed, the others fetched
            split = units | f"{name}Archived" >> beam.Partition(lambda u, _n: 0 if u["complete"] else 1, 2)
            units = split[0]
            live = (
                split[1] | f"{name}NotArchived" >> beam.FlatMap(_live_tasks, host_shards)
                | f"Group{name}ByHost" >> beam.GroupByKey()
            )
        parts.append(units | f"{name}Replay" >> beam.ParDo(fetch_dofn(ReplayArchive, resumed=fetch.live))
                     .with_outputs(*FETCH_OUTPUTS, main="ext"))
    if fetch.live:
        parts.append(live | f"{name}Live" >> beam.ParDo(fetch_dofn(FetchLive)).with_outputs(*FETCH_OUTPUTS, main="ext"))
    elif fetch.local:  # answered from the user's folder (`FetchLocal`), grouped like live URLs
        parts.append(live | f"{name}Local" >> beam.ParDo(fetch_dofn(FetchLocal)).with_outputs(*FETCH_OUTPUTS,
                                                                                               main="ext"))
    outputs = {tag: tuple(part[tag] for part in parts) | f"{name}All{tag}" >> beam.Flatten()
               for tag in ("ext", *FETCH_OUTPUTS)}
    return outputs, hop_index


def plan_local_files(p, papers, tasks, fetch: str, local, host_shards: int):
    """`--fetch local:`: the papers' tasks plus one per file matched to a paper; returns
    (all tasks, [counts], [rejects], matched keys). `local` is the source as read once in the
    driver (`local_files.load`): its manifest rows that cannot be used are rejects naming their
    files; the source's keys each paper matched (`(key, None)`) go to `reject_unused_local`."""
    from openmsd_build.core.rejects import make_reject

    matched = papers | "PlanLocalFiles" >> beam.ParDo(PlanLocalFiles(fetch, host_shards)).with_outputs(
        COUNTS_TAG, MATCHED_TAG, main="tasks")
    problems = p | "ManifestProblems" >> beam.Create(
        [make_reject("text", reason, key=key, detail=detail) for reason, key, detail in local.problems],
        reshuffle=False)
    problem_counts = p | "ManifestProblemCounts" >> beam.Create(
        [{**Counter(f"local.rejected.{reason}" for reason, _, _ in local.problems),
          **({"local.manifest_used": 1, "local.manifest_rows": local.manifest_rows,
              "local.manifest_rows_used": local.used_rows} if local.manifest else {}),
          **({"local.manifest_rows_repeated": local.repeated_rows} if local.repeated_rows else {}),
          **({"local.files_of_other_types": local.other_files} if local.other_files else {}),
          **({"local.hidden_skipped": local.hidden} if local.hidden else {})}], reshuffle=False)
    all_tasks = (tasks, matched.tasks) | "AllTasks" >> beam.Flatten()
    return all_tasks, [matched[COUNTS_TAG], problem_counts], [problems], matched[MATCHED_TAG]


def reject_unused_local(p, fetch: str, local, matched, fetch_rows):
    """The files of the source's keys (`local_files.listed_keys`: DOIs or file names, manifest
    URL rows) that no paper used, as (rejects, counts): the listed keys grouped with the keys
    the papers matched (`matched`) and the manifest URLs the passes answered (`fetch_rows`
    whose URL was found in the folder)."""
    from openmsd_build.text.fetch.local_files import listed_keys

    listed = p | "LocalKeys" >> beam.Create([(key, False) for key in listed_keys(local)], reshuffle=False)
    answered = fetch_rows | "LocalUrlsAnswered" >> beam.FlatMap(_answered_url_key)
    unmatched = (
        (listed, matched, answered) | "LocalKeysAndMatches" >> beam.Flatten()
        | "GroupLocalKeys" >> beam.GroupByKey()
        | "UnmatchedLocalKeys" >> beam.ParDo(RejectUnmatchedLocalKeys(fetch)).with_outputs(COUNTS_TAG, main="rejects")
    )
    return unmatched.rejects, unmatched[COUNTS_TAG]


def _answered_url_key(row: dict) -> list[tuple[str, None]]:
    """A `--fetch local:` fetch row -> the manifest URL key it used, when its URL was found in
    the folder by a URL row (not a file's own `file://` URL, not `not_in_folder`)."""
    from openmsd_build.text.fetch.local_files import NOT_IN_FOLDER, url_key

    url = row["url"]
    if not url or url.startswith("file:") or row["error"] == NOT_IN_FOLDER:
        return []
    return [(url_key(url), None)]


def drop_shared_abstracts(keyed):
    """`(abstract key, row)` of documents whose abstract is metadata text -> (rows, counts): grouped
    by the key, and a text shared by two or more DOIs is dropped from each (`DropSharedAbstracts`).
    Only those documents take this extra shuffle; they are re-sharded by DOI for writing after."""
    checked = (
        keyed | "GroupByAbstract" >> beam.GroupByKey()
        | "DropSharedAbstracts" >> beam.ParDo(DropSharedAbstracts()).with_outputs(COUNTS_TAG, main="rows")
    )
    return checked.rows, checked[COUNTS_TAG]


def shard_rows(rows, key: str, num_shards: int, name: str):
    """Rows -> `(shard, rows)` by column `key`, as `WriteParquetShards` takes them. Each
    producer's rows are batched where they are made and the batches of all producers meet in
    `WriteParquetShards` (`GroupShards`): a Flatten of the single rows before batching would
    be materialized by the local runner, every row encoded and decoded once more."""
    return (
        rows
        | f"Batch{name}" >> beam.BatchElements(min_batch_size=500, max_batch_size=5000)
        | f"Shard{name}" >> beam.ParDo(ShardRows(key, num_shards))
    )


def build(
    p,
    out: str,
    fetch: FetchSpec | str,
    fetch_config: FetchConfig,
    num_shards: int,
    resume: list[str],
    cap: int = 3,
    host_shards: int = 4,
    extract_timeout: float = 60.0,
    follow: bool = True,
    dest: str | None = None,
    warc_prefix: str = "",
    extract_workers: int = 1,
) -> None:
    """Add the stage to pipeline `p` (`fetch` is none | http | warc:GLOB | cc-index:GLOB |
    local:FOLDER[@MANIFEST];
    `resume` the WARC files of an earlier fetch into `out`; `warc_prefix` where the WARC
    files a cc-index extract names live). `papers/` is read from `out`; documents/, fetch/,
    rejects and stats are written under `dest` (the staging root, default `out`); new WARC
    files go to `out`'s own `warc/`, the append-only resume store that is never staged.
    `extract_workers` isolated extractor processes work at once in each fetching DoFn, and as
    many processes build documents."""
    fetch = FetchSpec.parse(fetch)
    dest = dest or out
    docs_dir, fetch_dir, warc_dir = layout.documents_dir(dest), layout.fetch_dir(dest), layout.warc_dir(out)
    columns = list(META_FIELDS) + (["urls"] if fetch.fetches else [])
    papers = p | "ReadPapers" >> beam.io.ReadFromParquetBatched(
        parquet_io.join_path(layout.papers_dir(out), "*.parquet"), columns=columns)
    if not fetch.fetches:
        docs = papers | "FromMetadata" >> beam.ParDo(MetadataDocuments(num_shards)).with_outputs(
            COUNTS_TAG, SHARED_TAG, main="docs")
        checked, checked_counts = drop_shared_abstracts(docs[SHARED_TAG])
        doc_shards = (docs.docs, shard_rows(checked, "doi", num_shards, "CheckedDocs"))
        counts = [docs[COUNTS_TAG], checked_counts]
        rejects = []
    else:
        local = None
        if fetch.local:
            from openmsd_build.text.fetch.local_files import load

            local = load(str(fetch))
            # the papers' own URLs are looked up only in a manifest that lists URLs
            cap = cap if local.by_url else 0
        planned = papers | "PlanFetches" >> beam.ParDo(PlanFetches(cap, host_shards)).with_outputs(
            META_TAG, COUNTS_TAG, main="tasks")
        tasks, local_counts, local_rejects, local_matched = planned.tasks, [], [], None
        if local is not None:
            tasks, local_counts, local_rejects, local_matched = plan_local_files(p, papers, planned.tasks,
                                                                                 str(fetch), local, host_shards)
        sources = archive_sources(fetch, resume)
        index, index_counts, index_rejects = index_archives(p, *sources, warc_prefix) if sources else (None,) * 3
        def fetch_dofn(follow: bool):
            def make(dofn, **options):
                if dofn is FetchLive:
                    options.update(fetch_config=fetch_config, warc_dir=warc_dir)
                if dofn is FetchLocal:
                    options.update(spec=str(fetch))
                return dofn(extract_timeout=extract_timeout, shards_per_host=host_shards, follow=follow,
                            extract_workers=extract_workers, **options)
            return make

        first, hop_index = fetch_pass(tasks, fetch, fetch_dofn(follow), index, None, host_shards, "Fetch")
        second, _ = fetch_pass(first[FOLLOW_TAG], fetch, fetch_dofn(False), index, hop_index, host_shards,
                               "FetchFollowUps")
        # metadata and extractions come tagged and slimmed by their producers: one Flatten
        # (materialized by the local runner: every extraction is encoded once more) and one
        # GroupByKey, where a CoGroupByKey after a Flatten of the passes cost two of each
        built = (
            _group_tagged([planned[META_TAG], first["ext"], second["ext"]], "JoinByDoi")
            | "BuildDocuments" >> beam.ParDo(BuildDocuments(extract_workers)).with_outputs(
                COUNTS_TAG, SHARED_TAG, MAIN_TEXT_TAG, main="rows")
        )
        completed = built[MAIN_TEXT_TAG] | "CompleteMainText" >> beam.ParDo(
            CompleteMainText(extract_timeout, extract_workers)).with_outputs(
                COUNTS_TAG, SHARED_TAG, REJECTS_TAG, MAIN_TEXT_TAG, main="rows")
        checked, checked_counts = drop_shared_abstracts(
            (built[SHARED_TAG], completed[SHARED_TAG]) | "AllShared" >> beam.Flatten())
        doc_shards = tuple(shard_rows(rows, "doi", num_shards, name) for rows, name in (
            (built.rows, "Docs"), (completed.rows, "CompletedDocs"), (checked, "CheckedDocs")))
        fetch_shards = tuple(shard_rows(rows, "url", num_shards, name) for rows, name in (
            (first[FETCH_TAG], "FetchRows"), (second[FETCH_TAG], "FollowUpFetchRows")))
        _ = fetch_shards | "WriteFetch" >> WriteParquetShards(fetch_dir, FETCH, num_shards, sort_by=("url", "doi"))
        counts = [planned[COUNTS_TAG], first[COUNTS_TAG], second[COUNTS_TAG], built[COUNTS_TAG], completed[COUNTS_TAG],
                  checked_counts]
        if index_counts is not None:
            counts.append(index_counts)
        if local is not None:  # the source's rows no paper used, once both passes are known
            unused, unused_counts = reject_unused_local(
                p, str(fetch), local, local_matched,
                (first[FETCH_TAG], second[FETCH_TAG]) | "LocalFetchRows" >> beam.Flatten())
            local_counts.append(unused_counts)
            local_rejects.append(unused)
        counts += local_counts
        rejects = [first[REJECTS_TAG], second[REJECTS_TAG], completed[REJECTS_TAG]]
        rejects += [index_rejects] if index_rejects is not None else []
        rejects += local_rejects
    _ = doc_shards | "WriteDocuments" >> WriteParquetShards(docs_dir, DOCUMENTS, num_shards, sort_by=("doi",))
    if rejects:
        _ = tuple(rejects) | "WriteRejects" >> WriteRejects(layout.rejects_dir(dest, "text"))
    _ = (
        tuple(counts) | "AllCounts" >> beam.Flatten()
        | "WriteCounts" >> WriteCounts(layout.stats_path(dest, "text"), {"stage": "text", "fetch": str(fetch)})
    )
