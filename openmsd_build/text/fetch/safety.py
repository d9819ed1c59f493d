"""Refuse URLs that could turn the crawler against its own network (SSRF).

URLs come from public metadata anyone can edit, so a location may point at a cloud
metadata service (169.254.169.254), a private admin page, or a name whose DNS answer is
private. Every hop is checked here *before* any connection: the scheme, then every address
the host resolves to. The fetcher then connects to the checked address itself, so a second
DNS lookup cannot swap in a private one (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from functools import lru_cache

from openmsd_build.text.fetch.result import BAD_SCHEME, BAD_URL, BLOCKED_ADDRESS, DNS_ERROR

ALLOWED_SCHEMES = ("http", "https")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class FetchRefused(Exception):
    """Raised with a stable error code when a URL must not be fetched."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


def check_scheme(scheme: str) -> None:
    """Only http(s): file://, ftp://, gopher://, data: and friends reach local resources."""
    if scheme.lower() not in ALLOWED_SCHEMES:
        raise FetchRefused(BAD_SCHEME, scheme)


@lru_cache(maxsize=64)
def _networks(cidrs: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Parsed allow-list (cached: the same tuple is checked for every request)."""
    return tuple(ipaddress.ip_network(c, strict=False) for c in cidrs)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address hidden in an IPv4-mapped, 6to4, Teredo or NAT64 IPv6 address, since
    those can route to the embedded (possibly private) IPv4 host."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64:
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


def is_blocked_ip(address: str, allow_networks: Sequence[str] = ()) -> bool:
    """Whether `address` is private/loopback/link-local/multicast/reserved/unspecified (for
    IPv6 also via an embedded IPv4) and not inside one of `allow_networks`."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    except ValueError:
        return True
    allowed = _networks(tuple(allow_networks))
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d connects to a.b.c.d: judge that alone
            candidates = [ip.ipv4_mapped]
        elif embedded is not None:
            candidates.append(embedded)
    if any(c.version == n.version and c in n for c in candidates for n in allowed):
        return False
    return any(_is_special(c) for c in candidates)


def _is_ip_literal(host: str) -> bool:
    """True for an IPv4/IPv6 literal (these skip DNS)."""
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def system_resolver(host: str, port: int) -> list[str]:
    """Every address `socket.getaddrinfo` gives for a TCP connection, in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for info in infos:
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


def resolve_checked(host: str, port: int, allow_networks: Sequence[str] = (), resolver=None) -> list[str]:
    """Resolve `host` and return its addresses, refusing the host when ANY address is
    blocked (a mixed answer is how rebinding attacks hide). IP literals skip DNS."""
    if not host:
        raise FetchRefused(BAD_URL, "no host")
    bare = host.strip("[]")
    if _is_ip_literal(bare):
        addresses = [bare]
    else:
        try:
            addresses = list((resolver or system_resolver)(bare, port))
        except (OSError, UnicodeError) as exc:
            raise FetchRefused(DNS_ERROR, f"{bare}: {exc}") from exc
        if not addresses:
            raise FetchRefused(DNS_ERROR, f"{bare}: no addresses")
    for address in addresses:
        if is_blocked_ip(address, allow_networks):
            raise FetchRefused(BLOCKED_ADDRESS, f"{bare} -> {address}")
    return addresses
