"""Several instances of the text stage's extracting and building DoFns at work in one process
at once, one per thread, give what one instance gives alone.

Dataflow runs several bundles of one SDK process at the same time, each in a thread with a
DoFn instance of its own (`deploy/dataflow/launch.sh` gives the text stage 48 threads a
worker), so every instance's pool of children comes from the one fork server of the process
while the others' do too, and the stage's shared state (progress tallies, the CLD3 memo, the
inflated copies of one-stream archives) is used from every thread. Beam's own local runner
cannot show this: its `multi_threading` mode loses records by itself (`core.runner`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import apache_beam as beam
from archive_samples import page

from openmsd_build.core.beam_io import COUNTS_TAG
from openmsd_build.text.beam import FETCH_TAG, META_FIELDS, BuildDocuments, ReplayArchive
from openmsd_build.text.fetch import WarcWriter
from openmsd_build.text.fetch.archive_join import advance, new_units
from openmsd_build.text.fetch.plan import canonical_url
from openmsd_build.text.fetch.result import FetchResult
from openmsd_build.text.fetch.warc_index import index_warc_file

THREADS = 4


def _units(tmp_path, n: int = 24) -> list[dict]:
    """Resolved archive units of `n` landing pages (one paper each), as `JoinArchiveIndex`
    gives them to `ReplayArchive`."""
    warc = str(tmp_path / "pages.warc.gz")
    urls = [f"https://journal{k % 3}.example/article/{k}" for k in range(n)]
    with WarcWriter(warc) as writer:
        for k, url in enumerate(urls):
            writer.write(FetchResult(url=url, final_url=url, status=200, headers={"Content-Type": "text/html"},
                                     body=page(f"Archived paper number {k} on threads"), content_type="text/html",
                                     fetched_at="2024-01-02T03:04:05Z"))
    rows = {canonical_url(r["url"]): r for r in index_warc_file(warc)}
    units = []
    for k, url in enumerate(urls):
        (unit,) = new_units([{"doi": f"10.1/{k}", "url": url, "kind": "landing", "follow": True, "title_keys": None}])
        unit, resolved = advance(unit, rows[canonical_url(url)])
        assert resolved and unit["complete"]
        units.append(unit)
    return units


def _run(dofn, elements) -> tuple[list, list, dict]:
    """Main outputs and FETCH rows sorted, counts summed: one bundle from setup to teardown."""
    dofn.setup()
    dofn.start_bundle()
    outputs = [o for element in elements for o in dofn.process(element)]
    outputs += list(dofn.finish_bundle() or ())
    dofn.teardown()
    main, fetched, counts = [], [], {}
    for out in outputs:
        tag = out.tag if isinstance(out, beam.pvalue.TaggedOutput) else None
        value = out.value if tag else out
        value = getattr(value, "value", value)  # finish_bundle's windowed values
        if tag == COUNTS_TAG:
            for key, n in value.items():
                counts[key] = counts.get(key, 0) + n
        elif tag == FETCH_TAG:
            fetched.append(value)
        elif tag is None:
            main.append(value)
    return sorted(main, key=repr), sorted(fetched, key=repr), counts


def _in_threads(make, elements) -> list:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(lambda _: _run(make(), elements), range(THREADS)))


def test_replay_instances_in_threads_extract_what_one_extracts(tmp_path):
    units = _units(tmp_path)

    def make():
        return ReplayArchive(extract_timeout=60.0, shards_per_host=1, extract_workers=2)

    alone = _run(make(), units)
    assert len(alone[0]) == len(units) and len(alone[1]) == len(units)
    assert alone[2]["extracted.landing"] == len(units) == alone[2]["tasks.answered"]
    assert _in_threads(make, units) == [alone] * THREADS


def test_building_instances_in_threads_build_what_one_builds(tmp_path):
    units = _units(tmp_path)
    extractions = _run(ReplayArchive(extract_timeout=60.0, shards_per_host=1, extract_workers=2), units)[0]
    elements = [(doi, [value, ("meta", {**dict.fromkeys(META_FIELDS), "doi": doi, "year": 2024, "categories": [],
                                        "relations": []})])
                for doi, value in extractions]

    def make():
        return BuildDocuments(workers=2)

    alone = _run(make(), elements)
    assert len(alone[0]) == len(units) and alone[2]["documents.kept"] == len(units)
    assert _in_threads(make, elements) == [alone] * THREADS
