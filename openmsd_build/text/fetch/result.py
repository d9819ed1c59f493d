"""What one fetch produced, and the small helpers every backend shares.

A live fetch (`HttpFetcher`) and an archived one (`WarcBackend`) return the same
`FetchResult`, so the extraction stage never needs to know where bytes came from and the
`fetch/` table has one shape whatever the backend. Errors are short stable codes (not
exception text) so they can be counted and grouped in rejects and Beam counters.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urljoin

# Stable error codes. `http_<status>` (e.g. "http_404", "http_503") is also used for final
# non-2xx answers; it is produced by `http_error()` rather than listed here.
ROBOTS_DISALLOWED = "robots_disallowed"
ROBOTS_UNAVAILABLE = "robots_unavailable"
TIMEOUT = "timeout"
TOO_LARGE = "too_large"
TOO_MANY_REDIRECTS = "too_many_redirects"
BLOCKED_ADDRESS = "blocked_address"
BAD_SCHEME = "bad_scheme"
BAD_URL = "bad_url"
DNS_ERROR = "dns_error"
CONNECTION_ERROR = "connection_error"
TLS_ERROR = "tls_error"
WRONG_CONTENT_TYPE = "wrong_content_type"
UNSUPPORTED_ENCODING = "unsupported_encoding"
DECODE_ERROR = "decode_error"
NOT_IN_ARCHIVE = "not_in_archive"
# The index names a record that cannot be read back (a negative offset, a lying length, damage):
# one URL's error, with the failure (quoting nothing read) in the `x-error` header.
RECORD_UNREADABLE = "archive_record_unreadable"
# The host failed `circuit_failures` times in a row; its URLs are skipped for a cool-down.
HOST_CIRCUIT_OPEN = "host_circuit_open"
# Prefix of `internal:<ExceptionType>`: a bug or an unforeseen input, caught so that one URL
# can never stop a stage; the exception text goes to `FetchResult.detail`.
INTERNAL_PREFIX = "internal:"

HTML = "text/html"
XHTML = "application/xhtml+xml"
PDF = "application/pdf"
DEFAULT_ACCEPTED_TYPES: tuple[str, ...] = (HTML, XHTML, PDF)
MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest body a source hands on, whatever the source: a live answer
(`FetchConfig.max_bytes`, also the bound on decompression), an archived payload replayed, a
local file. One number, so the stage never keeps a document from one source and refuses it
from another; a larger one answers `too_large`. (`inspect`'s `--max-bytes` defaults to it.)"""

# Media types that mean "PDF" in the wild; normalised so acceptance checks stay simple.
_PDF_ALIASES = {"application/x-pdf", "application/acrobat", "applications/vnd.pdf", "text/pdf", "text/x-pdf"}
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title")
_SNIFF_BYTES = 1024


def http_error(status: int) -> str:
    """The error code for a final non-2xx status, e.g. `http_404`."""
    return f"http_{status}"


_LAST_STAMP: list = [None, ""]  # (the second, its text): one strftime a second, not one a result


def now_iso() -> str:
    """UTC timestamp with second precision and a `Z`, the form WARC-Date also uses. Every
    `FetchResult` gets one (a replayed one then takes its archived date), ~40,000 a
    20,000-paper replay: the text of the current second is kept."""
    second = int(time.time())
    if _LAST_STAMP[0] != second:
        _LAST_STAMP[:] = [second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")]
    return _LAST_STAMP[1]


def media_type(header_value: str | None) -> str:
    """`Content-Type` without parameters, lower-cased, PDF aliases folded to application/pdf."""
    if not header_value:
        return ""
    value = header_value.split(";", 1)[0].strip().lower()
    return PDF if value in _PDF_ALIASES else value


def _ascii_head(head: bytes) -> bytes:
    """The first bytes of a body as ASCII-compatible bytes for sniffing: a UTF-16 page (its
    byte-order mark says so, and decides its encoding: `text.charset`) is decoded first."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16-le" if head.startswith(b"\xff\xfe") else "utf-16-be"
        return head[2:len(head) & ~1].decode(encoding, "ignore").encode("ascii", "ignore")
    return head


def sniff_content_type(body: bytes | None, header_value: str | None) -> str:
    """Trust the bytes over the header: many repositories label PDFs octet-stream, and many
    "PDF" links answer with an HTML interstitial. Falls back to the header's media type."""
    if body:
        head = body[:_SNIFF_BYTES]
        if b"%PDF-" in head:  # PDF readers accept junk before the header within the first KB
            return PDF
        stripped = _ascii_head(head).lstrip(b"\xef\xbb\xbf \t\r\n").lower()
        if stripped.startswith(_HTML_MARKERS):
            return HTML
        if stripped.startswith((b"<?xml", b"<!--")) and b"<html" in stripped:
            return HTML
    return media_type(header_value)


def document_kind(body: bytes | None, header_value: str | None) -> str | None:
    """"pdf", "html" or None (nothing the extractors read): the one rule the text stage and
    `inspect` use to pick an extractor, from the sniffed content type."""
    content_type = sniff_content_type(body, header_value)
    if content_type == PDF:
        return "pdf"
    if "html" in content_type or (body and b"<html" in _ascii_head(body[:2048]).lower()):
        return "html"
    return None


def sha1_hex(body: bytes | None) -> str | None:
    """Hex SHA-1 of the payload (the `fetch/` table's sha1 column); None when no body."""
    return None if body is None else hashlib.sha1(body).hexdigest()


@dataclass
class FetchResult:
    """One URL's outcome. `body` is the decoded payload (Content-Encoding removed) and is
    only set for accepted 2xx answers; `error` is None exactly when the fetch succeeded."""

    url: str
    final_url: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: bytes | None = None
    error: str | None = None
    attempts: int = 0
    fetched_at: str = field(default_factory=now_iso)
    # Redirect hops followed, in order: {"url", "status", "location"}; lets the WARC writer
    # archive them so the offline backend can replay the same chain.
    redirects: list[dict[str, object]] = field(default_factory=list)
    # Human-readable context for `error` (refusal reason, exception text); never counted.
    detail: str | None = None

    @property
    def ok(self) -> bool:
        """True when the fetch produced an accepted body."""
        return self.error is None and self.body is not None

    @property
    def sha1(self) -> str | None:
        """Hex SHA-1 of `body`."""
        return sha1_hex(self.body)

    @property
    def n_bytes(self) -> int:
        """Length of `body` (0 when absent)."""
        return len(self.body) if self.body is not None else 0


REDIRECT_STATUSES = (301, 302, 303, 307, 308)


def join_location(current: str, location: str) -> str:
    """The URL a redirect's `Location` names, resolved against `current`; the Location as
    given (stripped) when it cannot be joined. Every reader of a Location goes through here.

    Why: `urljoin` raises ValueError for what `urlsplit` refuses, an unclosed IPv6 bracket
    (`http://[::1/`) or a host with characters that NFKC turns into URL syntax (`//ex℀.org/`,
    `ex.org／@evil`: a WARC's headers are read as UTF-8). A Location is data from a server or
    an archive, so the error belongs to that one URL: kept as given, the next hop's checks
    refuse it (`bad_url`) and an archive has no record under it. Joined unguarded in the
    archive join, one such record failed the whole text stage."""
    location = location.strip()
    try:
        return urljoin(current, location)
    except ValueError:
        return location


def follow_redirect(result: FetchResult, current: str, status: int | None, headers: dict[str, str],
                    error: str | None) -> str | None:
    """The next URL when `status` is a redirect with a Location (the hop is recorded on
    `result`, so the WARC writer can archive it and replay can follow it); None when the
    answer is final. Shared by the live fetcher and the archive replay."""
    location = headers.get("location")
    if error is None and status in REDIRECT_STATUSES and location:
        target = join_location(current, location)
        result.redirects.append({"url": current, "status": status, "location": target})
        return target
    return None


def final_error(status: int | None, error: str | None) -> str | None:
    """The error code of a final answer: a transport error, else `http_<status>` for a
    non-2xx status, else None."""
    if error is None and status is not None and not 200 <= status < 300:
        return http_error(status)
    return error
