"""`bench/build_cost.py`: the papers the stage's building children are given are recorded as
they were given and read back sorted, and each CLD3 call is charged to the function of
`text/documents.py` that asked for it."""

from __future__ import annotations

from pathlib import Path

EN = ("This study evaluates the use of the h-index as a measure of the bibliographic impact of the "
      "scientific production of Brazilian researchers, comparing three different data sources and results. ")


def _paper(doi: str) -> dict:
    return {"doi": doi, "title": "The h-index of Brazilian researchers in three data sources", "title_source": "crossref",
            "abstract": EN * 3, "abstract_source": "crossref"}


def test_recorded_jobs_read_back_as_given(repo_script, run_site_module, tmp_path: Path, monkeypatch) -> None:
    from openmsd_build.text import documents

    bench = repo_script("bench/build_cost.py")
    monkeypatch.setattr(documents, "build_documents_job", documents.build_documents_job)  # restored after
    monkeypatch.setenv("OPENMSD_BUILD_INPUTS", str(tmp_path))
    run_site_module(bench._SITECUSTOMIZE)

    later, first = (_paper("10.1/b"), [{"kind": "pdf", "url": "u", "content": None}]), (_paper("10.1/a"), [])
    answer = documents.build_documents_job(b"", [later, first])
    assert [a["outcome"] for a in answer["answers"]] == ["kept", "kept"]  # the job still builds
    assert bench.load_inputs(tmp_path) == [first, later]


def test_each_cld3_call_is_charged_to_the_function_that_asked(repo_script, monkeypatch) -> None:
    from openmsd_build.core import language
    from openmsd_build.text.documents import build_document

    bench = repo_script("bench/build_cost.py")
    counting = bench._CountingDetector(language.get_detector())
    monkeypatch.setattr(language._local, "detector", counting)
    language.forget_answers()
    row, outcome = build_document(_paper("10.1/a"), [])
    language.forget_answers()
    assert outcome == "kept" and row["language"] == "en"
    assert counting.calls["build_document"] >= 1  # the label: title + abstract
    assert set(counting.calls) <= {"build_document", "_split_paragraph", "_language_runs", "_own_language",
                                   "_sample_language"}
    assert all(counting.seconds[k] > 0 for k in counting.calls)
