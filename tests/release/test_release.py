"""`release` -> `reconstruct` round trip on a demo build: the id-only release carries no
text, its checksums verify, and reconstruction from the same snapshots reproduces the same
documents (same sha256 per field) and reports recovery rates per split and field."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.cli import main
from openmsd_build.release.hashes import compare_shard, recovery_rates, release_ids, text_sha256
from openmsd_build.release.schema import RELEASE_IDS

pytestmark = pytest.mark.timeout(600)


def _table(folder) -> pa.Table:
    parts = sorted(folder.glob("*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in parts])


@pytest.fixture(scope="module")
def demo(tmp_path_factory, beam_args):
    root = tmp_path_factory.mktemp("release-demo")
    sample, build = root / "sample", root / "build"
    assert main(["sample", "--out", str(sample), "--papers", "200", "--seed", "5"]) == 0
    assert main(["run", "--inputs", str(sample), "--out", str(build), "--no-report", *beam_args]) == 0
    return sample, build


@pytest.fixture(scope="module")
def release(demo, beam_args):
    _, build = demo
    assert main(["release", str(build), *beam_args]) == 0
    return build / "release"


def test_release_is_id_only_with_checksums(demo, release):
    _, build = demo
    manifest = json.loads((release / "MANIFEST.json").read_text())
    assert manifest["format"] == "openmsd-release/1"
    assert manifest["openmsd_build_version"]
    assert set(manifest["stage_counts"]) >= {"papers", "text", "citations", "split", "pairs"}
    assert manifest["sources"]["metadata_files"][0]["bytes"] > 0
    assert manifest["sources"]["text_fetch"].startswith("warc:")
    # every file listed, with a correct sha256; SHA256SUMS agrees
    listed = {f["path"]: f for f in manifest["files"]}
    on_disk = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    assert on_disk - set(listed) == {"MANIFEST.json", "SHA256SUMS"}
    for path, entry in listed.items():
        data = (release / path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"], path
    sums = dict(reversed(line.split("  ", 1)) for line in (release / "SHA256SUMS").read_text().splitlines())
    assert {k: v for k, v in sums.items()} == {p: f["sha256"] for p, f in listed.items()}
    # ids: one row per document, split labels as in splits/, no text columns anywhere
    ids = pa.concat_tables([_table(d) for d in sorted((release / "ids").glob("split=*"))])
    assert ids.schema.equals(RELEASE_IDS)
    documents = _table(build / "documents")
    assert sorted(ids.column("doi").to_pylist()) == sorted(documents.column("doi").to_pylist())
    splits = dict(zip(*_table(build / "splits").select(["doi", "split"]).to_pydict().values(), strict=True))
    for row in ids.to_pylist():
        assert row["split"] == splits.get(row["doi"], "none")
    for path in listed:
        if path.endswith(".parquet"):
            names = set(pq.read_schema(release / path).names)
            assert not names & {"title", "abstract", "content"}, path
    # a release is published: it names no folder of the builder's machine (the fetch rows named
    # every archive by its absolute path, and a --fetch local: build every file's)
    root = str(build.parent)
    assert root not in (release / "MANIFEST.json").read_text()
    fetch = _table(release / "fetch")
    assert fetch.num_rows == _table(build / "fetch").num_rows
    assert not [v for v in fetch.column("warc_file").to_pylist() + fetch.column("url").to_pylist() if v and root in v]
    assert {w for w in fetch.column("warc_file").to_pylist() if w} <= {p.name for p in (demo[0] / "warc").iterdir()}
    # pairs are copied byte for byte
    for rel in ("dc", "cc", "bc"):
        for src in (build / "pairs" / rel).rglob("*.parquet"):
            assert (release / src.relative_to(build)).read_bytes() == src.read_bytes()


def test_reconstruct_reproduces_the_documents(demo, release, tmp_path, beam_args):
    sample, build = demo
    out = tmp_path / "rebuilt"
    code = main([
        "reconstruct", str(release), "--out", str(out),
        "--unpaywall", str(sample / "unpaywall" / "*.jsonl.gz"), "--crossref", str(sample / "crossref" / "*.json.gz"),
        "--fetch", f"warc:{sample / 'warc' / '*.warc.gz'}", *beam_args,
    ])
    assert code == 0
    recovery = json.loads((out / "reconstruct" / "recovery.json").read_text())
    rates = recovery["rates"]
    assert "train" in rates
    for split, fields in rates.items():
        for field, f in fields.items():
            assert f["recovered"] == f["expected"], (split, field, f)
    # the rebuilt documents are the built ones, row for row
    original = _table(build / "documents").sort_by("doi").to_pylist()
    rebuilt = _table(out / "documents").sort_by("doi").to_pylist()
    assert rebuilt == original
    assert recovery["restrict"]["release.no_paper_in_inputs"] == 0
    # every graph file of the release copied, and said so in the record
    listed = [f for f in json.loads((release / "MANIFEST.json").read_text())["files"]
              if f["path"].startswith(("citations/", "pairs/", "negatives/")) and f["path"].endswith(".parquet")]
    assert recovery["graph"]["files_copied"] == len(listed) > 0
    assert not any(k.startswith("files_refused.") for k in recovery["graph"])
    # a reconstruction is a usable build: the split labels and pairs are the built ones,
    # and export runs on it
    built_splits = _table(build / "splits").select(["doi", "paper_id", "split", "language"]).sort_by("doi")
    assert _table(out / "splits").select(["doi", "paper_id", "split", "language"]).sort_by("doi").equals(built_splits)
    assert _table(out / "pairs" / "cc" / "split=train").num_rows == _table(build / "pairs" / "cc" / "split=train").num_rows
    assert main(["export", "--out", str(out)]) == 0
    assert (out / "export" / "README.md").exists()


def test_reconstruct_reports_what_is_missing(demo, release, tmp_path, beam_args, capsys):
    """Without the WARC (metadata only: a folder of local files holding none of the papers')
    full content cannot come back: reported, not hidden, with the text step's own warnings
    (reconstruct printed none of them: here, a file named after no DOI)."""
    sample, _ = demo
    out = tmp_path / "meta-only"
    files = tmp_path / "my-files"
    files.mkdir()
    (files / "notes-for-later.html").write_text("<html><body><p>not a paper</p></body></html>")
    doi = pq.read_table(next(release.glob("ids/split=train/*.parquet")), columns=["doi"])["doi"][0].as_py()
    (files / f"{doi.replace('/', '_')}.html").write_text("<html><head><title>Its page</title></head></html>")
    capsys.readouterr()
    assert main([
        "reconstruct", str(release), "--out", str(out),
        "--unpaywall", str(sample / "unpaywall" / "*.jsonl.gz"), "--crossref", str(sample / "crossref" / "*.json.gz"),
        "--fetch", f"local:{files}", *beam_args,
    ]) == 0
    recovery = json.loads((out / "reconstruct" / "recovery.json").read_text())
    train = recovery["rates"]["train"]
    assert train["content"]["expected"] > 0 and train["content"]["recovered"] == 0
    assert train["content"]["missing"] + train["content"].get("different", 0) == train["content"]["expected"]
    mismatches = _table(out / "reconstruct" / "mismatches")
    assert set(mismatches.column("field").to_pylist()) >= {"content"}
    assert "warning: 1 file of the folder was rejected (local_file_named_for_no_paper 1)" in capsys.readouterr().err


def test_reconstruct_refuses_to_write_into_the_release(demo, release, beam_args, capsys):
    """`--out` the release folder (or a folder inside it) would have the stages clear the
    release's own citations/ and fetch/ before reading them: refused before anything runs."""
    sample, _ = demo

    def files() -> dict[str, str]:
        return {str(p.relative_to(release)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(release.rglob("*")) if p.is_file()}

    before = files()
    for out in (release, release / "rebuilt"):
        code = main(["reconstruct", str(release), "--out", str(out), "--unpaywall",
                     str(sample / "unpaywall" / "*.jsonl.gz"), "--fetch", "none", *beam_args])
        assert code == 2, out
        assert "is the release folder or inside it" in capsys.readouterr().err
    assert files() == before


def test_reconstruct_refuses_a_folder_that_holds_a_build(demo, release, beam_args, capsys, tmp_path):
    """Into the build the release was written from (its documents would be replaced by the
    release's fewer, its fetch/ removed), or into another build (the release's graph files
    would mix with that build's differently sharded ones): refused before anything runs."""
    sample, build = demo
    other = tmp_path / "other"
    (other / "citations").mkdir(parents=True)
    (other / "citations" / "part-00000-of-00005.parquet").write_bytes(b"an earlier build's")

    def state(folder) -> dict[str, int]:
        return {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}

    before = {out: state(out) for out in (build, other)}
    for out, said in ((build, "is inside --out"), (other, "already holds a build (citations/)")):
        code = main(["reconstruct", str(release), "--out", str(out), "--unpaywall",
                     str(sample / "unpaywall" / "*.jsonl.gz"), "--fetch", "none", *beam_args])
        assert code == 2, out
        assert said in capsys.readouterr().err
        assert state(out) == before[out]


def test_compare_shard_counts_each_outcome():
    docs = pa.Table.from_pylist([
        {"doi": "10.1/a", "title": "A", "abstract": "x", "content": None, "language": "en", "text_source": "meta"},
        {"doi": "10.1/b", "title": "B", "abstract": "y", "content": "z", "language": "de", "text_source": "pdf"},
        {"doi": "10.1/c", "title": "C", "abstract": None, "content": None, "language": "fr", "text_source": "meta"},
    ])
    expected = release_ids(docs, {"10.1/a": "train", "10.1/b": "train"})
    assert expected.column("split").to_pylist() == ["train", "train", "none"]
    assert expected.column("title_sha256")[0].as_py() == text_sha256("A")
    rebuilt = pa.Table.from_pylist([
        {"doi": "10.1/a", "title": "A", "abstract": "x", "content": None, "language": "en"},
        {"doi": "10.1/b", "title": "B", "abstract": "other", "content": None, "language": "de"},
        {"doi": "10.1/z", "title": "Z", "abstract": None, "content": None, "language": "en"},
    ])
    counts, mismatches = compare_shard(expected, rebuilt)
    rates = recovery_rates(counts)
    assert rates["train"]["title"]["rate"] == 1.0
    assert rates["train"]["abstract"] == {"expected": 2, "recovered": 1, "missing": 0, "different": 1,
                                          "unexpected": 0, "rate": 0.5}
    assert rates["train"]["content"]["missing"] == 1
    assert rates["train"]["document"]["recovered"] == 1
    assert rates["none"]["title"]["missing"] == 1  # 10.1/c was not rebuilt
    assert counts["rebuilt_not_in_release"] == 1
    assert {(m["doi"], m["field"], m["outcome"]) for m in mismatches} == {
        ("10.1/b", "abstract", "different"), ("10.1/b", "content", "missing"),
        ("10.1/c", "title", "no_document"), ("10.1/c", "language", "no_document"),
    }


def test_a_release_missing_ids_or_with_odd_counts(demo, release, tmp_path, beam_args, capsys):
    """An ids file removed with its manifest entry verified, and the recovery rates' denominator
    shrank without a word; `stage_counts` that are not counts went into `_stats/` and `report`
    crashed on them; a reconstruct that failed left folders that refused the next try."""
    import shutil

    sample, _ = demo
    inputs = ["--unpaywall", str(sample / "unpaywall" / "*.jsonl.gz"),
              "--crossref", str(sample / "crossref" / "*.json.gz")]

    def without(name: str, gone):
        """A copy of the release without the files `gone(path)` picks, nor their entries."""
        copy = tmp_path / name
        shutil.copytree(release, copy)
        manifest = json.loads((copy / "MANIFEST.json").read_text())
        for f in manifest["files"]:
            if gone(f["path"]):
                (copy / f["path"]).unlink()
        manifest["files"] = [f for f in manifest["files"] if not gone(f["path"])]
        (copy / "MANIFEST.json").write_text(json.dumps(manifest))
        return copy

    listed = json.loads((release / "MANIFEST.json").read_text())
    one = next(f["path"] for f in listed["files"] if f["path"].startswith("ids/split=train/")
               and pq.read_metadata(release / f["path"]).num_rows)
    assert listed["release_counts"]["ids.idt"] > 0
    # one file, or every file of a split (the split is still counted), removed with its entries
    for copy, said in ((without("cut", lambda p: p == one), "the ids of split train hold"),
                       (without("whole", lambda p: p.startswith("ids/split=idt/")), "the ids of split idt hold 0 rows")):
        assert main(["reconstruct", str(copy), "--out", str(tmp_path / f"o-{copy.name}"), *inputs, "--fetch", "none",
                     *beam_args]) == 2
        assert said in capsys.readouterr().err

    odd = tmp_path / "odd"
    shutil.copytree(release, odd)
    manifest = json.loads((odd / "MANIFEST.json").read_text())
    manifest["stage_counts"]["pairs"] = "garbage"
    manifest["stage_counts"]["split"] = {"x": [1, 2]}
    (odd / "MANIFEST.json").write_text(json.dumps(manifest))
    out = tmp_path / "o2"
    # a fetch that gives nothing fails the text step: what the run made is removed
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["reconstruct", str(odd), "--out", str(out), *inputs, "--fetch", f"local:{empty}",
                 *beam_args]) == 2
    assert "matched no file to any paper" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())
    assert main(["reconstruct", str(odd), "--out", str(out), *inputs, "--fetch", "none", *beam_args]) == 0
    assert not (out / "_stats" / "pairs.json").exists() and not (out / "_stats" / "split.json").exists()
    assert (out / "_stats" / "citations.json").exists()
    assert main(["report", str(out)]) == 0


def test_release_replaces_only_an_earlier_release(demo, release, tmp_path, beam_args, capsys):
    """`release --to DIR` deleted every file of DIR once it held any file named MANIFEST.json
    (a project folder's own manifest), and with the build inside DIR it deleted the build and
    then failed reading it. A manifest must be a release's, and only the files it lists go."""
    _, build = demo
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "MANIFEST.json").write_text("{}")
    (project / "notes.txt").write_text("mine")
    (project / "sub" / "data.parquet").write_text("mine")
    assert main(["release", str(build), "--to", str(project), *beam_args]) == 2
    assert "holds files but no release MANIFEST.json" in capsys.readouterr().err
    assert (project / "notes.txt").read_text() == "mine" and (project / "sub" / "data.parquet").exists()

    # an earlier release in DIR, plus a file of the user's: refused, nothing deleted
    again = tmp_path / "again"
    assert main(["release", str(build), "--to", str(again), *beam_args]) == 0
    listed = sorted(p for p in again.rglob("*") if p.is_file())
    (again / "notes.txt").write_text("mine")
    assert main(["release", str(build), "--to", str(again), *beam_args]) == 2
    assert "1 file(s) its earlier release does not list (notes.txt)" in capsys.readouterr().err
    assert sorted(p for p in again.rglob("*") if p.is_file()) == sorted([*listed, again / "notes.txt"])
    (again / "notes.txt").unlink()
    assert main(["release", str(build), "--to", str(again), *beam_args]) == 0  # its own release is replaced

    # the build inside the release folder
    assert main(["release", str(build), "--to", str(build.parent), *beam_args]) == 2
    assert "must not be the build's output root or hold it" in capsys.readouterr().err
    assert (build / "documents").is_dir() and list((build / "documents").glob("*.parquet"))

    # inside a stage's folder (its next run clears it, the release with it): refused, as
    # reconstructing into one is
    for folder in ("splits", "rejects"):
        assert main(["release", str(build), "--to", str(build / folder / "rel"), *beam_args]) == 2
        assert f"is inside {build / folder}, a stage's output folder" in capsys.readouterr().err
        assert not (build / folder / "rel").exists()
    assert main(["reconstruct", str(again), "--out", str(build / "papers" / "rec"), "--fetch", "none",
                 *beam_args]) == 2
    assert f"is inside {build / 'papers'}, a stage's output folder of another build" in capsys.readouterr().err


_CTRL_C_AS_THE_RELEASE_IS_CHECKSUMMED = r"""
import os
import signal
import sys
import time

from openmsd_build.release import command


def checksums(*_args, **_kwargs):
    os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C once the ids are written and the tables copied
    time.sleep(1)


command._checksums = checksums
from openmsd_build import cli

sys.exit(cli.main(sys.argv[1:]))
"""


def test_an_interrupted_release_keeps_the_earlier_one_and_the_next_run_replaces_it(demo, tmp_path, beam_args):
    """`release` deleted the earlier release in its folder first and wrote the new one in
    place: a Ctrl-C (or any failure) before the manifest left no release, "the previous outputs
    are intact" was untrue, and the files it had written, without a manifest, made every next
    run refuse the folder ("holds files but no release MANIFEST.json"). It is written whole
    aside and then swapped in."""
    import subprocess
    import sys

    _, build = demo
    folder = tmp_path / "rel"
    assert main(["release", str(build), "--to", str(folder), *beam_args]) == 0
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    done = subprocess.run([sys.executable, "-c", _CTRL_C_AS_THE_RELEASE_IS_CHECKSUMMED, "release", str(build),
                           "--to", str(folder), *beam_args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 130, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert main(["release", str(build), "--to", str(folder), *beam_args]) == 0
    assert not list(folder.glob(".*"))  # nothing of the interrupted run, nor of the swap


def test_a_release_with_no_document_in_a_split_says_so(demo, tmp_path, beam_args, capsys):
    """A build whose split stage linked no paper (splits/ empty) was released with exit 0 and
    not a word, while `export` refuses the same build."""
    import shutil

    from openmsd_build.schemas import SPLITS

    _, build = demo
    copy = tmp_path / "build"
    shutil.copytree(build, copy, ignore=shutil.ignore_patterns("release"))
    for part in (copy / "splits").glob("*.parquet"):
        pq.write_table(SPLITS.empty_table(), part)
    capsys.readouterr()
    assert main(["release", str(copy), "--to", str(tmp_path / "rel"), *beam_args]) == 0
    err = capsys.readouterr().err
    assert "is in train, idt or odt (the split stage linked no paper)" in err


def test_local_files_and_specs_are_published_by_their_names(tmp_path):
    """A `--fetch local:` build's fetch rows hold each file's `file://` URL and path, and its
    config the folder and manifest: published as names, never the builder's folders."""
    from openmsd_build.core import parquet_io
    from openmsd_build.release.command import _public_config, _public_fetch_part, _public_spec
    from openmsd_build.schemas import FETCH

    assert _public_spec("local:/home/me/My Papers/@/home/me/m.csv") == "local:My Papers@m.csv"
    assert _public_spec("warc:/data/a/*.warc.gz,gs://b/c/*.warc.gz") == "warc:*.warc.gz,gs://b/c/*.warc.gz"
    assert _public_spec("file:///home/me/a.warc.gz") == "a.warc.gz"
    assert _public_config({"fetch": "local:/x/y", "n": 3, "globs": ["/x/z.json.gz", "gs://b/k"]}) == {
        "fetch": "local:y", "n": 3, "globs": ["z.json.gz", "gs://b/k"]}
    row = {name: None for name in FETCH.names}
    rows = [{**row, "url": "file:///home/me/My%20Papers/10.1_x.pdf", "doi": "10.1/x",
             "warc_file": "/home/me/My Papers/10.1_x.pdf"},
            {**row, "url": "https://example.org/y", "doi": "10.1/y", "warc_file": "gs://bucket/crawl/y.warc.gz"}]
    src, dst = tmp_path / "src.parquet", tmp_path / "dst.parquet"
    parquet_io.write_table(parquet_io.table_from_rows(rows, FETCH), str(src))
    assert _public_fetch_part(str(src), str(dst))
    got = [(r["url"], r["warc_file"]) for r in pq.read_table(dst).to_pylist()]
    assert got == [("file:10.1_x.pdf", "10.1_x.pdf"), ("https://example.org/y", "gs://bucket/crawl/y.warc.gz")]
    remote = tmp_path / "remote.parquet"
    parquet_io.write_table(parquet_io.table_from_rows(rows[1:], FETCH), str(remote))
    assert not _public_fetch_part(str(remote), str(tmp_path / "none.parquet"))  # copied as it is


def test_reconstruct_from_snapshots_of_other_papers_says_why_nothing_came_back(demo, release, beam_args, capsys,
                                                                              tmp_path, real_samples):
    """Snapshots that hold none of the release's papers rebuilt nothing: 0/N for every field,
    exit 0 and no word of why (the cause sat in recovery.json's restrict counts)."""
    crossref = real_samples / "crossref" / "cassette_works_all.public_data_file_style.json.gz"
    assert main(["reconstruct", str(release), "--out", str(tmp_path / "wrong"), "--crossref", str(crossref),
                 "--fetch", "none", *beam_args]) == 0
    err = capsys.readouterr().err
    assert "warning: none of the release's " in err and "are these the snapshots the release was built from?" in err


def test_recovery_warnings_name_missing_papers_and_an_unfetched_text():
    from openmsd_build.release.reconstruct import recovery_warnings

    rates = {"train": {"content": {"recovered": 0, "expected": 40, "rate": 0.0}}}
    some = {"restrict": {"release.dois": 50, "release.no_paper_in_inputs": 10, "papers.read": 45}, "fetch": "none",
            "rates": rates}
    lines = recovery_warnings(some)
    assert lines[0].startswith("10 of the release's 50 papers are not in the given snapshots")
    assert lines[1].startswith("no content recovered: --fetch none")
    assert recovery_warnings({**some, "fetch": "http"}) == lines[:1]
    whole = {"restrict": {"release.dois": 50, "release.no_paper_in_inputs": 0}, "fetch": "http", "rates": rates}
    assert recovery_warnings(whole) == []
