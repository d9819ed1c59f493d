"""A shard's context rows on the worker's local disk, in bounded pieces, read back in the
order the stage writes them (`citing_doi`, then `sentence_index`).

Why: a row holds a dict per marker, and the shard's rows were collected as one list before
one table was built: three 3.9M-character texts of sentences citing 50 references each held
4.9 GB. Here a document's rows become an Arrow batch (LZ4 on disk) every `BATCH_ROWS` rows or
`BATCH_MARKERS` markers, so a worker holds one such batch of rows, and the part file is
written from the disk in pieces of at most `CHUNK_ROWS` rows or `CHUNK_BYTES`.

The order is the one a stable sort of all rows by (`citing_doi`, `sentence_index`) gives: a
document's rows come in sentence order, so documents are taken by DOI; documents sharing a
DOI (in arrival order) have their rows merged by `sentence_index`, ties in arrival order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from openmsd_build.core import parquet_io
from openmsd_build.schemas import CONTEXTS

BATCH_ROWS = 1_000
BATCH_MARKERS = 20_000  # ~1 KB of Python objects a marker: ~20 MB of rows at most
CHUNK_ROWS = parquet_io.ROW_GROUP_SIZE
CHUNK_BYTES = 64 << 20
_OPTIONS = ipc.IpcWriteOptions(compression="lz4")


class ContextSpool:
    """Context rows written document by document to the Arrow file `path`, then read back
    sorted (`tables`). Use as a context manager, or `close` it."""

    def __init__(self, path: str):
        self.path = path
        self.rows = 0
        self._writer = ipc.new_file(path, CONTEXTS, options=_OPTIONS)
        self._batches = 0
        self._documents: list[tuple[str, list[int]]] = []  # (doi, its batch numbers), in arrival order

    def __enter__(self) -> ContextSpool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def add(self, doi: str, rows: Iterable[dict]) -> int:
        """Write one document's rows (in sentence order) as they come; how many there were."""
        batches: list[int] = []
        pending: list[dict] = []
        markers = written = 0
        for row in rows:
            pending.append(row)
            markers += row["n_markers"]
            written += 1
            if len(pending) >= BATCH_ROWS or markers >= BATCH_MARKERS:
                batches.append(self._write(pending))
                pending, markers = [], 0
        if pending:
            batches.append(self._write(pending))
        if batches:
            self._documents.append((doi, batches))
        self.rows += written
        return written

    def _write(self, rows: list[dict]) -> int:
        """One batch of rows to the file; its number."""
        assert self._writer is not None, "rows added to a closed spool"
        self._writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=CONTEXTS))
        self._batches += 1
        return self._batches - 1

    def tables(self) -> Iterator[pa.Table]:
        """Every row, sorted, in tables of at most `CHUNK_ROWS` rows (or about `CHUNK_BYTES`);
        none when there are no rows. Closes the spool for writing."""
        self.close()
        with pa.OSFile(self.path) as f:
            reader = ipc.open_file(f)
            chunk: list[pa.RecordBatch] = []
            rows = size = 0
            for batch in self._sorted_batches(reader):
                chunk.append(batch)
                rows += batch.num_rows
                size += batch.nbytes
                if rows >= CHUNK_ROWS or size >= CHUNK_BYTES:
                    yield pa.Table.from_batches(chunk, schema=CONTEXTS)
                    chunk, rows, size = [], 0, 0
            if chunk:
                yield pa.Table.from_batches(chunk, schema=CONTEXTS)

    def _sorted_batches(self, reader: ipc.RecordBatchFileReader) -> Iterator[pa.RecordBatch]:
        """The documents' batches by DOI (`sorted` compares DOIs as the one sort of all rows did)."""
        documents = sorted(self._documents, key=lambda document: document[0])
        for _, group in itertools.groupby(documents, key=lambda document: document[0]):
            sharing = [batches for _, batches in group]
            if len(sharing) == 1:
                yield from (reader.get_batch(number) for number in sharing[0])
            else:
                yield from _merged(reader, [number for batches in sharing for number in batches])


def _merged(reader: ipc.RecordBatchFileReader, numbers: list[int]) -> Iterator[pa.RecordBatch]:
    """Rows of several documents sharing a DOI (their batches in arrival order), merged by
    `sentence_index` in a stable sort, ties in arrival order, as the one sort of all rows did.
    Held together: a DOI given twice is rare (`documents/` has one row a paper)."""
    table = pa.Table.from_batches([reader.get_batch(number) for number in numbers], schema=CONTEXTS)
    yield from table.take(pc.sort_indices(table, [("sentence_index", "ascending")])).to_batches()
