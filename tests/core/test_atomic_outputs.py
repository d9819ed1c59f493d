"""A stage's outputs are replaced atomically (core.staging): a run that crashes, is given a
bad `--runner` or is interrupted leaves the previous outputs byte for byte; a good run
replaces them whole (stale files included) and leaves no `OUT/_tmp/` behind."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from openmsd_build.core import layout, parquet_io, staging
from openmsd_build.core.stats import read_stage_counts
from openmsd_build.papers.command import run_papers


def _inputs(tmp_path: Path, n: int, bad_line: bool) -> dict[str, list[str]]:
    """Unpaywall + Crossref inputs with `n` DOIs (and one reject when `bad_line`)."""
    folder = tmp_path / f"in-{n}-{int(bad_line)}"
    folder.mkdir()
    lines = [json.dumps({"doi": f"10.1000/p{i}", "title": f"Paper {i}", "is_oa": True}) for i in range(n)]
    if bad_line:
        lines.append('{"doi": "10.1000/broken", ')
    (folder / "u.jsonl.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    items = [{"DOI": f"10.1000/p{i}", "title": [f"Paper {i}"], "abstract": f"<p>Abstract {i}.</p>"} for i in range(n)]
    (folder / "c.json").write_text(json.dumps({"items": items}))
    return {"unpaywall": [str(folder / "u.jsonl.gz")], "crossref": [str(folder / "c.json")]}


def _snapshot(out: Path) -> dict[str, bytes]:
    """Every file under OUT, by relative path, with its bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture()
def built(tmp_path: Path, beam_args: list[str]) -> tuple[Path, dict[str, bytes]]:
    """A papers stage that ran once (with a reject), and the snapshot of its outputs."""
    out = tmp_path / "out"
    run_papers(str(out), _inputs(tmp_path, 6, bad_line=True), beam_args, shards=2)
    snap = _snapshot(out)
    assert any(k.startswith("papers/") for k in snap) and "_stats/papers.json" in snap
    assert any(k.startswith("rejects/papers/") for k in snap)
    return out, snap


def test_crash_mid_stage_leaves_previous_outputs_byte_identical(tmp_path, built, beam_args, monkeypatch):
    out, before = built
    real_write = parquet_io.write_table
    written: list[str] = []

    def write_then_crash(table, path):  # the second part file is written, then the worker "dies"
        n = real_write(table, path)
        written.append(path)
        if "part-00001" in path and "/papers/" in path:
            raise OSError("injected crash after a part file was written")
        return n

    monkeypatch.setattr(parquet_io, "write_table", write_then_crash)
    with pytest.raises(Exception, match="injected crash"):
        run_papers(str(out), _inputs(tmp_path, 9, bad_line=False), beam_args, shards=3)
    assert any("_tmp" in p for p in written)  # the crash did write, but only under _tmp/
    assert _snapshot(out) == before
    assert not (out / staging.TMP_DIR).exists()


def test_bad_runner_leaves_previous_outputs_intact(tmp_path, built):
    out, before = built
    with pytest.raises(Exception, match="NoSuchRunner"):
        run_papers(str(out), _inputs(tmp_path, 9, bad_line=False), ["--runner=NoSuchRunner"], shards=3)
    assert _snapshot(out) == before
    assert not (out / staging.TMP_DIR).exists()


def test_successful_rerun_replaces_outputs_and_drops_stale_ones(tmp_path, built, beam_args):
    out, before = built
    counts = run_papers(str(out), _inputs(tmp_path, 9, bad_line=False), beam_args, shards=3)
    after = _snapshot(out)
    assert counts["written"] == 9 == read_stage_counts(str(out), "papers")["written"]
    assert sorted(k for k in after if k.startswith("papers/")) == [
        f"papers/part-0000{i}-of-00003.parquet" for i in range(3)
    ]
    # the earlier run's reject is gone with its folder (this run had none): nothing stale
    assert parquet_io.read_table(layout.rejects_dir(str(out), "papers")).num_rows == 0
    assert after["_stats/papers.json"] != before["_stats/papers.json"]
    assert parquet_io.read_table(layout.papers_dir(str(out))).num_rows == 9
    assert not (out / staging.TMP_DIR).exists()


def test_stage_outputs_failure_and_interrupt_keep_outputs(tmp_path):
    out = tmp_path / "out"
    (out / "citations").mkdir(parents=True)
    (out / "citations" / "part-00000-of-00001.parquet").write_bytes(b"old")
    (out / "_stats").mkdir()
    (out / "_stats" / "citations.json").write_text("{}")  # an earlier run's: a build
    before = _snapshot(out)
    with pytest.raises(ValueError), staging.stage_outputs(str(out), "citations") as dest:
        Path(dest, "citations").mkdir()
        Path(dest, "citations", "part-00000-of-00001.parquet").write_bytes(b"half")
        raise ValueError("boom")
    assert _snapshot(out) == before and not (out / staging.TMP_DIR).exists()
    # Beam hands a KeyboardInterrupt from a DoFn back as a RuntimeError: it is an interrupt again
    with pytest.raises(KeyboardInterrupt), staging.stage_outputs(str(out), "citations"):
        raise RuntimeError("KeyboardInterrupt [while running 'Fetch/ParDo(FetchAndExtract)']")
    assert _snapshot(out) == before and not (out / staging.TMP_DIR).exists()


def test_leftovers_of_a_killed_run_are_cleaned_and_a_killed_swap_is_undone(tmp_path):
    out = tmp_path / "out"
    dead = out / staging.TMP_DIR / "split-999999999-1"  # no such pid: the run was killed
    (dead / "splits").mkdir(parents=True)
    (dead / "splits" / "part-00000-of-00001.parquet").write_bytes(b"never finished")
    (dead / staging.OLD_DIR / "splits").mkdir(parents=True)  # killed after moving the old aside
    (dead / staging.OLD_DIR / "splits" / "part-00000-of-00001.parquet").write_bytes(b"previous good")
    alive = out / staging.TMP_DIR / f"split-{os.getpid()}-1"  # a live run's root is left alone
    alive.mkdir()
    with staging.stage_outputs(str(out), "split") as dest:
        assert (out / "splits" / "part-00000-of-00001.parquet").read_bytes() == b"previous good"
        assert not dead.exists() and alive.exists()
        Path(dest, "splits").mkdir()
        Path(dest, "splits", "part-00000-of-00001.parquet").write_bytes(b"new")
    assert (out / "splits" / "part-00000-of-00001.parquet").read_bytes() == b"new"
    alive.rmdir()


def test_stats_rewritten_after_a_stage_survive_a_write_cut_short(tmp_path, monkeypatch):
    """`update_stage_stats` rewrites `_stats/<stage>.json` several times after a stage ran
    (inputs, warnings, resources, built_from), and every later command refuses a damaged one.
    A write cut short (here: the disk fills after 10 bytes) must leave the previous file whole
    and no temporary beside it; writing in place left 10 bytes of JSON."""
    from apache_beam.io.filesystems import FileSystems

    from openmsd_build.core.stats import read_stats, update_stage_stats

    out = tmp_path / "out"
    path = Path(layout.stats_path(str(out), "papers"))
    path.parent.mkdir(parents=True)
    before = json.dumps({"counts": {"papers.read": 3}}).encode()
    path.write_bytes(before)
    create = FileSystems.create

    class _Full:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            self.f.write(data[:10])
            raise OSError(28, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(FileSystems, "create", lambda p, *a, **k: _Full(create(p, *a, **k)))
    with pytest.raises(OSError, match="No space"):
        update_stage_stats(str(out), "papers", {"warnings": ["x" * 100]})
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["papers.json"]
    monkeypatch.undo()
    assert update_stage_stats(str(out), "papers", {"warnings": ["w"]})
    assert read_stats(str(path)) == {"counts": {"papers.read": 3}, "warnings": ["w"]}


def test_a_swap_of_entries_killed_half_way_is_finished_with_its_own_entries(tmp_path: Path) -> None:
    """`replace_entries` records which entries it replaces and which are new; a run killed
    inside the swap is finished from that record, also for an entry the new set drops and for
    one below a folder (`pools/idt`), whatever entries the next run names."""
    dest, partial = tmp_path / "results", tmp_path / "results" / ".partial"
    for rel, text in {"idt.json": "old idt", "pools/idt/a": "old pool", "benchmark/idt/b": "old bench",
                      "odt.json": "old odt"}.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    for rel, text in {"idt.json": "new idt", "pools/idt/a": "new pool"}.items():
        (partial / rel).parent.mkdir(parents=True, exist_ok=True)
        (partial / rel).write_text(text)
    entries = ["idt.json", "pools/idt", "benchmark/idt"]
    (partial / staging.SWAP_LIST).write_text(json.dumps({"entries": entries, "new": ["idt.json", "pools/idt"]}))
    staging.move_path(str(dest / "idt.json"), str(partial / staging.OLD_DIR / "idt.json"))  # killed here
    staging.move_path(str(partial / "idt.json"), str(dest / "idt.json"))
    staging.recover_entries(str(dest), str(partial))
    assert (dest / "idt.json").read_text() == "new idt" and (dest / "pools/idt/a").read_text() == "new pool"
    assert not (dest / "benchmark" / "idt").exists()  # dropped by the new set, as the swap does
    assert (dest / "odt.json").read_text() == "old odt" and not partial.exists()


def test_a_set_written_aside_is_not_swapped_in_after_a_ctrl_c_caught_on_the_way(tmp_path):
    """`write_then_replace` (export, release, evaluate-pools): a Ctrl-C that something caught
    while the new set was written (Beam logs one from a DoFn's teardown) leaves the earlier set
    whole and the partial folder gone; without one, the new set replaces the earlier."""
    from openmsd_build.core import interrupts, staging

    dest, partial = tmp_path / "dest", tmp_path / "dest" / ".partial"
    (dest / "table").mkdir(parents=True)
    (dest / "table" / "part.parquet").write_text("old")

    def write(caught: bool) -> str:
        (partial / "table").mkdir(parents=True)
        (partial / "table" / "part.parquet").write_text("new")
        if caught:  # as `interrupts.remembered` counts a SIGINT whose KeyboardInterrupt was swallowed
            interrupts._count += 1
        return "written"

    with pytest.raises(KeyboardInterrupt):
        staging.write_then_replace(str(dest), str(partial), ["table"], lambda: write(True))
    assert (dest / "table" / "part.parquet").read_text() == "old" and not partial.exists()
    assert staging.write_then_replace(str(dest), str(partial), ["table"], lambda: write(False)) == "written"
    assert (dest / "table" / "part.parquet").read_text() == "new" and not partial.exists()
