"""The command line never silently ignores what the user said (each case here passed
silently before): repeated flags accumulate, unknown flags are errors naming the closest
valid one, Beam's own flags work in both spellings, and `run` accepts every stage's flags
with the stages' own defaults."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from openmsd_build import cli
from openmsd_build.core.errors import UserError
from openmsd_build.run import command as run_command


def _parsed(command: str, argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = cli.build_parser(command)
    args, extra = parser.parse_known_args([command, *argv])
    return args, cli.split_beam_args(extra, cli._subparser(parser, command))


def test_unknown_flags_are_errors_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["split", "--out", "/nonexistent", "--topk=5"]) == 2
    err = capsys.readouterr().err
    assert "unknown flag '--topk=5'" in err and "--top-k" in err
    with pytest.raises(UserError, match="unknown flag"):
        _parsed("run", ["--out", "o", "--plan-only"])
    with pytest.raises(UserError, match="unexpected argument"):
        _parsed("papers", ["--out", "o", "stray"])


@pytest.mark.parametrize("spelling", [["--runner", "DataflowRunner", "--project", "P"],
                                      ["--runner=DataflowRunner", "--project=P"]])
def test_beam_flags_in_both_spellings(spelling: list[str]) -> None:
    args, beam = _parsed("citations", ["--out", "o", "--opencitations", "a.csv", *spelling])
    assert beam == ["--runner=DataflowRunner", "--project=P"]
    assert args.opencitations == ["a.csv"]


def test_beam_switches_take_no_value() -> None:
    _, beam = _parsed("split", ["--out", "o", "--save_main_session", "--runner", "X"])
    assert beam == ["--save_main_session", "--runner=X"]


def test_repeated_and_multi_value_flags_accumulate() -> None:
    args, _ = _parsed("run", ["--out", "o", "--opencitations", "A", "--opencitations", "B", "C",
                              "--unpaywall", "u1", "u2", "--unpaywall", "u3", "--meta", "m1", "--meta", "m2"])
    assert args.opencitations == ["A", "B", "C"]
    assert args.unpaywall == ["u1", "u2", "u3"]
    assert run_command.stage_argv("citations", args) == [
        "--out", "o", "--opencitations", "A", "--opencitations", "B", "--opencitations", "C",
        "--meta", "m1", "--meta", "m2"]
    papers = run_command.stage_argv("papers", args)
    assert papers.count("--unpaywall") == 3


def test_run_accepts_every_stage_flag_and_passes_only_given_ones() -> None:
    args, _ = _parsed("run", ["--out", "o", "--fetch", "http", "--contact", "mailto:me@example.org",
                              "--rate-per-host", "0.5", "--no-robots", "--top-k", "5", "--shards", "3",
                              "--mixes", "--max-degree", "50"])
    text = run_command.stage_argv("text", args)
    assert text[:4] == ["--out", "o", "--fetch", "http"]
    assert ["--contact", "mailto:me@example.org"] == text[text.index("--contact"):text.index("--contact") + 2]
    assert "--no-robots" in text and "--rate-per-host" in text and "--shards" in text
    split = run_command.stage_argv("split", args)
    assert split == ["--out", "o", "--top-k", "5", "--shards", "3"]  # no --seed: the stage's own default
    pairs = run_command.stage_argv("pairs", args)
    assert "--mixes" in pairs and pairs[pairs.index("--max-degree") + 1] == "50"
    # every flag of every stage parses in the stage's own parser
    for stage, module in run_command.STAGE_MODULES:
        parser = argparse.ArgumentParser()
        __import__(module, fromlist=["x"]).add_arguments(parser)
        if stage == "citations":
            continue  # needs --opencitations
        parser.parse_args(run_command.stage_argv(stage, args))


def test_split_seed_default_is_one_default() -> None:
    from openmsd_build.split.assign import SplitConfig

    args, _ = _parsed("run", ["--out", "o"])
    assert not hasattr(args, "seed")  # not given: the split stage's default applies
    split_parser = argparse.ArgumentParser()
    __import__("openmsd_build.split.command", fromlist=["x"]).add_arguments(split_parser)
    assert split_parser.parse_args(run_command.stage_argv("split", args)).seed == SplitConfig().seed


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("openmsd-build ")
    # after another flag the parser answers it (looked up only then), on stdout, exit 0
    with pytest.raises(SystemExit) as stop:
        cli.main(["-v", "--version"])
    assert stop.value.code in (0, None)
    assert capsys.readouterr().out == f"openmsd-build {cli._version()}\n"


def test_out_flag_for_report_and_release(tmp_path) -> None:
    """`--out` works for every command; OUT positional and --out must agree."""
    from openmsd_build.core.inputs import resolve_out

    args, _ = _parsed("report", ["--out", str(tmp_path)])
    resolve_out(args)
    assert args.out == str(tmp_path)
    args, _ = _parsed("release", [str(tmp_path)])
    resolve_out(args)
    assert args.out == str(tmp_path)
    args, _ = _parsed("release", [str(tmp_path), "--out", str(tmp_path / "other")])
    with pytest.raises(UserError, match="two output roots"):
        resolve_out(args)


def test_release_manifest_has_no_local_paths() -> None:
    from openmsd_build.release.command import _public_path

    assert _public_path("/home/me/snapshots/unpaywall.jsonl.gz") == "unpaywall.jsonl.gz"
    assert _public_path("gs://bucket/crossref/*.json.gz") == "gs://bucket/crossref/*.json.gz"


def test_run_checks_every_input_before_the_first_stage(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """A wrong --opencitations fails at once, naming its flag, before papers and text run."""
    good = tmp_path / "u.jsonl"
    good.write_text("{}\n")
    rc = cli.main(["run", "--out", str(tmp_path / "out"), "--unpaywall", str(good),
                   "--opencitations", str(tmp_path / "nope*.csv"), "--fetch", "none"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--opencitations" in err and "matches no file" in err
    assert not (tmp_path / "out" / "papers").exists()


@pytest.mark.parametrize("flag, value", [("--extract-timeout", "0"), ("--rate-per-host", "nan"),
                                         ("--host-shards", "0"), ("--extract-workers", "-1")])
def test_run_checks_the_text_flags_before_the_first_stage(tmp_path, capsys, flag, value) -> None:
    """`text` refused its flags out of range, but in a `run` only when its turn came: after
    the papers stage, which takes hours at full scale. They are the text stage's argparse
    types, which `run` takes with the flags: a usage error when the run's line is parsed."""
    good = tmp_path / "u.jsonl"
    good.write_text("{}\n")
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", "--out", str(tmp_path / "out"), "--unpaywall", str(good), "--fetch", "none", flag, value])
    assert stop.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"argument {flag}: must be " in errors[0], errors
    assert not (tmp_path / "out").exists()


def test_all_rejected_inputs_exit_non_zero_and_keep_outputs(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """Papers given a file of the wrong kind: every record rejected -> exit 2 with the
    reasons, and the previous papers/ stays."""
    bad = tmp_path / "wrong.jsonl"
    bad.write_text("not json\n" * 5)
    out = tmp_path / "out"
    (out / "papers").mkdir(parents=True)
    (out / "papers" / "part-00000-of-00001.parquet").write_bytes(b"previous")
    (out / "_stats").mkdir()
    (out / "_stats" / "papers.json").write_text("{}")  # the previous run's: a build
    rc = cli.main(["papers", "--out", str(out), "--unpaywall", str(bad)])
    assert rc == 2
    err = capsys.readouterr().err
    assert "all 5 records read were rejected" in err
    assert (out / "papers" / "part-00000-of-00001.parquet").read_bytes() == b"previous"


def test_run_plan_runs_nothing(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "u.jsonl"
    good.write_text('{"doi": "10.1/x"}\n')
    out = tmp_path / "out"
    rc = cli.main(["run", "--out", str(out), "--unpaywall", str(good), "--fetch", "http", "--to-stage", "text", "--plan"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "nothing is run" in text and "--unpaywall" in text and "1 files" in text
    assert "papers: papers, rejects/papers, _stats/papers.json (not built yet: this run builds it)" in text
    # never built is not stale: an empty --out has nothing a run could leave stale
    assert "stale" not in text and "not built yet, nor by this run: citations, split, pairs, contexts" in text
    assert "fetch queue unknown until papers/ exists" in text
    assert not out.exists()
    # the citations inputs are named and sized as the others are
    coci = tmp_path / "coci.csv"
    coci.write_text("oci,citing,cited,creation,timespan,journal_sc,author_sc\n")
    rc = cli.main(["run", "--out", str(out), "--unpaywall", str(good), "--fetch", "none", "--opencitations", str(coci),
                   "--to-stage", "citations", "--plan"])
    assert rc == 0
    size = coci.stat().st_size
    assert f"--opencitations {coci}: 1 files, {size:,} bytes" in capsys.readouterr().out


def test_gcs_without_credentials_fails_fast(monkeypatch, tmp_path) -> None:
    from openmsd_build.core.runner import check_cloud_credentials

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setattr("pathlib.Path.home", lambda: tmp_path)
    check_cloud_credentials(["report", "--out", "/local"], [])  # no gs:// path: nothing to check
    import pathlib

    if "Google" not in (pathlib.Path("/sys/class/dmi/id/product_name").read_text()
                        if pathlib.Path("/sys/class/dmi/id/product_name").exists() else ""):
        with pytest.raises(UserError, match="need Google Cloud credentials"):
            check_cloud_credentials(["report", "--out", "gs://b/build"], [])
    monkeypatch.delenv("NO_GCE_CHECK", raising=False)
    check_cloud_credentials(["report", "--out", "gs://b/build"], ["--no_auth"])  # anonymous, asked for
    import os

    assert os.environ.get("NO_GCE_CHECK") == "True"


def test_local_worker_pool_without_beam_fails_fast(monkeypatch, tmp_path) -> None:
    """The README's portable-runner snippet used to hang when `python` on PATH lacked Beam."""
    from openmsd_build.core.runner import check_local_worker_pool

    external = ["--runner=PortableRunner", "--environment_type=EXTERNAL", "--environment_config=localhost:50000"]
    monkeypatch.setenv("PATH", str(tmp_path))  # no python at all on PATH
    with pytest.raises(UserError, match="cannot import apache_beam"):
        check_local_worker_pool(external)
    check_local_worker_pool(["--runner=PortableRunner", "--environment_type=EXTERNAL",
                             "--environment_config=pool.example:50000"])  # a remote pool is not judged
    import sys
    from pathlib import Path

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # the venv's python: fine
    check_local_worker_pool(external)


def test_a_reader_that_goes_away_ends_the_output_quietly(real_samples) -> None:
    """`openmsd-build inspect --json FILE | head`: the reader closed the pipe before the
    output was written; the program stops with status 1 and no traceback."""
    pdf = real_samples / "pdf" / "crminer__10.2903_j.efsa.2014.3550.pdf"
    proc = subprocess.Popen([sys.executable, "-c", "from openmsd_build.cli import console_main; console_main()",
                             "inspect", "--json", str(pdf)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # gone before anything is written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_another_broken_pipe_is_an_error(monkeypatch) -> None:
    """Only a closed standard output ends quietly: a pipe to a child or a socket that broke
    is a real error, raised."""
    def broken() -> int:
        raise BrokenPipeError("a child's pipe")

    monkeypatch.setattr(cli, "main", broken)
    # console_main marks the process as the program (a later Ctrl-C then ends it at once, SIGINT
    # at its default action): put back after the test, or every later in-process interrupt of
    # this pytest process left SIGINT at the default action
    monkeypatch.setattr(cli, "_program", cli._program)
    with pytest.raises(BrokenPipeError, match="a child's pipe"):
        cli.console_main()


def test_an_input_inside_a_folder_the_run_replaces_is_refused(tmp_path, capsys) -> None:
    """An input kept in a folder named like a stage's output (OUT/papers/, OUT/citations/)
    was deleted with the old outputs when the stage swapped its new ones in: refused first,
    for one stage and for `run` (papers/ is swapped before citations reads its input)."""
    out = tmp_path / "build"
    (out / "papers").mkdir(parents=True)
    (out / "citations").mkdir()
    snapshot = out / "papers" / "u.jsonl"
    snapshot.write_text('{"doi": "10.1/x"}\n')
    coci = out / "citations" / "coci.csv"
    coci.write_text("oci,citing,cited,creation,timespan,journal_sc,author_sc\n")
    outside = tmp_path / "u.jsonl"
    outside.write_text('{"doi": "10.1/x"}\n')
    (out / "papers" / "a.warc.gz").write_bytes(b"")
    runs = [["papers", "--out", str(out), "--unpaywall", str(out / "papers" / "*.jsonl")],
            ["run", "--out", str(out), "--unpaywall", str(outside), "--fetch", "none", "--opencitations", str(coci),
             "--to-stage", "citations"],
            ["run", "--out", str(out), "--unpaywall", str(outside), "--fetch", f"warc:{out}/papers/*.warc.gz",
             "--to-stage", "text", "--plan"]]
    for argv in runs:
        assert cli.main(argv) == 2, argv
        assert "which this run replaces" in capsys.readouterr().err
    assert snapshot.exists() and coci.exists() and (out / "papers" / "a.warc.gz").exists()


def test_run_into_a_folder_that_is_not_a_build_keeps_its_folders(tmp_path, capsys) -> None:
    """`run` removes report/, export/, release/ and evaluation/ once its first stage is rebuilt
    (they describe a whole build): in a folder that was not a build they were a user's own, and were
    deleted, even by a run that then failed. Refused unless OUT is a build (`_stats/`); in a
    build, a linked release/ is unlinked, not followed (rmtree raised on it)."""
    out = tmp_path / "project"
    for name in ("report", "export", "release", "evaluation"):
        (out / name).mkdir(parents=True)
        (out / name / "notes.txt").write_text("mine")
    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x", "title": "T"}\n')
    argv = ["run", "--out", str(out), "--unpaywall", str(snapshot), "--fetch", "none", "--to-stage", "papers"]
    assert cli.main(argv) == 2
    assert "is not a build (no _stats/) but holds evaluation, export, release, report" in capsys.readouterr().err
    assert all((out / name / "notes.txt").read_text() == "mine" for name in ("report", "export", "release", "evaluation"))

    build = tmp_path / "build"
    assert cli.main(["run", "--out", str(build), "--unpaywall", str(snapshot), "--fetch", "none",
                     "--to-stage", "papers"]) == 0
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "MANIFEST.json").write_text("{}")
    (build / "release").symlink_to(kept)
    assert cli.main(["run", "--out", str(build), "--unpaywall", str(snapshot), "--fetch", "none",
                     "--to-stage", "papers"]) == 0
    assert not (build / "release").exists() and (kept / "MANIFEST.json").exists()


def test_a_run_interrupted_in_its_first_stage_keeps_the_build_whole(tmp_path, monkeypatch, capsys) -> None:
    """`run` removed report/, export/, release/ and evaluation/ before its first stage ran, so
    a Ctrl-C (or a failure) in that stage left the build without its export and release while
    saying "the previous outputs are intact". They go once a stage is rebuilt."""
    from openmsd_build.papers import command as papers_command

    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x", "title": "T"}\n')
    build = tmp_path / "build"
    argv = ["run", "--out", str(build), "--unpaywall", str(snapshot), "--fetch", "none", "--to-stage", "papers",
            "--no-report"]
    assert cli.main(argv) == 0
    for name in ("report", "export", "release", "evaluation"):
        (build / name).mkdir()
        (build / name / "kept.txt").write_text("an earlier build's")

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt  # a Ctrl-C while the first stage runs

    with monkeypatch.context() as patch:
        patch.setattr(papers_command, "run", interrupted)
        assert cli.main(argv) == 130
    assert "interrupted; the previous outputs are intact" in capsys.readouterr().err
    assert all((build / name / "kept.txt").exists() for name in ("report", "export", "release", "evaluation"))
    assert cli.main(argv) == 0  # papers rebuilt: what described the earlier build is gone
    assert not any((build / name).exists() for name in ("report", "export", "release", "evaluation"))


def test_a_stage_into_a_folder_that_is_not_a_build_keeps_its_folders(tmp_path, capsys) -> None:
    """A single stage swaps its folders in when it ends: into a folder that no stage had built
    (no `_stats/`) but that held someone's `papers/` or `rejects/papers/`, `papers` replaced
    them. Refused before the stage runs, as `run` refuses; a build (`_stats/`) is re-run."""
    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x", "title": "T"}\n')
    for held in ("papers", "rejects/papers"):
        out = tmp_path / held.replace("/", "-")
        (out / held).mkdir(parents=True)
        (out / held / "notes.txt").write_text("mine")
        assert cli.main(["papers", "--out", str(out), "--unpaywall", str(snapshot)]) == 2
        assert f"is not a build (no _stats/) but holds {held}" in capsys.readouterr().err
        assert (out / held / "notes.txt").read_text() == "mine"
        assert not (out / "_tmp").exists()
    # a scratch folder named _tmp is no sign of a build; a stage's own root there is
    scratch = tmp_path / "scratch"
    (scratch / "_tmp" / "notes").mkdir(parents=True)
    (scratch / "papers").mkdir()
    assert cli.main(["papers", "--out", str(scratch), "--unpaywall", str(snapshot)]) == 2
    assert "is not a build (no _stats/) but holds papers" in capsys.readouterr().err
    (scratch / "_tmp" / "papers-999999999-1").mkdir()  # a first run killed inside its swap
    assert cli.main(["papers", "--out", str(scratch), "--unpaywall", str(snapshot)]) == 0
    build = tmp_path / "build"
    assert cli.main(["papers", "--out", str(build), "--unpaywall", str(snapshot)]) == 0
    assert cli.main(["papers", "--out", str(build), "--unpaywall", str(snapshot)]) == 0


def test_an_input_folder_holding_the_build_is_refused(tmp_path, capsys) -> None:
    """A folder input is read whole: `--crossref OUT` (or a folder holding OUT) read the build's
    own papers/*.parquet, rejects and stats as Crossref records, and an input kept in
    OUT/papers/ was deleted by the swap, past the guard on input paths."""
    data = tmp_path / "data"
    out = data / "build"
    (out / "papers").mkdir(parents=True)
    kept = out / "papers" / "works.jsonl"
    kept.write_text('{"DOI": "10.1234/x", "title": ["T"]}\n')
    for folder in (out, data):
        argv = ["papers", "--out", str(out), "--crossref", str(folder)]
        assert cli.main(argv) == 2, argv
        assert "holds the build" in capsys.readouterr().err
        assert cli.main(["run", "--out", str(out), "--crossref", str(folder), "--fetch", "none", "--to-stage",
                         "papers", "--plan"]) == 2
        assert "holds the build" in capsys.readouterr().err
    assert kept.exists()
    # folders only some of whose files are read may hold the build: a local manifest's folder,
    # the prefix of the WARC files a cc-index names
    from openmsd_build.core.inputs import refuse_inputs_in_outputs

    manifest = tmp_path / "m.csv"
    manifest.write_text("doi,path\n10.1234/x,x.pdf\n")
    refuse_inputs_in_outputs(str(out), ["text"], [f"local:{data}@{manifest}"], [str(data)])
    with pytest.raises(UserError, match="holds the build"):
        refuse_inputs_in_outputs(str(out), ["text"], [f"local:{data}"])
    beside = tmp_path / "inputs"
    beside.mkdir()
    (beside / "works.jsonl").write_text('{"DOI": "10.1234/x", "title": ["T"]}\n')
    # OUT is no build and its papers/ holds the user's file: the swap would delete it
    assert cli.main(["papers", "--out", str(out), "--crossref", str(beside)]) == 2
    assert "is not a build (no _stats/) but holds papers" in capsys.readouterr().err and kept.exists()


def test_run_from_a_later_stage_gives_contexts_the_crossref_files_papers_read(tmp_path, capsys) -> None:
    """`run --from-stage split` without --crossref ran contexts on no reference list (0 of 200
    markers resolved, no warning); it now passes the Crossref files the build's papers stage
    recorded reading (those still there)."""
    out = tmp_path / "b"
    (out / "_stats").mkdir(parents=True)
    works = tmp_path / "works.jsonl"
    works.write_text("{}\n")
    inputs = [{"source": "crossref", "path": str(works), "bytes": 3}, {"source": "unpaywall", "path": "u", "bytes": 1},
              {"source": "crossref", "path": str(tmp_path / "gone.jsonl"), "bytes": 1}]
    (out / "_stats" / "papers.json").write_text(json.dumps({"stage": "papers", "inputs": inputs}))
    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    args = parser.parse_args(["--out", str(out), "--from-stage", "split"])
    argv = run_command.stage_argv("contexts", args, say=True)
    assert [argv[k + 1] for k, v in enumerate(argv) if v == "--crossref"] == [str(works)]
    assert "1 of the 2 Crossref files the papers stage read are not found from here" in capsys.readouterr().err
    assert run_command.stage_argv("contexts", args) == argv and capsys.readouterr().err == ""  # said once a run
    given = run_command.stage_argv("contexts", parser.parse_args(["--out", str(out), "--crossref", "x/*.json"]))
    assert [given[k + 1] for k, v in enumerate(given) if v == "--crossref"] == ["x/*.json"]


def test_papers_records_its_inputs_so_a_run_elsewhere_finds_them(tmp_path, monkeypatch) -> None:
    """The papers stage recorded input paths as given: run from another folder, `run
    --from-stage split` found none of the relative Crossref paths (and gave contexts no
    reference list). Local inputs are recorded absolute; rejects keep the path as given."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "works.jsonl").write_text('{"DOI": "10.1234/x", "title": ["T"]}\nnot json\n')
    monkeypatch.chdir(data)
    assert cli.main(["papers", "--out", "../b", "--crossref", "works.jsonl"]) == 0
    stats = json.loads((tmp_path / "b" / "_stats" / "papers.json").read_text())
    assert [row["path"] for row in stats["inputs"]] == [str(data / "works.jsonl")]
    rejects = pq.read_table(tmp_path / "b" / "rejects" / "papers").to_pylist()
    assert [row["source"] for row in rejects] == ["works.jsonl"]
    monkeypatch.chdir(tmp_path)
    assert run_command.recorded_crossref("b") == [str(data / "works.jsonl")]


def test_run_from_a_stage_whose_upstream_never_ran_is_refused_first(tmp_path, capsys) -> None:
    """`run --plan --from-stage split` into a folder without citations printed a normal plan,
    and the run then failed on "no Parquet files under .../citations" (leaving an empty OUT)."""
    out = tmp_path / "nowhere"
    for plan in (["--plan"], []):
        assert cli.main(["run", "--out", str(out), "--from-stage", "split", "--opencitations", "x.csv", *plan]) == 2
        err = capsys.readouterr().err
        assert "--from-stage split reads what papers, text, citations write" in err, err
        assert "(--from-stage papers)" in err
    assert not out.exists()
    # outputs without their stats (a reconstructed release's papers/) are outputs
    (out / "papers").mkdir(parents=True)
    pq.write_table(pa.table({"doi": ["10.1/x"]}), out / "papers" / "part-00000-of-00001.parquet")
    assert cli.main(["run", "--out", str(out), "--from-stage", "citations", "--opencitations", "x.csv",
                     "--plan"]) == 2
    assert "--from-stage citations reads what text writes" in capsys.readouterr().err


def test_out_that_is_a_file_is_a_clear_error(tmp_path, capsys) -> None:
    """`papers --out FILE` ended in a NotADirectoryError traceback (OUT/_tmp)."""
    afile = tmp_path / "afile"
    afile.write_text("mine")
    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x"}\n')
    for argv in (["papers", "--out", str(afile), "--unpaywall", str(snapshot)], ["report", str(afile)],
                 ["papers", "--out", f"file://{afile}", "--unpaywall", str(snapshot)],
                 ["run", "--out", str(afile), "--unpaywall", str(snapshot), "--fetch", "none"]):
        assert cli.main(argv) == 2, argv
        assert "is a file, not a folder" in capsys.readouterr().err
    assert afile.read_text() == "mine"


def test_plan_names_enrich_among_what_a_text_rebuild_leaves_stale(tmp_path, capsys) -> None:
    """`export --text enriched` refuses summaries of an earlier text stage, but `run --plan
    --from-stage text` did not list enrich among what the run leaves stale."""
    out = tmp_path / "b"
    (out / "papers").mkdir(parents=True)
    pq.write_table(pa.table({"doi": ["10.1/x"]}), out / "papers" / "part-00000-of-00001.parquet")
    (out / "enriched").mkdir()
    argv = ["run", "--out", str(out), "--from-stage", "text", "--to-stage", "text", "--fetch", "none", "--plan"]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    # enrich's summaries exist and go stale; the later stages were never built: not stale
    assert "after this run, stale unless re-run: enrich\n" in text
    assert "not built yet, nor by this run: citations, split, pairs, contexts" in text


def test_plan_says_not_built_for_stages_never_built_and_stale_only_for_readers(tmp_path, capsys) -> None:
    """`run --plan` listed every stage after --to-stage as "stale unless re-run": ones never
    built (no outputs at all) and ones that read nothing the run rebuilds (contexts after
    pairs). A stage never built is "not built yet"; only a built stage reading what the run
    rebuilds is stale."""
    out = tmp_path / "b"
    for name, folders in (("papers", ["papers"]), ("text", ["documents"]), ("citations", ["citations"]),
                          ("split", ["splits"]), ("pairs", ["pairs/dc"]), ("contexts", ["contexts"])):
        (out / "_stats").mkdir(parents=True, exist_ok=True)
        (out / "_stats" / f"{name}.json").write_text("{}")
        for folder in folders:
            (out / folder).mkdir(parents=True)
    coci = tmp_path / "coci.csv"
    coci.write_text("oci,citing,cited,creation,timespan,journal_sc,author_sc\n")

    def plan(*argv: str) -> str:
        assert cli.main(["run", "--out", str(out), "--fetch", "none", "--opencitations", str(coci), *argv,
                         "--plan"]) == 0
        return capsys.readouterr().out

    text = plan("--from-stage", "pairs", "--to-stage", "pairs")
    assert "(replaces existing pairs/dc)" in text
    assert "stale" not in text and "not built yet" not in text  # contexts reads text and split, not pairs
    text = plan("--from-stage", "citations", "--to-stage", "citations")
    assert "after this run, stale unless re-run: split, pairs, contexts\n" in text
    shutil.rmtree(out / "contexts")
    (out / "_stats" / "contexts.json").unlink()
    text = plan("--from-stage", "citations", "--to-stage", "citations")
    assert "after this run, stale unless re-run: split, pairs\n" in text
    assert "not built yet, nor by this run: contexts\n" in text
    text = plan("--from-stage", "citations")
    assert "contexts: contexts, pairs/ccs, rejects/contexts, _stats/contexts.json (not built yet: this run builds it)" \
        in text
    assert "stale" not in text


def test_plan_names_only_the_whole_build_folders_there_which_are_what_the_run_removes(tmp_path, capsys) -> None:
    """`run --plan` always said 'removed first (they describe a whole build): evaluation/,
    export/, release/, report/', into a new folder too, where none of them existed. It names
    those OUT holds (nothing when none), and they are what the real run then removes."""
    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x", "title": "T"}\n')
    out = tmp_path / "b"
    argv = ["run", "--out", str(out), "--unpaywall", str(snapshot), "--fetch", "none", "--to-stage", "papers",
            "--no-report"]

    def planned() -> list[str]:
        assert cli.main([*argv, "--plan"]) == 0
        said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("removed once the first stage is rebuilt")]
        assert len(said) <= 1, said
        return said[0].split("): ", 1)[1].split(", ") if said else []

    assert planned() == []  # a new folder
    assert cli.main(argv) == 0
    capsys.readouterr()
    assert planned() == []  # a build holding none of them
    (out / "report").mkdir()
    (out / "report" / "report.html").write_text("an earlier build's")
    (out / "evaluation" / "large_pool").mkdir(parents=True)
    (out / "notes").mkdir()  # the user's: no build folder, kept
    plan = planned()
    assert plan == ["evaluation/", "report/"]
    before = {p.name for p in out.iterdir()}
    assert cli.main(argv) == 0
    removed = sorted(f"{name}/" for name in before - {p.name for p in out.iterdir()})
    assert removed == plan
    assert (out / "notes").is_dir() and (out / "papers").is_dir()


def test_run_shards_zero_is_refused_before_any_stage_when_later_stages_need_one(tmp_path, capsys) -> None:
    """`run --shards 0` passed parsing (papers' and text's 0 means "as the inputs"), ran papers
    and text, then failed at citations (which needs 1 or more)."""
    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x", "title": "T"}\n')
    out = tmp_path / "b"
    assert cli.main(["run", "--out", str(out), "--unpaywall", str(snapshot), "--fetch", "none",
                     "--opencitations", str(snapshot), "--shards", "0"]) == 2
    assert "--shards 0: citations, split, pairs, contexts need 1 or more" in capsys.readouterr().err
    assert not (out / "papers").exists()
    assert cli.main(["run", "--out", str(out), "--unpaywall", str(snapshot), "--fetch", "none",
                     "--to-stage", "text", "--shards", "0"]) == 0


def test_text_inputs_inside_its_own_outputs_are_refused_by_the_stage_command(tmp_path, capsys) -> None:
    """`openmsd-build text --fetch warc:OUT/fetch/arch/*.warc.gz` (or `local:OUT/documents/pdfs`)
    ran and its swap deleted the input: the guard skipped the parsed `--fetch` value, which is
    no string. `run` refused it; a manifest after `@` and a second glob after a comma were not
    looked at by either."""
    out = tmp_path / "build"
    snapshot = tmp_path / "u.jsonl"
    snapshot.write_text('{"doi": "10.1234/x", "title": "T", "oa_locations": [{"url": "https://x.org/a"}]}\n')
    assert cli.main(["papers", "--out", str(out), "--unpaywall", str(snapshot)]) == 0
    kept = []
    for folder, name in (("fetch/arch", "a.warc.gz"), ("documents/pdfs", "10.1234_x.pdf"), ("documents", "m.csv")):
        (out / folder).mkdir(parents=True, exist_ok=True)
        (out / folder / name).write_bytes(b"doi,path\n10.1234/x,x.pdf\n")
        kept.append(out / folder / name)
    beside = tmp_path / "local"
    beside.mkdir()
    for fetch in (f"warc:{out}/fetch/arch/*.warc.gz", f"warc:{snapshot},{out}/fetch/arch/a.warc.gz",
                  f"local:{out}/documents/pdfs", f"local:{beside}@{out}/documents/m.csv"):
        assert cli.main(["text", "--out", str(out), "--fetch", fetch]) == 2, fetch
        assert "which this run replaces" in capsys.readouterr().err, fetch
        assert cli.main(["run", "--out", str(out), "--from-stage", "text", "--to-stage", "text", "--fetch", fetch,
                         "--plan"]) == 2, fetch
        assert "which this run replaces" in capsys.readouterr().err, fetch
    assert all(path.read_bytes() == b"doi,path\n10.1234/x,x.pdf\n" for path in kept)


def test_the_input_guard_splits_local_folder_at_sign_as_the_stage_does(tmp_path) -> None:
    """`local:FOLDER@MANIFEST` with `@` in a folder's name: the guard split at the first `@`
    while the stage takes the first `@` before which a folder stands, so a folder `data@2024`
    holding the build was let through and a folder `OUT/fetch@old` refused."""
    from openmsd_build.core.inputs import refuse_inputs_in_outputs

    data = tmp_path / "data@2024"
    (data / "build").mkdir(parents=True)
    with pytest.raises(UserError, match="holds the build"):
        refuse_inputs_in_outputs(str(data / "build"), ["text"], [f"local:{data}"])
    out = tmp_path / "out"
    (out / "fetch@old").mkdir(parents=True)
    refuse_inputs_in_outputs(str(out), ["text"], [f"local:{out}/fetch@old"])  # beside OUT/fetch, not in it


def test_run_plan_fetch_time_on_the_local_runner(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    """The local runner's one worker fetches the hosts one after another (26 URLs on 2 hosts
    at 1 req/s took 27 s against a local server), but the plan gave the slowest host's time
    (13 s) as the bound: on that runner the bound is the sum over hosts."""
    from openmsd_build.core import layout, parquet_io
    from openmsd_build.schemas import PAPERS

    out = tmp_path / "out"
    papers = [{name: None for name in PAPERS.names} | {
        "doi": f"10.1/{host}{k}", "urls": [{"url": f"http://{host}.example/{k}", "kind": "landing", "rank": 0}]}
        for host in ("a", "b") for k in range(3)]
    parquet_io.write_table(parquet_io.table_from_rows(papers, PAPERS), parquet_io.part_path(layout.papers_dir(str(out)),
                                                                                             0, 1))
    assert cli.main(["run", "--out", str(out), "--from-stage", "text", "--to-stage", "text", "--fetch", "http",
                     "--plan"]) == 0
    text = capsys.readouterr().out
    assert "fetch queue 6 URLs on 2 hosts at 1 req/s per host" in text
    assert "the local runner fetches the hosts one after another: 6 s at that rate" in text, text


@pytest.mark.parametrize("argv", [
    ["papers", "--split-files-over", "-1"], ["split", "--min-idt-groups", "-1"],
    ["export", "--max-bridge-degree", "0"], ["enrich", "--batch-size", "0"], ["enrich", "--rate", "-1"],
    ["enrich", "--rate", "nan"], ["enrich", "--timeout", "inf"], ["run", "--min-idt-groups", "-1"],
])
def test_numeric_flags_out_of_range_are_usage_errors(tmp_path, capsys, argv) -> None:
    """These were taken as given: `enrich --rate -1` (no limit), `--batch-size 0`, `export
    --max-bridge-degree 0` (every bridge paper skipped), negative sizes and counts, and nan,
    which passes any comparison. Each is now a usage error naming the flag (exit 2)."""
    with pytest.raises(SystemExit) as stopped:
        cli.main([argv[0], "--out", str(tmp_path / "out"), *argv[1:]])
    assert stopped.value.code == 2
    assert f"argument {argv[1]}:" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
