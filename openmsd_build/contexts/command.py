"""Stage 6, `contexts`: citation contexts — the sentences of each paper's full text that cite
other papers, their markers resolved to DOIs through the paper's Crossref reference list —
and `pairs/ccs/`, the papers co-cited in one sentence, per split.

Reads `documents/` (full text and language, from `text`), `splits/` (from `split`) and the
Crossref metadata files (`--crossref`, the same files the papers stage read; their
`reference` arrays, which `papers/` does not keep: `contexts.references` says why). Wiring
in `pipelines/contexts.py`; rules in `contexts.sentences`, `contexts.markers`,
`contexts.resolve`, `contexts.extract` and `contexts.cocitation`, whose docstrings define
every counter. The counts reconcile (`check_counts`, and `check_outputs` for the rows written;
a run that fails one is refused, its previous outputs kept):

* `documents_read = documents_without_content + documents_with_reference_list +
  documents_without_reference_list`;
* `reference_lists_read = reference_lists_joined + reference_lists_without_text +
  reference_lists_duplicate`;
* `sentences_seen = sentences_with_markers + sentences_without_markers + sentences_too_long`;
* `markers_found = markers_resolved + Σ markers_unresolved.<reason>`;
* `sentences_with_markers = contexts_written + contexts_without_doi` (rows of `contexts/`);
* `contexts_written = contexts_language_sentence + contexts_language_document`;
* `ccs_instances = ccs_instances_missing_end + ccs_instances_split_ambiguous +
  ccs_instances_cross_split + ccs_instances_odt_en_en + ccs_instances_kept`; `ccs_pairs.<split>` = rows of
  `pairs/ccs/split=<split>/`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import apache_beam as beam
import pyarrow as pa

from openmsd_build.contexts.beam import DEFAULT_SHARDS, STAGE
from openmsd_build.contexts.resolve import REASONS
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least, expand_input_files
from openmsd_build.core.runner import pipeline_options
from openmsd_build.core.staging import stage_outputs
from openmsd_build.core.stats import read_stage_counts, refuse_unreconciled, rows_unlike_counts, unequal
from openmsd_build.pipelines.contexts import build
from openmsd_build.schemas import CONTEXTS, PAIRS

SPLITS = layout.SPLIT_NAMES


def output_dirs(dest: str) -> list[tuple[str, pa.Schema]]:
    return [(layout.contexts_dir(dest), CONTEXTS)] + [(layout.pairs_dir(dest, "ccs", s), PAIRS) for s in SPLITS]


def run_contexts(out: str, crossref: Sequence[str] = (), beam_args: Sequence[str] = (),
                 shards: int = DEFAULT_SHARDS) -> dict[str, int]:
    """Run the stage and return its counts (also in `_stats/contexts.json`). `shards` is
    checked here for callers from Python; the command refuses it when parsing its flags."""
    if shards < 1:
        raise UserError("--shards must be >= 1")
    files = expand_input_files(list(crossref), "--crossref") if crossref else []
    options = pipeline_options(beam_args)
    with stage_outputs(out, STAGE) as dest:
        with beam.Pipeline(options=options) as pipeline:
            build(pipeline, out, files, shards, dest=dest)
        parquet_io.fill_missing_parts(output_dirs(dest), shards)  # every folder holds `shards` files
        counts = read_stage_counts(dest, STAGE)
        refuse_unreconciled(STAGE, check_counts(counts) + check_outputs(dest, counts))
        refuse_emptying(out, counts)
    return read_stage_counts(out, STAGE)


def refuse_emptying(out: str, counts: Mapping[str, int]) -> None:
    """`core.stats.refuse_emptying` for contexts/, as `text` and `citations` refuse to empty
    theirs: a run that resolves nothing where the build holds contexts (run again without
    --crossref, or with another slice's Crossref files) is a mistake to undo, and it replaced
    them all (671 contexts and 184 CCS pairs of the 300-paper sample) with a warning. The
    message is the stage's own warnings."""
    from openmsd_build.core import stats
    from openmsd_build.core.notices import stage_warnings

    why = "".join(f"\n  {line}" for line in stage_warnings(STAGE, counts))
    stats.refuse_emptying(STAGE, layout.contexts_dir(out), counts.get("contexts_written", 0), "contexts", why)


def check_counts(counts: Mapping[str, int]) -> list[str]:
    """The stage's reconciliations that do not need its files; [] when all hold."""
    def c(key: str) -> int:
        return int(counts.get(key, 0))

    equalities = [
        ("documents_read", c("documents_without_content") + c("documents_with_reference_list")
         + c("documents_without_reference_list")),
        ("reference_lists_read", c("reference_lists_joined") + c("reference_lists_without_text")
         + c("reference_lists_duplicate")),
        ("sentences_seen", c("sentences_with_markers") + c("sentences_without_markers") + c("sentences_too_long")),
        ("markers_found", c("markers_resolved") + sum(c(f"markers_unresolved.{r}") for r in REASONS)),
        ("sentences_with_markers", c("contexts_written") + c("contexts_without_doi")),
        ("contexts_written", c("contexts_language_sentence") + c("contexts_language_document")),
        ("ccs_instances", c("ccs_instances_missing_end") + c("ccs_instances_split_ambiguous")
         + c("ccs_instances_cross_split")
         + c("ccs_instances_odt_en_en") + c("ccs_instances_kept")),
    ]
    return unequal([(name, c(name), total) for name, total in equalities])


def check_outputs(root: str, counts: Mapping[str, int]) -> list[str]:
    """The rows the run wrote under `root` (their Parquet footers) against its counts; [] when
    they agree: `contexts/` = `contexts_written`, `pairs/ccs/split=<s>/` = `ccs_pairs.<s>`."""
    return rows_unlike_counts(
        [("contexts/", layout.contexts_dir(root), int(counts.get("contexts_written", 0)))]
        + [(f"pairs/ccs/split={s}/", layout.pairs_dir(root, "ccs", s), int(counts.get(f"ccs_pairs.{s}", 0)))
           for s in SPLITS])


def flag_inputs(args: argparse.Namespace) -> list[dict]:
    """The Crossref files this run read, for `_stats/contexts.json` (`core.stage_inputs`)."""
    from openmsd_build.core.stage_inputs import globbed_inputs

    crossref = list(getattr(args, "crossref", None) or [])
    return globbed_inputs(crossref, "--crossref", "crossref") if crossref else []


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the build's output root (reads documents/, splits/)")
    parser.add_argument("--crossref", action="extend", nargs="+", default=[], metavar="GLOB",
                        help="Crossref metadata files, globs or folders (public-data-file *.json.gz, API answers, "
                             "JSON Lines) for the papers' reference lists; without them every marker is "
                             "unresolved (no_reference_list)")
    parser.add_argument("--shards", type=at_least(1), default=DEFAULT_SHARDS,
                        help="partitions of shuffles and output files (1 or more, default %(default)s)")


def run(args: argparse.Namespace, beam_args: Sequence[str]) -> dict[str, int]:
    counts = run_contexts(args.out, list(getattr(args, "crossref", None) or []), beam_args,
                          getattr(args, "shards", DEFAULT_SHARDS))
    print(summary_line(counts))
    return counts


def summary_line(counts: Mapping[str, int]) -> str:
    found = counts.get("markers_found", 0)
    resolved = counts.get("markers_resolved", 0)
    rate = f" ({100 * resolved / found:.1f}%)" if found else ""
    unresolved = {r: counts[f"markers_unresolved.{r}"] for r in REASONS if counts.get(f"markers_unresolved.{r}")}
    pairs = ", ".join(f"{s} {counts.get(f'ccs_pairs.{s}', 0)}" for s in SPLITS)
    return (f"contexts: {counts.get('sentences_seen', 0)} sentences, {counts.get('sentences_with_markers', 0)} with "
            f"markers; {found} markers, {resolved} resolved{rate}, unresolved {unresolved}; "
            f"{counts.get('contexts_written', 0)} contexts written; CCS pairs ({pairs})")
