"""Shards merged and encoded in the pool's processes (`parallel.PooledMerger`, the local
runner's `MergeAndWriteShard`), from batches sent whole or spilled to files, give the same
part files and counts as the merge in the Beam worker; a child's failure surfaces in the
parent with its cause."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pytest

from openmsd_build.core import parquet_io, spill
from openmsd_build.core.hashing import shard_of
from openmsd_build.core.ipc import from_ipc, to_ipc
from openmsd_build.core.ordered_pool import WorkerCrashed
from openmsd_build.core.runner import pipeline_options
from openmsd_build.papers import join, parallel
from openmsd_build.papers.beam import MergeAndWriteShard
from openmsd_build.papers.parallel import PooledMerger

SHARDS = 4


def _record(doi: str, source: str, origin: str, **fields) -> dict:
    url = {"url": f"https://x.org/{doi}", "kind": "pdf", "host_type": "repository", "license": None,
           "version": None, "source": source, "rank": 0}
    base = {"doi": doi, "source": source, "origin": origin, "title": None, "titles": [], "abstract": None,
            "venue": None, "publisher": None, "year": None, "type": None, "categories": [],
            "publisher_language": None, "license": None, "is_oa": None, "urls": [url], "relations": []}
    return {**base, **fields}


def _elements() -> list[tuple[int, list]]:
    """`(shard, [IPC batch, ...])` as GroupShards hands them to the merge: records of both
    sources, duplicates within one source, several batches per shard (shards 1 and 2), shard 0
    with only its seed (an empty list: written, empty) and shard 3 with only an empty batch
    (not written)."""
    records: dict[int, list[dict]] = {}
    for i in range(400):
        doi = f"10.1000/p{i % 150}"
        source = "crossref" if i % 3 else "unpaywall"
        extra = {"title": f"title {i}", "year": 2000 + i % 20} if i % 4 else {"abstract": f"abstract {i}"}
        records.setdefault(1 + shard_of(doi, 2), []).append(_record(doi, source, f"f{i % 7}:{i}", **extra))
    elements: list[tuple[int, list]] = [(0, [])]
    for shard, recs in sorted(records.items()):
        counts: Counter = Counter()
        batches = [to_ipc(join.projected_table(recs[k:k + 60], "crossref", counts)) for k in range(0, len(recs), 60)]
        elements.append((shard, batches))
    empty = to_ipc(join.projected_table([], "crossref", Counter()))
    elements.append((SHARDS - 1, [empty]))
    return elements


def _in_worker(out: Path, elements) -> tuple[dict[str, bytes], list[dict]]:
    """The reference: `join.merge_shard` + `parquet_io.write_table` in this process."""
    out.mkdir()
    counts = []
    for shard, batches in elements:
        table, c = join.merge_shard(batches)
        if table.num_rows or shard == 0:
            parquet_io.write_table(table, parquet_io.part_path(str(out), shard, SHARDS))
        counts.append(c)
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}, counts


def test_pooled_merger_gives_the_same_parquet_bytes_and_counts(tmp_path):
    elements = _elements()
    files, counts = _in_worker(tmp_path / "ref", elements)
    merger = PooledMerger(2)
    try:
        answers = [a for shard, batches in elements for a in merger.merge(shard, batches)]
        answers += list(merger.finish())
    finally:
        merger.close()
    assert [a[0] for a in answers] == [shard for shard, _ in elements]  # in the order handed out
    assert [a[2] for a in answers] == counts
    pooled = {Path(parquet_io.part_path("", shard, SHARDS)).name: data for shard, data, _ in answers if data is not None}
    assert pooled == files
    assert sorted(files) == [f"part-0000{k}-of-00004.parquet" for k in range(3)]  # not shard 3's
    assert sum(c.get("written", 0) for c in counts) == 150


def test_spilled_batches_merge_to_the_same_bytes_as_batches_sent_whole(tmp_path):
    """Batches a parsing child spilled (`core.spill.write_piece`: only paths go through the
    shuffle) give the pooled merge the same tables as the IPC bytes themselves."""
    elements = _elements()
    files, counts = _in_worker(tmp_path / "ref", elements)
    spilled = [(shard, [spill.write_piece(str(tmp_path / "spill"), "batch", shard, from_ipc(b)) for b in batches])
               for shard, batches in elements]
    assert all(Path(p).is_file() and p.endswith(".arrow") for _, paths in spilled for p in paths)
    assert spill.read_piece(spilled[1][1][0]).equals(from_ipc(elements[1][1][0]))
    merger = PooledMerger(2)
    try:
        answers = [a for shard, paths in spilled for a in merger.merge(shard, paths)] + list(merger.finish())
    finally:
        merger.close()
    assert [a[2] for a in answers] == counts
    assert {Path(parquet_io.part_path("", s, SHARDS)).name: d for s, d, _ in answers if d is not None} == files


def test_a_parsing_child_spills_batches_and_returns_their_paths(tmp_path):
    path = tmp_path / "u.jsonl"
    path.write_text("\n".join(json.dumps({"doi": f"10.1000/x{i}", "title": f"t{i}", "year": 2001}) for i in range(50)))
    sent = parallel.parse_lines_task("unpaywall", str(path), [(f"u:{i}", line.encode(), None, None, None)
                                     for i, line in enumerate(path.read_text().splitlines())], 3, 7)
    spilled = parallel.parse_lines_task("unpaywall", str(path), [(f"u:{i}", line.encode(), None, None, None)
                                        for i, line in enumerate(path.read_text().splitlines())], 3, 7,
                                        str(tmp_path / "spill"))
    assert [t for t, _ in sent] == [t for t, _ in spilled] and sum(t == "batch" for t, _ in sent) >= 3
    for (tag, a), (_, b) in zip(sent, spilled, strict=True):
        if tag == "batch":
            assert a[0] == b[0] and isinstance(b[1], str) and b[1].startswith(str(tmp_path / "spill" / "batch" / f"{a[0]:05d}"))
            assert spill.read_piece(b[1]).equals(from_ipc(a[1]))
        else:
            assert a == b


def _run_merge_dofn(out: Path, elements, workers: int) -> dict:
    out.mkdir()
    options = pipeline_options(["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"])
    with beam.Pipeline(options=options) as p:
        _ = (p | beam.Create(elements)
             | beam.ParDo(MergeAndWriteShard(str(out / "papers"), SHARDS, workers=workers))
             | beam.CombineGlobally(lambda cs: dict(sum((Counter(c) for c in cs), Counter())))
             | beam.Map(lambda c: (out / "counts.json").write_text(json.dumps(c, sort_keys=True))))
    return {"files": {p.name: p.read_bytes() for p in sorted((out / "papers").iterdir())},
            "counts": json.loads((out / "counts.json").read_text())}


def test_merge_dofn_in_the_pool_writes_the_same_parts_as_in_the_worker(tmp_path):
    elements = _elements()
    alone = _run_merge_dofn(tmp_path / "w1", elements, workers=1)
    pooled = _run_merge_dofn(tmp_path / "w2", elements, workers=2)
    assert pooled == alone
    assert len(alone["files"]) == 3 and alone["counts"]["written"] == 150


def test_a_failing_merge_in_a_child_raises_its_cause_naming_the_shard():
    merger = PooledMerger(2)
    try:
        list(merger.merge(2, [b"not an Arrow IPC stream"]))
        with pytest.raises(pa.ArrowInvalid) as caught:
            list(merger.finish())
        notes = "\n".join(getattr(caught.value, "__notes__", []))
        assert "merging shard 2" in notes
        assert "from_ipc" in notes  # the child's traceback: where it failed
        # the pool goes on after a failed piece of work
        answers = list(merger.merge(0, [])) + list(merger.finish())
        assert [(shard, data is not None, counts) for shard, data, counts in answers] == [(0, True, {})]
    finally:
        merger.close()


def test_a_dead_merge_child_is_a_worker_crash_naming_the_shard():
    merger = PooledMerger(1)
    try:
        child = merger.pool._children[0].process  # started by the merger
        child.kill()
        child.wait()
        with pytest.raises(WorkerCrashed, match=r"died while merging shard 3"):
            list(merger.merge(3, _elements()[1][1])) + list(merger.finish())
    finally:
        merger.close()


def _chain(exc: BaseException | None) -> str:
    """An exception's message and notes, and its causes' and contexts' (what a traceback shows:
    Beam re-raises a DoFn's exception as a new one of the same type, the original as context)."""
    text = []
    while exc is not None:
        text += [f"{type(exc).__name__}: {exc}", *getattr(exc, "__notes__", [])]
        exc = exc.__cause__ or exc.__context__
    return "\n".join(text)


def test_a_failing_merge_child_fails_the_pipeline_with_its_cause(tmp_path):
    with pytest.raises(Exception, match="Expected to read") as caught:  # Arrow's own message
        _run_merge_dofn(tmp_path / "bad", [(0, []), (1, [b"garbage"])], workers=2)
    chain = _chain(caught.value)
    assert "ArrowInvalid" in chain and "while merging shard 1" in chain and "from_ipc" in chain
