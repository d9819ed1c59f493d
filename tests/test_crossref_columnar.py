"""The column-wise Crossref reader agrees with the record parser on generated chunks."""

from __future__ import annotations

import gzip
import json

from openmsd_build.papers.sources import crossref_columnar
from openmsd_build.papers.sources.crossref import parse_crossref
from openmsd_build.sample.generator import generate


def test_generated_chunk_projects_like_the_record_parser(tmp_path):
    generate(str(tmp_path), papers=400, seed=3, warc=False, workers=1)
    for path in sorted((tmp_path / "crossref").glob("*.json.gz")):
        data = gzip.decompress(path.read_bytes())
        records, rejected = crossref_columnar.parse_chunk(data)
        items = json.loads(data)["items"]
        assert rejected == []
        assert records == [{**parse_crossref(item), "_index": i} for i, item in enumerate(items)]
        assert any(r["abstract"] for r in records) and any(r["relations"] for r in records)
