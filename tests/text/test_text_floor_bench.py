"""`bench/text_floor.py`: the extractor calls of a stage run are recorded with their arguments
(the extractors still answer), read back in one order, and shared out over the WARC records
holding their document, so that each lane of the floor replays what the stage did on the
records it reads."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HTML = (b"<html><head><title>Seasonal rainfall in the Andes</title>"
        b"<meta name='citation_title' content='Seasonal rainfall in the Andes'></head>"
        b"<body><p>Some text.</p></body></html>")


def test_extractor_calls_are_recorded_and_still_answered(repo_script, run_site_module, tmp_path: Path, monkeypatch) -> None:
    from openmsd_build.text.extract import landing, pool

    bench = repo_script("bench/text_floor.py")
    monkeypatch.setattr(pool, "_load", pool._load)  # restored after
    monkeypatch.setenv("OPENMSD_EXTRACT_CALLS", str(tmp_path))
    run_site_module(bench._SITECUSTOMIZE)

    extract = pool._load("openmsd_build.text.extract.landing:extract_landing")
    answer = extract(HTML, url="https://example.org/a", with_content=False)
    assert answer == landing.extract_landing(HTML, url="https://example.org/a", with_content=False)
    assert answer["title"] == "Seasonal rainfall in the Andes"
    # the document-building job is not an extractor call: loaded as it is, not recorded
    assert pool._load("openmsd_build.text.documents:build_documents_job").__name__ == "build_documents_job"
    sha1 = hashlib.sha1(HTML).hexdigest()
    assert bench.read_calls(tmp_path) == {sha1: [{"spec": "openmsd_build.text.extract.landing:extract_landing",
                                                  "kwargs": {"url": "https://example.org/a", "with_content": False}}]}


def test_calls_are_shared_over_the_records_of_their_document(repo_script, tmp_path: Path) -> None:
    bench = repo_script("bench/text_floor.py")
    deferred = {"spec": "x:extract_landing", "kwargs": {"url": "u", "with_content": False}}
    whole = {"spec": "x:extract_landing", "kwargs": {"url": "u"}}
    pdf = {"spec": "x:extract_pdf", "kwargs": {"titles": None}}
    # recorded by two children in another order than the plan's
    (tmp_path / "1.jsonl").write_text(json.dumps({"sha1": "a", **whole}) + "\n" + json.dumps({"sha1": "b", **pdf}) + "\n")
    (tmp_path / "2.jsonl").write_text(json.dumps({"sha1": "a", **deferred}) + "\n" + json.dumps({"sha1": "c", **pdf}))
    calls = bench.read_calls(tmp_path)
    assert calls["a"] == sorted([whole, deferred], key=lambda c: json.dumps(c, sort_keys=True))
    # page "a" is archived twice (positions 0 and 3), PDF "b" once; "c" is in no record
    plan, unmatched = bench.plan_calls(calls, {"a": [0, 3], "b": [1], "d": [2]})
    assert unmatched == 1
    assert plan == {"0": [calls["a"][0]], "1": [pdf], "3": [calls["a"][1]]}
    assert bench.plan_calls(calls, {"a": [5], "b": [1]})[0]["5"] == calls["a"]  # one record takes both


def test_records_are_numbered_across_the_warc_files_as_the_anchor_counts_them(repo_script, tmp_path: Path) -> None:
    """The floor's lanes take their records through the anchor's own numbering
    (`text_bench.responses`): positions run on across the files."""
    from archive_samples import write_redirect_warcs

    anchor = repo_script("bench/text_bench.py")
    paths = [Path(p) for p in write_redirect_warcs(tmp_path / "warc")]
    numbered = [(position, record.rec_headers.get_header("WARC-Target-URI")) for position, record in
                anchor.responses(paths)]
    seen = anchor.direct(paths)
    assert [p for p, _ in numbered] == list(range(seen["html"] + seen["pdf"]))
    # the second file's one record follows the first file's, not position 0 again
    assert numbered[-1] == (len(numbered) - 1, "http://f.example/twice") and len(numbered) > 2
    assert "http://g.example/gone" not in {url for _, url in numbered}  # a 404 is not a record of either side
    lanes = [anchor.direct(paths, lane=k, lanes=2) for k in (0, 1)]  # the lanes share the records out
    assert sum(r["html"] + r["pdf"] for r in lanes) == len(numbered)
