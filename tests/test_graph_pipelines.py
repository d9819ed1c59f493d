"""End-to-end Beam runs (FnApiRunner) of the citations, split and pairs stages on a tiny build.

Checks the written Parquet against hand-derived expectations and that every stage's counts
reconcile (rows in = kept + each drop reason), which is what the report relies on.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl
import pytest

from openmsd_build.citations import command as citations
from openmsd_build.core import layout, parquet_io
from openmsd_build.pairs import command as pairs
from openmsd_build.schemas import DOCUMENTS, PAIRS, REJECTS, SPLITS
from openmsd_build.split import command as split
from openmsd_build.split.assign import SplitConfig

LANG = {"a": "en", "b": "en", "c": "de", "d": "en", "e": "fr", "f": "en", "g": "de", "n": "en"}


def _doc(key: str, abstract: str | None = "An abstract.") -> dict:
    return {"doi": f"10.1000/{key}", "title": f"Title {key}", "abstract": abstract, "language": LANG.get(key, "en"),
            "relations": []}


def write_documents(out: Path) -> None:
    rows = [_doc(k) for k in "abcdefg"] + [_doc("n", abstract=""), _doc("social.oci.2")]
    table = parquet_io.table_from_rows(rows, DOCUMENTS)
    Path(layout.documents_dir(str(out))).mkdir(parents=True)
    parquet_io.write_table(table, parquet_io.part_path(layout.documents_dir(str(out)), 0, 1))


CSV = """oci,citing,cited,creation,timespan,journal_sc,author_sc
1-2,10.1000/A,10.1000/b,2020,P1Y,no,no
1-3,doi:10.1000/a,https://doi.org/10.1000/c,2020,P1Y,no,no
1-4,10.1000/a,10.1000/d,2020,P1Y,no,no
2-3,10.1000/b,10.1000/c,2020,P1Y,no,no
2-4,10.1000/b,10.1000/d,2020,P1Y,no,no
2-4,10.1000/B,10.1000/D,2020,P1Y,no,no
4-5,10.1000/d,10.1000/e,2020,P1Y,no,no
oci-x,10.1000/social.oci.2,10.1000/a,2020,P1Y,no,no
5-5,10.1000/e,10.1000/E,2020,P1Y,no,no
6-7,10.1000/f,10.1000/zz-missing,2020,P1Y,no,no
7-6,10.1000/zz-missing,10.1000/f,2020,P1Y,no,no
8-9,10.1000/g,10.1000/n,2020,P1Y,no,no
bad,not-a-doi,10.1000/a,2020,P1Y,no,no
short,10.1000/a
"""
INDEX = """id,citing,cited,creation
x,omid:br/0601 doi:10.1000/f,omid:br/0602 doi:10.1000/g pmid:12,2020
y,omid:br/0603,omid:br/0602,2020
z,omid:br/0699,omid:br/0601,2020
"""
META = """id,title
omid:br/0601 doi:10.1000/F,F
omid:br/0602 doi:10.1000/g issn:1234-5678,G
omid:br/0603 doi:10.1000/c,C
"""


@pytest.fixture(scope="module")
def build(tmp_path_factory, beam_args) -> tuple[Path, dict, dict, dict]:
    out = tmp_path_factory.mktemp("build")
    write_documents(out)
    (out / "in").mkdir()
    (out / "in" / "coci.csv").write_text(CSV)
    (out / "in" / "index.csv").write_text(INDEX)
    (out / "meta.csv").write_text(META)
    c = citations.run(
        argparse.Namespace(out=str(out), opencitations=[str(out / "in")], meta=[str(out / "meta.csv")], shards=3),
        beam_args,
    )
    s = split.run_split(str(out), beam_args, shards=2, config=SplitConfig(top_k=2, min_idt_groups=0))
    p = pairs.run_pairs(str(out), beam_args, shards=3, max_degree=1000)
    return out, c, s, p


def test_citations_edges_and_counts(build):
    out, counts, _, _ = build
    got = parquet_io.read_table(layout.citations_dir(str(out)), schema=None)
    edges = set(zip(got["citing_doi"].to_pylist(), got["cited_doi"].to_pylist(), strict=True))
    d = "10.1000/"
    assert edges == {
        (d + "a", d + "b"), (d + "a", d + "c"), (d + "a", d + "d"), (d + "b", d + "c"), (d + "b", d + "d"),
        (d + "d", d + "e"), (d + "social.oci.2", d + "a"), (d + "f", d + "g"), (d + "c", d + "g"),
    }
    assert counts["rows_read"] == 17
    assert counts["duplicate_edge"] == 1 and counts["self_citation"] == 1
    assert counts["citing_missing"] == 1 and counts["cited_missing"] == 1 and counts["no_abstract"] == 1
    assert counts["malformed_row"] == 1 and counts["bad_doi"] == 1 and counts["no_doi"] == 1
    drops = ("rows_unrecognized_file", "malformed_row", "bad_doi", "no_doi", "self_citation", "duplicate_edge",
             "citing_missing", "cited_missing", "no_abstract", "edges_kept")
    assert counts["rows_read"] == sum(counts.get(k, 0) for k in drops)
    assert counts["edges_kept"] == len(edges)
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "citations"), schema=REJECTS)
    assert sorted(rejects["reason"].to_pylist()) == ["bad_doi", "malformed_row"]
    stats = json.loads(Path(layout.stats_path(str(out), "citations")).read_text())
    assert stats["counts"] == counts


def test_split_output(build):
    out, _, counts, _ = build
    table = pl.from_arrow(parquet_io.read_table(layout.splits_dir(str(out)), schema=SPLITS))
    assert table.columns == SPLITS.names
    assert table.height == counts["papers_linked"] == 8  # a..g and social.oci.2; n has no abstract
    assert table["doi"].n_unique() == table.height
    assert counts["documents_read"] == counts["no_link"] + counts["papers_linked"]
    assert counts["papers_linked"] == counts["train"] + counts["idt"] + counts["odt"]
    by = dict(zip(table["doi"].to_list(), table["split"].to_list(), strict=True))
    assert by["10.1000/e"] == "odt"  # French is not in the top-2 languages (en, de)
    assert by["10.1000/d"] == "odt"  # English, cites the ODT French paper


def test_pairs_output(build):
    out, _, _, counts = build
    splits = pl.from_arrow(parquet_io.read_table(layout.splits_dir(str(out)), schema=SPLITS))
    cit = pl.from_arrow(parquet_io.read_table(layout.citations_dir(str(out))))
    from openmsd_build.pairs.relations import compute_pairs

    expected, exp_counts = compute_pairs(cit, splits)
    for rel in ("dc", "cc", "bc"):
        for name in ("train", "idt", "odt"):
            got = pl.from_arrow(parquet_io.read_table(layout.pairs_dir(str(out), rel, name), schema=PAIRS))
            assert got.columns == PAIRS.names
            assert got.sort("doi_a", "doi_b").equals(expected[(rel, name)].sort("doi_a", "doi_b")), (rel, name)
            if rel != "dc":
                assert counts[f"{rel}_pairs.{name}"] == got.height
                assert (got["doi_a"] < got["doi_b"]).all()
    assert counts["edges_read"] == counts["edges_annotated"] + counts["edges_unannotated"] == cit.height
    dc = sum(v for k, v in counts.items() if k.startswith("dc_kept."))
    assert counts["edges_annotated"] == dc + counts.get("dc_cross_split", 0) + counts.get("dc_odt_en_en", 0)
    for rel in ("cc", "bc"):
        assert counts[f"{rel}_instances"] == exp_counts[f"{rel}_instances"]


def test_pairs_negatives_and_mixes_match_single_machine(build, beam_args, tmp_path):
    out, _, _, _ = build
    from openmsd_build.pairs.relations import MIX_NAMES, compute_pairs
    from openmsd_build.schemas import MIXES, NEGATIVES

    args = argparse.Namespace(out=str(out), shards=3, max_degree=1000, hard_negatives=2, mixes=[])
    counts = pairs.run(args, beam_args)
    splits = pl.from_arrow(parquet_io.read_table(layout.splits_dir(str(out)), schema=SPLITS))
    cit = pl.from_arrow(parquet_io.read_table(layout.citations_dir(str(out))))
    expected, exp_counts = compute_pairs(cit, splits, negatives=2, mixes=MIX_NAMES)
    n_neg = 0
    for name in ("train", "idt", "odt"):
        got = pl.from_arrow(parquet_io.read_table(layout.negatives_dir(str(out), name), schema=NEGATIVES))
        assert got.columns == NEGATIVES.names
        key = ["anchor_doi", "negative_doi"]
        assert got.sort(key).equals(expected[("negatives", name)].sort(key)), name
        n_neg += got.height
        for mix in MIX_NAMES:
            got = pl.from_arrow(parquet_io.read_table(layout.mixes_dir(str(out), mix, name), schema=MIXES))
            assert got.columns == MIXES.names
            exp = expected[(f"mix/{mix}", name)]
            assert got.sort("doi_a", "doi_b").equals(exp.sort("doi_a", "doi_b")), (mix, name)
            assert counts.get(f"mix.{mix}.{name}", 0) == exp.height
    assert n_neg > 0 and n_neg == sum(v for k, v in exp_counts.items() if k.startswith("negatives."))
    assert counts["neg_cited_by_anchor"] == exp_counts["neg_cited_by_anchor"]
    # every path found is accounted for (duplicate (A, C) pairs through other bridges were not)
    assert counts["neg_triples"] == n_neg + sum(counts.get(k, 0) for k in (
        "neg_duplicate_paths", "neg_candidates_pruned", "neg_cited_by_anchor", "neg_over_per_anchor"))
    # a run without the flags removes the optional outputs of this one
    pairs.run_pairs(str(out), beam_args, shards=3)
    assert parquet_io.list_parts(layout.negatives_dir(str(out), "train")) == []
    assert parquet_io.list_parts(layout.mixes_dir(str(out), "dc&cc", "train")) == []


def test_pairs_summary_counts_every_output_it_wrote(build, beam_args, capsys):
    """The stage's summary named the DC / CC / BC pairs only: the hard negatives and the
    mixes it wrote were in no line. Each output now has its rows per split, as in its folder."""
    out, _, _, _ = build
    from openmsd_build.schemas import MIXES, NEGATIVES

    mixes = ["dc+cc", "cc&bc"]
    pairs.run(argparse.Namespace(out=str(out), shards=3, max_degree=1000, hard_negatives=2, mixes=mixes), beam_args)
    printed = capsys.readouterr().out.splitlines()

    def rows(directory, schema) -> str:
        return ", ".join(f"{s} {parquet_io.read_table(directory(s), schema=schema).num_rows}"
                         for s in ("train", "idt", "odt"))

    negatives = rows(lambda s: layout.negatives_dir(str(out), s), NEGATIVES)
    assert negatives != "train 0, idt 0, odt 0"
    assert f"  hard negatives, up to 2 per anchor (negatives/): {negatives}" in printed
    for mix, folder in zip(mixes, ["dc_or_cc", "cc_and_bc"], strict=True):
        written = rows(lambda s, m=mix: layout.mixes_dir(str(out), m, s), MIXES)
        assert f"  mix {mix} (pairs/mix/{folder}/): {written}" in printed
    assert printed[0].startswith("pairs: DC (") and len(printed) == 4


def test_pairs_stage_puts_a_paper_splits_lists_twice_in_no_split(build, beam_args, tmp_path):
    """The stage on a splits/ folder listing one paper in a second split (a hand-mixed or
    corrupted folder): the paper's edges were annotated once per row in the shard that holds
    its rows, so its pairs were written into both splits and the counts did not reconcile.
    Now it is in no split, on the pipeline as on one machine, and counted."""
    import shutil

    src, _, _, _ = build
    out = tmp_path / "build"
    shutil.copytree(src, out)
    splits = pl.from_arrow(parquet_io.read_table(layout.splits_dir(str(out)), schema=SPLITS))
    doi = "10.1000/b"  # cites c and d, cited by a: in DC, CC and BC pairs of the clean build
    row = splits.filter(pl.col("doi") == doi)
    other = "idt" if row["split"].item() != "idt" else "train"
    mixed = pl.concat([splits, row.with_columns(pl.lit(other).alias("split"))])
    shutil.rmtree(layout.splits_dir(str(out)))
    parquet_io.write_table(mixed.to_arrow().cast(SPLITS), parquet_io.part_path(layout.splits_dir(str(out)), 0, 1))

    counts = pairs.run_pairs(str(out), beam_args, shards=3)
    cit = pl.from_arrow(parquet_io.read_table(layout.citations_dir(str(out))))
    expected, exp_counts = compute_pairs_of(cit, mixed)
    touching = cit.filter((pl.col("citing_doi") == doi) | (pl.col("cited_doi") == doi)).height
    assert touching == 3
    assert counts["papers_split_ambiguous"] == 1 and counts["edges_split_ambiguous"] == touching
    assert counts["edges_read"] == (counts["edges_unannotated"] + counts["edges_split_ambiguous"]
                                    + counts["edges_annotated"]) == cit.height
    for rel in ("dc", "cc", "bc"):
        for name in ("train", "idt", "odt"):
            got = pl.from_arrow(parquet_io.read_table(layout.pairs_dir(str(out), rel, name), schema=PAIRS))
            assert doi not in set(got["doi_a"].to_list() + got["doi_b"].to_list()), (rel, name)
            assert got.sort("doi_a", "doi_b").equals(expected[(rel, name)].sort("doi_a", "doi_b")), (rel, name)
    for key in ("edges_unannotated", "edges_split_ambiguous", "edges_annotated", "papers_split_ambiguous"):
        assert counts[key] == exp_counts[key], key
    stats = json.loads(Path(layout.stats_path(str(out), "pairs")).read_text())
    assert stats["counts"]["papers_split_ambiguous"] == 1


def compute_pairs_of(cit: pl.DataFrame, splits: pl.DataFrame):
    from openmsd_build.pairs.relations import compute_pairs

    return compute_pairs(cit, splits)


def _with_edited(src: Path, tmp_path: Path, folder, edit) -> Path:
    """A copy of the build whose `folder` (a layout function) is rewritten by `edit` (a
    function of its rows as one polars frame), keeping the schema: a hand-edited table."""
    import shutil

    out = tmp_path / "build"
    shutil.copytree(src, out)
    table = parquet_io.read_table(folder(str(out)))
    shutil.rmtree(folder(str(out)))
    edited = edit(pl.from_arrow(table)).to_arrow().cast(table.schema)
    parquet_io.write_table(edited, parquet_io.part_path(folder(str(out)), 0, 1))
    return out


def test_pairs_stage_puts_a_paper_in_no_known_split_in_no_split(build, beam_args, tmp_path):
    """A hand-edited splits/ naming a split that is none of train / idt / odt ("foo", "IDT",
    null) stopped the whole stage (`replace_strict` found no code for it). Such a paper is
    in no split, as every other reader of splits/ treats it: its edges are unannotated, the
    counts reconcile, the stage warns; and a paper listed twice is still in no split when
    one of its rows is such a split (the unknown row is not dropped before that rule)."""
    src, _, _, _ = build
    odd = {"10.1000/b": "foo", "10.1000/c": None, "10.1000/d": "IDT"}

    def edit(splits: pl.DataFrame) -> pl.DataFrame:
        relabelled = splits.with_columns(
            pl.when(pl.col("doi").is_in(list(odd))).then(pl.col("doi").replace_strict(odd, default=None))
            .otherwise(pl.col("split")).alias("split"))
        twice = splits.filter(pl.col("doi") == "10.1000/a").with_columns(pl.lit("bogus").alias("split"))
        return pl.concat([relabelled, twice])

    out = _with_edited(src, tmp_path, layout.splits_dir, edit)
    counts = pairs.run_pairs(str(out), beam_args, shards=3)
    cit = pl.from_arrow(parquet_io.read_table(layout.citations_dir(str(out))))
    splits = pl.from_arrow(parquet_io.read_table(layout.splits_dir(str(out)), schema=SPLITS))
    expected, exp_counts = compute_pairs_of(cit, splits)
    assert counts["papers_split_unknown"] == 3 and counts["papers_split_ambiguous"] == 1
    assert counts["edges_read"] == (counts["edges_unannotated"] + counts["edges_split_ambiguous"]
                                    + counts["edges_annotated"]) == cit.height
    gone = {*odd, "10.1000/a"}
    for rel in ("dc", "cc", "bc"):
        for name in ("train", "idt", "odt"):
            got = pl.from_arrow(parquet_io.read_table(layout.pairs_dir(str(out), rel, name), schema=PAIRS))
            assert not gone & set(got["doi_a"].to_list() + got["doi_b"].to_list()), (rel, name)
            assert got.sort("doi_a", "doi_b").equals(expected[(rel, name)].sort("doi_a", "doi_b")), (rel, name)
    for key in ("edges_unannotated", "edges_split_ambiguous", "edges_annotated", "papers_split_ambiguous",
                "papers_split_unknown"):
        assert counts[key] == exp_counts[key], key
    from openmsd_build.core.notices import stage_warnings

    assert any("none of train, idt, odt" in w for w in stage_warnings("pairs", counts))


@pytest.mark.filterwarnings("error::RuntimeWarning")  # a null id's shard was a NaN cast to an integer
def test_pairs_stage_counts_an_edge_with_a_null_paper_id_as_unannotated(build, beam_args, tmp_path):
    """A hand-edited citations/ with null `citing_id` / `cited_id` values: the stage reads
    only the id columns, took the nulls for an old folder without them and asked for the
    DOI columns it had not read (`ColumnNotFoundError`, the whole stage). Such an edge joins
    no paper: it is counted as unannotated and the counts reconcile."""
    src, _, _, _ = build

    def edit(cit: pl.DataFrame) -> pl.DataFrame:
        row = pl.int_range(pl.len())
        return cit.with_columns(
            pl.when(row == 0).then(None).otherwise(pl.col("citing_id")).alias("citing_id"),
            pl.when(row == 1).then(None).otherwise(pl.col("cited_id")).alias("cited_id"))

    out = _with_edited(src, tmp_path, layout.citations_dir, edit)
    counts = pairs.run_pairs(str(out), beam_args, shards=3)
    cit = pl.from_arrow(parquet_io.read_table(layout.citations_dir(str(out))))
    assert counts["edges_read"] == cit.height
    assert counts["edges_read"] == counts["edges_unannotated"] + counts["edges_split_ambiguous"] + counts["edges_annotated"]
    _, _, _, p = build
    assert counts["edges_annotated"] <= p["edges_annotated"] - 1
