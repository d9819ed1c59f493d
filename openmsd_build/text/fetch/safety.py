"""Refuse URLs that could turn the crawler against its own network (SSRF).

URLs come from public metadata anyone can edit, so a location may point at a cloud
metadata service (169.254.169.254), a private admin page, or a name whose DNS answer is
private. Every hop is checked here *before* any connection: the scheme, then every address
the host resolves to. The fetcher then connects to the checked address itself, so a second
DNS lookup cannot swap in a private one (DNS rebinding).

The one rule that makes this sound: **the address that is checked is the address that is
connected to.** Hosts are therefore canonicalised exactly once (`split_authority`,
`canonical_host`) and every later step — the resolver, the address check, the connection
pool, the `Host` header, TLS SNI, robots.txt and politeness keys — uses that canonical
form, never the raw text of the URL. Spellings that different parsers read differently
are refused rather than interpreted: percent-escapes and zone ids in a host (urllib3
decodes `%2e` at connect time, so `1.2.3.4%2eevil.example` would be checked as 1.2.3.4 and
resolved as another name), empty labels, hosts whose IDNA mapping fails. Numeric IPv4
spellings that libc's `inet_aton` (and browsers, per the WHATWG URL standard) accept —
`2130706433`, `0x7f.1`, `0177.0.0.1` — are parsed the same way and judged as that address.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from openmsd_build.text.fetch.result import BAD_SCHEME, BAD_URL, BLOCKED_ADDRESS, DNS_ERROR

ALLOWED_SCHEMES = ("http", "https")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# IPv6 ranges whose low 32 bits name an IPv4 host that the packet may end up at.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # well-known NAT64 prefix (RFC 6052): DNS64 networks use it
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # local-use NAT64 (RFC 8215)
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")  # IPv4-translated (RFC 2765)
_COMPAT = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible (::a.b.c.d)
_6TO4 = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")
# Embedding prefixes that legitimately carry public IPv4 hosts on public networks; the others
# are admitted only when the IPv6 address itself is in the allow-list.
_PUBLIC_EMBEDDINGS = (_NAT64, _6TO4, _TEREDO)

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?|[a-z0-9_]")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_FORBIDDEN_IN_AUTHORITY = re.compile(r"[\x00-\x20\x7f\\%]")
_CONTROL_OR_BACKSLASH = re.compile(r"[\x00-\x20\x7f\\]")


class FetchRefused(Exception):
    """Raised with a stable error code when a URL must not be fetched."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


def check_scheme(scheme: str) -> None:
    """Only http(s): file://, ftp://, gopher://, data: and friends reach local resources."""
    if scheme.lower() not in ALLOWED_SCHEMES:
        raise FetchRefused(BAD_SCHEME, scheme)


# ----------------------------------------------------------------------------- host spelling


@dataclass(frozen=True)
class CanonicalHost:
    """A host as the crawler uses it everywhere: `name` is lower-case ASCII (IDNA A-labels,
    no trailing dot; an IP literal in its standard text form, IPv6 without brackets) and
    `ip` is set when the host is an IP literal (then DNS is skipped)."""

    name: str
    ip: IPAddress | None = None


def _parse_ipv4_number(text: str) -> int:
    """One part of a numeric IPv4 host as inet_aton reads it: 0x.. hex, 0.. octal, else
    decimal. Raises ValueError for anything else (e.g. `08`)."""
    if text.startswith("0x"):
        return int(text[2:], 16) if len(text) > 2 else 0
    if len(text) > 1 and text.startswith("0"):
        return int(text[1:], 8)
    return int(text, 10)


def _inet_aton(labels: list[str]) -> ipaddress.IPv4Address:
    """Numeric IPv4 forms (1 to 4 parts; the last part fills the remaining bytes), as libc's
    inet_aton and the WHATWG URL parser accept them. Raises ValueError when out of range."""
    if not 1 <= len(labels) <= 4:
        raise ValueError("an IPv4 address has 1 to 4 parts")
    numbers = [_parse_ipv4_number(label) for label in labels]
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise ValueError("IPv4 part out of range")
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _idna(name: str) -> str:
    """UTS #46 / IDNA 2008 A-label form of a non-ASCII host; raises ValueError on failure."""
    try:
        import idna
    except ImportError:  # pragma: no cover - idna ships with requests/urllib3 extras
        try:
            return name.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(str(exc)) from exc
    try:
        return idna.encode(name, uts46=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise ValueError(str(exc)) from exc


def canonical_host(host: str, bracketed: bool = False) -> CanonicalHost:
    """Canonicalise the host part of a URL authority (raises FetchRefused(bad_url)).

    `bracketed` says the host was written as `[...]` (only IPv6 literals are accepted
    there; IPvFuture and zone ids are refused). Otherwise: `%` anywhere is refused, non-ASCII
    goes through IDNA (which also maps full-width digits and dots), one trailing dot is
    dropped, empty labels are refused, and a host whose last label is numeric must be a
    numeric IPv4 form and is returned as that address."""
    if bracketed:
        if "%" in host or not host.isascii():
            raise FetchRefused(BAD_URL, f"zone id or non-ASCII in IPv6 literal {host!r}")
        try:
            ip6 = ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise FetchRefused(BAD_URL, f"not an IPv6 literal: {host!r}") from exc
        return CanonicalHost(ip6.compressed, ip6)
    if not host:
        raise FetchRefused(BAD_URL, "no host")
    if _FORBIDDEN_IN_AUTHORITY.search(host):
        raise FetchRefused(BAD_URL, f"escape, zone id or control character in host {host!r}")
    name = host
    if not name.isascii():
        try:
            name = _idna(name)
        except ValueError as exc:
            raise FetchRefused(BAD_URL, f"IDNA: {exc}") from exc
    name = name.lower()
    if name.endswith("."):
        name = name[:-1]
    labels = name.split(".")
    if not name or any(not label for label in labels) or len(name) > 253:
        raise FetchRefused(BAD_URL, f"empty label or over-long host {host!r}")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        try:
            ip4 = _inet_aton(labels)
        except ValueError as exc:
            raise FetchRefused(BAD_URL, f"numeric host that is not an IPv4 address: {host!r}") from exc
        return CanonicalHost(str(ip4), ip4)
    if any(len(label) > 63 or not _LABEL.fullmatch(label) for label in labels):
        raise FetchRefused(BAD_URL, f"invalid host name {host!r}")
    return CanonicalHost(name)


def split_authority(netloc: str) -> tuple[CanonicalHost, int | None]:
    """(canonical host, port or None) from a URL's netloc; userinfo is dropped (never sent).
    Ports must be plain ASCII digits in 1..65535."""
    if _CONTROL_OR_BACKSLASH.search(netloc):
        raise FetchRefused(BAD_URL, f"control character or backslash in authority {netloc!r}")
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise FetchRefused(BAD_URL, f"unterminated IPv6 literal {netloc!r}")
        host, rest, bracketed = hostport[1:end], hostport[end + 1 :], True
        if rest and not rest.startswith(":"):
            raise FetchRefused(BAD_URL, f"junk after IPv6 literal {netloc!r}")
        port_text = rest[1:] if rest else None
    else:
        host, colon, port_text_raw = hostport.partition(":")
        port_text, bracketed = (port_text_raw if colon else None), False
    port: int | None = None
    if port_text:  # "host:" means the default port
        if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
            raise FetchRefused(BAD_URL, f"bad port {port_text!r}")
        port = int(port_text)
    return canonical_host(host, bracketed), port


def url_refusal(url: str) -> str | None:
    """Why the fetcher refuses `url` before any connection (`bad_scheme`, `bad_url`), None
    when it may be fetched: replay applies the same checks to an archived redirect's target,
    so an archive answers as the live fetch that wrote it did."""
    try:
        parts = urlsplit(url.strip())
        check_scheme(parts.scheme)
        split_authority(parts.netloc)
    except FetchRefused as exc:
        return exc.code
    except ValueError:
        return BAD_URL
    return None


# ----------------------------------------------------------------------------- address checks


@lru_cache(maxsize=64)
def _networks(cidrs: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """Parsed allow-list (cached: the same tuple is checked for every request)."""
    return tuple(ipaddress.ip_network(c, strict=False) for c in cidrs)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address hidden in an IPv4-mapped, IPv4-translated, IPv4-compatible, 6to4,
    Teredo or NAT64 IPv6 address, since those can route to the embedded IPv4 host."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _SIIT or ip in _NAT64_LOCAL:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _COMPAT and int(ip) > 0xFFFF:  # not :: or ::1 (nor ::0.0.x.x, which is reserved anyway)
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _is_special(ip: IPAddress) -> bool:
    """True for every address that is not plain public unicast."""
    return bool(
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    )


def _parse_ip(address: str | IPAddress) -> IPAddress:
    """An address object; a textual IPv6 scope id is kept by ipaddress but ignored for checks."""
    if isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return address
    return ipaddress.ip_address(address.strip())


def connect_address(address: str | IPAddress) -> IPAddress:
    """The address a socket actually reaches: IPv4-mapped IPv6 (::ffff:a.b.c.d) is a.b.c.d."""
    ip = _parse_ip(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def is_blocked_ip(address: str | IPAddress, allow_networks: Sequence[str] = ()) -> bool:
    """Whether connecting to `address` could reach something other than the public internet
    (or an explicitly allowed network).

    An allow-list entry admits only addresses of its own family: IPv4-mapped IPv6 is judged
    as the IPv4 it connects to; any other IPv6 embedding an IPv4 (NAT64, 6to4, Teredo,
    IPv4-compatible/-translated) is refused when the embedded IPv4 is forbidden, and when
    the embedded IPv4 is merely *allowed* (e.g. 127.0.0.0/8) it is still refused unless
    the IPv6 address itself is in an allowed IPv6 network — an IPv4 allow-list never admits
    an IPv6 address through its embedded IPv4."""
    try:
        ip = _parse_ip(address)
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.scope_id:
        ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
    allowed = _networks(tuple(allow_networks))

    def in_allowed(candidate: IPAddress) -> bool:
        return any(candidate.version == net.version and candidate in net for net in allowed)

    def acceptable(candidate: IPAddress) -> bool:
        return in_allowed(candidate) or not _is_special(candidate)

    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if ip.ipv4_mapped is not None:
            return not acceptable(ip.ipv4_mapped)
        if embedded is not None:
            if not acceptable(embedded):
                return True  # a forbidden embedded IPv4 is judged by itself
            if in_allowed(ip):
                return False
            # admitted without an IPv6 allow-list entry only as a public translation
            return _is_special(embedded) or not any(ip in net for net in _PUBLIC_EMBEDDINGS)
    return not acceptable(ip)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address `socket.getaddrinfo` gives for a TCP connection, in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for info in infos:
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


def resolve_checked(
    host: str | CanonicalHost, port: int, allow_networks: Sequence[str] = (), resolver=None
) -> list[str]:
    """Resolve `host` and return the addresses to connect to (canonical text, IPv4-mapped
    answers unwrapped to IPv4), refusing the host when ANY address is blocked (a mixed
    answer is how rebinding attacks hide). IP literals skip DNS. A plain string is
    canonicalised first (`canonical_host`), so no caller can hand a raw spelling through."""
    if isinstance(host, str):
        bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        host = canonical_host(bare, bracketed=":" in bare)
    if host.ip is not None:
        answers: list[str | IPAddress] = [host.ip]
    else:
        try:
            answers = list((resolver or system_resolver)(host.name, port))
        except (OSError, UnicodeError, ValueError) as exc:
            raise FetchRefused(DNS_ERROR, f"{host.name}: {exc}") from exc
        if not answers:
            raise FetchRefused(DNS_ERROR, f"{host.name}: no addresses")
    addresses: dict[str, None] = {}
    for answer in answers:
        if is_blocked_ip(answer, allow_networks):
            raise FetchRefused(BLOCKED_ADDRESS, f"{host.name} -> {answer}")
        addresses.setdefault(str(connect_address(answer)), None)
    return list(addresses)
