"""`evaluate` and `export` on enriched text: the switches read `OUT/enriched/`."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from openmsd_build.core import parquet_io
from openmsd_build.enrich import enriched_dir
from openmsd_build.evaluate import tasks
from openmsd_build.evaluate.testing import write_tiny_build
from openmsd_build.schemas import tables

SUMMARIES = {"10.1/c": "Protein folding with neural networks.", "10.1/g": "Neural networks for translation."}


def write_enriched(out: str) -> None:
    rows = [{"doi": d, "summary": s, "language": "xx", "summarizer": "chat", "n_tokens": 5, "max_tokens": 64}
            for d, s in SUMMARIES.items()]
    parquet_io.write_table(pa.Table.from_pylist(rows, schema=tables.ENRICHED),
                           parquet_io.part_path(enriched_dir(out), 0, 1))


def test_pool_text_enriched_and_missing_enrich_is_a_user_error(tmp_path):
    from openmsd_build.core.errors import UserError

    out = str(tmp_path)
    write_tiny_build(out)
    with pytest.raises(UserError, match="enrich"):
        tasks.load_pool(out, "idt", text="enriched")
    write_enriched(out)
    pool = tasks.load_pool(out, "idt", text="enriched")
    c = pool.index["10.1/c"]
    assert pool.text(c) == ("Title: Proteinfaltung mit neuronalen Netzen. Abstract: "
                            "(Protein folding with neural networks.) Wir falten Proteine mit neuronalen Netzen.")
    a = pool.index["10.1/a"]
    assert pool.text(a) == "Title: Deep learning for protein folding. Abstract: We fold proteins with neural networks."
    assert tasks.load_pool(out, "idt").text(c) == "Proteinfaltung mit neuronalen Netzen\nWir falten Proteine mit neuronalen Netzen."


def test_evaluate_compare_enriched_prints_both_and_export_text_enriched(tmp_path, capsys):
    from openmsd_build.cli import main

    out = str(tmp_path)
    write_tiny_build(out)
    write_enriched(out)
    assert main(["evaluate", "--out", out, "--baseline", "bm25", "--compare-enriched", "--split", "idt"]) == 0
    printed = capsys.readouterr().out
    assert "raw vs enriched" in printed and "en-xx" in printed and "ΔMAP" in printed
    raw = json.loads((tmp_path / "evaluation" / "bm25_idt.json").read_text())
    enr = json.loads((tmp_path / "evaluation" / "bm25_enriched_idt.json").read_text())
    assert raw["text"] == "raw" and enr["text"] == "enriched"
    # the German paper c gained English words shared with a: its DC xx-en query ranks a higher
    assert enr["relations"]["dc"]["xx-en"]["map"] >= raw["relations"]["dc"]["xx-en"]["map"]

    assert main(["export", "--out", out, "--text", "enriched", "--no-beir"]) == 0
    err = capsys.readouterr().err
    import pyarrow.parquet as pq

    # how many non-English papers have a summary is said and kept (it was nowhere)
    coverage = json.loads((tmp_path / "export" / "export.json").read_text())["retrieval"]["idt"]["enriched"]
    assert coverage == {"non_english": 3, "with_summary": 1}  # c (de) has one, d (zh) and f (ja) not
    assert "export --text enriched: idt: 2 of 3 non-English papers have no summary" in err

    corpus = pq.read_table(tmp_path / "export" / "retrieval" / "idt" / "corpus.parquet").to_pylist()
    c = next(r for r in corpus if r["_id"] == "10.1/c")
    assert c["text"] == "(Protein folding with neural networks.) Wir falten Proteine mit neuronalen Netzen."
    queries = pq.read_table(tmp_path / "export" / "retrieval" / "idt" / "dc" / "queries.parquet").to_pylist()
    assert next(q for q in queries if q["_id"] == "10.1/c")["text"].startswith("Title: Proteinfaltung")
    assert json.loads((tmp_path / "export" / "export.json").read_text())["text"] == "enriched"
    pairs = pq.read_table(tmp_path / "export" / "trainer" / "train" / "pairs_dc_or_cc.parquet").column("anchor")
    assert all(t.startswith("Title: ") for t in pairs.to_pylist())
