"""Stage 4, `split`: train / IDT / ODT for every paper with at least one kept citation link.

Wiring only; the rule is `openmsd_build.split.assign.assign_splits` (its docstring states it
exactly) and the stage runs it as the partitioned steps of `openmsd_build.split.partitioned`
(equal to it; every shuffle spilled to files by `split.spill`):

1. citations -> the distinct DOIs of each batch, sharded by DOI (`linked`);
2. documents -> split nodes (doi, language, 64-bit dedup key, relation DOIs) sharded by DOI;
3. per DOI shard: nodes of linked DOIs, `paper_id = hash64(doi)`, language counts (summed
   into one small dict: top-K), dedup keys (by key) and relation edges (by target DOI);
4. group edges: dedup members -> smallest member; relation targets marked linked or not;
   one component step over the group edges only -> (doi, group) by DOI;
5. per DOI shard: each paper's group (its own DOI by default), keyed by group; per group
   shard: pool / all-English flags, draws, rule 5's summary (combined globally: the IDT
   cut), then rules 4-6 -> each paper's status by DOI;
6. rule 7 by three partitioned joins: English / non-English edges by the non-English end
   (is it ODT?), by the English end (English-only train group?), by group (its members);
7. per DOI shard: the final split, written as that shard's `splits/` part.

Counts (`_stats/split.json`) reconcile: `documents_read = no_link + papers_linked` and
`papers_linked = train + idt + odt` (`odt = odt_other_language + odt_held_back +
odt_english_linked`). `edge_ends_not_in_documents` counts linked DOIs absent from
`documents/` (0 unless the inputs are stale). See `splitting` for the other counters.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least, number_from
from openmsd_build.core.runner import pipeline_options
from openmsd_build.core.staging import stage_outputs
from openmsd_build.core.stats import read_stage_counts, refuse_unreconciled, rows_unlike_counts, unequal
from openmsd_build.pipelines.split import build
from openmsd_build.schemas import SPLITS
from openmsd_build.split.assign import SplitConfig
from openmsd_build.split.beam import (
    DEFAULT_SHARDS,
    STAGE,
)


def run_split(
    out: str,
    beam_args: Sequence[str] = (),
    shards: int = DEFAULT_SHARDS,
    config: SplitConfig | None = None,
) -> dict[str, int]:
    """Run the stage and return its counts (also in `_stats/split.json`). The numbers are
    checked here for callers from Python; the command refuses them when parsing its flags."""
    config = config or SplitConfig()
    if not 0 <= config.idt_fraction < 1 or not 0 <= config.odt_fraction < 1 or config.top_k < 1 or shards < 1:
        raise UserError("need 0 <= --idt-fraction, --odt-fraction < 1, --top-k >= 1, --shards >= 1")
    options = pipeline_options(beam_args)
    with stage_outputs(out, STAGE) as dest:
        with beam.Pipeline(options=options) as pipeline:
            build(pipeline, out, config, shards, dest=dest)
        # Shard 0 always exists (possibly empty) so the next stage always finds a file.
        first = parquet_io.part_path(layout.splits_dir(dest), 0, shards)
        if not FileSystems.exists(first):
            parquet_io.write_table(SPLITS.empty_table(), first)
        counts = read_stage_counts(dest, STAGE)
        refuse_unreconciled(STAGE, check_counts(counts) + rows_unlike_counts(
            [("splits/", layout.splits_dir(dest), int(counts.get("papers_linked", 0)))]))
    return read_stage_counts(out, STAGE)


def check_counts(counts: Mapping[str, int]) -> list[str]:
    """The stage's identities; [] when they hold: every document read has no link or is a
    linked paper, and every linked paper is in one split. `run_split` refuses a run that
    breaks one, or whose splits/ holds another number of rows than `papers_linked`."""
    def c(key: str) -> int:
        return int(counts.get(key, 0))

    return unequal([("documents_read = no_link + papers_linked", c("documents_read"),
                     c("no_link") + c("papers_linked")),
                    ("papers_linked = train + idt + odt", c("papers_linked"), c("train") + c("idt") + c("odt"))])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SplitConfig()
    parser.add_argument("--out", required=True, help="the build's output root (reads citations/, documents/)")
    # numbers checked when parsed (a usage error naming the flag, before anything is read), as
    # every command's: they were checked in run_split, with one message for the four
    share = number_from(0, maximum=1, maximum_inclusive=False)
    parser.add_argument("--top-k", type=at_least(1), default=d.top_k,
                        help=f"languages feeding train and IDT (1 or more, default {d.top_k})")
    parser.add_argument(
        "--idt-fraction", type=share, default=d.idt_fraction,
        help="share of top-K groups drawn into IDT (0 or more and below 1, default 247/53000)"
    )
    parser.add_argument(
        "--min-idt-groups",
        type=at_least(0),
        default=d.min_idt_groups,
        help="IDT gets at least min(this, pool groups // 10) groups, so small builds have IDT pairs (default 200; "
        "no effect at full scale)",
    )
    parser.add_argument(
        "--odt-fraction",
        type=share,
        default=d.odt_fraction,
        help=f"share of non-English top-K groups held back into ODT (0 or more and below 1, default {d.odt_fraction:g})",
    )
    parser.add_argument("--seed", default=d.seed, help="seed of the deterministic draws")
    parser.add_argument("--shards", type=at_least(1), default=DEFAULT_SHARDS,
                        help="partitions of shuffles and output files (1 or more, default %(default)s)")


def run(args: argparse.Namespace, beam_args: Sequence[str]) -> dict[str, int]:
    d = SplitConfig()
    config = SplitConfig(
        top_k=getattr(args, "top_k", d.top_k),
        idt_fraction=getattr(args, "idt_fraction", d.idt_fraction),
        odt_fraction=getattr(args, "odt_fraction", d.odt_fraction),
        min_idt_groups=getattr(args, "min_idt_groups", d.min_idt_groups),
        seed=getattr(args, "seed", d.seed),
    )
    counts = run_split(args.out, beam_args, getattr(args, "shards", DEFAULT_SHARDS), config)
    print(summary_line(counts))
    return counts


def summary_line(counts: dict) -> str:
    return (
        f"split: {counts.get('documents_read', 0)} documents, {counts.get('no_link', 0)} without a link; "
        f"train {counts.get('train', 0)}, idt {counts.get('idt', 0)}, odt {counts.get('odt', 0)}"
    )
