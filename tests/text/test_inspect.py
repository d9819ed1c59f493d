"""`openmsd-build inspect`: local files and a local HTTP server (never the internet)."""

from __future__ import annotations

import argparse
import functools
import http.server
import json
from pathlib import Path

import pytest

from openmsd_build.core.errors import UserError
from openmsd_build.text import inspect as inspect_command


def run_inspect(argv: list[str], beam_args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    inspect_command.add_arguments(parser)
    return inspect_command.run(parser.parse_args(argv), beam_args or [])


def test_file_kind_as_the_stage_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file's bytes decide when they are a PDF's or a page's, else its extension gives its
    media type (as with `--fetch local:`); a file that is neither a PDF nor HTML is not
    extracted (it was read as an HTML page, its raw text coming out as the document's content)."""
    data = tmp_path / "record.json"
    data.write_text(json.dumps({"title": "A study of things", "abstract": "Words " * 80}), encoding="utf-8")
    assert inspect_command.read_source(str(data))[2] is None
    with pytest.raises(UserError, match="is a folder"):
        inspect_command.read_source(str(tmp_path))
    assert run_inspect([str(data), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["error"] == "unsupported_content" and report["content"] is None and report["extracted"] is None
    assert run_inspect([str(data)]) == 1
    assert "ERROR:     unsupported_content" in capsys.readouterr().out
    fragment = tmp_path / "fragment.htm"  # no <html> tag: the extension makes it a page
    fragment.write_text("<p>" + "Words of a page. " * 40 + "</p>", encoding="utf-8")
    assert inspect_command.read_source(str(fragment))[2] == "text/html"
    assert run_inspect([str(fragment), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["text_source"] == "landing"
    saved = tmp_path / "saved-page"  # no extension: sniffed, as a body served without a type
    saved.write_bytes(b"%PDF-1.4 broken")
    assert run_inspect([str(saved), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["text_source"] == "pdf" and report["error"] == "parse_error"


def test_pdf_json(real_samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = real_samples / "pdf" / "scms-upload__rsp_v38n1_18446.pdf"
    assert run_inspect([str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for key in ("title", "abstract", "content", "language", "language_prob", "language_reliable", "text_source",
                "pdf_url", "rules", "n_tokens_title", "n_tokens_abstract", "n_tokens_content"):
        assert key in report, key
    assert report["text_source"] == "pdf"
    assert report["language"] == "pt" and report["language_reliable"] is True
    assert report["rules"]["abstract"] == "abstract_heading" and report["rules"]["language"] == "cld3:title+abstract"
    assert report["n_tokens_abstract"] > 100 and report["n_tokens_content"] > report["n_tokens_abstract"]
    assert report["error"] is None


def test_html_summary(real_samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = real_samples / "html" / "papis__Fallback_kobv.html"
    assert run_inspect([str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("source:") and "[citation_title]" in out and "[DC.description]" in out
    assert "language:  en" in out


def test_extraction_failure_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 broken")
    assert run_inspect([str(bad), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["error"] == "parse_error" and report["language"] == "und"


def test_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError):
        run_inspect([str(tmp_path / "missing.html")])
    with pytest.raises(UserError):
        run_inspect([str(tmp_path / "missing.html")], ["--runner=X"])
    with pytest.raises(UserError):
        run_inspect(["http://127.0.0.1:9/nothing-listens-here", "--allow-network", "127.0.0.0/8", "--no-robots"])


@pytest.fixture()
def local_server(real_samples: Path, serve_http) -> str:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(real_samples / "html"))

    class Quiet(handler.func):  # type: ignore[misc, name-defined]
        def log_message(self, *args: object) -> None:
            pass

    return serve_http(functools.partial(Quiet, directory=str(real_samples / "html")))


def test_fetch_from_local_server(local_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{local_server}/papis__HAL_THESES_tel_02083632v1.html"
    # the stage's address policy: loopback is refused unless allowed, like `text --fetch http`
    with pytest.raises(UserError, match="blocked_address.*--allow-network CIDR"):  # the flag that permits it
        run_inspect([url, "--json", "--no-robots"])
    assert run_inspect([url, "--json", "--no-robots", "--allow-network", "127.0.0.0/8"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source_url"] == url and report["text_source"] == "landing"
    assert report["title"] == "Global discharging methods for coloring problems in graphs"
    assert report["language"] == "en" and report["language_hints"] == ["en", "fr"]
    assert report["pdf_url"].startswith("https://theses.hal.science/")


def test_inspect_applies_the_stage_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What inspect shows is what the stage keeps: an abstract under the stage's minimum
    is not shown as the abstract, and a page with no usable text reports the drop reason."""
    page = tmp_path / "p.html"
    page.write_text("<html><head><title>A short page</title><meta name='citation_title' content='A short page'>"
                    "<meta name='description' content='Too short to be an abstract.'></head>"
                    "<body><p>Nothing else.</p></body></html>")
    run_inspect([str(page), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["abstract"] is None
    assert report["dropped"] in ("abstract_too_short", "content_too_short", "nothing_extracted")


def test_a_file_over_the_stage_cap_is_refused_as_the_stage_refuses_it(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`inspect` answers what the text stage answers: a local file one byte over the body cap
    is `too_large` in both (it once read 50 MiB, the extractors' own limit)."""
    from openmsd_build.text.fetch.local_files import LocalFilesBackend
    from openmsd_build.text.fetch.result import MAX_BODY_BYTES, TOO_LARGE

    big = tmp_path / "big.html"
    big.write_bytes(b"<html><body>" + b" " * (MAX_BODY_BYTES + 1 - len(b"<html><body>")))
    assert run_inspect([str(big), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == TOO_LARGE
    assert LocalFilesBackend(f"local:{tmp_path}").fetch(big.as_uri()).error == TOO_LARGE
    fits = tmp_path / "fits.html"
    fits.write_bytes(big.read_bytes()[:MAX_BODY_BYTES])
    run_inspect([str(fits), "--json"])
    assert json.loads(capsys.readouterr().out)["error"] != TOO_LARGE


def test_the_summary_names_the_rule_of_the_title_it_shows(real_samples: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """With `--title` the paper's metadata title can be the document's: the summary's title
    line names that rule (`metadata`), as its evidence line does, not the PDF's own."""
    pdf = real_samples / "pdf" / "crminer__10.2903_j.efsa.2014.3550.pdf"
    run_inspect([str(pdf), "--title", "Endogenous formaldehyde turnover in humans compared with exogenous "
                                      "contribution from food sources"])
    lines = capsys.readouterr().out.splitlines()
    title = next(line for line in lines if line.startswith("title:"))
    at = next(k for k, line in enumerate(lines) if line.startswith("evidence:"))
    evidence = " ".join(lines[at:at + 2])  # the title's verdict, then the rules on a line of their own
    assert " title_rule=metadata " in evidence and "title_match=1.0: match" in evidence
    assert title.endswith("[metadata]"), (title, evidence)  # the PDF's own rule was pdf_metadata


def test_a_dropped_document_shows_both_titles(real_samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a `--title` of another paper the summary said `title: -` and `dropped=...`: the
    user could not see which title the document prints beside the one given."""
    pdf = real_samples / "pdf" / "crminer__10.2903_j.efsa.2014.3550.pdf"
    given = "Machine learning methods for predicting river sediment dynamics in alpine catchments"
    run_inspect([str(pdf), "--title", given])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("dropped ("))
    assert "formaldehyde" in line.lower() and repr(given) in line, out
    run_inspect([str(pdf), "--title", given, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["metadata_title"] == given and report["dropped"]


def test_a_path_that_is_no_regular_file_is_named_for_what_it_is(tmp_path: Path) -> None:
    """`inspect /dev/null` (or a FIFO) said `no such file`, for a path that exists."""
    import os

    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    for path in (str(fifo), os.devnull):
        with pytest.raises(UserError, match="is not a regular file"):
            run_inspect([path])
    with pytest.raises(UserError, match="no such file"):
        run_inspect([str(tmp_path / "missing.html")])


def test_the_bytes_of_a_pdf_or_page_decide_over_the_extension_as_the_readme_says(
        real_samples: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """README said a file's type comes from its extension, else from its bytes; the stage's
    rule (`fetch.result.sniff_content_type`) is the other way round: a PDF saved as `.html`
    is read as the PDF it is. README now says so; this holds the two together."""
    wrong = tmp_path / "saved.html"
    wrong.write_bytes((real_samples / "pdf" / "crminer__10.2903_j.efsa.2014.3550.pdf").read_bytes())
    assert run_inspect([str(wrong), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["text_source"] == "pdf"
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    row = readme.split("`openmsd-build inspect PATH_OR_URL --json` |", 1)[1].split("|", 1)[0]
    assert "a file's type comes from its bytes when they are a PDF's or a page's, else from its extension" in row, row


def test_an_unrelated_title_is_reported_as_no_match_not_as_a_near_one(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`--title` of an unrelated paper scored title_match=0.3571, printed bare beside a cut of
    0.5 that the summary did not name: it read as close. Two unrelated titles share letter
    pairs and score that much; the summary now gives the verdict against the stage's cut and
    the title words the two share (none), and the JSON the verdict, with the stage's own score."""
    page = tmp_path / "page.html"
    title = "Deep learning for protein structure prediction from amino acid sequences"
    abstract = ("We present a neural network that predicts the three-dimensional structure of proteins from their "
                "amino acid sequences, trained on known structures and evaluated on held-out families.")
    page.write_text(f"<html><head><title>{title}</title><meta name='citation_title' content='{title}'>"
                    f"<meta name='citation_abstract' content='{abstract}'></head><body><h1>{title}</h1>"
                    f"<p>{abstract}</p></body></html>", encoding="utf-8")
    unrelated = "Economic effects of minimum wage increases on rural labour markets in the nineteenth century"
    run_inspect([str(page), "--title", unrelated, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert 0.3 < report["title_match"] < 0.5  # the stage's score, unchanged: the text stage writes it
    assert report["title_verdict"] == "no_match" and report["dropped"] == "title_mismatch"
    run_inspect([str(page), "--title", unrelated])
    evidence = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("evidence:"))
    assert f"title_match={report['title_match']}: no match (under the stage's cut 0.5" in evidence
    assert "no near match" in evidence and "words of --title in the document's title: 0 of 10" in evidence
    run_inspect([str(page), "--title", "Deep learning for protein folding prediction from sequences", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert 0.5 <= report["title_match"] < 1.0 and report["title_verdict"] == "match"
    run_inspect([str(page)])
    assert "evidence:  title_match=None: not checked (no --title given)" in capsys.readouterr().out
