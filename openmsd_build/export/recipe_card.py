"""The card of a recipe export (`recipes/<name>/README.md`) and its statistics table.

The table (examples and tokens per language pair and dataset type, before and after caps)
is the same markdown in the card and in the build's report (`report` reads `stats.json`).
"""

from __future__ import annotations

import json

from openmsd_build.core.parquet_io import join_path
from openmsd_build.export import hf_dataset
from openmsd_build.export.recipes import Recipe


def _int(v) -> str:
    return f"{int(v):,}"


def _share(v) -> str:
    return "–" if v is None else f"{v:.4f}"


def table_rows(summary: dict, limit: int | None = None) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: one row per (language pair, dataset type), most tokens (after caps)
    first, then a total row. With a Hugging Face tokenizer, its counts are two more columns."""
    hf = bool(summary.get("tokenizer", {}).get("hf_tokenizer"))
    headers = ["language pair", "type", "examples before caps", "tokens before caps", "examples", "tokens"]
    if hf:
        headers += ["HF tokens before", "HF tokens"]
    rows = summary.get("table", [])
    total = dict.fromkeys(("examples_before", "tokens_before", "examples_after", "tokens_after",
                           "hf_tokens_before", "hf_tokens_after"), 0)
    for r in rows:
        for k in total:
            total[k] += r.get(k, 0)
    shown = rows if limit is None else rows[:limit]
    out = []
    for r in [*shown, {"lang_pair": "total", "dataset_type": "", **total}]:
        cells = [r["lang_pair"], r["dataset_type"], _int(r["examples_before"]), _int(r["tokens_before"]),
                 _int(r["examples_after"]), _int(r["tokens_after"])]
        if hf:
            cells += [_int(r["hf_tokens_before"]), _int(r["hf_tokens_after"])]
        out.append(cells)
    return headers, out


def stats_table(summary: dict, limit: int | None = None) -> list[str]:
    """`table_rows` as Markdown lines (the card, the command's output)."""
    headers, rows = table_rows(summary, limit)
    lines = ["| " + " | ".join(headers) + " |", "|---|---|" + "---:|" * (len(headers) - 2)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    more = len(summary.get("table", [])) - (limit if limit is not None else len(summary.get("table", [])))
    if more > 0:
        lines.append(f"\n({more} more rows in stats.json)")
    return lines


def shares_lines(summary: dict) -> list[str]:
    """The measured shares next to what the recipe asks for."""
    lines = []
    ta = summary.get("title_abstract")
    if ta and ta.get("expected_share") is not None:
        lines.append(
            f"- Title-abstract: {ta['base_cross']:,} cross-lingual and {ta['base_same']:,} same-language base pairs, "
            f"cross-lingual factor {ta['factor']:g}: expected cross-lingual share {_share(ta['expected_share'])} "
            f"({'exact: integer weights' if not ta['sigma'] else '± ' + _share(ta['sigma'])}), measured {_share(ta.get('measured_share_before'))} before caps, "
            f"{_share(ta.get('measured_share_after'))} after.")
    choices = summary.get("text_choices", {})
    for name, c in sorted(choices.items(), key=lambda kv: (kv[0].split(".")[0] != "before", kv[0])):
        stage, side = name.split(".")
        lines.append(f"- {side} sides whose paper has another language ({stage} caps): {c['sides_with_other_language']:,}; "
                     f"other language chosen {c['other_language_chosen']:,} (share {_share(c['share'])}).")
    return lines


def card(recipe: Recipe, summary: dict, configs: list[hf_dataset.Config], languages: list[str]) -> str:
    data_glob = next(iter(configs[0].data_files.values())) if configs else "data/train/*.parquet"
    cols = '"anchor", "positive", "negative"' if any(p.kind == "triplets" for p in recipe.parts) else '"anchor", "positive"'
    body = [
        f"Training examples of the recipe `{recipe.name}`, exported by `openmsd-build export --recipe` "
        f"from one build. {recipe.description}".strip(),
        "",
        "Columns: `anchor`, `positive` (and `negative` for triplets) first, then `lang_a`, `lang_b`, "
        "`dataset_type`, `relation`, the papers' DOIs, which field each side shows "
        "(title / abstract / summary / document) and whether it is another language than its paper's, "
        "`example_id`, `copy` (upsampled copies) and `tokens` (`core.textclean.count_tokens`: `\\w+` runs, "
        "each CJK character one token). Rows are in a seeded order inside each shard.",
        "",
        "Caps: " + ", ".join(filter(None, [
            "identical (anchor, positive, negative) texts dropped" if recipe.dedup else "",
            f"at most {recipe.max_per_anchor} examples per anchor paper and part" if recipe.max_per_anchor else "",
            ("token budgets " + ", ".join(f"{k}: {v:,}" for k, v in recipe.token_budget.items() if v is not None))
            if any(v is not None for v in recipe.token_budget.values()) else "",
        ])) + ".",
        "",
        "## Statistics",
        "",
        *stats_table(summary),
        "",
        *shares_lines(summary),
        "",
        "## Training with sentence-transformers",
        "",
        "Documentation only (nothing here trains a model); the shards stream as they are:",
        "",
        "```python",
        "import datasets",
        "from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, losses",
        "",
        f'train = datasets.load_dataset("parquet", data_files={{"train": "path/to/{data_glob}"}}, split="train")',
        f"train = train.select_columns([{cols}])  # the trainer feeds every column to the loss",
        'model = SentenceTransformer("path/to/a/local/model")',
        "loss = losses.MultipleNegativesRankingLoss(model)",
        "SentenceTransformerTrainer(model=model, train_dataset=train, loss=loss).train()",
        "```",
        "",
        "Streaming: `datasets.load_dataset(\"parquet\", data_files=..., split=\"train\", streaming=True)`.",
        "",
        "## Recipe",
        "",
        "```json",
        json.dumps(recipe.to_json(), indent=2, ensure_ascii=False),
        "```",
    ]
    text = hf_dataset.card_markdown(configs, [], languages, f"OpenMSD recipe {recipe.name}", "\n".join(body))
    # the generic card's loading example names a retrieval file; this folder has shards
    text = text.split("\n## Loading\n", 1)[0]
    return text + "\n".join([
        "", "## Loading", "", "```python", "import datasets",
        f'ds = datasets.load_dataset("path/to/recipes/{recipe.name}", split="train")  # the folder, by its card',
        f'ds = datasets.load_dataset("parquet", data_files={{"train": "path/to/recipes/{recipe.name}/{data_glob}"}}, '
        'split="train")',
        "```", ""])


def write(folder: str, recipe: Recipe, summary: dict) -> None:
    """README.md, stats.json and recipe.json of a recipe export."""
    from openmsd_build.core.parquet_io import write_bytes

    configs = []
    data_files, rows = {}, {}
    for split, counts in summary["counts"].items():
        if counts.get("written"):
            data_files[split] = f"data/{split}/*.parquet"
            rows[split] = counts["written"]
    if data_files:
        configs.append(hf_dataset.Config(recipe.name, data_files, rows, recipe.description or recipe.name))
    languages = sorted({lang for r in summary["table"] for lang in r["lang_pair"].split("/")} - {"und"})
    write_bytes(card(recipe, summary, configs, languages).encode("utf-8"), join_path(folder, "README.md"))
    write_bytes(json.dumps(summary, indent=2, sort_keys=True).encode("utf-8"), join_path(folder, "stats.json"))
    write_bytes(json.dumps(recipe.to_json(), indent=2).encode("utf-8"), join_path(folder, "recipe.json"))
