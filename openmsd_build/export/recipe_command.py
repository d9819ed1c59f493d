"""`export --recipe NAME|FILE.json`: the flags of a recipe export and what it prints.

Kept apart from `command` (the tasks and trainer tables) so the recipe export is one hook
there: with `--recipe`, `export` writes `DEST/recipes/<name>/` only (`recipe_export`).
"""

from __future__ import annotations

import argparse
import sys

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import at_least
from openmsd_build.core.parquet_io import list_parts
from openmsd_build.export import recipe_card, recipe_export, recipes
from openmsd_build.export.build_checks import refuse_empty


def recipe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--recipe", metavar="NAME|FILE.json",
                        help="write a training recipe's shards to DEST/recipes/<name>/ instead of the tasks: "
                        f"built-in {', '.join(recipes.BUILTIN)}, or a recipe file (see README)")
    parser.add_argument("--recipe-seed", help="override the recipe's seed")
    parser.add_argument("--rows-per-partition", type=at_least(1), default=recipe_export.ROWS_PER_PARTITION, metavar="N",
                        help="examples per spill partition: what one pass holds in memory (1 or more, default "
                        "%(default)s)")
    parser.add_argument("--tokenizer", metavar="DIR",
                        help="also count tokens with a local Hugging Face tokenizer folder (tokenizer.json; "
                        "needs the `tokenizers` package; nothing is downloaded)")


def run_recipe(args: argparse.Namespace) -> int:
    recipe = recipes.resolve(args.recipe, args.recipe_seed)
    for part in recipe.parts:  # pairs/ccs/ exists only after the contexts stage
        if part.kind == "pairs" and not any(list_parts(layout.pairs_dir(args.out, part.relation, s))
                                            for s in layout.SPLIT_NAMES):
            if part.relation in layout.CONTEXT_RELATIONS:
                raise UserError(f"recipe {recipe.name}: no pairs/{part.relation}/ in {args.out}; run "
                                f"`openmsd-build contexts --out {args.out} --crossref ...` first")
    from_pairs = [part.label for part in recipe.parts if part.kind != "title-abstract"
                  and part.relation not in layout.CONTEXT_RELATIONS]
    if from_pairs:  # as `export` without a recipe: the parts made of the pairs stage's pairs
        refuse_empty(args.out, f"export --recipe {recipe.name}",
                     f"its part{'s' if len(from_pairs) > 1 else ''} {', '.join(from_pairs)} would have no example")
    summary = recipe_export.export_recipe(args.out, recipe, args.dest, tokenizer=args.tokenizer,
                                          rows_per_partition=args.rows_per_partition)
    print("\n".join(recipe_card.stats_table(summary, limit=20)))
    print("\n".join(recipe_card.shares_lines(summary)))
    for split, counts in summary["counts"].items():
        print(f"{split}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()))
    print(f"recipe {recipe.name}: {summary['folder']} (card README.md, stats.json)")
    for line in summary["warnings"]:
        print(f"warning: {line}", file=sys.stderr)
    return 0
