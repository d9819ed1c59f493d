"""`inspect` when standard output is not UTF-8 (`PYTHONIOENCODING`, a Latin-1 locale, a Windows
console): a page whose title is in another script stopped the command after the extraction,
with a UnicodeEncodeError and a traceback, in the summary and in `--json` alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

TITLE = "\u571f\u58cc\u5fae\u751f\u7269\u7fa4\u843d\u4e0e\u6c14\u5019\u98ce\u9669 \U00020000 \u2014 \u00e9tude"
PAGE = (f'<html><head><meta charset="utf-8"><title>{TITLE}</title><meta name="citation_title" content="{TITLE}">'
        '</head><body><p>x</p></body></html>').encode()


def _inspect(path, encoding: str, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    return subprocess.run([sys.executable, "-c", "from openmsd_build.cli import console_main; console_main()",
                           "inspect", str(path), *flags], env=env, capture_output=True, timeout=120)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_inspect_prints_any_title_to_any_stdout(tmp_path, encoding):
    page = tmp_path / "page.html"
    page.write_bytes(PAGE)
    as_json = _inspect(page, encoding, "--json")
    assert (as_json.returncode, b"Traceback" in as_json.stderr) == (0, False), as_json.stderr[-500:]
    report = json.loads(as_json.stdout.decode(encoding))  # the same JSON, escaped
    assert report["extracted"]["title"] == TITLE
    assert report == json.loads(_inspect(page, "utf-8", "--json").stdout)
    summary = _inspect(page, encoding)
    assert (summary.returncode, b"Traceback" in summary.stderr) == (0, False), summary.stderr[-500:]
    assert b"title:     " in summary.stdout and b"\\u571f" in summary.stdout  # escaped, not lost


def test_a_utf8_stdout_gets_the_characters(tmp_path):
    page = tmp_path / "page.html"
    page.write_bytes(PAGE)
    done = _inspect(page, "utf-8", "--json")
    assert done.returncode == 0 and TITLE.encode() in done.stdout  # as they are, not escaped
