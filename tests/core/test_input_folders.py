"""A folder given where a file glob is expected is read the same way for every source:
every file under it, recursively (hidden ones left out); an empty folder is an error."""

from __future__ import annotations

import pytest

from openmsd_build.core.errors import UserError
from openmsd_build.core.inputs import expand_globs, expand_input_files
from openmsd_build.text.fetch.warc_backend import expand_paths


def test_folders_are_read_recursively_by_every_expander(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    for name in ("one.gz", "a/two.gz", "a/b/three.gz", ".hidden", ".git/config"):
        (tmp_path / name).write_bytes(b"x")
    want = [str(tmp_path / n) for n in ("a/b/three.gz", "a/two.gz", "one.gz")]
    assert [p for p, _ in expand_globs([str(tmp_path)], "--unpaywall")] == want  # papers' sources
    assert expand_input_files([str(tmp_path)], "--opencitations") == want  # citations
    assert expand_paths(str(tmp_path)) == want  # --fetch warc: / cc-index:
    # a glob that matches a folder reads no folder as a file
    assert expand_paths(str(tmp_path / "*")) == [str(tmp_path / "one.gz")]


def test_an_empty_folder_is_an_error_that_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="is a folder with no data file in it"):
        expand_globs([str(tmp_path / "empty")], "--crossref")


def test_a_file_named_with_glob_characters_is_read_as_named(tmp_path):
    """`--crossref 'a[1].json.gz'` (the file exists) said it matched no file: the name was
    read as a glob (`[1]` a character class)."""
    from openmsd_build.core.inputs import expand_globs

    odd = tmp_path / "a[1].json.gz"
    odd.write_bytes(b"12345")
    assert expand_globs([str(odd)], "--crossref") == [(str(odd), 5)]
    (tmp_path / "b1.json").write_bytes(b"1")
    assert expand_globs([str(tmp_path / "b[1].json")], "--crossref") == [(str(tmp_path / "b1.json"), 1)]


def test_notes_and_checksums_in_a_folder_are_not_read_as_data(tmp_path):
    """A folder of snapshot files with a README.upstream.md and a .provenance.tsv beside them:
    their lines were read as records (779 invalid_json rejects, 10 % of the run); named on
    their own they are read like any file."""
    (tmp_path / "works.jsonl").write_bytes(b"{}\n")
    for name in ("README.upstream.md", "works.provenance.tsv", "SHA256SUMS.sha256", "LICENSE", "manifest"):
        (tmp_path / name).write_bytes(b"not data\n")
    assert expand_input_files([str(tmp_path)], "--crossref") == [str(tmp_path / "works.jsonl")]
    assert expand_paths(str(tmp_path)) == [str(tmp_path / "works.jsonl")]
    assert expand_input_files([str(tmp_path / "LICENSE")]) == [str(tmp_path / "LICENSE")]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "README.md").write_bytes(b"x")
    with pytest.raises(UserError, match=r"no data file in it but notes or checksums \(README.md"):
        expand_globs([str(notes)], "--crossref")


@pytest.mark.timeout(60)
def test_a_fifo_or_device_is_refused_not_read_forever(tmp_path):
    """A named pipe nobody writes to (or `/dev/zero`, read without end) matched like a file
    of size 0, and the papers stage hung reading it; named alone, in a folder, or given to
    the citations stage, it is now a one-line `UserError` naming it."""
    import os

    from openmsd_build.cli import main

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "good.jsonl").write_text('{"doi": "10.1000/a"}\n')
    os.mkfifo(tmp_path / "in" / "pipe.jsonl")
    pipe = str(tmp_path / "in" / "pipe.jsonl")
    for given in (pipe, str(tmp_path / "in")):
        with pytest.raises(UserError, match="is a named pipe"):
            expand_globs([given], "--unpaywall")
    with pytest.raises(UserError, match="is a named pipe"):
        expand_paths(str(tmp_path / "in"))
    if os.path.exists("/dev/zero"):
        with pytest.raises(UserError, match="is a device"):
            expand_globs(["/dev/zero"], "--crossref")
    assert main(["papers", "--out", str(tmp_path / "out"), "--unpaywall", pipe, "--runner", "FnApiRunner"]) == 2
    assert main(["citations", "--out", str(tmp_path / "out"), "--opencitations", pipe]) == 2


def test_a_link_to_a_missing_file_in_a_folder_is_named(tmp_path):
    """A dangling link in an input folder raised `FileNotFoundError` (a traceback)."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "good.jsonl").write_text("{}\n")
    (tmp_path / "in" / "gone.jsonl").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UserError, match=r"gone\.jsonl.*cannot be read"):
        expand_globs([str(tmp_path / "in")], "--unpaywall")


def test_a_file_named_twice_is_read_once(tmp_path, monkeypatch, caplog):
    """`a.csv` and `./a.csv` (or a folder and a glob inside it, or a link to the file) were two
    inputs: the file was read twice and every record counted as a duplicate of itself."""
    import logging

    from openmsd_build.core.inputs import expand_globs

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("x\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "in" / "a.csv")
    with caplog.at_level(logging.WARNING):
        files = expand_globs(["in/a.csv", "./in/a.csv", "in", "in/*.csv", "link.csv"], "--opencitations")
    assert len(files) == 1 and files[0][1] == 2 and "read once" in caplog.text, files


def test_a_folder_holding_a_build_is_refused_not_read_as_records(tmp_path):
    """`papers --out` into the folder of its own inputs, then that folder given as another
    build's `--crossref`: the build's Parquet and `_stats/*.json` were read as Crossref records
    (1,047 rejects and a 36 % warning). An empty `_stats/` of the user's is no build."""
    inputs = tmp_path / "crossref"
    inputs.mkdir()
    (inputs / "0.json.gz").write_bytes(b"x")
    (inputs / "_stats").mkdir()
    assert [p for p, _ in expand_globs([str(inputs)], "--crossref")] == [str(inputs / "0.json.gz")]
    (inputs / "_stats" / "papers.json").write_text("{}")
    (inputs / "papers").mkdir()
    (inputs / "papers" / "part-00000-of-00001.parquet").write_bytes(b"PAR1")
    with pytest.raises(UserError, match=r"--crossref input .* holds a build's outputs"):
        expand_globs([str(inputs)], "--crossref")
    assert [p for p, _ in expand_globs([str(inputs / "*.json.gz")], "--crossref")] == [str(inputs / "0.json.gz")]
