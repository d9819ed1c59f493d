"""`--fetch` is read once (`FetchSpec.parse`): every form, its spelling back, and clear errors."""

from __future__ import annotations

import re

import pytest

from openmsd_build.core.errors import UserError
from openmsd_build.text.fetch.spec import FetchSpec, usage


@pytest.mark.parametrize(("text", "mode", "globs", "live", "archive"), [
    ("none", "none", (), False, None),
    ("http", "http", (), True, None),
    ("warc:/a/*.warc.gz", "warc", ("/a/*.warc.gz",), False, "warc"),
    ("warc:/a/x.warc.gz,gs://b/*.warc.gz", "warc", ("/a/x.warc.gz", "gs://b/*.warc.gz"), False, "warc"),
    ("cc-index:/cc/*.parquet", "cc-index", ("/cc/*.parquet",), False, "cc-index"),
])
def test_every_form_reads_into_one_value_and_spells_back(text, mode, globs, live, archive) -> None:
    spec = FetchSpec.parse(text)
    assert (spec.mode, spec.globs, spec.live, spec.archive_kind) == (mode, globs, live, archive)
    assert spec.fetches == (mode != "none")
    assert str(spec) == text and FetchSpec.parse(spec) is spec


@pytest.mark.parametrize("text", ["", "warc", "warc:", "http:/x", "none:x", "ftp:/x", "WARC:/x", "cc-index"])
def test_anything_else_is_an_error_naming_the_forms(text) -> None:
    with pytest.raises(UserError, match=re.escape(f"--fetch must be {usage()}, not {text!r}")):
        FetchSpec.parse(text)
    assert usage() == "none | http | warc:GLOB | cc-index:GLOB | local:FOLDER[@MANIFEST]"


def test_the_command_line_gives_the_command_a_fetch_spec() -> None:
    from openmsd_build.cli import build_parser

    args, _extra = build_parser("text").parse_known_args(["text", "--out", "o", "--fetch", "warc:/a/*.gz"])
    assert args.fetch == FetchSpec("warc", ("/a/*.gz",))
    with pytest.raises(SystemExit):
        build_parser("text").parse_known_args(["text", "--out", "o", "--fetch", "warc"])
