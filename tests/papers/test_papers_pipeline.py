"""The papers stage end to end on the in-process runner, with bad input on purpose."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from openmsd_build.core import layout, parquet_io
from openmsd_build.core.errors import UserError
from openmsd_build.papers.command import run_papers
from openmsd_build.schemas import PAPERS, REJECTS


def _unpaywall(doi: str, title: str = "A title", pdf: str | None = None) -> dict:
    loc = {"url": pdf or f"https://repo.example.org/{doi}", "url_for_pdf": pdf, "is_best": True,
           "url_for_landing_page": f"https://repo.example.org/{doi}", "host_type": "repository",
           "license": "cc-by", "version": "publishedVersion"}
    return {"doi": doi, "title": title, "year": 2020, "genre": "journal-article", "is_oa": True,
            "journal_name": "J", "publisher": "P", "best_oa_location": loc, "oa_locations": [loc]}


def _crossref(doi: str, abstract: str | None = None, title: str = "Crossref title") -> dict:
    item = {"DOI": doi, "title": [title], "type": "journal-article", "issued": {"date-parts": [[2019, 5]]},
            "subject": ["Oncology"], "container-title": ["Journal"], "publisher": "P"}
    if abstract:
        item["abstract"] = abstract
    return item


@pytest.fixture()
def bad_inputs(tmp_path: Path) -> dict[str, list[str]]:
    up = tmp_path / "unpaywall"
    up.mkdir()
    good_lines = [json.dumps(_unpaywall(f"10.1000/u{i}")) for i in range(5)]
    lines = good_lines + [
        '{"doi": "10.1000/broken", "title": ',  # invalid JSON
        json.dumps({"title": "no doi here"}),  # no DOI
        json.dumps({"doi": "not-a-doi"}),  # malformed DOI
        json.dumps(_unpaywall("10.1000/U0", title="duplicate of u0 in other case")),  # duplicate
        "",  # blank line: skipped, not a record
        "[1, 2, 3]",  # not an object
    ]
    data = ("\n".join(lines) + "\n").encode() + b'{"doi": "10.1000/latin1", "title": "caf\xe9"}\n'
    (up / "part1.jsonl.gz").write_bytes(gzip.compress(data, mtime=0))
    # a truncated gzip: the first records are kept, the cut is one reject
    full = gzip.compress(("\n".join(json.dumps(_unpaywall(f"10.1000/t{i}")) for i in range(200)) + "\n").encode(), mtime=0)
    (up / "part2.jsonl.gz").write_bytes(full[: len(full) // 2])
    (up / "empty.jsonl").write_bytes(b"")

    cr = tmp_path / "crossref"
    cr.mkdir()
    items = [
        _crossref("10.1000/U1", "<jats:title>Abstract</jats:title><jats:p>Alpha <jats:italic>beta</jats:italic> gamma delta epsilon.</jats:p>"),
        _crossref("10.1000/c-only"),
        {"title": ["no DOI"]},
    ]
    (cr / "0.json.gz").write_bytes(gzip.compress(json.dumps({"items": items}).encode(), mtime=0))
    (cr / "1.json.gz").write_bytes(gzip.compress(b"", mtime=0))  # empty file
    (cr / "2.json").write_text(json.dumps({"status": "ok", "message": _crossref("https://doi.org/10.1000/u2")}))
    return {"unpaywall": [str(up / "*")], "crossref": [str(cr / "*")]}


def test_bad_input_is_rejected_with_reasons_and_counts_reconcile(tmp_path, bad_inputs, beam_args):
    out = str(tmp_path / "out")
    counts = run_papers(out, {"unpaywall": bad_inputs["unpaywall"], "crossref": bad_inputs["crossref"]}, beam_args, shards=3)
    papers = parquet_io.read_table(layout.papers_dir(out), schema=PAPERS)
    rejects = parquet_io.read_table(layout.rejects_dir(out, "papers"), schema=REJECTS)
    assert papers.schema.equals(PAPERS)
    reasons = sorted(rejects.column("reason").to_pylist())
    assert reasons == sorted(
        ["invalid_json", "no_doi", "doi_malformed", "not_an_object", "invalid_utf8", "truncated_gzip", "no_doi"]
    )
    read = sum(v for k, v in counts.items() if k.startswith("read."))
    rejected = sum(v for k, v in counts.items() if k.startswith("rejected."))
    assert rejected == rejects.num_rows
    assert read == papers.num_rows + rejected + counts["merged_records"]
    assert counts["merged_duplicates.unpaywall"] == 1
    dois = papers.column("doi").to_pylist()
    assert dois == sorted(dois) or len(parquet_io.list_parts(layout.papers_dir(out))) > 1
    assert len(dois) == len(set(dois))
    rows = {r["doi"]: r for r in papers.to_pylist()}
    assert rows["10.1000/u1"]["abstract"] == "Alpha beta gamma delta epsilon."
    assert rows["10.1000/u1"]["sources"] == ["crossref", "unpaywall"]
    assert rows["10.1000/u1"]["title"] == "Crossref title"
    assert rows["10.1000/u0"]["n_records"] == 2
    assert rows["10.1000/c-only"]["sources"] == ["crossref"]
    assert rows["10.1000/u2"]["sources"] == ["crossref", "unpaywall"]  # REST single-work export
    assert 0 < sum(d.startswith("10.1000/t") for d in dois) < 200  # the readable part of the cut file
    assert counts["joined.crossref+unpaywall"] == 2


def test_same_inputs_give_byte_identical_outputs(tmp_path, bad_inputs, beam_args):
    digests = []
    for run in ("a", "b"):
        out = tmp_path / run
        run_papers(str(out), {"unpaywall": bad_inputs["unpaywall"], "crossref": bad_inputs["crossref"]}, beam_args, shards=3)
        files = sorted((out / "papers").glob("*.parquet"))
        digests.append({f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files})
    assert digests[0] == digests[1]
    assert len(digests[0]) == 3


def test_zstd_and_explicit_schema(tmp_path, bad_inputs, beam_args):
    out = tmp_path / "out"
    run_papers(str(out), {"unpaywall": bad_inputs["unpaywall"], "crossref": bad_inputs["crossref"]}, beam_args, shards=2)
    meta = pq.ParquetFile(sorted((out / "papers").glob("*.parquet"))[0]).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"


def test_glob_matching_nothing_is_a_clear_error(tmp_path, beam_args):
    with pytest.raises(UserError, match="matches no file"):
        run_papers(str(tmp_path / "o"), {"unpaywall": [str(tmp_path / "nope/*.gz")], "crossref": []}, beam_args)


def test_line_chunks_parsed_after_a_shuffle_give_the_same_papers(tmp_path, bad_inputs, beam_args):
    """A JSON Lines file cut into raw line chunks (parsed by any worker after a reshuffle, as
    a huge Unpaywall snapshot is) gives byte-identical papers, rejects and counts to the file
    parsed in place. Small chunks, so the sample spans several."""
    import json

    from openmsd_build.papers import join

    whole, chunked = tmp_path / "whole", tmp_path / "chunked"
    run_papers(str(whole), {"unpaywall": bad_inputs["unpaywall"], "crossref": bad_inputs["crossref"]}, beam_args,
               shards=2)
    old = join.LINE_CHUNK
    join.LINE_CHUNK = 2  # the in-process runner runs the DoFns here: module state applies
    try:
        run_papers(str(chunked), {"unpaywall": bad_inputs["unpaywall"], "crossref": bad_inputs["crossref"]},
                   beam_args, shards=2, split_over=0)
    finally:
        join.LINE_CHUNK = old
    for part in sorted((whole / "papers").glob("*.parquet")):
        assert part.read_bytes() == (chunked / "papers" / part.name).read_bytes()
    counts = [json.loads((d / "_stats" / "papers.json").read_text())["counts"] for d in (whole, chunked)]
    assert counts[0] == counts[1] and counts[0]["read.unpaywall"] > 2
    rejects = [pq.read_table(d / "rejects" / "papers").sort_by("key").to_pylist() for d in (whole, chunked)]
    assert rejects[0] == rejects[1]


def test_line_chunks_pack_and_unpack_without_pickle() -> None:
    """A chunk of raw lines (and of lines that failed to read) survives packing unchanged; the
    packed form is Arrow IPC, so unpacking never runs code from the data."""
    import pyarrow as pa

    from openmsd_build.papers.join import pack_chunk, unpack_chunk

    chunk = [("a.jsonl.gz:1", b'{"doi": "10.1/x"}', None, None, None),
             ("a.jsonl.gz:2", None, "line_too_long", "17000000 bytes", b"{" * 100),
             ("a.jsonl.gz:3", "ü".encode() * 1000, None, None, None)]
    packed = pack_chunk(chunk)
    assert unpack_chunk(packed) == chunk and unpack_chunk(pack_chunk([])) == []
    assert pa.ipc.open_stream(packed).schema.names == ["origin", "line", "reason", "detail", "raw"]
    assert len(packed) < len(b"".join(c[1] or b"" for c in chunk))  # LZ4 buffers


@pytest.mark.parametrize("split_over", [256 << 20, 0])
def test_parsing_in_a_pool_of_processes_gives_the_same_outputs(tmp_path, bad_inputs, beam_args, split_over):
    """`--parse-workers 2` (files and line chunks parsed by two local processes, batches
    spilled to files, shards merged and encoded by two processes) writes the same papers files
    byte for byte, the same rejects and counts as parsing and merging in the worker."""
    import json

    from openmsd_build.core import ordered_pool
    from openmsd_build.papers import parallel

    handed: list = []
    merge = parallel.PooledMerger.merge

    def recording_merge(self, shard, batches):
        batches = list(batches)
        handed.extend(batches)
        return merge(self, shard, batches)

    children: list = []
    new_child = ordered_pool._Child.__init__

    def counting_child(self, *args):
        new_child(self, *args)
        children.append(self.process)

    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        with pytest.MonkeyPatch.context() as mp:  # the in-process runner runs the DoFns here
            mp.setattr(parallel.PooledMerger, "merge", recording_merge)
            mp.setattr(ordered_pool._Child, "__init__", counting_child)
            run_papers(str(out), {"unpaywall": bad_inputs["unpaywall"], "crossref": bad_inputs["crossref"]},
                       beam_args, shards=2, split_over=split_over, parse_workers=workers)
        outs[workers] = out
    # two processes parsed (files, then line chunks) and merged, and were stopped at the end
    assert len(children) == 2 and all(c.poll() is not None for c in children) and not parallel._IDLE.held()
    # with the pool, only paths of spilled batches (under the run's temporary root) reached the merge
    spilled = [b for b in handed if b != []]
    assert spilled and all(isinstance(b, str) and str(outs[2] / "_tmp") in b for b in spilled)
    assert not (outs[2] / "_tmp").exists()  # gone with the temporary root
    names = [sorted(p.name for p in (d / "papers").glob("*.parquet")) for d in outs.values()]
    assert names[0] == names[1] and len(names[0]) == 2
    for name in names[0]:
        assert (outs[1] / "papers" / name).read_bytes() == (outs[2] / "papers" / name).read_bytes()
    counts = [json.loads((d / "_stats" / "papers.json").read_text())["counts"] for d in outs.values()]
    assert counts[0] == counts[1] and counts[0]["read.unpaywall"] > 2 and counts[0]["files.unpaywall"] == 3
    rejects = [pq.read_table(d / "rejects" / "papers").sort_by("key").to_pylist() for d in outs.values()]
    assert rejects[0] == rejects[1] and len(rejects[0]) >= 5


def test_the_console_line_adds_up() -> None:
    """Records read = rejected + merged into another record + written, as the line says."""
    from openmsd_build.papers.command import summary_line

    counts = {"read.unpaywall": 10, "read.crossref": 8, "rejected.crossref.bad_doi": 1, "merged_records": 9,
              "merged_duplicates.unpaywall": 2, "written": 8, "with_abstract": 5, "joined.crossref+unpaywall": 6}
    line = summary_line(counts)
    assert "rejected 1, merged into another record 9 (2 duplicates within a source), written 8" in line
