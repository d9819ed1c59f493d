"""Stage 5, `pairs`: DC / CC / BC pairs per split from `citations/` and `splits/`; optional
Specter-style hard negatives and relation mixes.

Wiring only; the per-shard work is `openmsd_build.pairs.relations` (its docstring defines the pairs,
the cap, the negatives, the mixes and every counter). Elements are `(shard, (tag, path))`:
each piece of rows is spilled to a file under the run's temporary root (`split.spill`), so
a shuffle moves paths and a worker holds one shard's rows whatever the build's size (the
in-process runner used to hold every shuffle's rows at once: 20 GB at 5M edges); every shard key is `citation_graph.shard_ints` of an int64 paper id, so a paper's
lookup rows and its edges / pairs meet in one shard. Shuffles (`E` carry edges, `P` pairs):

E1. id edges by cited id + (paper_id, split, en) attrs -> cited end annotated;
E2. by citing id + attrs -> citing end annotated. All out-edges of each citing paper are
    here: DC pairs (ids) leave for P1, CC is enumerated (C = citing), partial supports
    leave for P1; the BC members go on;
E3. by cited id: all citers of each C are here: BC enumerated, partials leave for P1;
P1. by the smaller id `a` + (paper_id, doi, lang, split) names: CC/BC partial supports
    summed (a pair's partials all share `a`), doi/lang of `a` and the pair's split attached;
P2. by the larger id `b` + names: doi/lang of `b`, written order fixed, `pairs/{dc,cc,bc}/
    split=*/part-<shard>` written by the shard itself; with `--mixes`, every relation of an
    unordered pair is in this shard too, so the mixes are built and written here (union
    down-sampling reads the global per-relation counts of P1 as a side input).

With `--hard-negatives N`: E2 also sends same-split edges into E3 keyed by their cited
paper B and by their citing paper B (B's in- and out-edges meet), where A -> B -> C paths
become ranked candidates; N1 (by anchor A, with A's out-edges and names) removes Cs that A
cites and keeps N per anchor; N2 (by B) and N3 (by C) attach the other two names, N3 writes
`negatives/split=*/`.

Hot keys: P1 and N1 are keyed by one paper, so a hub's pairs share a shard (as any
per-paper DOI lookup must); the enumeration shards are keyed by C and capped by
`--max-degree`.

At its end the stage prints the rows it wrote per split: the DC / CC / BC pairs on one line
and, when asked for, the hard negatives and each mix on a line of their own (`summary_line`).

Part files are written by the shard's own DoFn (same name and content on a retry, renamed
into place atomically), so the pairs never pass through one more shuffle just to be
written; missing shards get an empty part at the end so every folder holds `--shards` files.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import apache_beam as beam
import pyarrow as pa

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least
from openmsd_build.core.runner import pipeline_options
from openmsd_build.core.staging import stage_outputs
from openmsd_build.core.stats import count_total, read_stage_counts, refuse_unreconciled, rows_unlike_counts, unequal
from openmsd_build.pairs import relations as pg
from openmsd_build.pairs.beam import (
    DEFAULT_SHARDS,
    STAGE,
)
from openmsd_build.pipelines.pairs import build
from openmsd_build.schemas import MIXES, NEGATIVES, PAIRS


def output_dirs(out: str, negatives: int = 0, mixes: Sequence[str] = ()) -> list[tuple[str, pa.Schema]]:
    dirs = [(layout.pairs_dir(out, rel, s), PAIRS) for rel in pg.RELATIONS for s in pg.SPLITS]
    if negatives:
        dirs += [(layout.negatives_dir(out, s), NEGATIVES) for s in pg.SPLITS]
    dirs += [(layout.mixes_dir(out, name, s), MIXES) for name in mixes for s in pg.SPLITS]
    return dirs


def run_pairs(
    out: str, beam_args: Sequence[str] = (), shards: int = DEFAULT_SHARDS, max_degree: int = pg.DEFAULT_MAX_DEGREE,
    negatives: int = 0, mixes: Sequence[str] = (),
) -> dict[str, int]:
    """Run the stage and return its counts (also in `_stats/pairs.json`). The counts are
    checked here for callers from Python; the command refuses them when parsing its flags."""
    if shards < 1 or max_degree < 2 or negatives < 0:
        raise UserError("need --shards >= 1, --max-degree >= 2 and --hard-negatives >= 0")
    for name in mixes:
        try:
            pg.mix_relations(name)
        except ValueError as exc:
            raise UserError(str(exc)) from exc
    options = pipeline_options(beam_args)
    # Written under a temporary root and swapped in whole: pairs/ and negatives/ of an
    # earlier run (stale optional outputs included) are replaced, or kept if this run fails.
    with stage_outputs(out, STAGE) as dest:
        with beam.Pipeline(options=options) as pipeline:
            build(pipeline, out, shards, max_degree, negatives, tuple(mixes), dest=dest)
        parquet_io.fill_missing_parts(output_dirs(dest, negatives, mixes), shards)
        counts = read_stage_counts(dest, STAGE)
        refuse_unreconciled(STAGE, check_counts(counts) + rows_unlike_counts(
            [(f"pairs/{r}/split={s}/", layout.pairs_dir(dest, r, s), int(counts.get(f"{r}_pairs.{s}", 0)))
             for r in ("cc", "bc") for s in pg.SPLITS]
            + [(f"pairs/mix/{n}/split={s}/", layout.mixes_dir(dest, n, s), int(counts.get(f"mix.{n}.{s}", 0)))
               for n in mixes for s in pg.SPLITS]))
    return read_stage_counts(out, STAGE)


def check_counts(counts: Mapping[str, int]) -> list[str]:
    """The stage's identities; [] when they hold: every citation edge read is unannotated,
    of a paper in more than one split, or annotated, and every annotated edge is a DC pair
    kept, across splits or ODT en-en. `run_pairs` refuses a run that breaks one, or whose
    `pairs/cc/` and `pairs/bc/` folders hold other numbers of rows than `<r>_pairs.<split>`
    (and a `--mix`'s folders than `mix.<name>.<split>`; `pairs/dc/` and `negatives/` have no
    row count of their own to check against)."""
    def c(key: str) -> int:
        return int(counts.get(key, 0))

    return unequal([
        ("edges_read = edges_unannotated + edges_split_ambiguous + edges_annotated", c("edges_read"),
         c("edges_unannotated") + c("edges_split_ambiguous") + c("edges_annotated")),
        ("edges_annotated = dc_kept.* + dc_cross_split + dc_odt_en_en", c("edges_annotated"),
         count_total(counts, "dc_kept.") + c("dc_cross_split") + c("dc_odt_en_en")),
    ])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="the build's output root (reads citations/, splits/)")
    # counts checked when parsed (a usage error naming the flag, before anything is read), as
    # every command's; `run_pairs` keeps its own check for callers from Python
    parser.add_argument(
        "--max-degree",
        type=at_least(2),
        default=pg.DEFAULT_MAX_DEGREE,
        help="skip a C with more references (CC) or citers (BC) than this; counted (2 or more, default 1000)",
    )
    parser.add_argument("--shards", type=at_least(1), default=DEFAULT_SHARDS,
                        help="partitions of shuffles and output files (1 or more, default %(default)s)")
    parser.add_argument(
        "--hard-negatives",
        type=at_least(0),
        default=0,
        metavar="N",
        help="also write up to N Specter-style hard negatives per anchor to OUT/negatives/split=*/ (default 0: off)",
    )
    parser.add_argument(
        "--mixes",
        nargs="*",
        metavar="NAME",
        help="also write relation mixes to OUT/pairs/mix/<folder>/split=*/: unions down-sampled to equal counts "
        "per relation ('dc+cc', folder dc_or_cc) and intersections ('dc&cc', folder dc_and_cc); no NAME = all of "
        + ", ".join(pg.MIX_NAMES),
    )


def run(args: argparse.Namespace, beam_args: Sequence[str]) -> dict[str, int]:
    mixes = getattr(args, "mixes", None)
    mixes = tuple(pg.MIX_NAMES if mixes == [] else (mixes or ()))
    counts = run_pairs(
        args.out, beam_args, getattr(args, "shards", DEFAULT_SHARDS), getattr(args, "max_degree", pg.DEFAULT_MAX_DEGREE),
        getattr(args, "hard_negatives", 0) or 0, mixes,
    )
    print(summary_line(counts, getattr(args, "hard_negatives", 0) or 0, mixes))
    return counts


def summary_line(counts: dict, negatives: int = 0, mixes: Sequence[str] = ()) -> str:
    """What the stage prints at its end: the rows it wrote per split in every output, the
    pairs on the first line, then (when asked for) the hard negatives and each mix on a line
    of their own with the folder they are in; 0 where a split got none."""
    def per_split(key: str) -> str:
        return ", ".join(f"{s} {counts.get(f'{key}.{s}', 0)}" for s in layout.SPLIT_NAMES)

    parts = []
    for relation in layout.RELATIONS:
        key = "dc_kept" if relation == "dc" else f"{relation}_pairs"
        parts.append(f"{relation.upper()} ({per_split(key)})")
    skipped = sum(v for k, v in counts.items() if k.endswith("_c_skipped_cap"))
    lines = [f"pairs: {'; '.join(parts)}; {skipped} citing/cited papers over the degree cap skipped"]
    if negatives:
        lines.append(f"  hard negatives, up to {negatives} per anchor (negatives/): {per_split('negatives')}")
    lines += [f"  mix {name} (pairs/mix/{layout.mix_slug(name)}/): {per_split(f'mix.{name}')}" for name in mixes]
    return "\n".join(lines)
