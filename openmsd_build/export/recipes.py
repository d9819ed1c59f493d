"""Training recipes: which examples `export --recipe` writes, how they are sampled and capped.

A recipe is data (a JSON file or one of `BUILTIN`), so a mixture is reproducible from its
name or file and the build alone:

    {"name": "my-mix", "seed": "7", "splits": ["train"], "languages": ["en", "ru", "zh"],
     "summaries": true, "dedup": true, "max_per_anchor": 32,
     "token_budget": {"en/ru": 2000000, "*": null},
     "parts": [
       {"kind": "title-abstract", "weight": 1, "cross_lingual_factor": 8},
       {"kind": "pairs", "relation": "dc", "text": "choice", "p_title": 0.5, "p_other_language": 0.5},
       {"kind": "pairs", "relation": "cc", "weight": 0.5}]}

Part kinds (`recipe_export` does the work, `recipe_texts` the per-example choices):

- `title-abstract`: per paper, every (title in language a, abstract in language b) it has —
  its own title and abstract, its abstracts in other languages (`documents.abstracts`,
  detected language, not `und`, not a copy of the kept abstract) and, with `summaries`, the
  English summary of `enrich` as an English abstract. Pairs with a != b are cross-lingual
  and get `cross_lingual_factor` times the part's `weight` copies.
- `pairs`: one relation's pairs (dc, cc, bc; ccs, co-cited in one sentence, from the
  contexts stage) of the split. `text: "choice"` picks each side's
  text per example: another language of the paper with probability `p_other_language` when
  it has one, then its title with probability `p_title` (else its abstract) when it has both.
  `text: "document"` uses title + abstract (or the enriched text with `"text_mode": "enriched"`).
- `mix`: OpenMSD's relation mixes (`trainer.parse_mix`): "dc+cc" is the union with each
  relation down-sampled to the smallest one's size, "dc&cc" the intersection; document text,
  unordered pairs (as the `pairs_<mix>` trainer tables).
- `triplets`: the pairs stage's hard negatives (`negatives/`, `pairs --hard-negatives`),
  anchor / positive / negative, text as `pairs`.

`weight` is an expected number of copies: floor(weight) copies plus one more with
probability frac(weight) (a seeded draw), so 0.25 keeps a quarter and 8 writes 8 copies.
Caps, in this order: `dedup` (identical anchor / positive / negative texts, the first in the
seeded order kept), `max_per_anchor` (at most N distinct examples per part and anchor paper,
before copies are made), `token_budget` (per unordered language pair such as "en/ru", "*"
for the others: the examples in seeded order until the next would exceed the budget).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError, short_repr, shorten

PART_KINDS = ("title-abstract", "pairs", "mix", "triplets")
_LANGUAGE_CODE_RE = re.compile(r"[a-z]{2,3}")
_CODES_ARE = "two or three lower-case letters, e.g. 'en', 'ru', 'ceb'"
TEXT_CHOICES = ("choice", "document")
# dataset_type of each part's rows (the statistics table's "type")
RELATION_TYPES = {"dc": "citation", "cc": "co-citation", "bc": "coupling", "ccs": "co-citation-sentence"}


@dataclass(frozen=True)
class Part:
    """One source of examples in a recipe (see the module docstring)."""

    kind: str
    relation: str = ""  # dc / cc / bc / ccs for pairs and triplets (dc); a mix name for mix
    weight: float = 1.0
    cross_lingual_factor: float = 1.0  # title-abstract only
    text: str = "choice"  # pairs / triplets: "choice" or "document"
    p_title: float = 0.5
    p_other_language: float = 0.5

    @property
    def dataset_type(self) -> str:
        if self.kind == "title-abstract":
            return "title-abstract"
        if self.kind == "mix":
            return "relation-mix"
        if self.kind == "triplets":
            return "citation-triplet"
        return RELATION_TYPES[self.relation]

    @property
    def label(self) -> str:
        """A short unique name of the part inside its recipe (ids, keys, statistics)."""
        return self.kind if self.kind == "title-abstract" else f"{self.kind}:{self.relation}"


@dataclass(frozen=True)
class Recipe:
    """A whole mixture: parts, caps, languages, seed (see the module docstring)."""

    name: str
    parts: tuple[Part, ...]
    description: str = ""
    seed: str = "0"
    splits: tuple[str, ...] = ("train",)
    languages: tuple[str, ...] | None = None  # None: every language
    text_mode: str = "raw"  # "enriched": document text in the enriched format
    summaries: bool = False  # enrich's English summaries as English abstracts (if enriched/ exists)
    dedup: bool = True
    max_per_anchor: int | None = None
    token_budget: dict[str, int | None] = field(default_factory=dict)

    def budget_for(self, lang_pair: str) -> int | None:
        if lang_pair in self.token_budget:
            return self.token_budget[lang_pair]
        return self.token_budget.get("*")

    def to_json(self) -> dict:
        data = asdict(self)
        data["parts"] = [asdict(p) for p in self.parts]
        data["splits"] = list(self.splits)
        data["languages"] = list(self.languages) if self.languages is not None else None
        return data


def lang_pair(a: str | None, b: str | None) -> str:
    """The unordered language pair of an example: 'en/ru' for (ru, en) and (en, ru)."""
    x, y = sorted((a or "und", b or "und"))
    return f"{x}/{y}"


def _openmsd(mix: str) -> Recipe:
    slug = layout.mix_slug(mix)
    what = "union, each relation down-sampled to the smallest" if "+" in mix else (
        "intersection" if "&" in mix else "one relation")
    return Recipe(
        name=f"openmsd-{slug}",
        description=f"OpenMSD's {mix.upper()} mix ({what}): title + abstract on both sides, unordered pairs",
        parts=(Part("mix", relation=mix, text="document"),),
        seed="openmsd-export-mix-v1",
    )


XLING = Recipe(
    name="xling-title-abstract-citation",
    description=(
        "Cross-lingual title-abstract pairs upsampled x8 plus citation and co-citation pairs whose "
        "sides are a title or an abstract at random, in another language of the paper with "
        "probability 0.5 when it has one (enrich's English summaries count as English abstracts)"
    ),
    parts=(
        Part("title-abstract", cross_lingual_factor=8.0),
        Part("pairs", relation="dc", text="choice", p_title=0.5, p_other_language=0.5),
        Part("pairs", relation="cc", text="choice", p_title=0.5, p_other_language=0.5),
    ),
    seed="xling-v1",
    summaries=True,
    max_per_anchor=64,
)

BUILTIN: dict[str, Recipe] = {r.name: r for r in (
    *(_openmsd(m) for m in ("dc", "cc", "bc", "dc+cc", "dc&cc", "dc+cc+bc")),
    XLING,
)}


# --------------------------------------------------------------------------- parsing


MAX_COPIES = 1000.0
"""The most copies a part's `weight` (times its `cross_lingual_factor`) may ask for: copies
are made in memory per partition, and 2,000 copies of 1,251 pairs took 3.95 GB."""


def _number(value, what: str, minimum: float = 0.0, maximum: float = math.inf) -> float:
    try:
        ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        ok = False
    if not ok or value < minimum or value > maximum:
        bound = f" and <= {maximum:g}" if maximum < math.inf else ""
        raise UserError(f"recipe: {what} must be a number >= {minimum:g}{bound}, got {str(value)[:40]}")
    return float(value)


def _probability(value, what: str) -> float:
    p = _number(value, what)
    if p > 1:
        raise UserError(f"recipe: {what} must be in [0, 1], got {short_repr(value)}")
    return p


def parse_part(data: dict) -> Part:
    """One part from its JSON object, checked (a `UserError` names the bad field)."""
    from openmsd_build.export.trainer import parse_mix

    if not isinstance(data, dict):
        raise UserError(f"recipe: a part must be an object, got {short_repr(data)}")
    unknown = set(data) - {f for f in Part.__dataclass_fields__}
    if unknown:
        raise UserError(f"recipe: unknown part field(s) {', '.join(sorted(unknown))}")
    kind = data.get("kind")
    if kind not in PART_KINDS:
        raise UserError(f"recipe: part kind {short_repr(kind)}: choose from {', '.join(PART_KINDS)}")
    relation = str(data.get("relation", "dc" if kind == "triplets" else ""))
    if kind == "pairs" and relation not in layout.PAIR_RELATIONS:
        raise UserError(f"recipe: pairs relation {short_repr(relation)}: choose from {', '.join(layout.PAIR_RELATIONS)}")
    if kind == "triplets" and relation != "dc":
        raise UserError("recipe: triplets come from citations (relation dc)")
    if kind == "mix":
        try:
            parse_mix(relation)
        except ValueError as exc:
            raise UserError(f"recipe: {exc}") from exc
    text = data.get("text", "document" if kind == "mix" else "choice")
    if text not in TEXT_CHOICES or (kind == "mix" and text != "document"):
        raise UserError(f"recipe: part text {short_repr(text)}: choose from {', '.join(TEXT_CHOICES)} (mix: document)")
    weight = _number(data.get("weight", 1.0), "weight", maximum=MAX_COPIES)
    factor = _number(data.get("cross_lingual_factor", 1.0), "cross_lingual_factor", maximum=MAX_COPIES)
    if weight * max(factor, 1.0) > MAX_COPIES:
        raise UserError(f"recipe: weight x cross_lingual_factor asks for {weight * factor:g} copies of an example; at "
                        f"most {MAX_COPIES:g}")
    return Part(
        kind=kind,
        relation="" if kind == "title-abstract" else relation,
        weight=weight,
        cross_lingual_factor=factor,
        text=text,
        p_title=_probability(data.get("p_title", 0.5), "p_title"),
        p_other_language=_probability(data.get("p_other_language", 0.5), "p_other_language"),
    )


def _flag(data: dict, key: str, default: bool) -> bool:
    """A true / false field; a string such as "false" is refused (it would read as true)."""
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise UserError(f"recipe: `{key}` must be true or false (JSON), got {short_repr(value)}")
    return value


def parse_recipe(data: dict) -> Recipe:
    """A recipe from its JSON object (see the module docstring), checked."""
    if not isinstance(data, dict):
        raise UserError("recipe: the file must hold one JSON object")
    known = set(Recipe.__dataclass_fields__)
    unknown = set(data) - known
    if unknown:
        raise UserError(f"recipe: unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    # the folder DEST/recipes/<name>/ that writing the recipe again replaces
    name = layout.check_name(data.get("name"), "recipe: `name`")
    parts = data.get("parts")
    if not isinstance(parts, list) or not parts:
        raise UserError("recipe: `parts` must be a non-empty list")
    parsed = tuple(parse_part(p) for p in parts)
    labels = [p.label for p in parsed]
    if len(set(labels)) != len(labels):
        raise UserError(f"recipe: each part kind and relation at most once, got {shorten(labels)}")
    splits = data.get("splits", ["train"])
    if not isinstance(splits, list) or not splits or not all(isinstance(x, str) for x in splits) \
            or not set(splits) <= set(layout.SPLIT_NAMES) or len(set(splits)) != len(splits):
        raise UserError(f"recipe: `splits` must be a list from {', '.join(layout.SPLIT_NAMES)}, each once")
    splits = tuple(splits)
    languages = data.get("languages")
    if languages is not None and (not isinstance(languages, list) or not all(isinstance(x, str) for x in languages)):
        raise UserError("recipe: `languages` must be a list of language codes or null")
    if languages == []:
        raise UserError("recipe: `languages` is empty, so nothing could be written: list codes, or null for all")
    for code in languages or ():  # documents carry CLD3's lower-case ISO 639-1 (or -3) codes
        if not _LANGUAGE_CODE_RE.fullmatch(code):
            meant = code.strip().lower()
            hint = f" (did you mean {meant!r}?)" if _LANGUAGE_CODE_RE.fullmatch(meant) else ""
            raise UserError(f"recipe: `languages`: {short_repr(code)} is not a language code as documents carry them: "
                            f"{_CODES_ARE}{hint}")
    text_mode = data.get("text_mode", "raw")
    if text_mode not in ("raw", "enriched"):
        raise UserError("recipe: text_mode raw or enriched")
    cap = data.get("max_per_anchor")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise UserError("recipe: max_per_anchor must be a positive integer or null")
    budget = data.get("token_budget") or {}
    if not isinstance(budget, dict):
        raise UserError("recipe: token_budget must map language pairs ('en/ru', '*') to token counts")
    checked: dict[str, int | None] = {}
    for key, value in budget.items():
        if key != "*" and (key.count("/") != 1 or lang_pair(*key.split("/")) != key):
            raise UserError(f"recipe: token_budget key {short_repr(key)}: an ordered pair such as 'en/ru' (sorted) or '*'")
        # as `languages`: "EN/en" or "en/english" names no example's pair, and its budget was
        # silently never applied
        if key != "*" and not all(_LANGUAGE_CODE_RE.fullmatch(code) for code in key.split("/")):
            meant = lang_pair(*key.strip().lower().split("/"))
            hint = (f" (did you mean {meant!r}?)" if all(_LANGUAGE_CODE_RE.fullmatch(c) for c in meant.split("/"))
                    else "")
            raise UserError(f"recipe: token_budget key {short_repr(key)}: a pair of language codes as documents carry "
                            f"them: {_CODES_ARE}{hint}")
        checked[key] = None if value is None else int(_number(value, f"token_budget[{key}]"))
    return Recipe(
        name=name,
        parts=parsed,
        description=str(data.get("description", "")),
        seed=str(data.get("seed", "0")),
        splits=splits,
        languages=tuple(languages) if languages is not None else None,
        text_mode=text_mode,
        summaries=_flag(data, "summaries", False),
        dedup=_flag(data, "dedup", True),
        max_per_anchor=cap,
        token_budget=checked,
    )


def resolve(name_or_path: str, seed: str | None = None) -> Recipe:
    """A built-in recipe by name, or a recipe file (JSON); `seed` overrides the recipe's."""
    if name_or_path in BUILTIN:
        recipe = BUILTIN[name_or_path]
    elif name_or_path.endswith(".json"):
        try:
            with open(name_or_path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
            raise UserError(f"recipe file {name_or_path}: {type(exc).__name__}: {str(exc)[:200]}") from None
        recipe = parse_recipe(data)
    else:
        raise UserError(f"unknown recipe {short_repr(name_or_path)}: built-in {', '.join(BUILTIN)}, or a .json recipe file")
    return replace(recipe, seed=seed) if seed is not None else recipe
