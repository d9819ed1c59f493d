"""`openmsd-build export`: BEIR JSONL, MTEB-style Parquet, trainer tables and the Hugging
Face layout, loaded back with the `datasets` library (offline, local files only)."""

from __future__ import annotations

import json
import os
import shutil

import polars as pl
import pytest

from openmsd_build.cli import main
from openmsd_build.evaluate.testing import write_tiny_build
from openmsd_build.export import hf_dataset, trainer
from openmsd_build.export.command import export_build


@pytest.fixture()
def exported(tmp_path):
    out = str(tmp_path / "build")
    write_tiny_build(out)
    summary = export_build(out)
    return out, summary, tmp_path / "build" / "export"


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_beir_layout(exported):
    _, summary, dest = exported
    task = dest / "beir" / "idt" / "dc"
    corpus = _jsonl(task / "corpus.jsonl")
    assert [d["_id"] for d in corpus] == ["10.1/a", "10.1/b", "10.1/c", "10.1/d", "10.1/e", "10.1/f"]
    assert corpus[0] == {"_id": "10.1/a", "title": "Deep learning for protein folding",
                         "text": "We fold proteins with neural networks.", "language": "en"}
    queries = _jsonl(task / "queries.jsonl")
    assert [q["_id"] for q in queries] == ["10.1/a", "10.1/b", "10.1/c", "10.1/d"]
    assert queries[0]["text"] == "Deep learning for protein folding\nWe fold proteins with neural networks."
    lines = (task / "qrels" / "test.tsv").read_text().splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    assert sorted(lines[1:]) == sorted([
        "10.1/a\t10.1/b\t1", "10.1/b\t10.1/a\t1", "10.1/c\t10.1/a\t1", "10.1/a\t10.1/c\t1",
        "10.1/d\t10.1/b\t1", "10.1/b\t10.1/d\t1",
    ])
    assert summary["retrieval"]["odt"]["bc"] == {"queries": 0, "qrels": 0, "pairs_outside_pool": 0}


def test_trainer_tables(exported):
    _, summary, dest = exported
    pairs = pl.read_parquet(dest / "trainer" / "train" / "pairs_dc_or_cc.parquet")
    assert pairs.columns[:2] == ["anchor", "positive"]
    # DC (5 unordered pairs) is down-sampled to CC's size (2) in expectation; CC is kept whole.
    got = set(zip(pairs["anchor_doi"], pairs["positive_doi"], strict=True))
    assert {("10.1/m", "10.1/n"), ("10.1/l", "10.1/n")} <= got
    assert summary["trainer"]["train"]["pairs_dc_or_cc"]["kept.cc"] == 2
    row = pairs.filter(pl.col("anchor_doi") == "10.1/m").row(0, named=True)
    assert row["anchor"] == "Bibliographische Kopplung\nGemeinsame Referenzen verbinden Arbeiten."
    assert row["lang_anchor"] == "de"
    # Deterministic: a second export writes the same rows.
    again, _ = trainer.pairs_for_mix(exported[0], "dc+cc", "train", trainer.split_documents(exported[0], "train"))
    assert again.equals(pairs)

    triplets = pl.read_parquet(dest / "trainer" / "train" / "triplets.parquet")
    assert triplets.columns[:3] == ["anchor", "positive", "negative"]
    # k->l->m (k does not cite m), l->m->o; k->l->n is no negative (k cites n).
    assert set(triplets.select("anchor_doi", "positive_doi", "negative_doi").iter_rows()) == {
        ("10.1/k", "10.1/l", "10.1/m"), ("10.1/l", "10.1/m", "10.1/o")}

    ta = pl.read_parquet(dest / "trainer" / "train" / "title_abstract.parquet")
    assert ta.height == 5 and set(ta["variant"]) == {"same-language"}  # p has no abstract
    assert ta.filter(pl.col("doi") == "10.1/k").row(0, named=True)["anchor"] == "Citation graphs"


def test_intersection_mix_and_bad_names(exported):
    out = exported[0]
    frame, counts = trainer.mix_pairs(out, "dc&cc", "idt")
    assert frame.select("doi_a", "doi_b").rows() == [("10.1/a", "10.1/b")]
    assert trainer.mix_slug("dc&cc") == "dc_and_cc"
    with pytest.raises(ValueError):
        trainer.parse_mix("dc+xx")


def test_negatives_rule_by_hand():
    edges = pl.DataFrame({"citing_doi": ["A", "B", "B", "A", "C", "B"], "cited_doi": ["B", "C", "D", "D", "A", "A"]})
    neg = trainer.compute_negatives(edges, per_positive=5)
    # A->B->C (A does not cite C) kept; A->B->D dropped (A cites D); A->B->A dropped (C == A);
    # C->A->B kept, C->A->D kept; B->C->A dropped (B cites A); B->A->B dropped (C == anchor).
    assert set(neg.iter_rows()) == {("A", "B", "C"), ("C", "A", "B"), ("C", "A", "D")}
    assert trainer.compute_negatives(edges, per_positive=1).height == 2
    # Bridges citing more than max_bridge_degree papers are skipped.
    assert set(trainer.compute_negatives(edges, per_positive=5, max_bridge_degree=2).iter_rows()) == {
        ("C", "A", "B"), ("C", "A", "D")}


def test_cross_lingual_titles_code_path(tmp_path):
    out = str(tmp_path / "build")
    papers = [
        {"doi": "10.1/k", "titles": ["Citation graphs", "Zitationsgraphen"], "title_translations": None},
        {"doi": "10.1/l", "titles": None, "title_translations": [{"title": "Analyse de co-citation", "language": "fr"}]},
        {"doi": "10.1/n", "titles": ["Document embeddings (english again)"], "title_translations": None},
    ]
    write_tiny_build(out, papers_extra=papers)

    def detect(title):  # stands in for CLD3 in this test
        return ("de", 0.99, True) if title == "Zitationsgraphen" else ("en", 0.99, True)

    summary = export_build(out, trainer_splits=("train",), splits=("idt",), detect=detect)
    ta = pl.read_parquet(os.path.join(out, "export", "trainer", "train", "title_abstract.parquet"))
    cross = ta.filter(pl.col("variant") != "same-language").sort("doi", "variant")
    assert cross.select("doi", "variant", "anchor", "lang_anchor", "lang_positive").rows() == [
        ("10.1/k", "cross-lingual", "Zitationsgraphen", "de", "en"),
        ("10.1/k", "title-title", "Zitationsgraphen", "de", "en"),
        ("10.1/l", "cross-lingual", "Analyse de co-citation", "fr", "en"),
        ("10.1/l", "title-title", "Analyse de co-citation", "fr", "en"),
    ]
    assert cross.filter(pl.col("variant") == "title-title")["positive"].to_list() == [
        "Citation graphs", "Co-citation analysis"]
    counts = summary["trainer"]["train"]["title_abstract"]
    assert counts["cross_lingual_titles"] == 2 and counts["extra_title_columns"] == ["titles", "title_translations"]


def test_card_lists_every_nonempty_config_and_datasets_loads_them(exported, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    _, summary, dest = exported
    card = (dest / "README.md").read_text(encoding="utf-8")
    configs = hf_dataset.parse_configs(card)
    assert set(configs) == set(summary["configs"])
    assert "idt-dc-queries" in configs and "pairs-dc_or_cc" in configs and "triplets" in configs
    assert "odt-bc-qrels" not in configs and "odt-bc-qrels (test)" in summary["skipped_empty"]
    assert configs["idt-dc-corpus"] == {"test": "retrieval/idt/corpus.parquet"}
    cache = str(tmp_path / "cache")
    for name, files in configs.items():
        ds = datasets.load_dataset("parquet", data_files={s: str(dest / p) for s, p in files.items()}, cache_dir=cache)
        for split in files:
            assert ds[split].num_rows > 0, name
    qrels = datasets.load_dataset(str(dest), "idt-dc-qrels", cache_dir=cache)["test"]
    assert qrels.column_names == ["query-id", "corpus-id", "score"] and qrels.num_rows == 6
    corpus = datasets.load_dataset(str(dest), "odt-dc-corpus", cache_dir=cache)["test"]
    assert corpus.column_names == ["_id", "title", "text", "language"] and corpus.num_rows == 4
    pairs = datasets.load_dataset(str(dest), "pairs-dc_or_cc", cache_dir=cache)["train"]
    assert pairs.select_columns(["anchor", "positive"]).num_rows == pairs.num_rows > 0


def test_export_cli(tmp_path, capsys):
    out = str(tmp_path / "build")
    write_tiny_build(out)
    dest = str(tmp_path / "x")
    assert main(["export", "--out", out, "--dest", dest, "--mix", "dc+cc", "--mix", "cc&bc", "--no-beir"]) == 0
    assert "configs; card README.md" in capsys.readouterr().out
    assert os.path.exists(os.path.join(dest, "trainer", "train", "pairs_cc_and_bc.parquet"))
    assert not os.path.exists(os.path.join(dest, "beir"))
    assert main(["export", "--out", out, "--mix", "dc+zz"]) == 2
    assert main(["export", "--out", out, "--runner=FlinkRunner"]) == 2
    assert "runs no Beam pipeline" in capsys.readouterr().err


def test_dest_is_never_the_build_or_another_of_its_folders(tmp_path, capsys):
    """The export writes its own README.md, retrieval/ and trainer/: into the build's root it
    overwrote the build's card. OUT/export/ (the default) and folders outside the build are
    fine, with or without a recipe."""
    out = tmp_path / "build"
    write_tiny_build(str(out))
    (out / "README.md").write_text("the build's card")
    for dest in (out, out / "documents", out / "." / "splits" / ".."):
        for recipe in ([], ["--recipe", "openmsd-dc"]):
            assert main(["export", "--out", str(out), "--dest", str(dest), *recipe]) == 2, (dest, recipe)
            assert "is the build" in capsys.readouterr().err
    assert (out / "README.md").read_text() == "the build's card" and not (out / "retrieval").exists()
    assert main(["export", "--out", str(out), "--dest", str(out / "export" / "v2"), "--no-beir"]) == 0
    assert main(["export", "--out", str(out), "--no-beir"]) == 0
    assert (out / "export" / "v2" / "README.md").exists() and (out / "README.md").read_text() == "the build's card"


def test_dest_of_someone_else_is_refused_and_a_narrower_export_leaves_nothing_stale(tmp_path, capsys):
    """A --dest holding files but no earlier export had its README.md overwritten by the
    card; a second, narrower export into one folder left the first one's tables (odt, cc,
    bc) for a loader that globs the folder, while export.json listed only the new ones."""
    out = tmp_path / "build"
    write_tiny_build(str(out))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("# precious")
    for recipe in ([], ["--recipe", "openmsd-dc"]):
        assert main(["export", "--out", str(out), "--dest", str(mine), *recipe]) == 2
        assert "holds files but no earlier export" in capsys.readouterr().err
    assert (mine / "README.md").read_text() == "# precious" and sorted(os.listdir(mine)) == ["README.md"]
    # a folder or a file of an export's name is no earlier export: a project's own recipes/ or
    # export.json took the folder for one, and its README.md and retrieval/ were replaced
    (mine / "recipes").mkdir()
    (mine / "recipes" / "pancakes.txt").write_text("cook")
    (mine / "retrieval").mkdir()
    (mine / "retrieval" / "mine.csv").write_text("mine")
    (mine / "export.json").write_text('{"exported": "by another tool"}')
    for recipe in ([], ["--recipe", "openmsd-dc"]):
        assert main(["export", "--out", str(out), "--dest", str(mine), *recipe]) == 2
        assert "holds files but no earlier export" in capsys.readouterr().err
    assert (mine / "README.md").read_text() == "# precious" and (mine / "retrieval" / "mine.csv").exists()
    assert sorted(os.listdir(mine)) == ["README.md", "export.json", "recipes", "retrieval"]

    # a first recipe export killed before its card (its shards under recipes/NAME.partial/):
    # its retry is no someone else's folder
    killed = tmp_path / "killed"
    assert main(["export", "--out", str(out), "--dest", str(killed), "--recipe", "openmsd-dc"]) == 0
    shutil.move(killed / "recipes" / "openmsd-dc", killed / "recipes" / "openmsd-dc.partial")
    for name in ("recipe.json", "README.md", "stats.json"):
        (killed / "recipes" / "openmsd-dc.partial" / name).unlink(missing_ok=True)
    assert main(["export", "--out", str(out), "--dest", str(killed), "--recipe", "openmsd-dc"]) == 0

    dest = tmp_path / "exported"
    assert main(["export", "--out", str(out), "--dest", str(dest)]) == 0
    assert main(["export", "--out", str(out), "--dest", str(dest), "--recipe", "openmsd-dc"]) == 0
    (dest / "LICENSE").write_text("kept")
    assert (dest / "retrieval" / "odt").exists() and (dest / "beir").exists()
    assert main(["export", "--out", str(out), "--dest", str(dest), "--splits", "idt", "--relations", "dc",
                 "--no-beir"]) == 0
    assert sorted(os.listdir(dest / "retrieval")) == ["idt"] and sorted(os.listdir(dest / "retrieval" / "idt")) == [
        "corpus.parquet", "dc"]
    assert not (dest / "beir").exists()
    assert (dest / "recipes" / "openmsd-dc").is_dir() and (dest / "LICENSE").read_text() == "kept"
    # an export that fails (no enrich run for --text enriched) leaves the last one as it was
    before = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
    assert main(["export", "--out", str(out), "--dest", str(dest), "--text", "enriched"]) == 2
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == before
    listed = {c for c in json.loads((dest / "export.json").read_text())["configs"]}
    written = {p.relative_to(dest).as_posix() for p in (dest / "retrieval").rglob("*.parquet")}
    assert written == {"retrieval/idt/corpus.parquet", "retrieval/idt/dc/queries.parquet",
                       "retrieval/idt/dc/qrels.parquet"} and "idt-dc-queries" in listed


def test_ctrl_c_while_an_export_replaces_the_last_one_leaves_one_whole_export(tmp_path, monkeypatch):
    """The earlier export's entries were deleted, then the new ones moved in, with Ctrl-C
    live: a Ctrl-C in between left half of each (and a message saying the outputs were
    intact). Now only renames happen, with the signals held: the new export is whole."""
    import signal

    from openmsd_build.export import build_checks

    dest, partial = tmp_path / "dest", tmp_path / "dest" / build_checks.PARTIAL
    for root, tag in ((dest, "old"), (partial, "new")):
        for entry in ("retrieval", "beir", "trainer"):
            (root / entry).mkdir(parents=True)
            (root / entry / "part.parquet").write_text(tag)
        (root / "export.json").write_text(tag)
    (dest / "large_pool").mkdir()  # the earlier export's only: goes
    from openmsd_build.core import staging

    real_move = staging.move_path
    moves = []

    def move_then_ctrl_c(src, dst):
        real_move(src, dst)
        moves.append(dst)
        if len(moves) == 2:
            signal.raise_signal(signal.SIGINT)  # to this thread, at once (a kill may reach another)

    monkeypatch.setattr(staging, "move_path", move_then_ctrl_c)
    # Ctrl-C as Python handles it by default: a test run started in the background (`make test &`)
    # inherits SIGINT ignored, and the held Ctrl-C was ignored when the swap re-delivered it
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            staging.replace_entries(str(dest), str(partial), build_checks.EXPORT_ENTRIES)
    finally:
        signal.signal(signal.SIGINT, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    assert sorted(os.listdir(dest)) == ["beir", "export.json", "retrieval", "trainer"]
    assert all((dest / e / "part.parquet").read_text() == "new" for e in ("retrieval", "beir", "trainer"))
    assert (dest / "export.json").read_text() == "new"


def test_a_failed_move_while_replacing_an_export_puts_the_last_one_back(tmp_path, monkeypatch):
    """A move that failed half way (a full disk) left neither export: the earlier entries set
    aside were deleted with the partial folder. The swap is now undone first; and entries an
    export killed inside its swap left aside are put back before the next one writes."""
    from openmsd_build.core import staging
    from openmsd_build.export import build_checks

    dest, partial = tmp_path / "dest", tmp_path / "dest" / build_checks.PARTIAL
    for root, tag in ((dest, "old"), (partial, "new")):
        for entry in ("retrieval", "trainer"):
            (root / entry).mkdir(parents=True)
            (root / entry / "part.parquet").write_text(tag)
        (root / "export.json").write_text(tag)
    real_move, moves = staging.move_path, []

    def failing_move(src, dst):
        moves.append(dst)
        if len(moves) == 5:  # three set aside, one new placed: the disk is full
            raise OSError(28, "No space left on device")
        real_move(src, dst)

    monkeypatch.setattr(staging, "move_path", failing_move)
    with pytest.raises(OSError):
        staging.replace_entries(str(dest), str(partial), build_checks.EXPORT_ENTRIES)
    monkeypatch.undo()
    assert sorted(os.listdir(dest)) == ["export.json", "retrieval", "trainer"]
    assert all((dest / e / "part.parquet").read_text() == "old" for e in ("retrieval", "trainer"))

    def killed_swap(placed: list[str]) -> None:
        """DEST as a run killed inside the swap leaves it: every earlier entry aside, `placed`
        of the new one in (the new export has retrieval/ and export.json, not trainer/)."""
        shutil.rmtree(partial, ignore_errors=True)
        (partial / ".old").mkdir(parents=True)
        for entry in ("retrieval", "trainer", "export.json"):
            os.rename(dest / entry, partial / ".old" / entry)
        (partial / "retrieval").mkdir()
        (partial / "retrieval" / "part.parquet").write_text("new")
        (partial / "export.json").write_text("new")
        (partial / staging.SWAP_LIST).write_text(json.dumps(["retrieval", "export.json"]))
        for entry in placed:
            os.rename(partial / entry, dest / entry)

    for placed in ([], ["retrieval"]):
        killed_swap(placed)
        build_checks.recover_export(str(dest), str(partial))  # the swap is finished, not mixed
        assert sorted(os.listdir(dest)) == ["export.json", "retrieval"] and not partial.exists()
        assert (dest / "retrieval" / "part.parquet").read_text() == "new" and (dest / "export.json").read_text() == "new"
        (dest / "trainer").mkdir()  # the next round starts from an earlier export again
        (dest / "trainer" / "part.parquet").write_text("old")


def test_odt_triplets_computed_from_citations_have_no_en_en_positive(tmp_path):
    """ODT holds no En-En pair; the export's triplets computed from citations/ (no
    negatives/ in the build) took an English paper citing an English one as a positive."""
    import pyarrow as pa

    from openmsd_build.core import layout, parquet_io
    from openmsd_build.export.trainer import specter_triplets
    from openmsd_build.schemas import tables

    out = str(tmp_path / "build")
    cits = [("a", "b"), ("b", "c"), ("x", "y"), ("y", "c"), ("a", "y"), ("z", "y")]
    parquet_io.write_table(pa.Table.from_pylist([{"citing_doi": f"10.1/{s}", "cited_doi": f"10.1/{t}"} for s, t in cits],
                                                schema=tables.CITATIONS),
                           parquet_io.part_path(layout.citations_dir(out), 0, 1))
    lang = {"a": "en", "b": "en", "c": "de", "x": "de", "y": "en", "z": None}  # z: no language known
    docs = pl.DataFrame({"doi": [f"10.1/{k}" for k in lang], "text": list(lang), "language": list(lang.values())})
    frame, counts = specter_triplets(out, "odt", docs)
    assert set(frame.select("anchor", "positive", "negative").iter_rows()) == {("x", "y", "c"), ("z", "y", "c")}
    assert counts["odt_en_en_positives_removed"] == 2  # a -> b -> c and a -> y -> c
    train, _ = specter_triplets(out, "train", docs)
    assert ("a", "b", "c") in set(train.select("anchor", "positive", "negative").iter_rows())


def test_a_file_of_the_users_inside_an_export_folder_is_never_deleted(tmp_path, capsys):
    """A second export replaced trainer/ (and a recipe export recipes/<name>/) whole, and a
    file the user had put there (`my_extra.txt`) was gone. Now an export finding a file it
    does not write in a folder it replaces stops first, with one line naming the file; the
    export's own files of an earlier run (other mixes, splits) are replaced as before."""
    out = tmp_path / "build"
    write_tiny_build(str(out))
    dest = out / "export"
    assert main(["export", "--out", str(out), "--mix", "dc+cc", "--mix", "cc&bc"]) == 0
    assert main(["export", "--out", str(out), "--recipe", "openmsd-dc"]) == 0
    capsys.readouterr()
    for folder in ("trainer", "trainer/train", "beir/idt", "recipes/openmsd-dc", "recipes/openmsd-dc/data"):
        extra = dest / folder / "my_extra.txt"
        extra.write_text("mine")
        recipe = ["--recipe", "openmsd-dc"] if folder.startswith("recipes") else []
        before = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*"))
        assert main(["export", "--out", str(out), *recipe]) == 2, folder
        err = capsys.readouterr().err
        assert str(extra) in err and "not written by export" in err and len(err.strip().splitlines()) == 1, err
        assert extra.read_text() == "mine" and sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == before
        extra.unlink()
    (dest / "trainer" / ".DS_Store").write_bytes(b"\0")  # a file manager's: no reason to stop
    (dest / "LICENSE").write_text("kept")  # beside the export's folders: kept, as before
    (dest / "recipes" / "my-notes").mkdir()
    (dest / "recipes" / "my-notes" / "todo.txt").write_text("kept")
    assert main(["export", "--out", str(out)]) == 0  # pairs_cc_and_bc.parquet is the export's own
    assert main(["export", "--out", str(out), "--recipe", "openmsd-dc"]) == 0
    assert not (dest / "trainer" / "train" / "pairs_cc_and_bc.parquet").exists()
    assert (dest / "LICENSE").read_text() == "kept" and (dest / "recipes" / "my-notes" / "todo.txt").exists()


def _damage_pages(path, column: str) -> None:
    """Overwrite the data of `column` in the Parquet file `path` (its pages, not the footer:
    the file's footer still reads, as after a bad disk block)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(0).column(meta.schema.to_arrow_schema().get_field_index(column))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(path.read_bytes())
    data[start:start + chunk.total_compressed_size] = b"\xff" * chunk.total_compressed_size
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("folder, column", [("pairs/dc/split=train", "doi_a"), ("pairs/cc/split=idt", "doi_b"),
                                            ("documents", "abstract"), ("splits", "doi"), ("citations", "cited_doi"),
                                            ("papers", "doi")])
def test_a_damaged_data_page_is_one_line_naming_the_file(tmp_path, capsys, folder, column):
    """A part file whose footer reads but whose pages do not (a bad disk block) passed
    `check_parts`, and export's polars queries failed with a ComputeError traceback naming no
    file. Now it is one line naming the file, exit 2, and nothing is written."""
    out = tmp_path / "build"
    write_tiny_build(str(out), papers_extra=[{"doi": "10.1/a", "titles": ["Ein Titel"]}])
    part = next((out / folder).glob("*.parquet"))
    _damage_pages(part, column)
    assert main(["export", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(part) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not [p for p in (out / "export").rglob("*") if p.is_file()]


@pytest.mark.parametrize("damage", ["pages", "truncated"])
def test_a_damaged_pairs_file_stops_a_recipe_export_with_one_line(tmp_path, capsys, damage):
    """`export --recipe` reads the pairs with Arrow, file by file: a truncated file or a
    damaged page was Arrow's traceback (ArrowInvalid, OSError). Now one line names the file."""
    out = tmp_path / "build"
    write_tiny_build(str(out))
    part = next((out / "pairs" / "dc" / "split=train").glob("*.parquet"))
    if damage == "pages":
        _damage_pages(part, "doi_a")
    else:
        part.write_bytes(part.read_bytes()[:100])
    assert main(["export", "--out", str(out), "--recipe", "openmsd-dc"]) == 2
    err = capsys.readouterr().err
    assert str(part) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_tables_left_out_for_being_empty_are_warned_about(tmp_path, capsys):
    """A build whose test splits hold no related pair exported only its trainer tables and
    said '3 configs' and nothing else: the retrieval tasks the user asked for (IDT and ODT
    by default) were left out of the card, named only in export.json's `skipped_empty`. Now
    a warning names them (here the tiny build's ODT has no BC pair)."""
    out = str(tmp_path / "build")
    write_tiny_build(out)
    assert main(["export", "--out", out]) == 0
    err = capsys.readouterr().err
    assert "warning: export left out 3 configs that came out empty" in err, err
    assert ": odt-bc-corpus, odt-bc-queries, odt-bc-qrels (export.json: skipped_empty)" in err, err
