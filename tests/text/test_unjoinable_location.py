"""An archived redirect whose Location cannot be joined to a URL is that URL's error, not the stage's.

`urljoin` raises ValueError for a Location that `urlsplit` refuses: an unclosed IPv6 bracket
(`http://[bad/x`), or a host holding characters that NFKC turns into URL syntax (`//ex℀.org/`,
a WARC header is read as UTF-8). The live fetcher and `WarcBackend.fetch` kept such a Location
as given, so the next hop's checks refused it (`bad_url`); the archive join of `--fetch warc:`
(`archive_join.redirect_target`, `advance`), `WarcBackend.__contains__` (a resumed live fetch)
and the robots.txt download joined it unguarded: one WARC record made the whole text stage fail
(ValueError in FetchRedirectTargets).
"""

from __future__ import annotations

import gzip

import pytest
from archive_samples import add_papers, fetch_rows, page, reference_mismatches

from openmsd_build.core import layout, parquet_io
from openmsd_build.schemas import DOCUMENTS
from openmsd_build.text.command import run_text
from openmsd_build.text.fetch import WarcBackend
from openmsd_build.text.fetch.archive_join import advance, lookup_key, new_units, redirect_target, rounds
from openmsd_build.text.fetch.warc_index import index_warc_file

FNAPI = ["--runner=apache_beam.runners.portability.fn_api_runner.FnApiRunner"]
LOCATIONS = ["http://[bad/x", "//ex\u2100.org/a", "http://ex.org\uff0f@evil/x"]


def _record(uri: str, http: bytes) -> bytes:
    """One response record as its own gzip member, written by hand: the project's WarcWriter
    percent-encodes a Location's non-ASCII characters, another crawler's need not."""
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {uri}\r\nWARC-Date: 2024-01-02T03:04:05Z\r\n"
            f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{len(uri):012d}>\r\n"
            f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(http)}\r\n\r\n").encode()
    return gzip.compress(head + http + b"\r\n\r\n")


def _warc(tmp_path) -> str:
    path = tmp_path / "hops.warc.gz"
    body = page("A page archived beside the broken hops")
    records = [_record(f"http://a.example/{i}", f"HTTP/1.1 301 Moved\r\nLocation: {location}\r\n"
                       "Content-Length: 0\r\n\r\n".encode())
               for i, location in enumerate(LOCATIONS)]
    records.append(_record("http://a.example/fine", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                           b"Content-Length: %d\r\n\r\n" % len(body) + body))
    path.write_bytes(b"".join(records))
    return str(path)


@pytest.mark.parametrize("i", range(len(LOCATIONS)))
def test_the_join_and_the_backend_take_such_a_hop(tmp_path, i):
    path = _warc(tmp_path)
    url = f"http://a.example/{i}"
    backend = WarcBackend([path])
    assert backend.fetch(url).error == "bad_url"
    assert url not in backend  # its chain ends in no archived record (a resumed live fetch asked, and raised)
    index = {row["url"]: row for row in index_warc_file(path)}
    assert all(redirect_target(row) is None or isinstance(redirect_target(row), str) for row in index.values())
    (unit,) = new_units([{"url": url, "doi": "10.1/x"}])
    for _n in range(rounds()):
        unit, resolved = advance(unit, index.get(lookup_key(unit)))
        if resolved:
            break
    assert resolved and unit["complete"] is False  # the target is no archived record


def test_the_text_stage_replays_such_a_warc(tmp_path):
    path, out = _warc(tmp_path), tmp_path / "build"
    add_papers(out, [f"http://a.example/{i}" for i in range(len(LOCATIONS))] + ["http://a.example/fine"])
    run_text(str(out), "warc:" + path, FNAPI)
    rows = fetch_rows(out)
    assert reference_mismatches(rows, WarcBackend([path])) == []
    assert sorted(r["error"] or "ok" for r in rows) == ["bad_url"] * len(LOCATIONS) + ["ok"]
    docs = parquet_io.read_table(layout.documents_dir(str(out)), schema=DOCUMENTS).to_pylist()
    assert [d["title"] for d in docs] == ["A page archived beside the broken hops"]


def test_a_robots_txt_redirect_to_such_a_location_allows_all():
    """A robots.txt answered by a redirect to an unjoinable Location is a refused hop (allow
    all, as for any refused robots hop), not an `internal:ValueError` for the page."""
    from openmsd_build.text.fetch import FetchConfig, HttpFetcher
    from openmsd_build.text.fetch.testing import LocalServer, respond

    def route(h, srv):
        if h.path == "/robots.txt":
            respond(h, 301, b"", headers={"Location": "http://[bad/robots.txt"})
        else:
            respond(h, 200, page("A page behind a broken robots.txt"))

    with LocalServer(default=route) as srv:
        config = FetchConfig(allow_networks=("127.0.0.0/8",), per_host_rate=None, max_retries=0)
        result = HttpFetcher(config).fetch(srv.url("/paper"))
    assert (result.error, result.status) == (None, 200)


@pytest.mark.parametrize("head", [
    '<meta name="citation_pdf_url" content="http://[bad/paper.pdf">',
    '<link rel="alternate" type="application/pdf" href="//ex\u2100.org/paper.pdf">',
])
def test_a_page_whose_pdf_link_cannot_be_joined_keeps_its_text(head):
    """The PDF link is one field of the page: a link `urljoin` refuses is no link, and the
    page's title and abstract stay (the whole page was a parse_error)."""
    from openmsd_build.text.extract.landing import extract_landing

    body = (f"<html><head><title>A study of archived redirects</title>{head}"
            '<meta name="citation_title" content="A study of archived redirects">'
            '<meta name="citation_abstract" content="This abstract describes a careful study of archived '
            'redirect chains in scholarly web crawls, long enough to be kept."></head>'
            "<body><p>x</p></body></html>").encode()
    extraction = extract_landing(body, url="https://ex.org/article")
    assert extraction["title"] == "A study of archived redirects"
    assert extraction["abstract"].startswith("This abstract describes")
    assert extraction["pdf_url"] is None
