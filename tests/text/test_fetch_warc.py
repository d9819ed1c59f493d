"""WARC round trip: live fetch -> WarcWriter -> read_record / WarcBackend, no refetch."""

from __future__ import annotations

import gzip
import hashlib
import io
import pickle

import pytest

from openmsd_build.text.fetch import FetchConfig, HttpFetcher, WarcBackend, WarcWriter, read_record
from openmsd_build.text.fetch.result import FetchResult
from openmsd_build.text.fetch.testing import LocalServer, respond

PAGE = b"<!doctype html><html><body>" + "Ünïcode text ".encode() * 300 + b"</body></html>"
PDF_BODY = b"%PDF-1.4\n" + bytes(range(256)) * 40


def _page(h, srv):
    respond(h, 200, gzip.compress(PAGE), headers={"Content-Encoding": "gzip", "X-Extra": "kept"})


def _pdf(h, srv):
    respond(h, 200, PDF_BODY, "application/pdf")


def _moved(h, srv):
    respond(h, 301, b"", headers={"Location": "/page"})


ROUTES = {
    "/robots.txt": lambda h, srv: respond(h, 404, b""),
    "/page": _page,
    "/paper.pdf": _pdf,
    "/moved": _moved,
    "/gone": lambda h, srv: respond(h, 404, b"gone"),
}


@pytest.fixture(scope="module")
def server():
    with LocalServer(ROUTES) as srv:
        yield srv


@pytest.fixture()
def fetcher():
    return HttpFetcher(FetchConfig(per_host_rate=None, allow_networks=["127.0.0.0/8"], total_timeout=5.0))


def test_round_trip_by_offset(server, fetcher, tmp_path):
    path = str(tmp_path / "out" / "fetch-00000.warc.gz")
    refs = {}
    with WarcWriter(path, write_request=True, user_agent=fetcher.config.full_user_agent) as writer:
        for name in ("/page", "/paper.pdf", "/moved"):
            result = fetcher.fetch(server.url(name))
            assert result.ok
            refs[name] = (result, writer.write(result))
    for result, ref in refs.values():
        assert ref.warc_file == path and ref.length > 0
        assert ref.sha1 == hashlib.sha1(result.body).hexdigest() == result.sha1
        again = read_record(path, ref.offset)
        assert again.body == result.body and again.sha1 == ref.sha1
        assert again.status == 200 and again.content_type == result.content_type
        assert again.final_url == result.final_url and again.fetched_at == result.fetched_at
    page = read_record(path, refs["/page"][1].offset)
    assert page.headers["x-extra"] == "kept" and "content-encoding" not in page.headers
    assert page.headers["x-archive-orig-content-encoding"] == "gzip"
    # The ref's length covers exactly one gzip member: slicing it out gives a valid WARC record.
    ref = refs["/paper.pdf"][1]
    with open(path, "rb") as fh:
        fh.seek(ref.offset)
        member = fh.read(ref.length)
    assert gzip.decompress(member).startswith(b"WARC/1.1\r\n")
    assert read_record(io.BytesIO(member), 0).body == PDF_BODY


def test_writer_on_file_object_and_append(server, fetcher, tmp_path):
    result = fetcher.fetch(server.url("/paper.pdf"))
    buffer = io.BytesIO()
    writer = WarcWriter(buffer, name="gs://bucket/fetch/x.warc.gz")
    first = writer.write(result)
    second = writer.write(result)
    writer.close()
    assert first.warc_file == "gs://bucket/fetch/x.warc.gz" and first.offset == 0
    assert second.offset == first.length
    buffer.seek(0)
    assert read_record(buffer, second.offset).body == PDF_BODY
    # Appending to an existing local file keeps earlier offsets valid.
    path = str(tmp_path / "a.warc.gz")
    with WarcWriter(path) as w1:
        ref1 = w1.write(result)
    with WarcWriter(path) as w2:
        ref2 = w2.write(result)
    assert ref2.offset == ref1.offset + ref1.length
    assert read_record(path, ref1.offset).body == read_record(path, ref2.offset).body == PDF_BODY


def test_refused_bodies_not_archived(tmp_path):
    with WarcWriter(str(tmp_path / "x.warc.gz")) as writer:
        assert writer.write(FetchResult(url="http://a/", final_url="http://a/", status=200, error="too_large")) is None
        assert writer.write(FetchResult(url="http://a/", final_url="http://a/", error="timeout")) is None


def test_backend_serves_archive_and_follows_redirects(server, fetcher, tmp_path):
    path = tmp_path / "crawl-1.warc.gz"
    with WarcWriter(str(path)) as writer:
        for name in ("/page", "/moved", "/paper.pdf", "/gone"):
            writer.write(fetcher.fetch(server.url(name)))
    live_hits = len(server.hits)
    backend = WarcBackend.from_spec(f"warc:{tmp_path}/crawl-*.warc.gz")

    page = backend.fetch(server.url("/page"))
    assert page.ok and page.body == PAGE and page.content_type == "text/html" and page.attempts == 0
    # Light canonicalisation: scheme case, fragment.
    assert backend.fetch(server.url("/paper.pdf").replace("http://", "HTTP://") + "#frag").body == PDF_BODY

    moved = backend.fetch(server.url("/moved"))
    assert moved.ok and moved.body == PAGE and moved.final_url == server.url("/page")
    assert moved.redirects[0]["status"] == 301

    gone = backend.fetch(server.url("/gone"))
    assert gone.error == "http_404" and gone.status == 404 and gone.body is None

    missing = backend.fetch(server.url("/never"))
    assert missing.error == "not_in_archive" and missing.body is None
    assert len(server.hits) == live_hits  # nothing was refetched

    clone = pickle.loads(pickle.dumps(backend))
    assert clone.fetch(server.url("/page")).body == PAGE


def test_backend_redirect_target_missing_and_loop(tmp_path):
    path = str(tmp_path / "r.warc.gz")
    hop = FetchResult(
        url="http://a.org/x",
        final_url="http://a.org/y",
        status=200,
        body=b"<html>ok</html>",
        content_type="text/html",
        redirects=[{"url": "http://a.org/x", "status": 302, "location": "http://a.org/y"}],
    )
    with WarcWriter(path) as writer:
        writer.write(hop)
        loop = FetchResult(
            url="http://b.org/1", final_url="http://b.org/1", status=302, headers={"Location": "http://b.org/2"}
        )
        writer.write(loop)
        writer.write(
            FetchResult(
                url="http://b.org/2",
                final_url="http://b.org/2",
                status=302,
                headers={"Location": "http://B.org:80/1#x"},
            )
        )
        writer.write(
            FetchResult(url="http://c.org/", final_url="http://c.org/", status=301, headers={"Location": "/elsewhere"})
        )
        writer.write(
            FetchResult(
                url="http://d.org/img",
                final_url="http://d.org/img",
                status=200,
                headers={"Content-Type": "image/png"},
                body=b"\x89PNG....",
                content_type="image/png",
            )
        )
    backend = WarcBackend([path], max_redirects=3)
    assert backend.fetch("HTTP://A.ORG/x").body == b"<html>ok</html>"
    assert backend.fetch("http://b.org/1").error == "too_many_redirects"
    missing = backend.fetch("http://c.org/")
    assert missing.error == "not_in_archive" and missing.final_url == "http://c.org/elsewhere"
    assert backend.fetch("http://d.org/img").error == "wrong_content_type"
    assert "http://a.org/y" in backend and len(backend) == 6


@pytest.mark.parametrize(("location", "reason"), [("file:///etc/passwd", "bad_scheme"), ("http://[::1/", "bad_url")])
def test_archived_redirect_to_a_url_the_fetcher_refuses(tmp_path, location, reason):
    """An archived redirect to file:///etc/passwd replayed as not_in_archive, and a Location
    urljoin cannot parse raised out of the replay (and out of a live fetch); the live fetch
    says bad_scheme / bad_url."""
    path = str(tmp_path / "r.warc.gz")
    with WarcWriter(path) as writer:
        writer.write(FetchResult(url="http://a.org/x", final_url="http://a.org/x", status=302,
                                 headers={"Location": location}))
    result = WarcBackend([path]).fetch("http://a.org/x")
    assert result.error == reason and result.status == 302 and result.body is None
