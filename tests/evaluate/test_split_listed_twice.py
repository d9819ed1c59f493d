"""A paper `splits/` lists in two splits is in no split's pool (evaluate, evaluate-pools and
export read `splits/` through `core.split_rows`, as pairs and contexts do): it was in both,
a distractor in a pool it does not belong to."""

from __future__ import annotations

import pyarrow as pa

from openmsd_build.core import layout, parquet_io
from openmsd_build.evaluate import tasks
from openmsd_build.evaluate.corpus import load_corpus
from openmsd_build.evaluate.testing import write_tiny_build
from openmsd_build.export.trainer import split_documents
from openmsd_build.schemas import tables


def test_a_paper_in_train_and_idt_is_in_neither_pool(tmp_path) -> None:
    out = str(tmp_path)
    write_tiny_build(out)
    splits = parquet_io.read_table(layout.splits_dir(out), schema=tables.SPLITS).to_pylist()
    first = next(r for r in splits if r["split"] == "train")
    extra = [{**first, "split": "idt"}]
    parquet_io.write_table(pa.Table.from_pylist(extra, schema=tables.SPLITS),
                           parquet_io.part_path(layout.splits_dir(out), 1, 2))
    assert len(parquet_io.list_parts(layout.splits_dir(out))) == 2
    doi = first["doi"]
    for split in ("train", "idt"):
        assert doi not in tasks.load_pool(out, split).dois, split
        assert doi not in load_corpus(out, split).dois, split
        assert doi not in split_documents(out, split)["doi"].to_list(), split
    idt = [r["doi"] for r in splits if r["split"] == "idt"]
    assert tasks.load_pool(out, "idt").dois == sorted(idt)
