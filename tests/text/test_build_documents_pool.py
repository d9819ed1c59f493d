"""`BuildDocuments` with child processes gives what it gives inline, and a child that dies
costs nothing: the document is built again in the worker."""

from __future__ import annotations

import apache_beam as beam

from openmsd_build.core.beam_io import COUNTS_TAG
from openmsd_build.text.beam import SHARED_TAG, STAGE_JOBS, BuildDocuments

ABSTRACT = ("We map the chromosomes of wild roses with fluorescent probes and compare the karyotypes "
            "of twelve species collected across three continents over four seasons.")


def _elements() -> list[tuple[str, dict]]:
    out = []
    for k in range(12):
        meta = {"doi": f"10.1/{k}", "title": f"Wild roses number {k}", "title_source": "crossref",
                "abstract": ABSTRACT + f" Sample {k}." if k % 3 else None, "abstract_source": "crossref",
                "publisher_language": "en", "year": 2020, "venue": None, "type": None, "categories": ["Biology"],
                "relations": []}
        ext = [] if k % 4 == 0 else [{"kind": "landing", "url": f"https://x.org/{k}", "title": None,
                                      "abstract": f"Résumé numéro {k}: " + "les roses sauvages " * 12,
                                      "abstracts": None, "content": None, "pdf_url": None, "language_hints": ["fr"]}]
        out.append((meta["doi"], {"meta": [meta], "ext": ext}))
    return out


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


def test_a_dying_child_costs_nothing() -> None:
    inline = _run(BuildDocuments(workers=1))
    crashing = BuildDocuments(workers=2)
    crashing.JOBS = {**STAGE_JOBS, "document": "openmsd_build.text.extract.isolate:_debug_exit"}  # os._exit
    assert _run(crashing) == inline
    assert crashing.pool.stats["crashed"] == len(_elements())
