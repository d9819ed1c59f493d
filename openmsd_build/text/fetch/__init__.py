"""Fetch layer of the text stage: polite, safe live HTTP (`HttpFetcher`), WARC archiving
(`WarcWriter`, `read_record`), an offline WARC backend (`WarcBackend`) and URL planning.

Pure Python, no Beam: the DoFns wrap these objects, which are built from a picklable
`FetchConfig` and create their pools and caches lazily.
"""

from openmsd_build.text.fetch.config import FetchConfig
from openmsd_build.text.fetch.http import HttpFetcher
from openmsd_build.text.fetch.plan import canonical_url, host_key, plan_urls, shard_host, should_fetch
from openmsd_build.text.fetch.result import FetchResult
from openmsd_build.text.fetch.warc_backend import WarcBackend
from openmsd_build.text.fetch.warc_store import WarcRef, WarcWriter, read_record

__all__ = [
    "FetchConfig",
    "FetchResult",
    "HttpFetcher",
    "WarcBackend",
    "WarcRef",
    "WarcWriter",
    "canonical_url",
    "host_key",
    "plan_urls",
    "read_record",
    "shard_host",
    "should_fetch",
]
