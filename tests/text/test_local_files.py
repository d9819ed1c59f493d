"""`--fetch local:FOLDER[@MANIFEST]`: papers' pages and PDFs read from disk, matched by a
manifest or by file name, extracted as fetched bodies, with the same counts and rejects;
and the README's example of it, run exactly as written."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from openmsd_build.cli import main
from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import DOCUMENTS, PAPERS, REJECTS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch import WarcWriter
from openmsd_build.text.fetch.local_files import (
    DOI_NOT_A_PAPER,
    MISSING,
    NAMED_FOR_NO_PAPER,
    NOT_A_DOCUMENT,
    NOT_IN_FOLDER,
    OUTSIDE,
    URL_NOT_PLANNED,
    LocalFilesBackend,
    doi_tasks,
    file_url,
    load,
    write_manifest_csv,
)
from openmsd_build.text.fetch.result import FetchResult

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]
README = Path(__file__).resolve().parents[2] / "README.md"
PDFS = {"10.2903/j.efsa.2014.3550": "pdf/crminer__10.2903_j.efsa.2014.3550.pdf",
        "10.3897/compcytogen.v10i4.9536": "pdf/crminer__10.3897.compcytogen.v10i4.9536.pdf"}
PAGE = "html/papis__HAL_THESES_tel_02083632v1.html"


def test_naming_rule_matches_dois_anywhere_under_the_folder(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "10.1000_ABC.def.PDF").write_bytes(b"%PDF-1.4 x")
    (tmp_path / "10.1000%2Fabc.def.html").write_bytes(b"<html></html>")
    (tmp_path / "10.1000_abc.def.txt").write_bytes(b"not a document")
    (tmp_path / "10.2000_other.pdf").write_bytes(b"%PDF-1.4 y")
    source = load(f"local:{tmp_path}")
    tasks = doi_tasks(source, "10.1000/abc.def")
    assert [t["kind"] for t in tasks] == ["pdf", "landing"]
    assert {t["url"] for t in tasks} == {file_url(str(tmp_path / "a/b/10.1000_ABC.def.PDF")),
                                         file_url(str(tmp_path / "10.1000%2Fabc.def.html"))}
    assert doi_tasks(source, "10.9/none") == []
    backend = LocalFilesBackend(f"local:{tmp_path}")
    answer = backend.fetch(tasks[0]["url"])
    assert (answer.status, answer.content_type, answer.body, answer.error) == (200, "application/pdf", b"%PDF-1.4 x",
                                                                              None)
    # only matched files are answered: no other path of the disk, and no http URL
    assert backend.fetch((tmp_path / "10.1000_abc.def.txt").as_uri()).error == NOT_IN_FOLDER
    assert backend.fetch("file:///etc/passwd").error == NOT_IN_FOLDER
    assert backend.fetch("https://example.org/10.1000/abc.def").error == NOT_IN_FOLDER


def test_hidden_files_and_folders_are_not_read(tmp_path):
    """A folder as users keep it holds hidden copies of its documents: a trash folder, a file
    server's snapshots, a Mac's `._` companion of each PDF (same name, not a PDF). Each was
    read as one more document of its paper. They are skipped and counted; a folder given by a
    hidden name of its own is read."""
    folder = tmp_path / ".papers"
    (folder / ".Trash").mkdir(parents=True)
    (folder / ".snapshot" / "daily").mkdir(parents=True)
    (folder / "10.1000_abc.def.pdf").write_bytes(b"%PDF-1.4 kept")
    (folder / ".Trash" / "10.1000_abc.def.pdf").write_bytes(b"%PDF-1.4 deleted")
    (folder / ".snapshot" / "daily" / "10.1000_abc.def.pdf").write_bytes(b"%PDF-1.4 old")
    (folder / "._10.1000_abc.def.pdf").write_bytes(b"\0\5\26\7 Mac OS X resource fork")
    source = load(f"local:{folder}")
    assert [t["url"] for t in doi_tasks(source, "10.1000/abc.def")] == [file_url(str(folder / "10.1000_abc.def.pdf"))]
    assert source.hidden == 3 and not source.problems  # the two folders (not walked) and the companion file

    out = tmp_path / "out"
    papers = [{"doi": "10.1000/abc.def", "sources": ["unpaywall"], "n_records": 1, "categories": [], "relations": [],
               "urls": []}]
    parquet_io.write_table(parquet_io.table_from_rows(papers, PAPERS),
                           parquet_io.part_path(layout.papers_dir(str(out)), 0, 1))
    counts = run_text(str(out), f"local:{folder}", FNAPI)
    assert counts["local.hidden_skipped"] == 3 and counts["local.files_matched.pdf"] == 1
    assert not any(k.startswith("local.rejected.") for k in counts)


def test_naming_rule_with_a_relative_folder_links_and_sici_dois(tmp_path, monkeypatch):
    """The folder as a new user types it (relative: it was joined twice and matched nothing),
    a link named after the DOI to a file elsewhere in the folder (matched by the link's name,
    read from its target), a link out of the folder (a problem, not a silent skip), and a
    SICI DOI with only its `/` written `%2F` (its `( ) : ; < >` as they are)."""
    folder = tmp_path / "my files"
    (folder / "store").mkdir(parents=True)
    (folder / "store" / "blob1.pdf").write_bytes(b"%PDF-1.4 linked")
    (folder / "10.2903_j.efsa.2014.3550.pdf").symlink_to(folder / "store" / "blob1.pdf")
    (tmp_path / "elsewhere.pdf").write_bytes(b"%PDF-1.4 outside")
    (folder / "10.9_out.pdf").symlink_to(tmp_path / "elsewhere.pdf")
    sici = "10.1002/(sici)1097-461x(1998)66:4<261::aid-qua1>3.0.co;2-t"
    (folder / (sici.replace("/", "%2F") + ".pdf")).write_bytes(b"%PDF-1.4 sici")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "10.9_far.pdf").write_bytes(b"%PDF-1.4 far")
    (folder / "linked-out").symlink_to(tmp_path / "other")  # a folder link out: said, not walked
    (folder / "linked-in").symlink_to(folder / "store")  # one inside: not walked (its files are read once)
    monkeypatch.chdir(tmp_path)
    for spec in ("local:my files", "local:./my files/", f"local:{folder}"):
        source = load(spec)
        linked = doi_tasks(source, "10.2903/j.efsa.2014.3550")
        assert [t["url"] for t in linked] == [file_url(str(folder / "store" / "blob1.pdf"))], spec
        assert LocalFilesBackend(spec).fetch(linked[0]["url"]).body == b"%PDF-1.4 linked"
        assert len(doi_tasks(source, sici.upper())) == 1, spec
        assert doi_tasks(source, "10.9/out") == []
        assert doi_tasks(source, "10.9/far") == []
        assert sorted((reason, os.path.basename(key)) for reason, key, _ in source.problems) == [
            (OUTSIDE, "10.9_out.pdf"), (OUTSIDE, "linked-out")]


def test_a_manifest_that_is_not_utf8_is_named(tmp_path):
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4 x")
    manifest = tmp_path / "list.csv"
    manifest.write_bytes("doi,path\n10.1000/caf\xe9,a.pdf\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"list\.csv: not UTF-8 text .*save the manifest as UTF-8"):
        load(f"local:{tmp_path}@{manifest}")


def test_a_json_manifest_is_named_as_json(tmp_path):
    """A manifest written as JSON was read as a CSV whose header was its first line of JSON."""
    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4 x")
    manifest = tmp_path / "list.json"
    manifest.write_text('[{"doi": "10.1000/x", "path": "a.pdf"}]')
    with pytest.raises(ValueError, match=r"list\.json: a manifest is a CSV .* or Parquet file; this one holds JSON"):
        load(f"local:{tmp_path}@{manifest}")


def test_a_folder_named_with_an_at_sign(tmp_path):
    """`local:FOLDER@MANIFEST` splits at an `@`, but a folder may hold one in its name."""
    from openmsd_build.text.fetch.local_files import parse_spec

    folder = tmp_path / "files@2024"
    folder.mkdir()
    (folder / "10.1000_abc.pdf").write_bytes(b"%PDF-1.4 x")
    manifest = tmp_path / "m@v2.csv"
    manifest.write_text("doi,path\n10.1000/abc,10.1000_abc.pdf\n")
    assert parse_spec(f"local:{folder}") == (str(folder), None)
    assert parse_spec(f"local:{folder}@{manifest}") == (str(folder), str(manifest))
    assert len(doi_tasks(load(f"local:{folder}"), "10.1000/abc")) == 1
    with pytest.raises(ValueError, match="is not a folder"):
        parse_spec(f"local:{tmp_path}/nothing@{manifest}")


def test_manifest_rows_and_their_rejects(tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "p.pdf").write_bytes(b"%PDF-1.4 p")
    (folder / "page.htm").write_bytes(b"<html>page</html>")
    (folder / "notes.txt").write_text("x")
    (tmp_path / "secret.pdf").write_bytes(b"%PDF-1.4 secret")
    os.symlink(tmp_path / "secret.pdf", folder / "link.pdf")
    manifest = tmp_path / "m.csv"
    write_manifest_csv([
        {"doi": "10.1000/p", "path": "p.pdf"},
        {"doi": "https://doi.org/10.1000/Q", "url": "https://pub.example/q", "path": "page.htm"},
        {"doi": "10.1000/missing", "path": "gone.pdf"},
        {"doi": "10.1000/up", "path": "../secret.pdf"},
        {"doi": "10.1000/link", "path": "link.pdf"},
        {"doi": "10.1000/txt", "path": "notes.txt"},
        {"doi": "not a doi", "path": "p.pdf"},
    ], str(manifest))
    source = load(f"local:{folder}@{manifest}")
    assert [(reason, key) for reason, key, _ in source.problems] == [
        (MISSING, "10.1000/missing"), (OUTSIDE, "10.1000/up"), (OUTSIDE, "10.1000/link"), (NOT_A_DOCUMENT, "10.1000/txt"),
        ("local_manifest_bad_row", "not a doi")]
    assert [t["url"] for t in doi_tasks(source, "10.1000/p")] == [file_url(str(folder / "p.pdf"))]
    assert [t["kind"] for t in doi_tasks(source, "10.1000/q")] == ["landing"]
    backend = LocalFilesBackend(f"local:{folder}@{manifest}")
    assert backend.fetch("HTTPS://pub.example:443/q").body == b"<html>page</html>"
    with pytest.raises(ValueError, match="is not a folder"):
        load(f"local:{tmp_path / 'nope'}")


def _papers(out: Path, rows: list[dict]) -> None:
    full = [{"doi": r["doi"], "sources": ["unpaywall"], "n_records": 1, "categories": [], "relations": [],
             "urls": r.get("urls", [])} for r in rows]
    parquet_io.write_table(parquet_io.table_from_rows(full, PAPERS), parquet_io.part_path(layout.papers_dir(str(out)),
                                                                                          0, 1))


def _docs(out: Path) -> dict[str, dict]:
    rows = parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()
    return {r["doi"]: {k: r[k] for k in ("title", "abstract", "content", "language", "content_source")} for r in rows}


def test_local_files_extract_as_the_same_bodies_replayed(tmp_path, real_samples):
    """The same real PDFs and page, once in a WARC under URLs the papers list and once in a
    folder matched by DOI (one file shared by two papers, read once): the same documents."""
    files = {**PDFS, "10.5555/page": PAGE, "10.5555/page-again": PAGE}
    warc_out, local_out = tmp_path / "warc-build", tmp_path / "local-build"
    urls = {doi: f"https://repo.example/{rel}" for doi, rel in files.items()}
    with WarcWriter(str(tmp_path / "same.warc.gz")) as writer:
        for rel in sorted(set(files.values())):
            ctype = "application/pdf" if rel.endswith(".pdf") else "text/html"
            url = f"https://repo.example/{rel}"
            writer.write(FetchResult(url=url, final_url=url, status=200, headers={"Content-Type": ctype},
                                     body=(real_samples / rel).read_bytes(), content_type=ctype,
                                     fetched_at="2024-01-01T00:00:00Z"))
    _papers(warc_out, [{"doi": d, "urls": [{"url": urls[d], "kind": "pdf" if f.endswith(".pdf") else "landing",
                                             "host_type": "repository", "license": None, "version": None,
                                             "source": "unpaywall", "rank": 0}]} for d, f in files.items()])
    run_text(str(warc_out), f"warc:{tmp_path / 'same.warc.gz'}", FNAPI)
    _papers(local_out, [{"doi": d} for d in files])
    write_manifest_csv([{"doi": d, "path": f} for d, f in files.items()], str(tmp_path / "m.csv"))
    counts = run_text(str(local_out), f"local:{real_samples}@{tmp_path / 'm.csv'}", FNAPI)
    assert _docs(local_out) == _docs(warc_out) and len(_docs(local_out)) == 4
    assert counts["fetch.ok"] == 3 and counts["extracted.pdf"] == 2 and counts["extracted.landing"] == 1
    assert counts["local.papers_matched"] == 4


def _readme_example() -> list[str]:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- local-example -->\n```sh\n(.*?)```\n<!-- /local-example -->", text, re.S)
    assert block, "README lost its local-folder example"
    return block.group(1).splitlines()


def _run_shell_lines(lines: list[str], cwd: Path, samples: Path) -> None:
    """The example's commands as a user types them from the repository: heredocs write
    files, `.venv/bin/openmsd-build` lines run through `main` (in this process)."""
    i = 0
    while i < len(lines):
        line = lines[i]
        heredoc = re.match(r"cat > (\S+) <<'EOF'$", line)
        if heredoc:
            end = lines.index("EOF", i)
            (cwd / heredoc.group(1)).write_text("\n".join(lines[i + 1:end]) + "\n", encoding="utf-8")
            i = end + 1
            continue
        command = line
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        argv = shlex.split(command.replace("../shared/real-samples", str(samples)))
        assert argv[0] == ".venv/bin/openmsd-build", command
        assert main(argv[1:] + FNAPI) == 0, command


def test_readme_local_example_end_to_end(tmp_path, real_samples, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _run_shell_lines(_readme_example(), tmp_path, real_samples)
    out = tmp_path / "local-build"
    stats = json.loads((out / "_stats" / "text.json").read_text())
    counts = stats["counts"]
    assert counts["documents.kept"] == 127 and counts["with_content"] == 2 and counts["text_source.pdf"] == 2
    docs = _docs(out)
    for doi in PDFS:
        assert docs[doi]["content_source"] == "pdf" and len(docs[doi]["content"]) > 1000
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "text"), schema=REJECTS).to_pylist()
    assert [(r["reason"], r["key"]) for r in rejects] == [(MISSING, "10.3897/phytokeys.136.47386")]
    assert "pdf/phytokeys.136.47386.pdf not found under" in rejects[0]["detail"]
    assert any("1 manifest row was rejected (local_file_missing 1)" in w for w in stats["warnings"])
    assert "warning: 1 manifest row was rejected" in capsys.readouterr().err


def test_folder_outside_reads_are_refused_before_the_run(tmp_path):
    out = tmp_path / "b"
    _papers(out, [{"doi": "10.1000/x"}])
    assert main(["text", "--out", str(out), "--fetch", f"local:{tmp_path / 'absent'}", *FNAPI]) == 2
    shutil.rmtree(out)


@pytest.mark.parametrize("with_manifest", [True, False])
def test_a_doi_or_file_no_paper_has_is_a_reject_not_a_silent_drop(tmp_path, real_samples, with_manifest):
    """A manifest row whose DOI is not among the papers (a typo), or with the naming rule a
    document named after no paper's DOI: counted, a reject naming it (one a file), and a
    warning. A row whose file a paper reads by the row's URL is not one; a DOI row of its own
    naming that file is."""
    folder = tmp_path / "files"
    folder.mkdir()
    pdf = (real_samples / PDFS["10.2903/j.efsa.2014.3550"]).read_bytes()
    page = (real_samples / PAGE).read_bytes()
    (folder / "10.2903_j.efsa.2014.3550.pdf").write_bytes(pdf)
    (folder / "10.2903_j.efsa.2014.355.pdf").write_bytes(pdf)  # one digit short
    (folder / "10.2903_j.efsa.2014.355.html").write_bytes(page)
    (folder / "landing.html").write_bytes(page)
    out = tmp_path / "b"
    url = {"url": "https://pub.example/landing", "kind": "landing", "host_type": "publisher", "license": None,
           "version": None, "source": "unpaywall", "rank": 0}
    _papers(out, [{"doi": "10.2903/j.efsa.2014.3550"}, {"doi": "10.1000/by-url", "urls": [url]}])
    spec = f"local:{folder}"
    if with_manifest:
        write_manifest_csv([{"doi": "10.2903/j.efsa.2014.3550", "path": "10.2903_j.efsa.2014.3550.pdf"},
                            {"doi": "10.2903/j.efsa.2014.355", "path": "10.2903_j.efsa.2014.355.pdf"},
                            {"doi": "10.5555/read-by-its-url", "url": url["url"], "path": "landing.html"},
                            # a DOI row of its own for a file a URL row names: its typo is unused
                            {"doi": "10.5555/typo", "path": "landing.html"},
                            # URL rows no paper lists: unused whether or not they give a DOI
                            {"url": "https://pub.example/nobody", "path": "10.2903_j.efsa.2014.355.html"},
                            {"doi": "10.5555/nor-this", "url": "https://pub.example/neither",
                             "path": "10.2903_j.efsa.2014.355.html"},
                            # a URL no paper lists, in a row whose DOI a paper has: used
                            {"doi": "10.2903/j.efsa.2014.3550", "url": "https://pub.example/by-doi",
                             "path": "10.2903_j.efsa.2014.3550.pdf"}],
                           str(tmp_path / "m.csv"))
        spec += f"@{tmp_path / 'm.csv'}"
    assert main(["text", "--out", str(out), "--fetch", spec, *FNAPI]) == 0
    stats = json.loads((out / "_stats" / "text.json").read_text())
    counts = stats["counts"]
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "text"), schema=REJECTS).to_pylist()
    got = sorted((r["reason"], r["key"], r["detail"].split("files/")[-1]) for r in rejects)
    if with_manifest:
        assert counts["extracted.landing"] == 1  # landing.html, by its URL row
        assert got == [(DOI_NOT_A_PAPER, "10.2903/j.efsa.2014.355",
                        f"{tmp_path / 'm.csv'}: no paper has the DOI 10.2903/j.efsa.2014.355 "
                        "(file 10.2903_j.efsa.2014.355.pdf)"),
                       (DOI_NOT_A_PAPER, "10.5555/typo",
                        f"{tmp_path / 'm.csv'}: no paper has the DOI 10.5555/typo (file landing.html)"),
                       (URL_NOT_PLANNED, "https://pub.example/neither",
                        f"{tmp_path / 'm.csv'}: no paper lists the URL https://pub.example/neither "
                        "(file 10.2903_j.efsa.2014.355.html)"),
                       (URL_NOT_PLANNED, "https://pub.example/nobody",
                        f"{tmp_path / 'm.csv'}: no paper lists the URL https://pub.example/nobody "
                        "(file 10.2903_j.efsa.2014.355.html)")]
        warning = f"4 manifest rows were rejected ({URL_NOT_PLANNED} 2, {DOI_NOT_A_PAPER} 2)"
    else:
        # without a manifest, landing.html is named after no DOI either
        assert [(reason, key) for reason, key, _ in got] == [(NAMED_FOR_NO_PAPER, "10.2903_j.efsa.2014.355")] * 2 + [
            (NAMED_FOR_NO_PAPER, "landing")]
        assert [detail for _, _, detail in got] == [
            "10.2903_j.efsa.2014.355.html: named after no paper's DOI",
            "10.2903_j.efsa.2014.355.pdf: named after no paper's DOI", "landing.html: named after no paper's DOI"]
        warning = f"3 files of the folder were rejected ({NAMED_FOR_NO_PAPER} 3)"
    assert counts["extracted.pdf"] == 1
    assert sum(counts[f"local.rejected.{reason}"] for reason in {r for r, _, _ in got}) == len(got)
    assert any(w.startswith(warning) for w in stats["warnings"]), stats["warnings"]


def test_a_wrong_fetch_keeps_the_documents_it_would_empty(tmp_path, real_samples, capsys):
    """After a good `--fetch local:` run, `--fetch warc:` on the same folder of PDFs (every
    archive file rejected) or `local:` on a folder without the papers' files replaced the
    documents with none and exited 0: refused now, the previous outputs kept, with the stage's
    own warnings as the reason."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for doi, rel in PDFS.items():
        (folder / f"{doi.replace('/', '_')}.pdf").write_bytes((real_samples / rel).read_bytes())
    other = tmp_path / "other"
    other.mkdir()
    (other / "10.9999_nobody.pdf").write_bytes((real_samples / PDFS["10.2903/j.efsa.2014.3550"]).read_bytes())
    out = tmp_path / "b"
    _papers(out, [{"doi": doi} for doi in PDFS])
    assert main(["text", "--out", str(out), "--fetch", f"local:{folder}", *FNAPI]) == 0
    before = _docs(out)
    assert len(before) == 2
    capsys.readouterr()
    for spec, reason, kept in ((f"warc:{folder}", "archive files were rejected", "the previous outputs were kept"),
                               (f"local:{other}", "no file of the folder matched any of the 2 papers",
                                "nothing was replaced")):
        assert main(["text", "--out", str(out), "--fetch", spec, *FNAPI]) == 2, spec
        err = capsys.readouterr().err
        assert kept in err and reason in err, err
        assert _docs(out) == before
        # the run's rejects go with it: quoted in the message, not pointed at in rejects/text/
        assert "see rejects/text/" not in err and "this run's first rejects (not kept: nothing was replaced):" in err
    assert "10.9999_nobody.pdf: named after no paper's DOI" in err
    # a first run, no documents to keep: the source that gave nothing is refused on its own
    fresh = tmp_path / "fresh"
    _papers(fresh, [{"doi": doi} for doi in PDFS])
    assert main(["text", "--out", str(fresh), "--fetch", f"local:{other}", *FNAPI]) == 2
    assert "matched no file to any paper" in capsys.readouterr().err
    assert not (fresh / "documents").exists()
    archive = tmp_path / "a.warc.gz"
    with WarcWriter(str(archive)) as writer:
        url = "https://repo.example/x.pdf"
        writer.write(FetchResult(url=url, final_url=url, status=200, headers={"Content-Type": "application/pdf"},
                                 body=(folder / "10.2903_j.efsa.2014.3550.pdf").read_bytes(),
                                 content_type="application/pdf", fetched_at="2024-01-01T00:00:00Z"))
    # a good archive, but the papers have no URL to look up in it
    assert main(["text", "--out", str(out), "--fetch", f"warc:{archive}", *FNAPI]) == 2
    err = capsys.readouterr().err
    assert "kept 0 documents where" in err and "none of them has a URL to look up in the archives" in err, err
    assert _docs(out) == before


def test_odd_manifest_rows_are_each_a_reject_with_their_reason(tmp_path):
    """A path holding a NUL character stopped the whole stage ("embedded null byte", naming no
    row); a path that is a folder was `local_file_missing`; two URL rows that are one URL once
    canonical kept the last file and dropped the other without a word."""
    folder = tmp_path / "files"
    (folder / "sub").mkdir(parents=True)
    (folder / "one.html").write_text("<html><title>one</title></html>")
    (folder / "two.html").write_text("<html><title>two</title></html>")
    manifest = tmp_path / "m.csv"
    manifest.write_text("doi,url,path\n10.1000/a,,a\0.pdf\n10.1000/b,,sub\n"
                        ",https://www.example.org/doi/x,one.html\n,https://WWW.EXAMPLE.ORG:443/doi/x,two.html\n"
                        ",https://www.example.org/doi/x,one.html\n")
    source = load(f"local:{folder}@{manifest}")
    assert [(reason, key) for reason, key, _ in source.problems] == [
        ("local_manifest_bad_row", "10.1000/a"), (NOT_A_DOCUMENT, "10.1000/b"),
        ("local_url_listed_twice", "https://WWW.EXAMPLE.ORG:443/doi/x")]
    assert "NUL" in source.problems[0][2] and "is a folder" in source.problems[1][2]
    assert "one.html" in source.problems[2][2]  # the file that URL answers
    assert LocalFilesBackend(f"local:{folder}@{manifest}").fetch("https://www.example.org/doi/x").body.endswith(
        b"<title>one</title></html>")


def test_file_names_that_are_not_utf8(tmp_path, real_samples):
    """A document whose name is not UTF-8 stopped the stage with a UnicodeEncodeError (its
    name went into the rejects as it was); a DOI-named file inside a folder whose name is not
    UTF-8 was planned and then `not_in_folder` (its file:// URL was read back as UTF-8)."""
    folder = tmp_path / "files"
    folder.mkdir()
    odd = os.path.join(os.fsencode(folder), b"10.1234_\xff\xfe.pdf")
    with open(odd, "wb") as fh:
        fh.write(b"%PDF-1.4\n")
    latin = os.path.join(os.fsencode(folder), b"\xe9t\xe9")
    os.mkdir(latin)
    shutil.copy(real_samples / PDFS["10.2903/j.efsa.2014.3550"], os.path.join(latin, b"10.2903_j.efsa.2014.3550.pdf"))
    out = tmp_path / "b"
    _papers(out, [{"doi": "10.2903/j.efsa.2014.3550"}])
    assert main(["text", "--out", str(out), "--fetch", f"local:{folder}", *FNAPI]) == 0
    counts = json.loads((out / "_stats" / "text.json").read_text())["counts"]
    assert counts["extracted.pdf"] == 1 and not counts.get("fetch.error.not_in_folder")
    rejects = parquet_io.read_table(layout.rejects_dir(str(out), "text"), schema=REJECTS).to_pylist()
    assert [(r["reason"], r["key"].rsplit("/", 1)[-1]) for r in rejects] == [
        (NAMED_FOR_NO_PAPER, "10.1234_\\xff\\xfe.pdf")]
    assert _docs(out)["10.2903/j.efsa.2014.3550"]["content"]



def test_manifest_rows_reconcile_and_a_stray_field_is_one_rows_reject(tmp_path):
    """Every manifest row is used, a reject, or a repeat of a row before it (counted): a row
    with a field past the header's (a comma in an unquoted path) stopped the whole stage with
    an AttributeError, and repeated rows left no trace; a pipe listed as a file was
    `local_file_missing`."""
    folder = tmp_path / "files"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.pdf").write_bytes(b"%PDF-1.4 a")
    (folder / "sub" / "b.pdf").write_bytes(b"%PDF-1.4 b")
    os.symlink(folder / "a.pdf", folder / "alias.pdf")
    os.mkfifo(folder / "pipe.pdf")
    manifest = tmp_path / "m.csv"
    manifest.write_text("doi,url,path\n"
                        "10.1000/a,,a.pdf\n"
                        "10.1000/A,,alias.pdf\n"  # the same DOI and file, by another path
                        "10.1000/b,,../files/sub/b.pdf\n"
                        "10.1000/b,https://x.example/b,sub/b.pdf\n"  # gives a URL: new
                        "10.1000/b,https://x.example/b,sub/b.pdf\n"  # again: a repeat
                        "10.1000/c,,one,two.pdf\n"
                        "10.1000/p,,pipe.pdf\n")
    source = load(f"local:{folder}@{manifest}")
    assert [(reason, key) for reason, key, _ in source.problems] == [
        ("local_manifest_bad_row", "10.1000/c"), (NOT_A_DOCUMENT, "10.1000/p")]
    assert "more field(s) than the header" in source.problems[0][2] and "not a regular file" in source.problems[1][2]
    assert (source.manifest_rows, source.used_rows, source.repeated_rows) == (7, 3, 2)
    assert source.manifest_rows == source.used_rows + len(source.problems) + source.repeated_rows
    assert sum(len(files) for files in source.by_doi.values()) == 2 and len(source.by_url) == 1
    trailing = tmp_path / "trailing.csv"  # a comma after the last field is no field
    trailing.write_text("doi,path\n10.1000/a,a.pdf,\n")
    assert not load(f"local:{folder}@{trailing}").problems


def test_a_manifest_with_no_rows_or_columns_of_another_type_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.pdf").write_bytes(b"%PDF-1.4 x")
    empty = tmp_path / "empty.csv"
    empty.write_text("doi,path\n")
    with pytest.raises(ValueError, match=r"empty\.csv: the manifest has a header and no rows"):
        load(f"local:{tmp_path}@{empty}")
    for column, values in (("path", pa.array([5])), ("doi", pa.array([10])), ("path", pa.array([["a.pdf"]]))):
        manifest = tmp_path / "typed.parquet"
        table = {"doi": pa.array(["10.1000/x"]), "path": pa.array(["a.pdf"]), column: values}
        pq.write_table(pa.table(table), manifest)
        with pytest.raises(ValueError, match=rf"typed\.parquet: column {column} holds .*, not text"):
            load(f"local:{tmp_path}@{manifest}")
    pq.write_table(pa.table({"doi": pa.array(["10.1000/x"]).dictionary_encode(), "path": ["a.pdf"]}), manifest)
    assert doi_tasks(load(f"local:{tmp_path}@{manifest}"), "10.1000/x")  # a dictionary of text is text


def test_document_named_entries_that_are_not_files_are_rejects(tmp_path):
    """With the naming rule, a DOI-named pipe, a link to nothing and a link to a file of another
    type were dropped without a count (and a folder of only such entries was told its files
    were not named after DOIs)."""
    (tmp_path / "notes.txt").write_text("x")
    os.mkfifo(tmp_path / "10.1000_pipe.pdf")
    os.symlink(tmp_path / "gone.pdf", tmp_path / "10.1000_broken.pdf")
    os.symlink(tmp_path / "notes.txt", tmp_path / "10.1000_text.pdf")
    source = load(f"local:{tmp_path}")
    assert sorted((reason, os.path.basename(key)) for reason, key, _ in source.problems) == [
        (MISSING, "10.1000_broken.pdf"), (NOT_A_DOCUMENT, "10.1000_pipe.pdf"), (NOT_A_DOCUMENT, "10.1000_text.pdf")]
    assert not source.by_doi


def test_a_file_that_grew_past_the_cap_after_its_size_was_read(tmp_path, monkeypatch):
    (tmp_path / "10.1000_big.pdf").write_bytes(b"%PDF-1.4 " + b"x" * 100)
    backend = LocalFilesBackend(f"local:{tmp_path}", max_bytes=50)
    url = doi_tasks(backend.source, "10.1000/big")[0]["url"]
    monkeypatch.setattr(os.path, "getsize", lambda _path: 10)  # the size read before the file grew
    assert backend.fetch(url).error == "too_large"
