"""Stage 3, `citations`: OpenCitations rows -> DOI-to-DOI edges between kept documents.

Wiring only; the work is in `openmsd_build.citations.opencitations` (parsing) and
`openmsd_build.citations.graph` (vectorized filters). Elements are batches: one input file
per element, Arrow tables of up to 200k edges after parsing, and `(shard, (tag, batch))`
pairs in the shuffles (batches as Arrow IPC bytes, which Beam copies instead of pickling):

1. parse every CSV (plain, .gz, .zip members) -> edge batches + rejects + counts; the same
   DoFn reads the documents' (doi, has_abstract) and keys them by DOI shard;
2. self-citations dropped per batch (in the parser for DOI edges);
3. with `--meta`: OMID-only ends are resolved by two partitioned joins with the Meta
   mapping (by citing OMID, then by cited OMID); without it they count as `no_doi`;
4. partitioned join by citing DOI with the documents: duplicates are removed there (all
   copies of an edge share the citing shard) and the citing end checked; the shard's
   documents go on with its kept edges, re-sharded by cited DOI;
5. join by cited DOI, check the cited end, and write that shard's `citations/` part
   (sorted by citing then cited DOI; shard 0 always, possibly empty).

Parsing, document reading and the per-shard joins overlap on helper threads
(`openmsd_build.citations.overlap`); what each step computes does not depend on it.

The documents' keys carry `paper_id = hash64(doi)` (computed once per document), so both
joins also attach `citing_id` / `cited_id`: the pairs stage then works on integers only.

Counts in `_stats/citations.json` reconcile:
`rows_read = rows_unrecognized_file + malformed_row + bad_doi + no_doi + self_citation +
duplicate_edge + citing_missing + cited_missing + no_abstract + edges_kept`, and
`input_lines = lines_parsed` (every physical line decompressed reached the parser).
Informational: `files_read`, `files_unrecognized`, `rows_parsed`, `rows_needing_meta`,
`omid_resolved`, `meta_*`, `documents_read`.

The DoFns are in `openmsd_build.citations.beam`; the shared Beam helpers
(`tag`, `untag`, `ReadParquetFrames`) in `openmsd_build.core.beam_io`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import apache_beam as beam

from openmsd_build.citations.beam import (
    DEFAULT_SHARDS,
    STAGE,
)
from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least
from openmsd_build.core.notices import DEFAULT_MAX_REJECT_RATE, add_reject_rate_argument
from openmsd_build.core.runner import pipeline_options
from openmsd_build.core.staging import stage_outputs
from openmsd_build.core.stats import (
    read_stage_counts,
    refuse_all_rejected,
    refuse_unreconciled,
    rows_unlike_counts,
    unequal,
)
from openmsd_build.pipelines.citations import build


def run_citations(
    out: str,
    opencitations: list[str],
    meta: list[str] | None = None,
    beam_args: Sequence[str] = (),
    shards: int = DEFAULT_SHARDS,
    max_reject_rate: float | None = DEFAULT_MAX_REJECT_RATE,
) -> dict[str, int]:
    """Run the stage and return its counts (also in `_stats/citations.json`). `shards` is
    checked here for callers from Python; the command refuses it when parsing its flags."""
    if shards < 1:
        raise UserError("--shards must be >= 1")
    options = pipeline_options(beam_args)
    with stage_outputs(out, STAGE) as dest:
        with beam.Pipeline(options=options) as pipeline:
            build(pipeline, out, opencitations, meta, shards, dest=dest)
        done = read_stage_counts(dest, STAGE)
        refuse_all_rejected(STAGE, done, done.get("rows_read", 0), done.get("edges_kept", 0),
                            {k: done.get(k, 0) for k in ("malformed_row", "rows_unrecognized_file", "bad_doi")},
                            dest, max_reject_rate)
        refuse_unreconciled(STAGE, check_counts(done) + rows_unlike_counts(
            [("citations/", layout.citations_dir(dest), int(done.get("edges_kept", 0)))]))
        refuse_emptying(out, done)
    return read_stage_counts(out, STAGE)


DROPS = ("rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "self_citation", "duplicate_edge",
         "citing_missing", "cited_missing", "no_abstract")
"""Why a row read is not an edge kept: each is counted under its name."""


def check_counts(counts: Mapping[str, int]) -> list[str]:
    """The stage's identities; [] when they hold: every row read is an edge kept or one drop
    (`DROPS`), and every line read was parsed. `run_citations` refuses a run that breaks one,
    or whose citations/ holds another number of rows than `edges_kept`."""
    def c(key: str) -> int:
        return int(counts.get(key, 0))

    return unequal([("rows_read = edges_kept + drops", c("rows_read"), c("edges_kept") + sum(c(k) for k in DROPS)),
                    ("input_lines = lines_parsed", c("input_lines"), c("lines_parsed"))])


def refuse_emptying(out: str, counts: dict) -> None:
    """`core.stats.refuse_emptying` for citations/, as `text` refuses to empty documents/: an
    OpenCitations file of another slice (every row naming papers the build lacks) is a
    mistake to undo, not a result. The message is the stage's own warnings."""
    from openmsd_build.core import layout, stats
    from openmsd_build.core.notices import stage_warnings

    why = "".join(f"\n  {line}" for line in stage_warnings(STAGE, counts))
    stats.refuse_emptying(STAGE, layout.citations_dir(out), counts.get("edges_kept", 0), "edges", why)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the build's output root (reads documents/, writes citations/)")
    parser.add_argument(
        "--opencitations",
        action="extend",
        nargs="+",
        required=True,
        metavar="PATH",
        help="OpenCitations CSV files, globs or folders (.csv, .csv.gz, .zip of CSVs): COCI, Index or OMID-only",
    )
    parser.add_argument(
        "--meta",
        action="extend",
        nargs="+",
        default=[],
        metavar="PATH",
        help="OpenCitations Meta CSV files/globs (id column with omid: and doi:) to resolve OMID-only rows",
    )
    parser.add_argument("--shards", type=at_least(1), default=DEFAULT_SHARDS,
                        help="partitions of the shuffles and output files (1 or more, default %(default)s)")
    add_reject_rate_argument(parser)


def run(args: argparse.Namespace, beam_args: Sequence[str]) -> dict[str, int]:
    counts = run_citations(
        args.out, list(args.opencitations), list(args.meta) if getattr(args, "meta", None) else None, beam_args,
        getattr(args, "shards", DEFAULT_SHARDS), getattr(args, "max_reject_rate", DEFAULT_MAX_REJECT_RATE),
    )
    print(summary_line(counts))
    return counts


_DROPS = ("rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "self_citation", "duplicate_edge",
          "citing_missing", "cited_missing", "no_abstract")


def summary_line(counts: dict) -> str:
    drops = {k: counts[k] for k in _DROPS if counts.get(k)}
    return f"citations: read {counts.get('rows_read', 0)} rows, kept {counts.get('edges_kept', 0)} edges; dropped {drops}"


def flag_inputs(args: argparse.Namespace) -> list[dict]:
    """The OpenCitations files (and META dumps) this run read, for `_stats/citations.json`
    (`core.stage_inputs`)."""
    from openmsd_build.core.stage_inputs import globbed_inputs

    files = globbed_inputs(list(args.opencitations), "--opencitations", "opencitations")
    meta = list(getattr(args, "meta", None) or [])
    return files + (globbed_inputs(meta, "--meta", "opencitations-meta") if meta else [])
