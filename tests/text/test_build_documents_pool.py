"""`BuildDocuments` with child processes gives what it gives inline, and a child that dies
costs nothing: the document is built again in the worker."""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.core.beam_io import COUNTS_TAG
from openmsd_build.text.beam import SHARED_TAG, STAGE_JOBS, BuildDocuments

ABSTRACT = ("We map the chromosomes of wild roses with fluorescent probes and compare the karyotypes "
            "of twelve species collected across three continents over four seasons.")


def _papers() -> list[tuple[dict, list[dict]]]:
    out = []
    for k in range(12):
        meta = {"doi": f"10.1/{k}", "title": f"Wild roses number {k}", "title_source": "crossref",
                "abstract": ABSTRACT + f" Sample {k}." if k % 3 else None, "abstract_source": "crossref",
                "publisher_language": "en", "year": 2020, "venue": None, "type": None, "categories": ["Biology"],
                "relations": []}
        ext = [] if k % 4 == 0 else [{"kind": "landing", "url": f"https://x.org/{k}", "title": None,
                                      "abstract": f"Résumé numéro {k}: " + "les roses sauvages " * 12,
                                      "abstracts": None, "content": "Le texte intégral de l'article. " * 40 if k % 4 == 1 else None,
                                      "pdf_url": None, "language_hints": ["fr"]}]
        out.append((meta, ext))
    return out


def _elements() -> list[tuple[str, list]]:
    """What BuildDocuments gets after the GroupByKey on DOI: values tagged by their producers."""
    return [(meta["doi"], [*(("ext", e) for e in ext), ("meta", meta)]) for meta, ext in _papers()]


def _run(dofn: BuildDocuments) -> tuple[list, list, list]:
    """Main rows, shared-abstract rows and summed counts of every element, then the bundle's end."""
    dofn.setup()
    dofn.start_bundle()
    outputs = [o for element in _elements() for o in dofn.process(element)]
    outputs += [o for o in (dofn.finish_bundle() or ())]
    dofn.teardown()
    rows, shared, counts = [], [], {}
    for out in outputs:
        value = out.value if isinstance(out, beam.pvalue.TaggedOutput) else out
        value = getattr(value, "value", value)  # finish_bundle's windowed values
        tag = out.tag if isinstance(out, beam.pvalue.TaggedOutput) else None
        if tag == COUNTS_TAG:
            for key, n in value.items():
                counts[key] = counts.get(key, 0) + n
        elif tag == SHARED_TAG:
            shared.append(value)
        else:
            rows.append(value)
    return sorted(rows, key=lambda r: r["doi"]), sorted(shared, key=lambda kv: kv[1]["doi"]), counts


def test_children_build_what_the_worker_builds() -> None:
    inline = _run(BuildDocuments(workers=1))
    assert inline[0] or inline[1]
    assert _run(BuildDocuments(workers=2)) == inline


def test_batches_of_any_size_build_the_same_documents() -> None:
    """Papers go to the children in batches (by count and by text size); a batch cut
    anywhere -- one paper a job, 5 (a last batch left for the bundle's end), or by size --
    gives the same rows and counts."""
    inline = _run(BuildDocuments(workers=1))
    for papers, chars in ((1, 4_000_000), (5, 4_000_000), (100, 1)):
        batched = BuildDocuments(workers=2)
        batched.BATCH_PAPERS, batched.BATCH_CHARS = papers, chars
        assert _run(batched) == inline
        if chars > 1:
            expected = (len(_elements()) + papers - 1) // papers
        else:  # a batch ends at each paper with content (k % 4 == 1), and at the bundle's end
            expected = sum(1 for k in range(len(_elements())) if k % 4 == 1) + int((len(_elements()) - 1) % 4 != 1)
        assert batched.pool.stats["documents"] == expected


def test_a_dying_child_costs_nothing() -> None:
    inline = _run(BuildDocuments(workers=1))
    crashing = BuildDocuments(workers=2)
    crashing.BATCH_PAPERS = 5
    crashing.JOBS = {**STAGE_JOBS, "documents": "openmsd_build.text.extract.pool:_debug_exit"}  # os._exit
    assert _run(crashing) == inline
    assert crashing.pool.stats["crashed"] == 3  # batches of 5, 5 and 2: every one built again inline


def test_a_paper_that_fails_in_the_batch_job_is_reported_alone() -> None:
    """`build_documents_job` answers each paper; one that raises gets an error naming the
    exception, and the batch's other papers are built."""
    from openmsd_build.text.documents import build_document, build_documents_job

    papers = _papers()[:3]
    papers.insert(1, ({"doi": "10.1/broken", "title": 17}, [{"kind": "landing", "title": ["not", "text"]}]))
    answers = build_documents_job(b"", papers=papers)["answers"]
    assert len(answers) == 4
    assert "error" in answers[1] and "Error" in answers[1]["error"]
    for k in (0, 2, 3):
        row, outcome = build_document(*papers[k], [])
        assert (answers[k]["row"], answers[k]["outcome"]) == (row, outcome)


def test_a_paper_the_child_could_not_build_is_built_in_the_worker() -> None:
    """An answer that reports an error for one paper of a batch: that paper is built in the
    worker, the others are taken from the answer, and the outputs equal the inline ones."""
    from openmsd_build.text.documents import build_documents_job

    inline, pooled = BuildDocuments(workers=1), BuildDocuments(workers=2)
    inline.setup()
    inline.start_bundle()
    pooled.start_bundle()
    elements = _elements()[:4]
    batch = _papers()[:4]
    answer = build_documents_job(b"", papers=batch)
    answer["answers"][2] = {"error": "RuntimeError: the child could not"}
    mixed = list(pooled._answered(batch, answer, None))
    want = [out for element in elements for out in inline.process(element)]

    def plain(outputs: list) -> list:
        return [(o.tag, o.value) if isinstance(o, beam.pvalue.TaggedOutput) else (None, o) for o in outputs]

    assert want and plain(mixed) == plain(want)
    # the join's own count is taken as a paper arrives (`process`), which `_answered` does not see
    assert inline.bundle_counts.pop("extractions.received") == sum(len(ext) for _, ext in batch)
    assert sum(inline.bundle_counts.values()) >= len(elements) and pooled.bundle_counts == inline.bundle_counts
