"""SSRF through host spellings: the address that is checked must be the address connected to.

Two real servers listen on 127.0.0.1 and 127.0.0.2; allow-lists admit only one of them, so
a forbidden target is a live server that *would* answer — the hit logs prove it was never
asked. `socket.getaddrinfo` is replaced for the whole module: numeric hosts pass through,
names under `.two.test` "resolve" to 127.0.0.2 (standing in for whatever a real DNS would
return for a decoded spelling) and any other name fails, so no test can reach a real
resolver and a second, unchecked lookup inside urllib3 shows up in `lookups`.
"""

from __future__ import annotations

import socket

import pytest
import urllib3.util.connection
from hostile_server import BoundServer

from openmsd_build.text.fetch import FetchConfig, HttpFetcher
from openmsd_build.text.fetch.safety import FetchRefused, is_blocked_ip
from openmsd_build.text.fetch.testing import LocalServer, respond

REAL_GETADDRINFO = socket.getaddrinfo


def _host_echo(h, srv) -> None:
    respond(h, 200, b"<!doctype html><html><body>host=" + h.headers.get("Host", "").encode() + b"</body></html>")


def _redirect(h, srv) -> None:
    respond(h, 302, b"", headers={"Location": h.path.split("?to=", 1)[1]})


ROUTES = {"/": _host_echo, "/echo": _host_echo, "/redirect": _redirect}


@pytest.fixture(scope="module")
def one():
    with LocalServer(ROUTES) as srv:
        yield srv


@pytest.fixture(scope="module")
def two():
    with BoundServer(ROUTES, bind="127.0.0.2") as srv:
        yield srv


@pytest.fixture()
def servers(one, two):
    one.reset()
    two.reset()
    return one, two


@pytest.fixture(autouse=True)
def lookups(monkeypatch) -> list[str]:
    """Fake system DNS (see module docstring); records every non-numeric lookup."""
    seen: list[str] = []

    def fake(host, port, *args, **kwargs):
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in str(host) else socket.AF_INET, str(host))
        except (OSError, TypeError):
            seen.append(str(host))
            if str(host).endswith(".two.test"):
                return REAL_GETADDRINFO("127.0.0.2", port, *args, **kwargs)
            raise socket.gaierror(socket.EAI_NONAME, "no real DNS in tests") from None
        return REAL_GETADDRINFO(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return seen


@pytest.fixture()
def connects(monkeypatch) -> list[tuple[str, int]]:
    """Every TCP connection urllib3 opens (still made)."""
    seen: list[tuple[str, int]] = []
    real = urllib3.util.connection.create_connection

    def recording(address, *args, **kwargs):
        seen.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", recording)
    return seen


class Resolver:
    """Injected resolver: fixed answers, records the names it was asked."""

    def __init__(self, mapping: dict[str, list[str]] | None = None) -> None:
        self.mapping = mapping or {}
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host in self.mapping:
            return self.mapping[host]
        raise OSError(f"unknown host {host}")


def make(allow: list[str] | None = None, resolver=None, **kw) -> HttpFetcher:
    """Fast settings; `allow=None` means the production default (no allow-list)."""
    settings = dict(
        allow_networks=allow or [],
        resolver=resolver if resolver is not None else Resolver(),
        respect_robots=False,
        per_host_rate=None,
        connect_timeout=1.0,
        read_timeout=1.0,
        total_timeout=2.0,
        url_timeout=4.0,
        max_retries=0,
    )
    settings.update(kw)
    return HttpFetcher(FetchConfig(**settings))


# ----------------------------------------------------------------------------- the reported bug


def test_percent_escaped_dot_after_ipv4_is_refused_with_default_settings(servers, connects, lookups):
    """`A.B.C.D%2e<name>` was judged as the public literal A.B.C.D and then resolved as
    `A.B.C.D.<name>` by urllib3 at connect time (here: to the 127.0.0.2 server)."""
    one, two = servers
    fetcher = make(allow=None)
    for url in (
        f"http://8.8.8.8%2etwo.test:{two.port}/echo",
        f"http://8.8.8.8%2Etwo.test:{two.port}/echo",
        f"http://1.1.1.1%252etwo.test:{two.port}/echo",
    ):
        result = fetcher.fetch(url)
        assert result.error == "bad_url", (url, result.error)
    assert two.hits == [] and connects == [] and lookups == []


def test_percent_escape_cannot_cross_an_allow_list(servers, connects, lookups):
    """Allowing 127.0.0.1 only: a redirect to `127.0.0.1%2etwo.test` must not reach .2."""
    one, two = servers
    fetcher = make(allow=["127.0.0.1/32"])
    result = fetcher.fetch(one.url(f"/redirect?to=http://127.0.0.1%2etwo.test:{two.port}/echo"))
    assert result.error == "bad_url"
    assert two.hits == [] and lookups == []
    assert all(address[0] == "127.0.0.1" for address in connects)


# ----------------------------------------------------------------------------- spellings of 127.0.0.x

NUMERIC_SPELLINGS = ["2130706434", "0x7f000002", "0x7f.2", "0177.0.0.2", "127.2", "0x7f.0.0.02", "127.0.0.2."]


@pytest.mark.parametrize("spelling", NUMERIC_SPELLINGS)
def test_numeric_ipv4_spellings_are_that_address(servers, connects, spelling):
    """inet_aton forms are judged (and connected) as the address they denote: refused under
    an allow-list that admits only 127.0.0.1, fetched from 127.0.0.2 when it is allowed,
    with the canonical address as Host."""
    one, two = servers
    resolver = Resolver()
    refused = make(allow=["127.0.0.1/32"], resolver=resolver).fetch(f"http://{spelling}:{two.port}/echo")
    assert refused.error == "blocked_address", refused.error
    assert two.hits == [] and connects == [] and resolver.calls == []
    allowed = make(allow=["127.0.0.2/32"], resolver=resolver).fetch(f"http://{spelling}:{two.port}/echo")
    assert allowed.ok, allowed.error
    assert f"host=127.0.0.2:{two.port}".encode() in allowed.body
    assert connects == [("127.0.0.2", two.port)] and resolver.calls == []


@pytest.mark.parametrize("spelling", NUMERIC_SPELLINGS + ["１２７.０.０.２"])
def test_numeric_spellings_refused_by_default(servers, connects, spelling):
    one, two = servers
    result = make(allow=None).fetch(f"http://{spelling}:{two.port}/echo")
    assert result.error == "blocked_address", (spelling, result.error)
    assert two.hits == [] and connects == []


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.2%25eth0",  # zone id on IPv4
        "[fe80::1%25eth0]",  # zone id on IPv6
        "[::ffff:127.0.0.2%25lo]",
        "a..two.test",  # empty label
        ".two.test",
        "two.test..",
        "ex\u200dample.two.test",  # IDNA-invalid (joiner)
        "1.2.3.4.5",  # numeric last label but not an IPv4 address
        "evil.0x7f",
        "08.0.0.1",  # not octal
        "256.0.0.1",
        "[v1.two]",  # IPvFuture
        "two.test\\@127.0.0.2",
    ],
)
def test_ambiguous_hosts_are_refused_before_any_lookup(servers, connects, lookups, host):
    one, two = servers
    resolver = Resolver({"two.test": ["127.0.0.2"]})
    result = make(allow=["127.0.0.0/8"], resolver=resolver).fetch(f"http://{host}:{two.port}/echo")
    assert result.error == "bad_url", (host, result.error)
    assert resolver.calls == [] and lookups == [] and connects == [] and two.hits == []


def test_idna_and_trailing_dot_use_one_canonical_name(servers, connects):
    """The resolver, the Host header and the connection all see the same A-label name."""
    one, two = servers
    resolver = Resolver({"xn--bcher-kva.test": ["127.0.0.2"]})
    fetcher = make(allow=["127.0.0.2/32"], resolver=resolver)
    for spelling in ("bücher.test", "BÜCHER.test.", "xn--bcher-kva.TEST"):
        result = fetcher.fetch(f"http://{spelling}:{two.port}/echo")
        assert result.ok, (spelling, result.error)
        assert f"host=xn--bcher-kva.test:{two.port}".encode() in result.body
    assert resolver.calls == ["xn--bcher-kva.test"] * 3
    assert set(connects) == {("127.0.0.2", two.port)}


# ----------------------------------------------------------------------------- IPv6 embeddings


@pytest.mark.parametrize(
    "literal,allow,blocked",
    [
        ("[::ffff:127.0.0.1]", [], True),
        ("[::ffff:7f00:1]", [], True),
        ("[::127.0.0.1]", [], True),
        ("[2002:7f00:1::]", [], True),
        ("[64:ff9b::7f00:1]", [], True),
        ("[64:ff9b:1::7f00:1]", [], True),
        ("[::ffff:0:7f00:1]", [], True),
        ("[::ffff:10.0.0.1]", ["127.0.0.0/8"], True),  # the allow-list must not leak
        ("[::127.0.0.1]", ["127.0.0.0/8"], True),  # IPv4 allow-list admits no IPv6 address
        ("[2002:7f00:1::]", ["127.0.0.0/8"], True),
        ("[64:ff9b::7f00:1]", ["127.0.0.0/8"], True),
        ("[64:ff9b::a00:1]", ["64:ff9b::/96"], True),  # forbidden embedded IPv4 judged by itself
        ("[2002:a00:1::]", ["2002::/16"], True),
    ],
)
def test_ipv6_embedding_an_ipv4(servers, connects, literal, allow, blocked):
    one, _ = servers
    result = make(allow=allow).fetch(f"http://{literal}:{one.port}/echo")
    assert (result.error == "blocked_address") is blocked, (literal, allow, result.error)
    assert connects == [] and one.hits == []


def test_ipv4_mapped_literal_connects_to_the_ipv4_it_names(servers, connects):
    """[::ffff:127.0.0.1] under a 127.0.0.0/8 allow-list is 127.0.0.1: connected over IPv4
    to exactly that address."""
    one, _ = servers
    result = make(allow=["127.0.0.0/8"]).fetch(f"http://[::ffff:127.0.0.1]:{one.port}/echo")
    assert result.ok, result.error
    assert connects == [("127.0.0.1", one.port)]


@pytest.mark.parametrize(
    "answers,allow,blocked",
    [
        (["::ffff:10.0.0.1"], ["127.0.0.0/8"], True),
        (["127.0.0.1", "::ffff:10.0.0.1"], ["127.0.0.0/8"], True),  # one bad answer spoils all
        (["2002:7f00:1::"], ["127.0.0.0/8"], True),
        (["64:ff9b::7f00:1"], ["127.0.0.0/8"], True),
        (["not-an-address"], ["127.0.0.0/8"], True),
        (["127.0.0.1"], [], True),
        (["::ffff:127.0.0.1"], ["127.0.0.0/8"], False),
    ],
)
def test_every_resolved_address_is_checked_and_unwrapped(servers, connects, answers, allow, blocked):
    one, _ = servers
    resolver = Resolver({"name.test": answers})
    result = make(allow=allow, resolver=resolver).fetch(f"http://name.test:{one.port}/echo")
    if blocked:
        assert result.error == "blocked_address", (answers, result.error)
        assert connects == [] and one.hits == []
    else:
        assert result.ok, result.error
        assert connects == [("127.0.0.1", one.port)]  # the checked IPv4, not the mapped text
        assert f"host=name.test:{one.port}".encode() in result.body


# ----------------------------------------------------------------------------- redirects


@pytest.mark.parametrize(
    "location",
    [
        "http://2130706434:{port}/echo",
        "http://0x7f.0.0.2:{port}/echo",
        "http://0177.0.0.2:{port}/echo",
        "http://127.0.0.2.:{port}/echo",
        "http://[::ffff:127.0.0.2]:{port}/echo",
        "http://[::ffff:7f00:2]:{port}/echo",
        "http://[::127.0.0.2]:{port}/echo",
        "http://[2002:7f00:2::]:{port}/echo",
        "http://[64:ff9b::7f00:2]:{port}/echo",
        "http://sneaky.test:{port}/echo",
        "http://127.0.0.2%2esneaky.two.test:{port}/echo",
        "http://169.254.169.254/latest/meta-data/",
        "http://0xa9.0xfe.0xa9.0xfe/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
    ],
)
def test_redirect_to_forbidden_spelling_is_refused(servers, connects, lookups, location):
    """The first hop (127.0.0.1) is allowed; the redirect target (127.0.0.2 or metadata) is
    not, however it is spelled — and the live 127.0.0.2 server is never asked."""
    one, two = servers
    resolver = Resolver({"sneaky.test": ["127.0.0.2"]})
    target = location.format(port=two.port)
    result = make(allow=["127.0.0.1/32"], resolver=resolver).fetch(one.url(f"/redirect?to={target}"))
    assert result.error in ("blocked_address", "bad_url"), (target, result.error)
    assert result.status is None and result.body is None
    assert two.hits == [] and lookups == []
    assert connects == [("127.0.0.1", one.port)]
    assert [hop["url"] for hop in result.redirects] == [one.url(f"/redirect?to={target}")]


def test_redirect_hop_robots_check_uses_the_same_canonical_host(servers, connects):
    """With robots.txt on, the redirect target's robots lookup is refused the same way (it
    used to raise the refusal from inside the robots download)."""
    one, two = servers
    result = make(allow=["127.0.0.1/32"], respect_robots=True).fetch(
        one.url(f"/redirect?to=http://2130706434:{two.port}/echo")
    )
    assert result.error == "blocked_address" and result.status is None
    assert two.hits == []


# ----------------------------------------------------------------------------- unit level


def test_canonical_host_table():
    from openmsd_build.text.fetch.safety import canonical_host

    expect = {
        "2130706433": "127.0.0.1",
        "0x7f.1": "127.0.0.1",
        "0177.0.0.1": "127.0.0.1",
        "0x7F.0.0.1": "127.0.0.1",
        "127.1": "127.0.0.1",
        "1.0x10203": "1.1.2.3",
        "EXAMPLE.org.": "example.org",
        "bücher.de": "xn--bcher-kva.de",
        "１２７.０.０.１": "127.0.0.1",
    }
    assert {raw: canonical_host(raw).name for raw in expect} == expect
    for bad in ("1.2.3.4%2eevil.com", "a..b", "", ".", "4294967296", "0x1.0x1000000", "a\x00b", "a b"):
        with pytest.raises(FetchRefused):
            canonical_host(bad)


def test_allow_list_never_admits_through_an_embedded_ipv4():
    assert is_blocked_ip("::ffff:10.0.0.1", ["127.0.0.0/8"])
    assert not is_blocked_ip("::ffff:127.0.0.1", ["127.0.0.0/8"])
    for address in ("::127.0.0.1", "2002:7f00:1::", "64:ff9b::7f00:1", "2001:0:4136:e378:8000:63bf:80ff:fffe"):
        assert is_blocked_ip(address, ["127.0.0.0/8"]), address
    assert is_blocked_ip("64:ff9b::a00:1", ["64:ff9b::/96"])
    assert not is_blocked_ip("64:ff9b::808:808")  # DNS64 networks: public IPv4 through NAT64
    assert not is_blocked_ip("64:ff9b::7f00:1", ["64:ff9b::/96", "127.0.0.0/8"])
