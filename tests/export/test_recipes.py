"""`export --recipe`: seeded choices and their measured shares, caps, determinism across
partitionings, counts that reconcile, the card, and `datasets` loading every shard.

The generated build (`_write_build`) is small enough to check by counting: 900 train papers
in en / ru / de, non-English ones with an English summary (`enriched/`) and a third of them
with a second abstract in another language, and random DC / CC pairs (fixed numpy seed)."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.enrich import enriched_dir
from openmsd_build.evaluate.testing import write_tiny_build
from openmsd_build.export import recipe_export, recipe_texts, recipes, trainer
from openmsd_build.export.hf_dataset import parse_configs
from openmsd_build.schemas import tables

N_PAPERS = 900
LANGS = ("en", "ru", "de")


def _write_build(out: str, n: int = N_PAPERS, n_pairs: int = 3000, seed: int = 5) -> dict:
    """Documents, splits, enriched summaries and DC / CC pairs; returns doi -> its languages."""
    rng = np.random.default_rng(seed)
    docs, splits, enriched, langs = [], [], [], {}
    for i in range(n):
        doi = f"10.9/p{i:05d}"
        lang = LANGS[i % 3]
        abstracts = [{"text": f"abstract {i} in {lang}", "language": lang, "source": "crossref"}]
        have = {lang}
        if lang != "en" and i % 9 in (1, 2):  # a second abstract in the other non-English language
            other = "de" if lang == "ru" else "ru"
            abstracts.append({"text": f"abstract {i} in {other}", "language": other, "source": "pdf"})
            have.add(other)
        if lang != "en":
            enriched.append({"doi": doi, "language": lang, "summary": f"summary {i} in english"})
            have.add("en")
        langs[doi] = have
        docs.append({"doi": doi, "title": f"title {i} {lang}", "abstract": f"abstract {i} in {lang}",
                     "abstracts": abstracts, "language": lang, "text_source": "test"})
        splits.append({"doi": doi, "split": "train", "language": lang, "paper_id": i})
    parquet_io.write_table(pa.Table.from_pylist(docs, schema=tables.DOCUMENTS),
                           parquet_io.part_path(layout.documents_dir(out), 0, 1))
    parquet_io.write_table(pa.Table.from_pylist(splits, schema=tables.SPLITS),
                           parquet_io.part_path(layout.splits_dir(out), 0, 1))
    parquet_io.write_table(pa.Table.from_pylist(enriched, schema=tables.ENRICHED),
                           parquet_io.part_path(enriched_dir(out), 0, 1))
    dois = sorted(langs)
    for rel in ("dc", "cc"):
        a, b = rng.integers(0, n, n_pairs), rng.integers(0, n, n_pairs)
        pairs = sorted({(dois[x], dois[y]) if rel == "dc" else (min(dois[x], dois[y]), max(dois[x], dois[y]))
                        for x, y in zip(a, b, strict=True) if x != y})
        rows = [{"doi_a": x, "doi_b": y, "support": 1} for x, y in pairs]
        half = len(rows) // 2  # two part files, so the reader crosses a file boundary
        for k, chunk in enumerate((rows[:half], rows[half:])):
            parquet_io.write_table(pa.Table.from_pylist(chunk, schema=tables.PAIRS),
                                   parquet_io.part_path(layout.pairs_dir(out, rel, "train"), k, 2))
    return langs


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("recipes") / "build")
    return out, _write_build(out)


def _shards(summary: dict, split: str = "train") -> pl.DataFrame:
    folder = os.path.join(summary["folder"], "data", split)
    return pl.concat([pl.read_parquet(os.path.join(folder, f)) for f in sorted(os.listdir(folder))])


def _recipe(**kw) -> recipes.Recipe:
    data = {"name": "t", "seed": "11", "summaries": True, "dedup": False,
            "parts": [{"kind": "title-abstract", "cross_lingual_factor": 8}]}
    data.update(kw)
    return recipes.parse_recipe(data)


def test_title_abstract_cross_share_is_the_upsampling(build, tmp_path):
    out, langs = build
    summary = recipe_export.export_recipe(out, _recipe(), str(tmp_path / "x"))
    rows = _shards(summary)
    # base pairs: every (title language, abstract language); titles exist in the paper's language only
    same = N_PAPERS
    cross = sum(len(v) - 1 for v in langs.values())
    ta = summary["title_abstract"]
    assert (ta["base_same"], ta["base_cross"]) == (same, cross)
    is_cross = rows["lang_a"] != rows["lang_b"]
    assert int(is_cross.sum()) == 8 * cross and rows.height == same + 8 * cross
    assert ta["expected_share"] == pytest.approx(8 * cross / (same + 8 * cross))
    assert ta["measured_share_after"] == pytest.approx(float(is_cross.mean()))
    # each cross-lingual pair is 8 copies with distinct ids
    copies = rows.filter(is_cross).group_by("anchor", "positive").agg(pl.len(), pl.col("example_id").n_unique())
    assert copies["len"].to_list() == [8] * cross and copies["example_id"].to_list() == [8] * cross


def test_fractional_upsampling_within_sampling_error(build, tmp_path):
    out, _ = build
    recipe = _recipe(parts=[{"kind": "title-abstract", "cross_lingual_factor": 2.5}])
    summary = recipe_export.export_recipe(out, recipe, str(tmp_path / "x"))
    rows = _shards(summary)
    ta = summary["title_abstract"]
    measured = float((rows["lang_a"] != rows["lang_b"]).mean())
    assert ta["sigma"] > 0
    assert abs(measured - ta["expected_share"]) < 4 * ta["sigma"]
    # the draw really is random per pair: both 2 and 3 copies occur
    per_pair = rows.filter(pl.col("lang_a") != pl.col("lang_b")).group_by("anchor", "positive").len()
    assert set(per_pair["len"]) == {2, 3}


@pytest.mark.parametrize("p_other", [0.5, 0.2])
def test_citation_sides_other_language_share(build, tmp_path, p_other):
    out, langs = build
    recipe = _recipe(parts=[{"kind": "pairs", "relation": "dc", "p_other_language": p_other},
                            {"kind": "pairs", "relation": "cc", "p_other_language": p_other}])
    summary = recipe_export.export_recipe(out, recipe, str(tmp_path / "x"))
    rows = _shards(summary)
    n = k = 0
    for side, doi_col in (("anchor", "anchor_doi"), ("positive", "positive_doi")):
        has = pl.Series([len(langs[d]) > 1 for d in rows[doi_col].to_list()])
        sub = rows.filter(has)
        n += sub.height
        k += int(sub[f"{side}_other_language"].sum())
        # a paper with one language never shows another
        assert not rows.filter(~has)[f"{side}_other_language"].any()
    sigma = math.sqrt(p_other * (1 - p_other) / n)
    assert n > 2000 and abs(k / n - p_other) < 4 * sigma
    stats = summary["text_choices"]
    assert stats["after.anchor"]["sides_with_other_language"] + stats["after.positive"]["sides_with_other_language"] == n
    # a chosen side's language is one the paper has, and fields are title or abstract / summary
    for d, lang in zip(rows["anchor_doi"].to_list(), rows["lang_a"].to_list(), strict=True):
        assert lang in langs[d]
    assert set(rows["anchor_field"]) == {"title", "abstract", "summary"}


def test_same_rows_for_any_partitioning_and_seed_changes_them(build, tmp_path):
    out, _ = build
    recipe = recipes.BUILTIN["xling-title-abstract-citation"]
    a = recipe_export.export_recipe(out, recipe, str(tmp_path / "a"))
    b = recipe_export.export_recipe(out, recipe, str(tmp_path / "b"), rows_per_partition=700)
    assert a["counts"]["train"]["partitions"] == 1 and b["counts"]["train"]["partitions"] > 5
    ra, rb = (_shards(s).sort("example_id") for s in (a, b))
    assert ra.equals(rb)
    assert a["table"] == b["table"]
    c = recipe_export.export_recipe(out, recipes.resolve(recipe.name, seed="other"), str(tmp_path / "c"))
    rc = _shards(c).sort("example_id")
    assert not set(ra["example_id"]) & set(rc["example_id"])
    assert ra.select("anchor").to_series().to_list() != rc.select("anchor").to_series().to_list()


def test_caps(build, tmp_path):
    out, _ = build
    parts = [{"kind": "pairs", "relation": "cc", "p_other_language": 0.0, "p_title": 1.0, "weight": 2},
             {"kind": "pairs", "relation": "dc", "p_other_language": 0.0, "p_title": 1.0}]
    budget = 2_000
    recipe = _recipe(parts=parts, dedup=True, max_per_anchor=2, token_budget={"en/en": budget})
    summary = recipe_export.export_recipe(out, recipe, str(tmp_path / "x"), rows_per_partition=900)
    rows = _shards(summary)
    base = rows.filter(pl.col("copy") == 0)
    # at most 2 distinct examples per (part, anchor paper); copies are made after the cap
    assert base.group_by("dataset_type", "anchor_doi").len()["len"].max() <= 2
    assert rows.filter(pl.col("dataset_type") == "co-citation").group_by("example_id").len().height == \
        rows.filter(pl.col("dataset_type") == "co-citation").height
    # sides are always titles here, so a pair in both DC and CC gives the same texts: dedup keeps one
    assert base.group_by("anchor", "positive").len()["len"].max() == 1
    c = summary["counts"]["train"]
    assert c["dedup_dropped"] > 0 and c["anchor_cap_dropped"] > 0 and c["budget_dropped"] > 0
    # the budget: en/en tokens fit, and the seeded-order prefix is what was kept
    en = rows.filter(pl.col("lang_pair") == "en/en")
    assert budget - 20 < en["tokens"].sum() <= budget
    # reconciliation
    assert c["candidates"] == c["skipped_no_text"] + c["skipped_language"] + c["sampled_out"] + c["base_examples"]
    assert c["base_examples"] == c["dedup_dropped"] + c["anchor_cap_dropped"] + c["kept_examples"] + \
        c["mix_combined_or_not_in_every_relation"]
    assert c["copies"] == c["budget_dropped"] + c["written"] == sum(r["examples_after"] for r in summary["table"]) + \
        c["budget_dropped"]
    after = {(r["lang_pair"], r["dataset_type"]): r for r in summary["table"]}
    assert after[("en/en", "co-citation")]["examples_after"] + after[("en/en", "citation")]["examples_after"] == en.height


def test_texts_outside_the_recipe_languages_are_language_skips(build, tmp_path):
    """A paper whose every text the recipe's `languages` removed is a language skip, not one
    without text: here every paper has a title and an abstract, so nothing lacks text."""
    out, langs = build
    parts = [{"kind": "title-abstract"}, {"kind": "pairs", "relation": "dc"}]
    summary = recipe_export.export_recipe(out, _recipe(parts=parts, summaries=False, languages=["en"]),
                                          str(tmp_path / "x"))
    c = summary["counts"]["train"]
    # without summaries, only the English papers have an English text
    english = {doi for doi, have in langs.items() if have == {"en"}}
    assert len(english) == N_PAPERS // 3
    dc = pl.read_parquet(str(os.path.join(layout.pairs_dir(out, "dc", "train"), "*.parquet")))
    both = sum(a in english and b in english for a, b in dc.select("doi_a", "doi_b").iter_rows())
    assert c["skipped_no_text"] == 0
    assert c["skipped_language"] == (N_PAPERS - len(english)) + (dc.height - both)
    assert c["candidates"] == c["skipped_no_text"] + c["skipped_language"] + c["sampled_out"] + c["base_examples"]
    assert c["base_examples"] == len(english) + both


def test_skip_reason_of_a_side_without_text():
    """Language when every side without text lost its texts to the recipe's languages; no
    text for a missing paper, and for a document side (document text is not filtered)."""
    removed = recipe_texts.paper_texts("10.1/a", "ru", "t", "a", allowed=frozenset({"en"}))
    empty = recipe_texts.paper_texts("10.1/b", "ru", None, None, allowed=frozenset({"en"}))
    assert removed.language_removed_text and not empty.language_removed_text
    choice, document = (recipes.parse_recipe({"name": "x", "parts": [{"kind": "pairs", "relation": "dc", "text": t}]})
                        .parts[0] for t in ("choice", "document"))
    side = recipe_texts.Side("text", "en", "title", False, False)
    assert recipe_export._skip_reason(choice, (removed, None), (removed, side)) == "skipped_language"
    assert recipe_export._skip_reason(choice, (removed, None), (None, None)) == "skipped_no_text"
    assert recipe_export._skip_reason(choice, (empty, None), (removed, None)) == "skipped_no_text"
    assert recipe_export._skip_reason(document, (removed, None), (removed, side)) == "skipped_no_text"


def test_recipe_languages_are_codes_as_documents_carry_them(build, tmp_path, capsys):
    """"RU" would match no paper (documents carry "ru"): refused, with the code meant. A valid
    code no paper has is written past with a warning naming it, in stats.json too."""
    with pytest.raises(UserError, match="did you mean 'ru'"):
        _recipe(languages=["en", "RU"])
    with pytest.raises(UserError, match="two or three lower-case letters"):
        _recipe(languages=["english"])
    out, _ = build
    recipe_file = tmp_path / "xx.json"
    recipe_file.write_text(json.dumps({"name": "xx", "languages": ["en", "xx"], "parts": [{"kind": "title-abstract"}]}))
    assert main(["export", "--out", out, "--dest", str(tmp_path / "x"), "--recipe", str(recipe_file)]) == 0
    warning = "recipe xx: no example written is in xx (of its languages en, xx)"
    assert f"warning: {warning}" in capsys.readouterr().err
    stats = json.loads((tmp_path / "x" / "recipes" / "xx" / "stats.json").read_text())
    assert stats["counts"]["train"]["written"] > 0 and [w[:len(warning)] for w in stats["warnings"]] == [warning]


def test_token_budget_keys_are_language_codes_as_documents_carry_them():
    """A budget on "EN/en" or "en/english" was accepted and matched no example, so the export
    ran with no budget at all (226 of 226 title-abstract examples written under a budget of 0)."""
    with pytest.raises(UserError, match="token_budget.*did you mean 'en/en'"):
        _recipe(token_budget={"EN/en": 0})
    with pytest.raises(UserError, match="token_budget.*two or three lower-case letters"):
        _recipe(token_budget={"en/english": 5})
    assert _recipe(token_budget={"en/ru": 5, "*": None}).token_budget == {"en/ru": 5, "*": None}


def test_a_recipe_that_writes_nothing_says_so(build, tmp_path, capsys):
    out, _ = build
    recipe_file = tmp_path / "none.json"
    recipe_file.write_text(json.dumps({"name": "none", "languages": ["xx"], "parts": [{"kind": "title-abstract"}]}))
    assert main(["export", "--out", out, "--dest", str(tmp_path / "x"), "--recipe", str(recipe_file)]) == 0
    warning = f"recipe none wrote no example of {N_PAPERS} candidates; stats.json's counts say why"
    assert f"warning: {warning}" in capsys.readouterr().err
    stats = json.loads((tmp_path / "x" / "recipes" / "none" / "stats.json").read_text())
    assert stats["counts"]["train"]["skipped_language"] == N_PAPERS and stats["counts"]["train"]["written"] == 0
    assert [w[:len(warning)] for w in stats["warnings"]] == [warning]


def test_a_split_or_a_part_that_writes_nothing_says_so(build, tmp_path, capsys):
    """The build has only train and no BC pair: a recipe asking for idt too, with a BC part
    beside a title-abstract one, wrote train's title-abstract examples and warned of nothing
    (the warning came only when no split and no part wrote any)."""
    out, _ = build
    recipe_file = tmp_path / "some.json"
    recipe_file.write_text(json.dumps({"name": "some", "splits": ["train", "idt"],
                                       "parts": [{"kind": "title-abstract"}, {"kind": "pairs", "relation": "bc"}]}))
    assert main(["export", "--out", out, "--dest", str(tmp_path / "x"), "--recipe", str(recipe_file)]) == 0
    err = capsys.readouterr().err
    stats = json.loads((tmp_path / "x" / "recipes" / "some" / "stats.json").read_text())
    assert stats["counts"]["train"]["written"] > 0 and stats["counts"]["idt"]["written"] == 0
    assert stats["counts"]["train"]["part.title-abstract.written"] == stats["counts"]["train"]["written"]
    assert stats["counts"]["train"]["part.pairs:bc.candidates"] == 0
    assert stats["warnings"] == [
        "recipe some wrote no example in idt (0 candidates there): its parts find no paper or pair of that split",
        "recipe some: its part pairs:bc wrote no example (0 candidates in train, idt): the splits hold no pair "
        "of it"]
    assert all(f"warning: {w}" in err for w in stats["warnings"])


def test_a_triplets_part_without_hard_negatives_is_refused_before_any_work(build, tmp_path, capsys):
    """A build without `negatives/`: a triplets part alone exported nothing with a wrong reason
    ("its splits hold no paper or pair"), beside another part it added nothing silently."""
    out, _ = build
    for parts in ([{"kind": "triplets"}], [{"kind": "triplets"}, {"kind": "pairs", "relation": "dc"}]):
        recipe_file = tmp_path / "trip.json"
        recipe_file.write_text(json.dumps({"name": "trip", "parts": parts}))
        assert main(["export", "--out", out, "--dest", str(tmp_path / "x"), "--recipe", str(recipe_file)]) == 2
        err = capsys.readouterr().err
        assert "its triplets part reads hard negatives, and the build has none for train" in err
        assert "--hard-negatives N" in err and not (tmp_path / "x" / "recipes" / "trip").exists()


def test_openmsd_mix_recipes_match_the_trainer_tables(tmp_path):
    out = str(tmp_path / "build")
    write_tiny_build(out)
    docs = trainer.split_documents(out, "train")
    for name, mix in (("openmsd-dc_or_cc", "dc+cc"), ("openmsd-dc_and_cc", "dc&cc"), ("openmsd-cc", "cc")):
        summary = recipe_export.export_recipe(out, recipes.BUILTIN[name], str(tmp_path / "x"))
        want, _ = trainer.pairs_for_mix(out, mix, "train", docs)
        got = _shards(summary).sort("anchor_doi", "positive_doi") if summary["counts"]["train"]["written"] else None
        assert got is not None
        assert got.select("anchor_doi", "positive_doi", "anchor", "positive", "relation").rows() == \
            want.select("anchor_doi", "positive_doi", "anchor", "positive", "relations").rows()
        assert set(got["dataset_type"]) == {"relation-mix"}


def test_every_shard_loads_with_datasets(build, tmp_path):
    datasets = pytest.importorskip("datasets")
    out, _ = build
    summary = recipe_export.export_recipe(out, recipes.BUILTIN["xling-title-abstract-citation"],
                                          str(tmp_path / "x"), rows_per_partition=2000)
    folder = summary["folder"]
    shards = sorted(os.listdir(os.path.join(folder, "data", "train")))
    assert len(shards) > 1
    total = 0
    for name in shards:
        path = os.path.join(folder, "data", "train", name)
        ds = datasets.load_dataset("parquet", data_files={"train": path}, split="train")
        assert ds.num_rows == pq.ParquetFile(path).metadata.num_rows > 0
        assert ds.column_names[:2] == ["anchor", "positive"]
        total += ds.num_rows
    assert total == summary["counts"]["train"]["written"]
    card = open(os.path.join(folder, "README.md"), encoding="utf-8").read()
    configs = parse_configs(card)
    assert configs == {recipes.BUILTIN["xling-title-abstract-citation"].name: {"train": "data/train/*.parquet"}}
    whole = datasets.load_dataset(folder, split="train")
    assert whole.num_rows == total
    assert "| language pair | type |" in card and "MultipleNegativesRankingLoss" in card
    stats = json.load(open(os.path.join(folder, "stats.json"), encoding="utf-8"))
    assert stats["counts"]["train"]["written"] == total


def test_cli_and_tokenizer_hook(build, tmp_path, capsys, monkeypatch):
    out, _ = build
    monkeypatch.setattr(recipe_export, "hf_token_counter", lambda folder: lambda texts: [len(t) for t in texts])
    recipe_file = tmp_path / "r.json"
    recipe_file.write_text(json.dumps({"name": "mine", "seed": "3", "languages": ["en", "ru"],
                                       "parts": [{"kind": "pairs", "relation": "dc"}]}))
    assert main(["export", "--out", out, "--dest", str(tmp_path / "x"), "--recipe", str(recipe_file), "--rows-per-partition", "500",
                 "--tokenizer", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| language pair | type |" in printed and "HF tokens" in printed
    rows = pl.read_parquet(str(tmp_path / "x" / "recipes" / "mine" / "data" / "train" / "*.parquet"))
    assert set(rows["lang_a"]) | set(rows["lang_b"]) <= {"en", "ru"}
    monkeypatch.undo()  # the real counter: a folder without tokenizer.json is refused, nothing downloaded
    with pytest.raises(UserError, match="tokenizer.json"):
        recipe_export.hf_token_counter(str(tmp_path))


@pytest.mark.parametrize("bad", [
    {"parts": [{"kind": "nope"}]},
    {"parts": [{"kind": "pairs", "relation": "xx"}]},
    {"parts": [{"kind": "title-abstract", "cross_lingual_factor": -1}]},
    {"parts": [{"kind": "pairs", "relation": "dc", "p_title": 2}]},
    {"parts": [{"kind": "mix", "relation": "dc+cc&bc"}]},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "token_budget": {"ru/en": 5}},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "colour": "red"},
    {"parts": []},
    # "false" as a string read as true (a JSON string is truthy); an empty list wrote nothing
    {"parts": [{"kind": "pairs", "relation": "dc"}], "dedup": "false"},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "summaries": "no"},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "languages": []},
    # a traceback each, or gigabytes: a weight past any float, wrong shapes of `splits`, a weight
    # of 2,000 (copies are made in memory: 3.95 GB for 1,251 pairs) or 3e9 (an Int32 overflow)
    {"parts": [{"kind": "pairs", "relation": "dc", "weight": int("9" * 400)}]},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "splits": 5},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "splits": [["train"]]},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "splits": {"train": 1}},
    {"parts": [{"kind": "pairs", "relation": "dc", "weight": 2000}]},
    {"parts": [{"kind": "pairs", "relation": "dc", "weight": 3e9}]},
    {"parts": [{"kind": "title-abstract", "weight": 100, "cross_lingual_factor": 20}]},
    {"name": "a" * 300, "parts": [{"kind": "pairs", "relation": "dc"}]},
    {"parts": [{"kind": "pairs", "relation": "dc"}], "splits": ["train", "train"]},  # exported twice
])
def test_bad_recipes_are_refused(bad):
    with pytest.raises(UserError):
        recipes.parse_recipe({"name": "x", **bad})


def test_a_recipe_file_nested_past_the_parser_is_refused(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"name": "w", "parts": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(UserError, match="RecursionError"):
        recipes.resolve(str(path))


@pytest.mark.parametrize("name", ["..", ".", "../x", "a/b", "a\\b", "-x", ".hidden", "a b", "", "é"])
def test_a_recipe_name_is_one_folder_of_its_own(build, tmp_path, name):
    """The name is the folder DEST/recipes/<name>/ that a new export replaces: ".." would be
    DEST itself, removed with the other recipes in it."""
    with pytest.raises(UserError, match="`name`"):
        recipes.parse_recipe({"name": name, "parts": [{"kind": "title-abstract"}]})
    out, _ = build
    dest = tmp_path / "x"
    (dest / "recipes" / "kept").mkdir(parents=True)
    recipe_file = tmp_path / "r.json"
    recipe_file.write_text(json.dumps({"name": name, "parts": [{"kind": "title-abstract"}]}))
    assert main(["export", "--out", out, "--dest", str(dest), "--recipe", str(recipe_file)]) == 2
    assert (dest / "recipes" / "kept").is_dir()


def test_side_choice_is_keyed_not_ordered():
    paper = recipe_texts.paper_texts("10.1/x", "ru", "заголовок", "аннотация",
                                     [{"text": "Abstract", "language": "en", "source": "pdf"},
                                      {"text": "аннотация", "language": "bg", "source": "pdf"}])
    assert sorted(paper.abstracts) == ["en", "ru"]  # the copy of the kept abstract is no other language
    first = [recipe_texts.choose_side(paper, f"k{i}", "s", 0.5, 0.5) for i in range(200)]
    again = [recipe_texts.choose_side(paper, f"k{i}", "s", 0.5, 0.5) for i in reversed(range(200))][::-1]
    assert first == again
    assert {s.field for s in first} == {"title", "abstract"} and {s.language for s in first} == {"ru", "en"}
    assert all(s.field == "abstract" for s in first if s.language == "en")  # no English title to show


def test_report_shows_the_recipe_table(tmp_path):
    from openmsd_build.report.command import build_report

    out = str(tmp_path / "build")
    write_tiny_build(out)
    summary = recipe_export.export_recipe(out, recipes.BUILTIN["openmsd-dc_or_cc"])
    assert summary["folder"] == os.path.join(out, "export", "recipes", "openmsd-dc_or_cc")
    assert os.path.isdir(summary["folder"]) and not os.path.exists(summary["folder"] + ".partial")
    stats = build_report(out)
    assert [s["recipe"]["name"] for s in stats["training_recipes"]] == ["openmsd-dc_or_cc"]
    md = open(os.path.join(out, "report", "report.md"), encoding="utf-8").read()
    assert "Training recipe openmsd-dc_or_cc" in md
    total = sum(r["examples_after"] for r in summary["table"])
    assert total == summary["counts"]["train"]["written"] > 0
    tokens = sum(r["tokens_after"] for r in summary["table"])
    assert f"| total |  | {sum(r['examples_before'] for r in summary['table']):,} |" in md
    assert md.split("Training recipe openmsd-dc_or_cc", 1)[1].count(f"| {total:,} | {tokens:,} |") == 1


def test_ccs_pairs_are_a_recipe_relation_once_the_contexts_stage_ran(build, tmp_path, capsys):
    """`ccs` (co-cited in one sentence, pairs/ccs/ from the contexts stage) is a pairs
    relation; without pairs/ccs/ the export says which stage to run."""
    import shutil

    out, _ = build
    recipe_file = tmp_path / "ccs.json"
    recipe_file.write_text(json.dumps({"name": "ccs", "seed": "3", "parts": [{"kind": "pairs", "relation": "ccs"}]}))
    argv = ["export", "--out", out, "--dest", str(tmp_path / "x"), "--recipe", str(recipe_file)]
    assert main(argv) == 2
    assert "run `openmsd-build contexts" in capsys.readouterr().err
    ccs = layout.pairs_dir(out, "ccs", "train")
    shutil.copytree(layout.pairs_dir(out, "cc", "train"), ccs)
    try:
        assert main(argv) == 0
        rows = pl.read_parquet(str(tmp_path / "x" / "recipes" / "ccs" / "data" / "train" / "*.parquet"))
        assert rows.height > 0 and set(rows["relation"]) == {"ccs"} and set(rows["dataset_type"]) == {
            "co-citation-sentence"}
    finally:
        shutil.rmtree(os.path.dirname(ccs))
