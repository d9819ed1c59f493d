"""`export --recipe`: a training mixture (`recipes`) as Parquet shards a trainer streams.

Layout under `DEST/recipes/<name>/` (DEST defaults to `OUT/export`):

    README.md                      dataset card: YAML configs, statistics table, loading snippets
    stats.json                     examples and tokens per language pair and type, before and
                                   after caps; every count of the run (they reconcile)
    recipe.json                    the recipe as run (seed included)
    data/<split>/shard-NNNNN.parquet   anchor, positive[, negative], lang_a, lang_b, dataset_type,
                                   relation, ids, ... (`SHARD_SCHEMA`), rows in seeded order

Memory is flat in the number of pairs: pairs are read in record batches (`BATCH_ROWS`), every
example is decided from stable draws of its own ids (`recipe_texts`), and examples are
spilled to hash partitions on local disk, twice — by their texts (dedup) and by their anchor
paper (`max_per_anchor`) — so each pass holds one partition (about `rows_per_partition`
examples) at a time. The token budgets take the examples of a language pair in seeded order:
a histogram of tokens over 4,096 order buckets finds the bucket where a budget runs out, and
only that bucket's (order, id, tokens) are sorted. What does grow is the paper table of a
split (each paper's texts, looked up for both sides of every pair): memory in papers, not
pairs. On the full build (53M papers) this job is the same steps on a Beam runner's workers;
here it is polars on one machine.

Counts (`stats.json` "counts") reconcile per split: candidates = skipped_no_text +
skipped_language + sampled_out + base_examples; base_examples =
mix_combined_or_not_in_every_relation (a mix's second relation of one pair, or a pair missing
from an intersection) + dedup_dropped + anchor_cap_dropped + kept_examples; copies (of the
kept) = budget_dropped + written. Per part (its `label`): `part.<label>.candidates` and
`part.<label>.written`, which sum to candidates and written.
"""

from __future__ import annotations

import importlib
import math
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from openmsd_build.core import layout
from openmsd_build.core.errors import UserError
from openmsd_build.core.hashing import hash64, shard_of, unit_interval
from openmsd_build.core.parquet_io import check_parts, footer_rows, join_path, list_parts, unreadable, write_table
from openmsd_build.core.textclean import count_tokens
from openmsd_build.export import recipe_texts, trainer
from openmsd_build.export.recipes import Part, Recipe, lang_pair

BATCH_ROWS = 50_000
ROWS_PER_PARTITION = 200_000
ORDER_BUCKETS = 4096

SHARD_SCHEMA = pa.schema([
    ("anchor", pa.string()),
    ("positive", pa.string()),
    ("negative", pa.string()),
    ("lang_a", pa.string()),
    ("lang_b", pa.string()),
    ("lang_negative", pa.string()),
    ("dataset_type", pa.string()),
    ("relation", pa.string()),
    ("anchor_doi", pa.string()),
    ("positive_doi", pa.string()),
    ("negative_doi", pa.string()),
    ("anchor_field", pa.string()),  # title / abstract / summary / document
    ("positive_field", pa.string()),
    ("anchor_other_language", pa.bool_()),  # the side shows a language other than its paper's
    ("positive_other_language", pa.bool_()),
    ("lang_pair", pa.string()),  # unordered, e.g. en/ru (the statistics and budgets key)
    ("split", pa.string()),
    ("example_id", pa.int64()),  # stable id of (part, ids, copy) under the seed
    ("copy", pa.int32()),  # 0 .. copies-1 of an upsampled example
    ("tokens", pa.int32()),  # count_tokens of every text column
])
# every count of a split, reported even when 0 (module docstring: how they reconcile)
COUNT_NAMES = ("candidates", "skipped_no_text", "skipped_language", "sampled_out", "base_examples",
               "mix_combined_or_not_in_every_relation", "dedup_dropped", "anchor_cap_dropped", "kept_examples",
               "copies", "budget_dropped", "written")
# columns only needed while deciding (dropped before writing)
_WORK = {"part": pl.String, "key": pl.String, "u": pl.Float64, "copies": pl.Int32,
         "anchor_had_other": pl.Boolean, "positive_had_other": pl.Boolean, "cross": pl.Boolean,
         "hf_tokens": pl.Int64}


def _row_schema() -> dict:
    schema = {f.name: pl.from_arrow(pa.array([], type=f.type)).dtype for f in SHARD_SCHEMA
              if f.name not in ("example_id", "copy")}
    schema.update(_WORK)
    return schema


ROW_SCHEMA = _row_schema()  # the candidate rows before copies are made (no example_id / copy yet)


# --------------------------------------------------------------------------- papers


def load_papers(out: str, recipe: Recipe, split: str) -> dict[str, recipe_texts.PaperTexts]:
    """doi -> the paper's texts for the split's papers (documents, `abstracts`, summaries)."""
    docs = trainer.split_documents(out, split, text=recipe.text_mode)
    summaries: dict[str, str] = {}
    if recipe.summaries:
        from openmsd_build.enrich import enriched_dir
        from openmsd_build.evaluate.tasks import load_summaries

        if list_parts(enriched_dir(out)):
            summaries = load_summaries(out)
    allowed = frozenset(recipe.languages) if recipe.languages is not None else None
    papers = {}
    for doi, language, title, abstract, abstracts, text in docs.select(
            "doi", "language", "title", "abstract", "abstracts", "text").iter_rows():
        papers[doi] = recipe_texts.paper_texts(doi, language, title, abstract, abstracts, summaries.get(doi),
                                               text or "", allowed)
    return papers


# --------------------------------------------------------------------------- candidates


class Counter:
    """Counts of one split's run, by name (`stats.json` "counts")."""

    def __init__(self) -> None:
        self.values: dict[str, int] = defaultdict(int)

    def add(self, name: str, n: int = 1) -> None:
        self.values[name] += n


def _example(part: Part, recipe: Recipe, key: str, split: str, anchor_doi: str, positive_doi: str,
             a: recipe_texts.Side, b: recipe_texts.Side, negative: tuple[str, recipe_texts.Side] | None = None,
             relation: str | None = None, cross: bool = False) -> dict:
    row = {
        "anchor": a.text, "positive": b.text, "negative": None,
        "lang_a": a.language, "lang_b": b.language, "lang_negative": None,
        "dataset_type": part.dataset_type, "relation": relation if relation is not None else part.relation,
        "anchor_doi": anchor_doi, "positive_doi": positive_doi, "negative_doi": None,
        "anchor_field": a.field, "positive_field": b.field,
        "anchor_other_language": a.other_language, "positive_other_language": b.other_language,
        "anchor_had_other": a.had_other, "positive_had_other": b.had_other,
        "lang_pair": lang_pair(a.language, b.language), "split": split,
        "part": part.label, "key": key, "u": unit_interval(key + "|order", recipe.seed),
        "copies": 0, "cross": cross,
    }
    tokens = count_tokens(a.text) + count_tokens(b.text)
    if negative is not None:
        doi_n, n = negative
        row.update(negative=n.text, lang_negative=n.language, negative_doi=doi_n)
        tokens += count_tokens(n.text)
    row["tokens"] = tokens
    return row


def _allowed(recipe: Recipe, *langs: str) -> bool:
    return recipe.languages is None or all(lang in recipe.languages for lang in langs)


def _skip_reason(part: Part, *found: tuple[recipe_texts.PaperTexts | None, recipe_texts.Side | None]) -> str:
    """Why a candidate with a side without text is skipped: `skipped_language` when every such
    side's paper had titles or abstracts that the recipe's languages removed
    (`paper_texts(allowed=...)`) and the part shows them, else `skipped_no_text` (a document
    text is not filtered by language: one that is empty has no text). `found`: (paper or
    None, its side or None) of each side, at least one side None."""
    if part.text == "document":
        return "skipped_no_text"
    lost = [paper is not None and paper.language_removed_text for paper, side in found if side is None]
    return "skipped_language" if all(lost) else "skipped_no_text"


def title_abstract_rows(part: Part, recipe: Recipe, split: str, papers: dict, counts: Counter) -> Iterator[list[dict]]:
    """Title -> abstract examples of every paper, in batches (see `recipes`)."""
    batch: list[dict] = []
    for doi in sorted(papers):
        paper = papers[doi]
        combos = recipe_texts.title_abstract_pairs(paper)
        if not combos:
            counts.add("candidates")
            counts.add("skipped_language" if paper.language_removed_pair else "skipped_no_text")
            continue
        for c in combos:
            counts.add("candidates")
            key = f"{part.label}\t{doi}\t{c.lang_title}\t{c.lang_abstract}"
            a = recipe_texts.Side(c.title, c.lang_title, recipe_texts.TITLE, c.lang_title != paper.language, False)
            b = recipe_texts.Side(c.abstract, c.lang_abstract, c.abstract_field, c.lang_abstract != paper.language,
                                  False)
            row = _example(part, recipe, key, split, doi, doi, a, b, cross=c.cross_lingual)
            factor = part.weight * (part.cross_lingual_factor if c.cross_lingual else 1.0)
            row["copies"] = recipe_texts.copies(factor, key, recipe.seed)
            counts.add("title_abstract.base_cross" if c.cross_lingual else "title_abstract.base_same")
            batch.append(row)
        if len(batch) >= BATCH_ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def _batches(directory: str, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The part files of `directory`, batch by batch; a file Arrow cannot read (a damaged
    page) is a `UserError` naming it (`parquet_io.unreadable`), not Arrow's traceback."""
    for path in list_parts(directory):
        try:
            with pq.ParquetFile(path) as f:
                yield from f.iter_batches(batch_size=BATCH_ROWS, columns=columns)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise unreadable(path, exc) from None


def source_rows(out: str) -> Callable[[str, str], int]:
    """Rows of a relation's pairs in a split, from the footers; a footer that does not read
    (a truncated file) is one line naming the file (`parquet_io.check_parts`)."""
    def rows(relation: str, split: str) -> int:
        parts = list_parts(layout.pairs_dir(out, relation, split))
        check_parts(parts)
        return footer_rows(parts)
    return rows


def _side(part: Part, recipe: Recipe, paper, key: str) -> recipe_texts.Side | None:
    if part.text == "document":
        return recipe_texts.document_side(paper)
    return recipe_texts.choose_side(paper, key, recipe.seed, part.p_title, part.p_other_language)


def pair_rows(part: Part, recipe: Recipe, out: str, split: str, papers: dict, counts: Counter) -> Iterator[list[dict]]:
    """Examples of a `pairs` or `mix` part, one batch per record batch of the pairs files.

    DC keeps its direction (anchor cites positive) in `pairs`; CC and BC are unordered, so
    a seeded draw picks which paper is the anchor. A `mix` orders every pair by DOI and
    down-samples a union's relations to the smallest with the draws of the trainer's
    `pairs_<mix>` tables; the sizes here are the relations' row counts (from the files'
    metadata, no pass over the pairs), so DC's reciprocal citations count twice where the
    trainer counts distinct unordered pairs."""
    if part.kind == "mix":
        kind, relations = trainer.parse_mix(part.relation)
        sizes = {r: source_rows(out)(r, split) for r in relations}
        target = min(sizes.values()) if sizes else 0
        rates = {r: (target / n if kind == "union" and n else 1.0) for r, n in sizes.items()}
    else:
        relations, rates = (part.relation,), {part.relation: 1.0}
    for relation in relations:
        for rb in _batches(layout.pairs_dir(out, relation, split), ["doi_a", "doi_b"]):
            batch = []
            for doi_a, doi_b in zip(rb.column(0).to_pylist(), rb.column(1).to_pylist(), strict=True):
                counts.add("candidates")
                if part.kind == "mix":
                    doi_a, doi_b = min(doi_a, doi_b), max(doi_a, doi_b)
                    if unit_interval(f"{doi_a}\t{doi_b}", f"{trainer.MIX_SEED}:{relation}") >= rates[relation]:
                        counts.add("sampled_out")
                        continue
                    key = f"{part.label}\t{doi_a}\t{doi_b}"
                elif relation != "dc" and unit_interval(f"{relation}\t{doi_a}\t{doi_b}|orient", recipe.seed) < 0.5:
                    doi_a, doi_b = doi_b, doi_a
                    key = f"{part.label}\t{doi_a}\t{doi_b}"
                else:
                    key = f"{part.label}\t{doi_a}\t{doi_b}"
                pa_, pb = papers.get(doi_a), papers.get(doi_b)
                a = _side(part, recipe, pa_, key + "|a") if pa_ else None
                b = _side(part, recipe, pb, key + "|b") if pb else None
                if a is None or b is None or doi_a == doi_b:
                    counts.add("skipped_no_text" if doi_a == doi_b else _skip_reason(part, (pa_, a), (pb, b)))
                    continue
                if not _allowed(recipe, a.language, b.language):
                    counts.add("skipped_language")
                    continue
                row = _example(part, recipe, key, split, doi_a, doi_b, a, b, relation=relation)
                row["copies"] = recipe_texts.copies(part.weight, key, recipe.seed)
                batch.append(row)
            if batch:
                yield batch


def triplet_rows(part: Part, recipe: Recipe, out: str, split: str, papers: dict, counts: Counter) -> Iterator[list[dict]]:
    """Anchor, positive, negative from the pairs stage's hard negatives (`negatives/`)."""
    directory = layout.negatives_dir(out, split)
    if not list_parts(directory):
        counts.add("triplets_missing_negatives_folder")
        return
    for rb in _batches(directory, ["anchor_doi", "positive_doi", "negative_doi"]):
        batch = []
        for da, dp, dn in zip(*(rb.column(i).to_pylist() for i in range(3)), strict=True):
            counts.add("candidates")
            key = f"{part.label}\t{da}\t{dp}\t{dn}"
            sides = [(_side(part, recipe, papers[d], f"{key}|{s}") if d in papers else None)
                     for d, s in ((da, "a"), (dp, "b"), (dn, "n"))]
            if any(s is None for s in sides):
                counts.add(_skip_reason(part, *((papers.get(d), s) for d, s in zip((da, dp, dn), sides, strict=True))))
                continue
            a, b, n = sides
            if not _allowed(recipe, a.language, b.language, n.language):
                counts.add("skipped_language")
                continue
            row = _example(part, recipe, key, split, da, dp, a, b, negative=(dn, n))
            row["copies"] = recipe_texts.copies(part.weight, key, recipe.seed)
            batch.append(row)
        if batch:
            yield batch


def candidate_batches(recipe: Recipe, out: str, split: str, papers: dict, counts: Counter) -> Iterator[pl.DataFrame]:
    """Every part's candidate examples as frames of `ROW_SCHEMA`, copies drawn; each part's
    candidates are also counted as `part.<label>.candidates` (`recipe_warnings`)."""
    for part in recipe.parts:
        if part.kind == "title-abstract":
            gen = title_abstract_rows(part, recipe, split, papers, counts)
        elif part.kind == "triplets":
            gen = triplet_rows(part, recipe, out, split, papers, counts)
        else:
            gen = pair_rows(part, recipe, out, split, papers, counts)
        before = counts.values["candidates"]
        for rows in gen:
            frame = pl.DataFrame(rows, schema=ROW_SCHEMA)
            dropped = frame.filter(pl.col("copies") == 0).height
            counts.add("sampled_out", dropped)
            yield frame.filter(pl.col("copies") > 0)
        counts.add(f"part.{part.label}.candidates", counts.values["candidates"] - before)


# --------------------------------------------------------------------------- statistics


class Stats:
    """Examples and tokens per (language pair, dataset type), and the choice shares."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
        self.sides: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        self.cross: dict[str, list[int]] = defaultdict(lambda: [0, 0])

    def add(self, stage: str, frame: pl.DataFrame, weight: str | None) -> None:
        """Add `frame`'s rows (each counted `weight` times when given: its copies)."""
        frame = frame.with_columns((pl.col(weight) if weight else pl.lit(1)).cast(pl.Int64).alias("_w"))
        w = pl.col("_w")
        agg = frame.group_by("lang_pair", "dataset_type").agg(
            w.sum().alias("n"), (pl.col("tokens") * w).sum().alias("t"),
            (pl.col("hf_tokens").fill_null(0) * w).sum().alias("h"))
        for lp, dt, n, t, h in agg.iter_rows():
            cell = self.table[(stage, lp, dt)]
            cell[0] += int(n)
            cell[1] += int(t)
            cell[2] += int(h)
        for side in ("anchor", "positive"):
            sub = frame.filter(pl.col(f"{side}_had_other"))
            if sub.height:
                cell = self.sides[(stage, side)]
                cell[0] += int(sub.select(w.sum()).item())
                cell[1] += int(sub.filter(pl.col(f"{side}_other_language")).select(w.sum()).item())
        ta = frame.filter(pl.col("dataset_type") == "title-abstract")
        if ta.height:
            cell = self.cross[stage]
            cell[0] += int(ta.select(w.sum()).item())
            cell[1] += int(ta.filter(pl.col("cross")).select(w.sum()).item())

    def rows(self) -> list[dict]:
        keys = sorted({(lp, dt) for _, lp, dt in self.table})
        out = []
        for lp, dt in keys:
            b = self.table.get(("before", lp, dt), [0, 0, 0])
            a = self.table.get(("after", lp, dt), [0, 0, 0])
            out.append({"lang_pair": lp, "dataset_type": dt, "examples_before": b[0], "tokens_before": b[1],
                        "examples_after": a[0], "tokens_after": a[1], "hf_tokens_before": b[2], "hf_tokens_after": a[2]})
        out.sort(key=lambda r: (-r["tokens_after"], -r["tokens_before"], r["lang_pair"], r["dataset_type"]))
        return out


def title_abstract_expectation(part: Part, counts: dict) -> dict:
    """The cross-lingual share the recipe asks for: f*C / (S + f*C) with S, C the same- and
    cross-lingual base pairs and f the factor, and its standard error (only fractional
    weights draw copies; integer weights give the share exactly)."""
    s, c = counts.get("title_abstract.base_same", 0), counts.get("title_abstract.base_cross", 0)
    ws, wc = part.weight, part.weight * part.cross_lingual_factor
    x, y = c * wc, s * ws
    if x + y == 0:
        return {"base_same": s, "base_cross": c, "expected_share": None, "sigma": None}
    var_x = c * (wc % 1) * (1 - wc % 1)
    var_y = s * (ws % 1) * (1 - ws % 1)
    sigma = math.sqrt(var_x * (y / (x + y) ** 2) ** 2 + var_y * (x / (x + y) ** 2) ** 2)
    return {"base_same": s, "base_cross": c, "factor": part.cross_lingual_factor,
            "expected_share": x / (x + y), "sigma": sigma}


# --------------------------------------------------------------------------- partitions


def _spill(frame: pl.DataFrame, key: pl.Series, partitions: int, directory: str, tag: str) -> None:
    """Append `frame` to hash partition files `directory/p=NNNNN/<tag>.parquet`."""
    pid = pl.Series("_pid", [shard_of(k, partitions) for k in key.to_list()], dtype=pl.Int32)
    for (p,), sub in frame.with_columns(pid).partition_by("_pid", as_dict=True).items():
        path = os.path.join(directory, f"p={p:05d}", f"{tag}.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        sub.drop("_pid").write_parquet(path, compression="lz4")


def _read_partition(directory: str, p: int) -> pl.DataFrame | None:
    folder = os.path.join(directory, f"p={p:05d}")
    if not os.path.isdir(folder):
        return None
    return pl.read_parquet(os.path.join(folder, "*.parquet"))


def _partitions(directory: str, partitions: int) -> Iterator[tuple[int, pl.DataFrame]]:
    """(partition, its rows) of every non-empty partition, one at a time."""
    for p in range(partitions):
        frame = _read_partition(directory, p)
        if frame is not None:
            yield p, frame


def _text_key(frame: pl.DataFrame) -> pl.Series:
    cols = [frame[c].fill_null("").to_list() for c in ("anchor", "positive", "negative")]
    return pl.Series([f"{a}\x00{b}\x00{n}" for a, b, n in zip(*cols, strict=True)])


def _combine_mix(frame: pl.DataFrame, recipe: Recipe) -> pl.DataFrame:
    """A mix's rows of one pair (one per relation) become one row listing the relations;
    an intersection keeps the pairs found in every relation."""
    mixes = {p.label: p for p in recipe.parts if p.kind == "mix"}
    if not mixes:
        return frame
    is_mix = pl.col("part").is_in(list(mixes))
    rest, mix = frame.filter(~is_mix), frame.filter(is_mix)
    if mix.height == 0:
        return frame
    rel = pl.col("relation").unique().sort().str.join("+").alias("relation")
    combined = (mix.sort("u", "key", "relation")
                .group_by("part", "anchor_doi", "positive_doi", maintain_order=True)
                .agg(pl.all().exclude("relation").first(), rel, pl.col("relation").n_unique().alias("_n")))
    need = {label: len(trainer.parse_mix(p.relation)[1]) if trainer.parse_mix(p.relation)[0] == "intersection" else 1
            for label, p in mixes.items()}
    combined = combined.filter(pl.col("_n") >= pl.col("part").replace_strict(need, return_dtype=pl.Int64))
    # an intersection's rows are labelled by the mix's name, as the trainer's tables
    names = {label: p.relation for label, p in mixes.items() if need[label] > 1}
    if names:
        combined = combined.with_columns(
            pl.when(pl.col("part").is_in(list(names)))
            .then(pl.col("part").replace_strict(names, default=None, return_dtype=pl.String))
            .otherwise(pl.col("relation")).alias("relation"))
    return pl.concat([rest, combined.drop("_n").select(frame.columns)])


def _finish(frame: pl.DataFrame, seed: str) -> pl.DataFrame:
    """Make the copies: one row per copy, each with its own id and order draw."""
    frame = frame.with_columns(pl.int_ranges(0, pl.col("copies")).alias("copy")).explode("copy")
    keys = [f"{k}\t{c}" for k, c in zip(frame["key"].to_list(), frame["copy"].to_list(), strict=True)]
    return frame.with_columns(
        pl.Series("example_id", [hash64(k, seed) for k in keys], dtype=pl.Int64),
        pl.Series("order", [unit_interval(k + "|copy", seed) for k in keys], dtype=pl.Float64),
        pl.col("copy").cast(pl.Int32),
    )


def _bucket() -> pl.Expr:
    return (pl.col("order") * ORDER_BUCKETS).cast(pl.Int64).clip(0, ORDER_BUCKETS - 1).alias("_bucket")


# --------------------------------------------------------------------------- the run


def _budget_cuts(recipe: Recipe, hist: dict, capped_dir: str, partitions: int) -> dict[str, tuple]:
    """Per budgeted language pair: (bucket, order, example_id) of the last example kept, or
    'all'. The kept examples are the seeded-order prefix whose tokens fit the budget."""
    cuts: dict[str, tuple] = {}
    for lp, buckets in hist.items():
        budget = recipe.budget_for(lp)
        if budget is None or sum(buckets.values()) <= budget:
            continue
        total, boundary = 0, None
        for b in sorted(buckets):
            if total + buckets[b] > budget:
                boundary = b
                break
            total += buckets[b]
        rows = [part.filter((pl.col("lang_pair") == lp) & (_bucket() == boundary)).select("order", "example_id", "tokens")
                for _, part in _partitions(capped_dir, partitions)]
        edge = pl.concat(rows).sort("order", "example_id")
        last = None
        for order, eid, tokens in edge.iter_rows():
            if total + tokens > budget:
                break
            total += tokens
            last = (order, eid)
        cuts[lp] = (boundary, last)
    return cuts


def _apply_cuts(frame: pl.DataFrame, cuts: dict) -> pl.DataFrame:
    if not cuts:
        return frame
    keep = pl.lit(True)
    for lp, (boundary, last) in cuts.items():
        inside = pl.col("lang_pair") == lp
        before = _bucket() < boundary
        if last is not None:
            at = (_bucket() == boundary) & ((pl.col("order") < last[0]) |
                                            ((pl.col("order") == last[0]) & (pl.col("example_id") <= last[1])))
            before = before | at
        keep = keep & (~inside | before)
    return frame.filter(keep)


def export_split(recipe: Recipe, out: str, split: str, data_dir: str, work: str, stats: Stats,
                 hf_count: Callable[[list[str]], list[int]] | None = None,
                 rows_per_partition: int = ROWS_PER_PARTITION) -> dict:
    """Write one split's shards under `data_dir`; returns its counts."""
    counts = Counter()
    for name in COUNT_NAMES:
        counts.add(name, 0)
    for part in recipe.parts:  # what each part gave, 0 included (`recipe_warnings`)
        counts.add(f"part.{part.label}.candidates", 0)
        counts.add(f"part.{part.label}.written", 0)
    papers = load_papers(out, recipe, split)
    sizes = source_rows(out)
    planned = sum(sizes(r, split) for p in recipe.parts if p.kind in ("pairs", "mix")
                  for r in (trainer.parse_mix(p.relation)[1] if p.kind == "mix" else (p.relation,))) + 2 * len(papers)
    partitions = max(1, math.ceil(planned / rows_per_partition))
    dedup_dir, anchor_dir, capped_dir = (os.path.join(work, split, n) for n in ("dedup", "anchor", "capped"))

    # pass 1: candidates, spilled by their texts
    for i, frame in enumerate(candidate_batches(recipe, out, split, papers, counts)):
        if hf_count is not None:
            texts = frame.select(pl.concat_str("anchor", "positive", pl.col("negative").fill_null(""),
                                               separator="\n")).to_series().to_list()
            frame = frame.with_columns(pl.Series("hf_tokens", hf_count(texts), dtype=pl.Int64))
        stats.add("before", frame, "copies")
        counts.add("base_examples", frame.height)
        _spill(frame, _text_key(frame), partitions, dedup_dir, f"b{i:06d}")
    del papers

    # pass 2: relation mixes combined, identical texts dropped; spilled by anchor paper
    for p, frame in _partitions(dedup_dir, partitions):
        n = frame.height
        frame = _combine_mix(frame, recipe)
        counts.add("mix_combined_or_not_in_every_relation", n - frame.height)
        if recipe.dedup:
            n = frame.height
            frame = frame.sort("u", "key").unique(["anchor", "positive", "negative"], keep="first", maintain_order=True)
            counts.add("dedup_dropped", n - frame.height)
        key = pl.Series([f"{a}\t{b}" for a, b in zip(frame["part"].to_list(), frame["anchor_doi"].to_list(),
                                                      strict=True)])
        _spill(frame, key, partitions, anchor_dir, f"p{p:05d}")
    shutil.rmtree(dedup_dir, ignore_errors=True)

    # pass 3: at most N per anchor paper and part, then the copies; token histogram per pair
    hist: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    budgets = any(v is not None for v in recipe.token_budget.values())
    for p, frame in _partitions(anchor_dir, partitions):
        frame = frame.sort("u", "key")
        if recipe.max_per_anchor is not None:
            n = frame.height
            frame = frame.filter(pl.int_range(pl.len()).over("part", "anchor_doi") < recipe.max_per_anchor)
            counts.add("anchor_cap_dropped", n - frame.height)
        counts.add("kept_examples", frame.height)
        frame = _finish(frame, recipe.seed)
        counts.add("copies", frame.height)
        if budgets:
            for lp, b, t in frame.group_by("lang_pair", _bucket()).agg(pl.col("tokens").sum()).iter_rows():
                hist[lp][b] += int(t)
        os.makedirs(os.path.join(capped_dir, f"p={p:05d}"), exist_ok=True)
        frame.write_parquet(os.path.join(capped_dir, f"p={p:05d}", "rows.parquet"), compression="lz4")
    shutil.rmtree(anchor_dir, ignore_errors=True)

    # pass 4: token budgets, then one shard per partition in seeded order
    cuts = _budget_cuts(recipe, hist, capped_dir, partitions) if budgets else {}
    shards = 0
    for p, frame in _partitions(capped_dir, partitions):
        n = frame.height
        frame = _apply_cuts(frame, cuts)
        counts.add("budget_dropped", n - frame.height)
        if frame.height == 0:
            continue
        stats.add("after", frame, None)
        for label, n in frame.group_by("part").len().iter_rows():
            counts.add(f"part.{label}.written", n)
        frame = frame.sort("order", "example_id")
        table = frame.select(SHARD_SCHEMA.names).to_arrow().cast(SHARD_SCHEMA)
        counts.add("written", write_table(table, join_path(data_dir, f"shard-{p:05d}.parquet")))
        shards += 1
    shutil.rmtree(capped_dir, ignore_errors=True)
    result = dict(sorted(counts.values.items()))
    result.update(partitions=partitions, shards=shards)
    return result


def hf_token_counter(folder: str) -> Callable[[list[str]], list[int]]:
    """Token counts with a local Hugging Face tokenizer folder (its `tokenizer.json`; the
    `tokenizers` package, never a download)."""
    path = os.path.join(folder, "tokenizer.json") if os.path.isdir(folder) else folder
    if not os.path.isfile(path):
        raise UserError(f"--tokenizer {folder}: no tokenizer.json there (a local folder; nothing is downloaded)")
    try:  # optional, like enrich's ctranslate2: imported by name, not declared in setup.py
        tokenizers = importlib.import_module("tokenizers")
    except ImportError as exc:
        raise UserError("--tokenizer needs the `tokenizers` package: pip install tokenizers") from exc
    tok = tokenizers.Tokenizer.from_file(path)

    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]

    return count


def refuse_missing_negatives(out: str, recipe: Recipe) -> None:
    """A `UserError` before any work when the recipe has a `triplets` part but the build has no
    hard negatives for a split it reads: the part would add nothing, and the export's only
    trace of why was a counter (or, with the part alone, a wrong reason)."""
    if not any(part.kind == "triplets" for part in recipe.parts):
        return
    missing = [split for split in recipe.splits if not list_parts(layout.negatives_dir(out, split))]
    if missing:
        raise UserError(f"recipe {recipe.name}: its triplets part reads hard negatives, and the build has none for "
                        f"{', '.join(missing)} (negatives/): run `openmsd-build pairs --out {out} --hard-negatives N` "
                        "first, or leave the part out")


def export_recipe(out: str, recipe: Recipe, dest: str | None = None, tokenizer: str | None = None,
                  rows_per_partition: int = ROWS_PER_PARTITION, work_dir: str | None = None) -> dict:
    """Write `DEST/recipes/<name>/` (see the module docstring) and return its stats."""
    from openmsd_build.core.stages import require_fresh
    from openmsd_build.export import recipe_card
    from openmsd_build.export.build_checks import RECIPE_FILES, check_dest_folder, refuse_foreign_files

    require_fresh(out, "export")
    refuse_missing_negatives(out, recipe)
    dest = dest or join_path(out, "export")
    check_dest_folder(out, dest)
    # the earlier recipes/<name>/ is replaced whole
    refuse_foreign_files(join_path(dest, "recipes"), [f"{recipe.name}/{pattern}" for pattern in RECIPE_FILES])
    folder = join_path(dest, "recipes", recipe.name)
    local = "://" not in folder
    # locally, the export is written beside its folder and swapped in when complete
    building = folder + ".partial" if local else folder
    if local and os.path.isdir(building):
        shutil.rmtree(building)
    hf_count = hf_token_counter(tokenizer) if tokenizer else None
    stats = Stats()
    work = tempfile.mkdtemp(prefix="openmsd-recipe-", dir=work_dir)
    per_split = {}
    try:
        for split in recipe.splits:
            per_split[split] = export_split(recipe, out, split, join_path(building, "data", split), work, stats,
                                            hf_count, rows_per_partition)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    merged: dict[str, int] = defaultdict(int)
    for c in per_split.values():
        for k, v in c.items():
            merged[k] += v
    ta = next((p for p in recipe.parts if p.kind == "title-abstract"), None)
    summary = {
        "recipe": recipe.to_json(),
        "out": out,
        "folder": folder,
        "tokenizer": {"rule": "core.textclean.count_tokens", "hf_tokenizer": tokenizer},
        "counts": per_split,
        "table": stats.rows(),
        "text_choices": {
            f"{stage}.{side}": {"sides_with_other_language": n, "other_language_chosen": k,
                                "share": (k / n) if n else None}
            for (stage, side), (n, k) in sorted(stats.sides.items())},
        "title_abstract": ({**title_abstract_expectation(ta, merged),
                            **{f"measured_share_{stage}": (k / n if n else None)
                               for stage, (n, k) in sorted(stats.cross.items())},
                            **{f"examples_{stage}": n for stage, (n, _) in sorted(stats.cross.items())}}
                           if ta else None),
    }
    summary["warnings"] = recipe_warnings(recipe, per_split, summary["table"])
    recipe_card.write(building, recipe, summary)
    if local:
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.replace(building, folder)
    return summary


def recipe_warnings(recipe: Recipe, per_split: dict[str, dict], table: list[dict]) -> list[str]:
    """What a recipe export says beside its counts (kept in `stats.json`, printed by the
    command): that it wrote no example, and whether anything was a candidate; else that a split
    it asks for, or one of its parts, wrote none (a split without papers, a relation without
    pairs: the rest of the mixture was written and nothing said the mixture lacked them), and
    that some of its `languages` are in no example written (a code no paper of the splits has)."""
    if not any(counts.get("written") for counts in per_split.values()):
        candidates = sum(counts.get("candidates", 0) for counts in per_split.values())
        why = ("stats.json's counts say why each was left out" if candidates else
               f"its splits ({', '.join(recipe.splits)}) hold no paper or pair for its parts")
        return [f"recipe {recipe.name} wrote no example of {candidates:,} candidates; {why}"]
    out = []
    for split, counts in per_split.items():
        if not counts.get("written"):
            candidates = counts.get("candidates", 0)
            why = ("stats.json's counts say why each was left out" if candidates else
                   "its parts find no paper or pair of that split")
            out.append(f"recipe {recipe.name} wrote no example in {split} ({candidates:,} candidates there): {why}")
    for part in recipe.parts:
        if not sum(counts.get(f"part.{part.label}.written", 0) for counts in per_split.values()):
            candidates = sum(counts.get(f"part.{part.label}.candidates", 0) for counts in per_split.values())
            why = ("stats.json's counts say why each was left out" if candidates else
                   "the splits hold no pair of it" if part.kind != "title-abstract" else "the splits hold no paper")
            out.append(f"recipe {recipe.name}: its part {part.label} wrote no example ({candidates:,} candidates in "
                       f"{', '.join(per_split)}): {why}")
    written = {lang for row in table if row["examples_after"] for lang in row["lang_pair"].split("/")}
    unused = [lang for lang in recipe.languages or () if lang not in written]
    if unused:
        out.append(f"recipe {recipe.name}: no example written is in {', '.join(unused)} (of its languages "
                   f"{', '.join(recipe.languages or ())}); no paper of its splits has a text in "
                   f"{'it' if len(unused) == 1 else 'them'} that its parts could use")
    return out


def read_recipe_stats(out: str, dest: str | None = None) -> list[dict]:
    """Every recipe export's stats.json under the export folder (for the report). A damaged
    one (not JSON, a `table` that is no list of rows) is skipped with a warning naming it: the
    report of the build is still worth writing."""
    from openmsd_build.core.parquet_io import match_paths
    from openmsd_build.core.stats import read_optional_json

    dest = dest or join_path(out, "export")
    found = []
    for path in sorted(match_paths(join_path(dest, "recipes", "*", "stats.json"))):
        summary = read_optional_json(path, _shown, "recipe export's stats")
        if summary is not None:
            found.append(summary)
    return found


def _shown(summary: dict) -> dict:
    """`summary` once its table and shares render (`recipe_card`), as the report renders them."""
    from openmsd_build.export.recipe_card import shares_lines, table_rows

    if not isinstance(summary.get("recipe", {}), dict):
        raise TypeError(f"'recipe' is a {type(summary['recipe']).__name__}, not an object")
    table_rows(summary, limit=30)
    shares_lines(summary)
    return summary
