"""The contexts stage's rows leave memory in bounded pieces (`contexts.spool`) and still come
out as one stable sort of all of them by (`citing_doi`, `sentence_index`)."""

from __future__ import annotations

import random
import tracemalloc
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.contexts import beam as contexts_beam
from openmsd_build.contexts import spool
from openmsd_build.contexts.extract import document_contexts, iter_document_contexts
from openmsd_build.core import parquet_io
from openmsd_build.schemas import CONTEXTS


def _row(doi: str, index: int, tag: str, markers: int = 1) -> dict:
    marker = {"start": 0, "end": 3, "text": "[1]", "style": "numeric", "number": 1, "cited_doi": "10.1/c"}
    return {"citing_doi": doi, "sentence_index": index, "sentence": f"{tag} [1].", "language": "en",
            "cited_dois": ["10.1/c"], "markers": [marker] * markers, "n_markers": markers, "n_resolved": markers}


@pytest.mark.parametrize("batch_rows, batch_markers, chunk_rows", [(2, 1_000, 3), (1_000, 3, 5), (1, 1, 1)])
def test_spooled_rows_come_back_as_one_stable_sort(tmp_path: Path, monkeypatch, batch_rows: int,
                                                   batch_markers: int, chunk_rows: int) -> None:
    monkeypatch.setattr(spool, "BATCH_ROWS", batch_rows)
    monkeypatch.setattr(spool, "BATCH_MARKERS", batch_markers)
    monkeypatch.setattr(spool, "CHUNK_ROWS", chunk_rows)
    rng = random.Random(3)
    documents = []
    for n in range(40):  # some DOIs twice: their rows merge by sentence index, ties in arrival order
        doi = f"10.1/d{rng.randrange(25):02d}"
        indices = sorted(rng.sample(range(12), rng.randrange(8)))
        documents.append([_row(doi, i, f"doc {n}", rng.randrange(1, 4)) for i in indices])
    with spool.ContextSpool(str(tmp_path / "rows.arrow")) as spooled:
        added = [spooled.add(rows[0]["citing_doi"] if rows else "10.1/none", iter(rows)) for rows in documents]
        tables = list(spooled.tables())
    everything = [row for rows in documents for row in rows]
    assert added == [len(rows) for rows in documents] and spooled.rows == len(everything)
    expected = pa.Table.from_pylist(sorted(everything, key=lambda r: (r["citing_doi"], r["sentence_index"])),
                                    schema=CONTEXTS)
    assert pa.concat_tables(tables).equals(expected)
    per_doi = Counter(row["citing_doi"] for row in everything)  # a DOI given twice is merged in one piece
    assert all(t.num_rows < chunk_rows + max(batch_rows, max(per_doi.values())) for t in tables)
    assert len(tables) > 1


def test_an_empty_spool_writes_an_empty_part_file(tmp_path: Path) -> None:
    with spool.ContextSpool(str(tmp_path / "rows.arrow")) as spooled:
        assert spooled.add("10.1/x", iter(())) == 0
        path = str(tmp_path / "part-00000-of-00001.parquet")
        assert parquet_io.write_tables(spooled.tables(), CONTEXTS, path) == 0
    table = pq.read_table(path)
    assert table.num_rows == 0 and table.schema.equals(CONTEXTS)


def _dense_text(sentences: int) -> tuple[str, list[dict]]:
    """Sentences each citing the 50 entries of the reference list: 50 markers a row."""
    sentence = "Shown [" + ",".join(str(i) for i in range(1, 51)) + "]. "
    references = [{"order": i, "key": f"k{i}", "doi": f"10.9/ref{i}", "author": None, "year": None,
                   "unstructured": None} for i in range(1, 51)]
    return sentence * sentences, references


def test_the_generator_gives_what_document_contexts_gives() -> None:
    text, references = _dense_text(30)
    text = "Intro without markers. " + text + "Smith et al. (2019) agreed [3]."
    counts_a, counts_b, pairs = Counter(), Counter(), Counter()
    rows, pairs_a = document_contexts("10.1/x", text, "en", references, counts_a)
    assert list(iter_document_contexts("10.1/x", text, "en", references, counts_b, pairs)) == rows
    assert pairs == pairs_a and counts_a == counts_b and len(rows) == 31


@pytest.mark.timeout(120)
def test_a_shard_holds_one_batch_of_rows_not_all_of_them(tmp_path: Path, monkeypatch) -> None:
    """1,000 rows of 50 markers were ~50 MB of Python dicts held until the shard's end (three
    3.9M-character texts: 4.9 GB); spooled every 100 rows, the peak of Python memory stays a
    fraction of that (33 MB before, 8 MB spooled), and the part file holds every row in order."""
    monkeypatch.setattr(spool, "BATCH_ROWS", 100)
    text, references = _dense_text(1_000)
    lists = pa.Table.from_pylist([{"doi": "10.9/doc", "references": references, "listed": 50}],
                                 schema=contexts_beam.REFERENCE_LISTS)
    values = [v for _, v in contexts_beam._keyed(lists, "doi", 1, contexts_beam.REFS)]
    docs = pa.table({"doi": ["10.9/doc"], "content": [text], "language": ["en"]})
    values += [v for _, v in contexts_beam._keyed(docs, "doi", 1, contexts_beam.DOCS)]
    tracemalloc.start()
    try:
        out = list(contexts_beam.ExtractContexts(str(tmp_path), 1).process((0, values)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak >> 20} MB of Python memory"
    table = pq.read_table(str(tmp_path / "contexts" / "part-00000-of-00001.parquet"))
    assert table.num_rows == 1_000 and table.column("sentence_index").to_pylist() == list(range(1_000))
    assert sum(table.column("n_markers").to_pylist()) == 50_000
    assert out
