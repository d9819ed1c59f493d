"""The Hugging Face `datasets` layout of an export: Parquet files plus a dataset card.

The card (`README.md`) starts with YAML metadata whose `configs:` list every config with
its `data_files` per split, so both

    datasets.load_dataset("OUT/export", "idt-dc-queries")            # the folder, by config
    datasets.load_dataset("parquet", data_files={"test": ".../queries.parquet"})

load it (locally, offline). Retrieval configs follow MTEB's naming for a task with subsets
(`<subset>-corpus`, `<subset>-queries`, `<subset>-qrels`, subset = `<split>-<relation>`,
split `test`); the corpus configs of one split's relations point at the same file. Configs
whose table is empty are not listed (a Parquet config with no rows does not load) and the
card names them instead.

YAML is written by hand with every string as a JSON-quoted scalar (valid YAML), so no YAML
library is needed to write the card.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class Config:
    """One dataset config: name, {split name: relative path}, rows per split, description."""

    name: str
    data_files: dict[str, str]
    rows: dict[str, int] = field(default_factory=dict)
    description: str = ""


def _q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def card_yaml(configs: list[Config], languages: list[str], pretty_name: str) -> str:
    """The YAML front matter (between `---` lines) of the dataset card."""
    lines = ["---", f"pretty_name: {_q(pretty_name)}"]
    if languages:
        lines.append("language:")
        lines += [f"- {_q(lang)}" for lang in languages]
    lines += [
        "license: other",
        "task_categories:",
        "- text-retrieval",
        "- sentence-similarity",
        "tags:",
        "- scientific-documents",
        "- multilingual",
        "- citation-graph",
        "configs:",
    ]
    for c in configs:
        lines.append(f"- config_name: {_q(c.name)}")
        lines.append("  data_files:")
        for split, path in c.data_files.items():
            lines.append(f"  - split: {_q(split)}")
            lines.append(f"    path: {_q(path)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def card_markdown(
    configs: list[Config], skipped: list[str], languages: list[str], pretty_name: str, body: str
) -> str:
    """The whole card: YAML front matter, `body` (the export's description) and a table of
    the configs with their rows."""
    lines = [card_yaml(configs, languages, pretty_name), f"# {pretty_name}", "", body.strip(), "",
             "## Configs", "", "| config | split | rows | file | what |", "|---|---|---:|---|---|"]
    for c in configs:
        for split, path in c.data_files.items():
            lines.append(f"| `{c.name}` | {split} | {c.rows.get(split, 0):,} | `{path}` | {c.description} |")
    if skipped:
        lines += ["", "Empty, so not listed as configs: " + ", ".join(f"`{s}`" for s in skipped) + "."]
    lines += [
        "",
        "## Loading",
        "",
        "```python",
        "import datasets",
        f'ds = datasets.load_dataset("path/to/export", "{configs[0].name if configs else "CONFIG"}")',
        "# or one file directly:",
        'ds = datasets.load_dataset("parquet", data_files={"test": "path/to/export/retrieval/idt/dc/qrels.parquet"})',
        "```",
        "",
    ]
    return "\n".join(lines)


def parse_configs(card_text: str) -> dict[str, dict[str, str]]:
    """{config name: {split: path}} read back from a card written by `card_yaml` (used by
    tests and by anyone who wants the file list without a YAML library)."""
    if not card_text.startswith("---\n"):
        return {}
    header = card_text[4 : card_text.index("\n---", 4)]
    configs: dict[str, dict[str, str]] = {}
    current = split = None
    in_configs = False
    for line in header.splitlines():
        if line == "configs:":
            in_configs = True
            continue
        if not in_configs:
            continue
        stripped = line.strip()
        if stripped.startswith("- config_name:"):
            current = json.loads(stripped.split(":", 1)[1].strip())
            configs[current] = {}
        elif stripped.startswith("- split:"):
            split = json.loads(stripped.split(":", 1)[1].strip())
        elif stripped.startswith("path:") and current is not None and split is not None:
            configs[current][split] = json.loads(stripped.split(":", 1)[1].strip())
    return configs
