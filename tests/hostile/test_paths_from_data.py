"""Paths that come from data stay in their folder, and a failed read never quotes a file:

- Common Crawl index rows: `warc_filename` confined to `--warc-prefix` (`..`, absolute,
  scheme, backslash, control characters, a symbolic link out of the prefix are refused and
  counted by reason; nothing outside is ever opened);
- a release manifest: entries confined to the release (read) and the output folder
  (written), every file's sha256 verified before use (`reconstruct` refuses a release whose
  `ids/` files do not verify before doing anything);
- a sample's `manifest.json` inputs confined to `--inputs`;
- error messages and reject details about unreadable files never contain the file's bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build.core.errors import UserError
from openmsd_build.core.paths import UnsafePath, confined_path, describe_failure
from openmsd_build.papers.join import read_source_file
from openmsd_build.release.command import MANIFEST
from openmsd_build.release.reconstruct import reconstruct, restore_graph
from openmsd_build.release.verify import verify_ids
from openmsd_build.text.fetch.warc_index import read_cc_index, warc_path
from openmsd_build.text.fetch.warc_store import read_record

SECRET = b"root:x:0:0:SECRET-CONTENT-DO-NOT-ECHO:/root:/bin/bash\n"

HOSTILE_NAMES = {
    "../../secret.warc.gz": "path_traversal",
    "crawl-data/../../../secret.warc.gz": "path_traversal",
    "crawl-data\\..\\..\\secret.warc.gz": "path_backslash",
    "s3://someone-else/crawl-data/x.warc.gz": "path_has_scheme",
    "file:///etc/passwd": "path_has_scheme",
    "c:/windows/x.warc.gz": "path_has_scheme",
    "crawl-data/x\x00.warc.gz": "path_control_character",
    "crawl-data/x\n.warc.gz": "path_control_character",
    "": "path_empty",
    "/": "path_empty",
    "escape/secret.warc.gz": "path_outside_root",  # a symbolic link out of the prefix
}


@pytest.fixture()
def prefix(tmp_path) -> Path:
    root = tmp_path / "cc"
    (root / "crawl-data").mkdir(parents=True)
    (tmp_path / "secret.warc.gz").write_bytes(SECRET)
    os.symlink(tmp_path, root / "escape")
    return root


@pytest.mark.parametrize("name,reason", sorted(HOSTILE_NAMES.items()))
def test_warc_path_refuses_names_that_leave_the_prefix(prefix, name, reason):
    with pytest.raises(UnsafePath) as caught:
        warc_path(str(prefix), name)
    assert caught.value.reason == reason


def test_warc_path_keeps_common_crawl_names(prefix):
    name = "crawl-data/CC-MAIN-2024-10/segments/1/warc/CC-MAIN-1-00000.warc.gz"
    assert warc_path(str(prefix), name) == f"{prefix}/{name}"
    assert warc_path(str(prefix), "/" + name) == f"{prefix}/{name}"  # relative to the prefix
    assert warc_path("gs://bucket/cc/", name) == f"gs://bucket/cc/{name}"
    assert warc_path("", name) == name
    with pytest.raises(UnsafePath):
        warc_path("", "/etc/passwd")  # no prefix: relative to the current folder only
    with pytest.raises(UnsafePath):
        warc_path("gs://bucket/cc", "../other/x.warc.gz")


def test_index_rows_naming_files_outside_are_counted_and_never_read(prefix, tmp_path):
    names = [*HOSTILE_NAMES, "crawl-data/good.warc.gz"]
    table = pa.table({
        "url": [f"https://example.org/{i}" for i in range(len(names))],
        "warc_filename": names,
        "warc_record_offset": [0] * len(names),
        "warc_record_length": [len(SECRET)] * len(names),
        "fetch_status": [200] * len(names),
        "content_mime_type": ["text/html"] * len(names),
    })
    index = tmp_path / "index.parquet"
    pq.write_table(table, index)
    counts: Counter = Counter()
    rows = list(read_cc_index(str(index), str(prefix), counts))
    assert [r["warc_file"] for r in rows] == [f"{prefix}/crawl-data/good.warc.gz"]
    refused = Counter(reason for name, reason in HOSTILE_NAMES.items() if name)  # "" is no file: skipped, counted
    assert counts == Counter({**{f"archive.refused_path.{reason}": n for reason, n in refused.items()},
                              "archive.index_rows_incomplete": sum(not name for name in HOSTILE_NAMES)})


def test_a_failed_read_does_not_echo_the_file(tmp_path):
    path = tmp_path / "not-a-warc.warc.gz"
    path.write_bytes(SECRET * 3)
    with pytest.raises(Exception) as caught:  # noqa: B017 - warcio's own error type, quieted
        read_record(str(path), 0, 1024)
    assert b"SECRET" not in str(caught.value).encode()
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(Exception) as caught:  # noqa: B017
        read_record(str(path), 0, 1024, len(SECRET))  # the range-read path
    assert b"SECRET" not in str(caught.value).encode()
    assert "SECRET" not in describe_failure(gzip.BadGzipFile(f"Not a gzipped file ({SECRET[:2]!r})"))
    assert "SECRET" not in describe_failure(ValueError(f"Unknown archive format, first line: [{SECRET!r}]"))


def test_corrupt_snapshot_rejects_do_not_quote_the_bytes(tmp_path):
    path = tmp_path / "crossref.json.gz"
    good = gzip.compress(b'{"items": [{"DOI": "10.1000/a"}]}')
    path.write_bytes(good + b"\x1f\x8b" + b"SE" + SECRET)  # a second, corrupt gzip member
    rejects = [v for tag, v in read_source_file(str(path), "crossref", 2) if tag == "reject"]
    assert rejects and all("SECRET" not in (r["detail"] or "") and "'SE'" not in (r["detail"] or "")
                           for r in rejects)


# --------------------------------------------------------------------------- release manifest

def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _release(tmp_path: Path) -> tuple[Path, dict]:
    release = tmp_path / "release"
    ids = release / "ids" / "split=train" / "part-0.parquet"
    ids.parent.mkdir(parents=True)
    pq.write_table(pa.table({"doi": ["10.1/a", "10.1/b"], "split": ["train", "train"], "language": ["en", "de"]}), ids)
    pairs = release / "pairs" / "dc" / "part-0.parquet"
    pairs.parent.mkdir(parents=True)
    pq.write_table(pa.table({"a": [1]}), pairs)
    tampered = release / "pairs" / "cc" / "part-0.parquet"
    tampered.parent.mkdir(parents=True)
    pq.write_table(pa.table({"a": [2]}), tampered)
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"secret": [1]}), outside)
    files = [{"path": str(p.relative_to(release)), "bytes": p.stat().st_size, "sha256": _sha(p)}
             for p in (ids, pairs, tampered)]
    files[2]["sha256"] = "0" * 64  # the manifest says other bytes than the file holds
    files += [
        {"path": "pairs/../../outside.parquet", "bytes": outside.stat().st_size, "sha256": _sha(outside)},
        {"path": "citations/../../../outside.parquet", "sha256": _sha(outside)},
        {"path": "negatives/x.parquet"},  # no checksum
        {"path": "pairs/missing.parquet", "sha256": "1" * 64},
        "not an entry",
    ]
    manifest = {"files": files, "stage_counts": {}}
    (release / MANIFEST).write_text(json.dumps(manifest))
    return release, manifest


def test_restore_graph_copies_only_confined_verified_files(tmp_path):
    release, manifest = _release(tmp_path)
    out = tmp_path / "out"
    result = restore_graph(str(release), str(out), manifest)
    assert result["files_copied"] == 1
    assert (out / "pairs" / "dc" / "part-0.parquet").exists()
    assert not (out / "pairs" / "cc").exists()
    assert not any(p.name == "outside.parquet" for p in out.rglob("*"))
    assert result["files_refused.checksum_mismatch"] == 1
    assert result["files_refused.path_traversal"] == 2
    assert result["files_refused.checksum_missing"] == 1
    assert result["files_refused.file_unreadable"] == 1
    assert result["split_rows"] == 2


def test_restore_graph_refuses_unlisted_and_doubtfully_listed_files(tmp_path):
    """A graph file the manifest leaves out is counted `not_in_manifest` (it vanished without
    a word), and a file listed twice, once with other bytes, is not used (it was copied and
    logged as not copied)."""
    release, manifest = _release(tmp_path)
    unlisted = release / "pairs" / "bc" / "part-0.parquet"
    unlisted.parent.mkdir(parents=True)
    pq.write_table(pa.table({"a": [3]}), unlisted)
    good = next(f for f in manifest["files"] if isinstance(f, dict) and f["path"] == "pairs/dc/part-0.parquet")
    manifest["files"].append({**good, "sha256": "2" * 64})
    out = tmp_path / "out"
    result = restore_graph(str(release), str(out), manifest)
    assert result["files_refused.not_in_manifest"] == 1 and result["files_copied"] == 0
    assert result["files_refused.checksum_mismatch"] == 2
    assert not (out / "pairs" / "bc").exists() and not (out / "pairs" / "dc").exists()


def test_reconstruct_refuses_a_release_whose_ids_do_not_verify(tmp_path):
    release, manifest = _release(tmp_path)
    verify_ids(str(release), manifest, [str(p) for p in release.glob("ids/split=*/*.parquet")])  # verifies
    ids = next(release.glob("ids/split=*/*.parquet"))
    pq.write_table(pa.table({"doi": ["10.1/evil"], "split": ["train"], "language": ["en"]}), ids)
    extra = release / "ids" / "split=idt" / "part-9.parquet"
    extra.parent.mkdir()
    pq.write_table(pa.table({"doi": ["10.1/x"], "split": ["idt"], "language": ["en"]}), extra)
    with pytest.raises(UserError, match=r"checksum_mismatch|size_mismatch") as caught:
        reconstruct(str(release), str(tmp_path / "out"), {}, "none", [])
    assert "not_in_manifest" in str(caught.value)
    assert not (tmp_path / "out").exists()  # refused before anything was read or written


def test_reconstruct_refuses_a_linked_or_broken_manifest(tmp_path):
    """The manifest is what every other file is checked against: a link to one outside the
    release was followed, and one that is not JSON ended in a traceback."""
    release, manifest = _release(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(manifest))
    (release / MANIFEST).unlink()
    (release / MANIFEST).symlink_to(elsewhere)
    with pytest.raises(UserError, match="leads outside the release"):
        reconstruct(str(release), str(tmp_path / "out"), {}, "none", [])
    (release / MANIFEST).unlink()
    for text, what in (("{not json", "is not a JSON file"), ("[1, 2]", "not an object"),
                       ("\udcff", "MANIFEST.json: is not a JSON file")):
        (release / MANIFEST).write_bytes(text.encode("utf-8", "surrogateescape"))
        with pytest.raises(UserError, match=what):
            reconstruct(str(release), str(tmp_path / "out"), {}, "none", [])
    assert not (tmp_path / "out").exists()


def test_sample_manifest_inputs_stay_in_the_inputs_folder(tmp_path):
    from openmsd_build.run.command import _sample_inputs

    (tmp_path / "manifest.json").write_text(json.dumps({"inputs": {"crossref": "../../etc/*.json"}}))
    with pytest.raises(UserError, match="path_traversal"):
        _sample_inputs(str(tmp_path))
    (tmp_path / "manifest.json").write_text(json.dumps({"inputs": {"crossref": "crossref/*.json.gz"}}))
    assert _sample_inputs(str(tmp_path)) == {"crossref": f"{tmp_path}/crossref/*.json.gz"}
    # a file the pattern matches that links out of the folder (the pattern itself stays in it)
    (tmp_path / "crossref").mkdir()
    (tmp_path / "crossref" / "part-0.json.gz").write_bytes(b"")
    assert _sample_inputs(str(tmp_path)) == {"crossref": f"{tmp_path}/crossref/*.json.gz"}
    outside = tmp_path.parent / f"{tmp_path.name}-secret.json.gz"
    outside.write_bytes(b"")
    (tmp_path / "crossref" / "part-1.json.gz").symlink_to(outside)
    with pytest.raises(UserError, match="path_outside_root"):
        _sample_inputs(str(tmp_path))
    # expanded as the stage expands it: a folder is read recursively, hidden files by a glob
    (tmp_path / "crossref" / "part-1.json.gz").unlink()
    (tmp_path / "crossref" / "deep").mkdir()
    (tmp_path / "crossref" / "deep" / "part.json.gz").symlink_to(outside)
    for pattern in ("crossref", "crossref/**"):
        (tmp_path / "manifest.json").write_text(json.dumps({"inputs": {"crossref": pattern}}))
        with pytest.raises(UserError, match="path_outside_root"):
            _sample_inputs(str(tmp_path))


def test_confined_path_on_remote_and_local_roots(tmp_path):
    assert confined_path("gs://b/release", "pairs/x.parquet") == "gs://b/release/pairs/x.parquet"
    with pytest.raises(UnsafePath):
        confined_path(str(tmp_path), "a/../../b")


def test_a_fifo_or_a_file_of_another_size_is_refused_before_it_is_read(tmp_path):
    """A FIFO named in a release's manifest blocked `reconstruct` forever (its read waits for a
    writer), and a 16 GB sparse file listed as 100 bytes was hashed whole before its size was
    compared. Both are refused from the file's own metadata, before a byte is read."""
    import os
    import time

    from openmsd_build.release.verify import check_entry

    release = tmp_path / "release"
    release.mkdir()
    os.mkfifo(release / "pipe.parquet")
    with open(release / "huge.parquet", "wb") as fh:
        fh.truncate(16 * 1024**3)  # sparse: no disk used
    started = time.monotonic()
    assert check_entry(str(release), {"path": "pipe.parquet", "sha256": "0" * 64, "bytes": 10}) == (
        "pipe.parquet", "not_a_file")
    assert check_entry(str(release), {"path": "huge.parquet", "sha256": "0" * 64, "bytes": 100}) == (
        "huge.parquet", "size_mismatch")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("case", ["label", "twice"])
def test_ids_rows_agree_with_their_folder_and_name_each_doi_once(tmp_path, case):
    """A checksum says an ids file is the one signed, not that its rows agree with it: a row
    labelled `../../evil` inside `split=train/` went into `splits/` as it was (and out of train's
    recovery rates), and a DOI in train and in ODT was exported twice. Refused before any
    pipeline runs, naming the file."""
    release = tmp_path / "release"
    train = release / "ids" / "split=train" / "part-0.parquet"
    odt = release / "ids" / "split=odt" / "part-0.parquet"
    for path in (train, odt):
        path.parent.mkdir(parents=True)
    rows = {"label": ({"doi": ["10.1/a", "10.1/b"], "split": ["train", "../../evil"]}, {"doi": ["10.1/c"]}),
            "twice": ({"doi": ["10.1/a", "10.1/b"], "split": ["train", "train"]}, {"doi": ["10.1/b"]})}[case]
    pq.write_table(pa.table({**rows[0], "language": ["en", "en"]}), train)
    pq.write_table(pa.table({**rows[1], "split": ["odt"], "language": ["fr"]}), odt)
    files = [{"path": str(p.relative_to(release)), "bytes": p.stat().st_size, "sha256": _sha(p)} for p in (train, odt)]
    (release / MANIFEST).write_text(json.dumps({"files": files, "stage_counts": {}}))
    said = {"label": r"split=train/part-0.parquet: rows of split '../../evil' in the folder of split 'train'",
            "twice": r"1 DOI\(s\) are listed twice in ids/"}[case]
    with pytest.raises(UserError, match=said):
        reconstruct(str(release), str(tmp_path / "out"), {}, "none", [])
    assert not (tmp_path / "out" / "splits").exists()


DAMAGED_MANIFESTS = {
    "not_json": (b"{bad", "is not a JSON file"),
    "not_utf8": (b"\xff\xfe{}", "is not a JSON file"),
    "nested_past_recursion": (b"[" * 100_000, "is not a JSON file"),
    "a_list": (b"[1, 2]", "holds a JSON list"),
    "inputs_a_list": (b'{"inputs": [1]}', "inputs is a JSON list"),
    "input_a_number": (b'{"inputs": {"crossref": 5}}', "input 'crossref' is 5, not a path"),
}


@pytest.mark.parametrize("name", sorted(DAMAGED_MANIFESTS))
def test_a_damaged_sample_manifest_is_one_line(tmp_path, capsys, name):
    """`run --inputs DIR` with a manifest.json that is not JSON, not UTF-8, nested past the
    recursion limit, a list, or whose inputs are not paths printed json's traceback (exit 1:
    JSONDecodeError, UnicodeDecodeError, AttributeError); now exit 2 and one line."""
    from openmsd_build.cli import main

    data, message = DAMAGED_MANIFESTS[name]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "manifest.json").write_bytes(data)
    assert main(["run", "--inputs", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_folder_named_manifest_json_is_one_line(tmp_path, capsys):
    from openmsd_build.cli import main

    (tmp_path / "in" / "manifest.json").mkdir(parents=True)
    assert main(["run", "--inputs", str(tmp_path / "in"), "--out", str(tmp_path / "out"), "--plan"]) == 2
    assert "manifest.json: cannot be read" in capsys.readouterr().err


def test_sample_over_a_manifest_nested_past_recursion_is_refused_in_one_line(tmp_path, capsys):
    """`sample --out DIR` read DIR's manifest.json to tell a sample: one nested past the
    recursion limit raised RecursionError (a traceback)."""
    from openmsd_build.cli import main

    (tmp_path / "manifest.json").write_bytes(b"[" * 100_000)
    assert main(["sample", "--out", str(tmp_path), "--papers", "3"]) == 2
    assert "is not a sample" in capsys.readouterr().err
