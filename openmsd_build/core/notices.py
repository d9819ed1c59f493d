"""Warnings a user must not miss: a stage that wrote nothing (or suspiciously little), a
high reject rate, and later stages left stale by re-running an earlier one.

A build that keeps 0 citation edges still exits 0 at every stage (the inputs may simply be
from different papers), and a run of five stages scrolls the one telling line away. So
each stage's counts are judged here (`stage_warnings`, pure: counts in, sentences out),
the sentences are printed as the stage ends (`announce`), kept in `_stats/<stage>.json`
(`warnings`), repeated at the end of `run`, and shown by the report and by `export`.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping

# A stage keeping less than this share of what it read, from at least SMALL_MIN records, is
# "suspiciously small" (a real build keeps most of it; a few percent means mismatched inputs).
SMALL_SHARE = 0.01
SMALL_MIN = 100

DEFAULT_MAX_REJECT_RATE = 0.5
"""`--max-reject-rate`'s default: a stage that rejects more than half of the records it read
fails (its previous outputs are kept), since such a run read the wrong files."""
LOUD_REJECT_RATE = 0.1
"""Above this share of rejected records a stage warns, however it ends."""


def _n(value: int | float) -> str:
    return f"{int(value):,}"


def listed_twice_said(papers: int) -> str:
    """How the warnings of pairs, release and report name the papers `splits/` lists more
    than once (`core.split_rows`; each goes on with what it did with them)."""
    return (f"{_n(papers)} {'paper' if papers == 1 else 'papers'} of splits/ {'is' if papers == 1 else 'are'} listed "
            "more than once (a splits/ folder mixing two builds' files?)")


def _total(counts: Mapping[str, int], prefix: str | tuple[str, ...]) -> int:
    """The sum of the counters under `prefix` (one or several)."""
    return sum(v for k, v in counts.items() if k.startswith(prefix))


def _rejected(n: int, one: str, many: str, rest: str, stage: str, tail: str = "") -> list[str]:
    """`n` problems as one warning pointing at the stage's rejects; none when `n` is 0."""
    return [f"{_n(n)} {one if n == 1 else many} {rest}: see rejects/{stage}/{tail}"] if n else []


def _top(counts: Mapping[str, int], prefix: str, n: int = 3) -> str:
    """The largest counters under `prefix`, as `reason count` phrases, and what the others add
    up to (a warning's breakdown sums to its total)."""
    items = sorted(((v, k[len(prefix):]) for k, v in counts.items() if k.startswith(prefix) and v), reverse=True)
    shown = ", ".join(f"{k} {_n(v)}" for v, k in items[:n])
    rest = items[n:]
    if rest:
        shown += f", and {_n(sum(v for v, _ in rest))} for {len(rest)} other reason{'s' if len(rest) > 1 else ''}"
    return shown


def _papers(counts: Mapping[str, int]) -> list[str]:
    read = _total(counts, "read.")
    written = counts.get("written", 0)
    if read and not written:
        return [f"papers wrote 0 papers from {_n(read)} records read: are the snapshot files of the right source?"]
    if written and not counts.get("with_abstract", 0) and not counts.get("with_urls", 0):
        return [f"none of the {_n(written)} papers has an abstract or a URL: the text stage can keep them only "
                "from files you give it (--fetch local:FOLDER); are these snapshots' records complete?"]
    return []


def _text(counts: Mapping[str, int]) -> list[str]:
    out: list[str] = []
    papers, kept = counts.get("papers", 0), counts.get("documents.kept", 0)
    fetched = sum(v for k, v in counts.items() if k == "fetch.ok" or k.startswith("fetch.error."))
    missed = counts.get("fetch.error.not_in_archive", 0) + counts.get("fetch.error.not_in_folder", 0)
    if fetched and not counts.get("fetch.ok", 0):
        why = ("none of them is in the archives / folder given: are the archives (or the local files) from "
               "these papers?") if missed else f"errors: {_top(counts, 'fetch.error.')}"
        out.append(f"0 of {_n(fetched)} URLs planned for the papers were fetched or found; {why}")
    elif fetched >= SMALL_MIN and missed / fetched > 1 - SMALL_SHARE:
        out.append(f"only {_n(fetched - missed)} of {_n(fetched)} planned URLs were found in the archives / "
                   "folder given: are they from these papers?")
    refused = counts.get("fetch.error.blocked_address", 0)
    if refused:  # the safe default refusing the user's own server: say which flag permits it
        were = "URL was" if refused == 1 else "URLs were"
        out.append(f"{_n(refused)} {were} refused for a private, loopback or link-local address (blocked_address): "
                   "to fetch from your own network, permit it with --allow-network CIDR (e.g. 10.0.0.0/8)")
    files = f"of {_n(counts.get('archive.files_indexed', 0))} archive files were"
    out += _rejected(_total(counts, "archive.rejected."), files, files,
                     f"rejected ({_top(counts, 'archive.rejected.')})", "text", " for the file names")
    out += _rejected(counts.get("archive.records_cut_short", 0), "archived record ends", "archived records end",
                     "before the Content-Length (a truncated file?), not replayed", "text", " for the files")
    out += _rejected(counts.get("archive.damaged_spans", 0), "damaged span of an archive", "damaged spans of archives",
                     f"skipped ({_n(counts.get('archive.damaged_bytes', 0))} bytes, their records lost; the records "
                     "after them read)", "text", " for the files")
    bad_rows = _total(counts, "local.rejected.")
    if bad_rows:  # manifest rows, or with the naming rule files of the folder
        what = (("manifest row", "manifest rows") if counts.get("local.manifest_used")
                else ("file of the folder", "files of the folder"))[bad_rows != 1]
        out.append(f"{_n(bad_rows)} {what} {'was' if bad_rows == 1 else 'were'} rejected "
                   f"({_top(counts, 'local.rejected.')}): see rejects/text/ for the files named")
    local = "local.papers_matched" in counts
    mismatched = [f"{_n(n)} {what}" for key, what in (
        ("documents.title_mismatch", "papers dropped"), ("abstracts_wrong.title_mismatch_content", "texts left out"),
        ("abstracts_wrong.title_mismatch", "abstracts left out")) if (n := counts.get(key, 0))]
    if local and mismatched:  # the user said which file is whose: a file that is another text is theirs to fix
        out.append(f"files read with --fetch local: print another title than their paper's (title_mismatch: "
                   f"{', '.join(mismatched)}): check the manifest's rows or the files' names")
    if local and not counts["local.papers_matched"] and not counts.get("fetch.ok", 0):  # URL rows read none either
        if counts.get("local.manifest_used"):
            ask = "does the manifest use the papers' DOIs or URLs?"
        else:
            skipped = counts.get("local.files_of_other_types", 0)
            hidden = counts.get("local.hidden_skipped", 0)
            ask = ("are the files named after the papers' DOIs (each / as _ or %2F)? Only .pdf, .html, .htm and "
                   ".xhtml files are read" + (f" ({_n(skipped)} other files were not)" if skipped else "")
                   + (f"; hidden files and folders (names starting with '.') are not ({_n(hidden)} skipped)"
                      if hidden else ""))
        out.append(f"no file of the folder matched any of the {_n(papers)} papers: {ask}")
    if papers and not kept:
        if fetched:
            hint = "no page or PDF gave a usable text"
        elif local:
            hint = "no file of the folder was read for them"
        elif "archive.files_indexed" in counts:
            hint = "none of them has a URL to look up in the archives (their metadata gives none)"
        else:
            hint = ("with --fetch none only papers whose metadata has an abstract are kept; give their pages "
                    "(--fetch warc:, local:, http)")
        out.append(f"text kept 0 documents of {_n(papers)} papers ({_top(counts, 'documents.')}): {hint}")
    return out


def _citations(counts: Mapping[str, int]) -> list[str]:
    read, kept = counts.get("rows_read", 0), counts.get("edges_kept", 0)
    if not read:
        return ["citations read 0 rows: are the --opencitations files OpenCitations CSV dumps?"]
    left_open = counts.get("meta_rows_unbalanced_quote", 0)
    one = left_open == 1
    meta = ([f"{_n(left_open)} OpenCitations Meta {'row' if one else 'rows'} left a quoted field open (see rejects/"
             f"citations/, reason unbalanced_quote): {'it was' if one else 'they were'} rejected, so "
             f"{'its OMID resolves' if one else 'their OMIDs resolve'} to no DOI; the rows after "
             f"{'it' if one else 'them'} were read as rows"] if left_open else [])
    if kept and (read < SMALL_MIN or kept / read >= SMALL_SHARE):
        return meta
    documents = counts.get("documents_read", 0)
    missing = {k: counts.get(k, 0) for k in ("citing_missing", "cited_missing", "no_abstract")}
    if sum(missing.values()) >= (read - kept) / 2:
        citing, cited = missing["citing_missing"], missing["cited_missing"]
        named = (f"{_n(citing)} rows name a citing DOI and {_n(cited)} a cited DOI" if citing and cited else
                 f"{_n(citing)} rows name a citing DOI" if citing else
                 f"{_n(cited)} rows name a cited DOI" if cited else "")
        parts = [f"{named} that is not among the {_n(documents)} papers with text"] if named else []
        if missing["no_abstract"]:
            parts.append(f"{_n(missing['no_abstract'])} rows have an end without an abstract")
        why = f"{'; '.join(parts)}: are the OpenCitations and metadata slices from the same papers?"
    else:
        drops = {k: v for k, v in counts.items() if k in _CITATION_DROPS}
        why = f"dropped: {_top(drops, '', 4)}"
    return [f"citations kept {_n(kept)} of {_n(read)} rows read; {why}", *meta]


# the citations stage's reasons a row is dropped (its module docstrings); `rows_too_long` is a
# part of `malformed_row`, `bad_doi_whitespace` of `bad_doi`, and every other counter tallies
# what was read, resolved or kept
_CITATION_DROPS = frozenset({"rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "self_citation",
                             "duplicate_edge", "citing_missing", "cited_missing", "no_abstract"})


def _split(counts: Mapping[str, int]) -> list[str]:
    read = counts.get("documents_read", 0)
    linked = sum(counts.get(s, 0) for s in ("train", "idt", "odt"))
    if not read:
        return ["split read 0 documents: documents/ is empty (see the text stage's warning); splits/ is empty"]
    if not linked:
        return [f"split assigned 0 of {_n(read)} documents: none has a kept citation link (see the citations "
                "stage's warning)"]
    if not (counts.get("idt", 0) or counts.get("odt", 0)):
        return [f"split put all {_n(linked)} linked papers in train: IDT and ODT are empty (a small build: "
                "lower --top-k or raise --min-idt-groups)"]
    languages = sum(1 for k in counts if k.startswith("top_language_rank."))
    if not counts.get("odt", 0):  # the out-of-distribution test: its pairs, evaluation and export empty
        return [f"split put no paper in ODT (the languages outside the top --top-k): all {_n(languages)} languages "
                "of the linked papers are in it; lower --top-k to hold the smallest out"]
    if not counts.get("idt", 0):
        return ["split put no paper in IDT: raise --min-idt-groups (or --idt-fraction) to hold some out of train"]
    return []


def _pairs(counts: Mapping[str, int]) -> list[str]:
    twice = counts.get("papers_split_ambiguous", 0)
    out = [f"{listed_twice_said(twice)}: in no split, {_n(counts.get('edges_split_ambiguous', 0))} citation edges "
           "of theirs dropped and no pair of theirs written (core.split_rows)"] if twice else []
    unknown = counts.get("papers_split_unknown", 0)
    if unknown:
        out.append(f"{_n(unknown)} {'paper' if unknown == 1 else 'papers'} of splits/ {'has' if unknown == 1 else 'have'} "
                   "a split that is none of train, idt, odt (a hand-edited splits/?): in no split, their citation "
                   "edges counted as edges_unannotated and no pair of theirs written")
    total = _total(counts, ("dc_kept.", "cc_pairs.", "bc_pairs."))
    if not total:
        return out + ["pairs wrote 0 pairs: the splits hold no linked papers (see the split and citations warnings); "
                      "export has nothing to write"]
    empty = [split.upper() for split in ("idt", "odt")
             if not _total(counts, tuple(f"{kind}.{split}" for kind in ("dc_kept", "cc_pairs", "bc_pairs")))]
    if empty:  # a test split of a paper or two, or none: its evaluation and export tasks are empty
        return out + [f"pairs wrote no related pair in {', '.join(empty)}: evaluate and export have no task there "
                      "(see the split stage's counts: a small build holds few linked papers out of train)"]
    return out


def _contexts(counts: Mapping[str, int]) -> list[str]:
    out: list[str] = []
    read, markers = counts.get("documents_read", 0), counts.get("markers_found", 0)
    if read and read == counts.get("documents_without_content", 0):
        out.append(f"none of the {_n(read)} documents has a full text: no citation sentence to read (full texts "
                   "come from the papers' PDFs and pages: text --fetch)")
    if not counts.get("crossref_files_read", 0):
        if markers:
            out.append(f"no --crossref files were given: all {_n(markers)} citation markers stay unresolved and no "
                       "context is written (give the Crossref snapshot the papers were built from)")
    elif not counts.get("reference_lists_read", 0):
        out.append(f"the {_n(counts['crossref_files_read'])} --crossref files held no reference list: are they "
                   "Crossref works (with `reference` arrays)?")
    elif markers and not counts.get("markers_resolved", 0):
        out.append(f"0 of {_n(markers)} citation markers were resolved ({_top(counts, 'markers_unresolved.')}): "
                   "are the --crossref files the works of these papers?")
    if counts.get("ccs_instances_split_ambiguous", 0):
        out.append(f"{_n(counts['ccs_instances_split_ambiguous'])} co-citation instances name a paper that splits/ "
                   "lists more than once (a splits/ folder mixing two builds' files?): no CCS pair of theirs "
                   "is written")
    out += _rejected(_total(counts, "crossref_rejected."), "Crossref record", "Crossref records",
                     f"could not be read ({_top(counts, 'crossref_rejected.')})", "contexts")
    out += _rejected(counts.get("crossref_works_bad_doi", 0), "Crossref work has", "Crossref works have",
                     "no valid DOI", "contexts")
    return out


RULES: dict[str, Callable[[Mapping[str, int]], list[str]]] = {
    "papers": _papers, "text": _text, "citations": _citations, "split": _split, "pairs": _pairs,
    "contexts": _contexts,
}


def reject_rate(stage: str, counts: Mapping[str, int]) -> tuple[int, int]:
    """(rejected, read) records of a stage's inputs, by its own counters; (0, 0) when the
    stage has no record-level input count."""
    if stage == "papers":
        read = _total(counts, "read.")
        rejected = _total(counts, "rejected.")
        return rejected, read
    if stage == "citations":
        read = counts.get("rows_read", 0)
        bad = ("malformed_row", "rows_unrecognized_file", "bad_doi")
        return sum(counts.get(k, 0) for k in bad), read
    return 0, 0


_DAMAGED_INPUT = ("truncated_gzip", "corrupt_gzip", "read_error", "compression_bomb")
"""Reasons of `papers` rejects for a file that ends early or cannot be read on (its records
after the damage are missing, which one reject row does not make loud enough)."""


def _damaged_inputs(stage: str, counts: Mapping[str, int]) -> list[str]:
    """A warning for input files cut short or damaged (the reads before the damage kept)."""
    if stage == "papers":  # `rejected.<source>.<reason>`, summed over the sources
        damaged: Counter[str] = Counter()
        for key, value in counts.items():
            reason = key.rsplit(".", 1)[-1]
            if key.startswith("rejected.") and reason in _DAMAGED_INPUT:
                damaged[reason] += value
        n = sum(damaged.values())
        detail = ", ".join(f"{reason} {_n(v)}" for reason, v in sorted(damaged.items()) if v)
    elif stage == "citations":
        n, detail = counts.get("files_unreadable", 0), "files_unreadable"
    else:
        return []
    if not n:
        return []
    return [f"{_n(n)} input {'file ends' if n == 1 else 'files end'} early or cannot be read on ({detail}): "
            f"their records after the damage are missing; see rejects/{stage}/ for the files"]


def stage_warnings(stage: str, counts: Mapping[str, int]) -> list[str]:
    """The warnings `stage`'s counts call for (empty when it looks healthy)."""
    out = list(RULES.get(stage, lambda _c: [])(counts)) + _damaged_inputs(stage, counts)
    rejected, read = reject_rate(stage, counts)
    if read and rejected / read > LOUD_REJECT_RATE:
        out.append(f"{stage} rejected {_n(rejected)} of {_n(read)} records read ({rejected / read:.0%}): "
                   f"see rejects/{stage}/ (reasons in _stats/{stage}.json)")
    return out


def check_reject_rate(stage: str, counts: Mapping[str, int], limit: float | None) -> None:
    """A `UserError` when more than `limit` of the records read were rejected (the stage's
    outputs are then not swapped in)."""
    from openmsd_build.core.errors import UserError

    rejected, read = reject_rate(stage, counts)
    if limit is not None and read and rejected / read > limit:
        raise UserError(f"{stage}: {_n(rejected)} of {_n(read)} records read were rejected "
                        f"({rejected / read:.0%} > --max-reject-rate {limit:g}); the previous outputs were kept. "
                        f"Check the inputs, or raise --max-reject-rate to accept this")


def add_reject_rate_argument(parser) -> None:
    """`--max-reject-rate` of the stages that read raw records (papers, citations): a share,
    from 0 to 1, checked when parsed. A plain float took -1 (every run refused after it had
    read everything, '0% > --max-reject-rate -1'), nan (never refused) and 50 for 50 % (any
    share accepted)."""
    from openmsd_build.core.inputs import number_from

    parser.add_argument("--max-reject-rate", type=number_from(0, maximum=1), default=DEFAULT_MAX_REJECT_RATE,
                        metavar="SHARE",
                        help="fail (keeping the previous outputs) when more than this share (0 to 1) of the records "
                             f"read is rejected (default {DEFAULT_MAX_REJECT_RATE:g}; 1 accepts any; above "
                             f"{LOUD_REJECT_RATE:g} the stage warns)")


def stale_after(out: str, stage: str) -> list[str]:
    """The notices after `stage` ran: the later stages its new outputs made stale, `stage`
    itself when it ran on stale inputs, and the other stages that were stale already."""
    from openmsd_build.core.stages import STAGES, derived_present, stale_stages

    stale = stale_stages(out)
    later = {stage}
    for s in STAGES:  # in build order: a stage is later when one of its upstream stages is
        if any(u in later for u in s.upstream):
            later.add(s.name)
    made = [s for s in stale if s in later and s != stage]
    out_lines = []
    if stage in stale:
        out_lines.append(f"{stage} ran on stale inputs ({stale[stage]}): its outputs are stale too; re-run with "
                         f"`openmsd-build run ... --from-stage {next(iter(stale))}`")
    if made:
        out_lines.append(
            f"{', '.join(made)} {'is' if len(made) == 1 else 'are'} now stale ({stage} was rebuilt after "
            f"{'it' if len(made) == 1 else 'they'} ran): re-run with `openmsd-build run ... --from-stage "
            f"{made[0]}`; report shows it, and release, export and evaluate refuse the stale build until then")
    before = [s for s in stale if s not in later]
    if before:
        out_lines.append(f"still stale: {'; '.join(f'{s} ({stale[s]})' for s in before)}")
    derived = derived_present(out)
    if derived:  # made from the whole build before this run: what they hold is the earlier build's
        out_lines.append(f"{', '.join(f'{f}/' for f in derived)} of {out} {'was' if len(derived) == 1 else 'were'} "
                         f"made from the build before {stage} ran and still hold{'s' if len(derived) == 1 else ''} "
                         "what it gave: make them again once the build is whole (`run` removes them)")
    return out_lines


def warn(lines: list[str], prefix: str = "warning") -> None:
    """Print `lines` to stderr, each as `warning: ...`."""
    for line in lines:
        print(f"{prefix}: {line}", file=sys.stderr, flush=True)


def announce(out: str, stage: str, stale: bool = True) -> list[str]:
    """After `stage` ran into `out`: judge its counts, keep the warnings in its `_stats`
    (`warnings`, [] when none), print them and (`stale`: a stage run alone) the later stages
    now stale; returns the stage's warnings (without the stale notice)."""
    from openmsd_build.core.stats import read_stage_counts, update_stage_stats

    lines = stage_warnings(stage, read_stage_counts(out, stage))
    update_stage_stats(out, stage, {"warnings": lines})
    warn(lines + (stale_after(out, stage) if stale else []))
    return lines


def build_warnings(out: str) -> dict[str, list[str]]:
    """Every stage's recorded warnings (stage -> lines), in build order."""
    from openmsd_build.core.stages import STAGE_NAMES, read_stage_stats

    found: dict[str, list[str]] = {}
    for name in STAGE_NAMES:
        stats = read_stage_stats(out, name) or {}
        if stats.get("warnings"):
            found[name] = list(stats["warnings"])
    return found
