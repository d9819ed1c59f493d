"""`release` follows the rule of every reader of `splits/` (`core.split_rows`): a paper the
folder lists more than once is in no split. It kept whichever row came last, so the paper was
released in train or IDT depending on the order of the files, while pairs, evaluate and export
held it in neither."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.evaluate.testing import write_tiny_build
from openmsd_build.schemas import tables


def test_a_paper_in_train_and_idt_is_released_in_no_split(tmp_path, beam_args, capsys) -> None:
    out = str(tmp_path / "build")
    write_tiny_build(out)
    splits = parquet_io.read_table(layout.splits_dir(out), schema=tables.SPLITS).to_pylist()
    first = next(r for r in splits if r["split"] == "train")
    parquet_io.write_table(pa.Table.from_pylist([{**first, "split": "idt"}], schema=tables.SPLITS),
                           parquet_io.part_path(layout.splits_dir(out), 1, 2))
    doi = first["doi"]
    capsys.readouterr()
    assert main(["release", out, "--to", str(tmp_path / "rel"), *beam_args]) == 0
    err = capsys.readouterr().err
    released = {}
    for part in sorted((tmp_path / "rel" / "ids").glob("split=*/*.parquet")):
        for row in pq.read_table(part, columns=["doi", "split"]).to_pylist():
            released.setdefault(row["doi"], []).append(row["split"])
    assert released[doi] == ["none"]
    others = {r["doi"]: r["split"] for r in splits if r["doi"] != doi}
    assert {d: s for d, s in released.items() if d != doi} == {d: [s] for d, s in others.items()}
    manifest = json.loads((tmp_path / "rel" / "MANIFEST.json").read_text())
    counts = manifest["release_counts"]
    assert counts["papers_split_ambiguous"] == 1
    assert counts["ids.train"] + counts["ids.idt"] + counts["ids.odt"] == len(others)
    assert manifest["split_ambiguous_examples"] == [doi]
    assert not [f for f in manifest["files"] if "tmp" in f["path"]]  # the examples' scratch file is gone
    warned = [line for line in err.splitlines() if "listed more than once" in line]
    assert len(warned) == 1 and "1 paper of splits/" in warned[0] and doi in warned[0], err


def test_a_document_without_a_doi_is_counted_not_a_traceback(tmp_path, beam_args, capsys) -> None:
    """A `documents/` row whose DOI is null (a hand edit) has no id to be released under: the
    shard's sort by DOI met None and the release stopped with a TypeError."""
    out = str(tmp_path / "build")
    write_tiny_build(out)
    documents = parquet_io.read_table(layout.documents_dir(out), schema=tables.DOCUMENTS)
    blank = documents.slice(0, 1).to_pylist()[0]
    parquet_io.write_table(pa.Table.from_pylist([{**blank, "doi": None}], schema=tables.DOCUMENTS),
                           parquet_io.part_path(layout.documents_dir(out), 1, 2))
    capsys.readouterr()
    assert main(["release", out, "--to", str(tmp_path / "rel"), *beam_args]) == 0
    counts = json.loads((tmp_path / "rel" / "MANIFEST.json").read_text())["release_counts"]
    assert counts["documents_without_doi"] == 1
    assert sum(counts[f"ids.{s}"] for s in ("train", "idt", "odt", "none")) == documents.num_rows
    assert "1 document of documents/ has no DOI" in capsys.readouterr().err
