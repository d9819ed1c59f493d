"""URL planning, canonical URLs, host keys and resume checks (pure functions, no network)."""

from __future__ import annotations

import pickle

from openmsd_build.text.fetch import FetchConfig, canonical_url, host_key, plan_urls, shard_host, should_fetch


def test_canonical_url():
    assert canonical_url("HTTPS://Example.ORG:443/a/B?x=1&y=2#frag") == "https://example.org/a/B?x=1&y=2"
    assert canonical_url("http://example.org:80") == "http://example.org/"
    assert canonical_url("http://example.org:8080/p") == "http://example.org:8080/p"
    assert canonical_url("http://Example.org./p") == "http://example.org/p"
    assert canonical_url("http://[2001:DB8::1]:80/x") == "http://[2001:db8::1]/x"
    assert canonical_url("  http://a.org/x  ") == "http://a.org/x"
    assert canonical_url("http://a.org:bad/") == "http://a.org:bad/"  # unparseable port: left alone


def test_host_key():
    assert host_key("https://WWW.Example.org:8443/x") == "www.example.org"
    assert host_key("not a url") == "" and host_key("") == ""


def test_shard_host_is_stable_and_spreads():
    urls = [f"https://big.org/paper/{i}" for i in range(400)]
    keys = [shard_host("big.org", u, 8) for u in urls]
    assert keys == [shard_host("big.org", u, 8) for u in urls]
    assert set(keys) == {f"big.org#{k}" for k in range(8)}
    assert shard_host("small.org", "https://small.org/x", 1) == "small.org"
    assert shard_host("small.org", "https://small.org/x", {"big.org": 8}) == "small.org"
    assert shard_host("big.org", urls[0], {"big.org": 8}) == keys[0]
    # Canonically equal URLs land on the same shard.
    assert shard_host("big.org", "HTTPS://big.org:443/paper/1#x", 8) == keys[1]
    # A known value pins the hash across processes and releases.
    assert shard_host("big.org", "https://big.org/paper/0", 1000) == "big.org#516"


def _loc(url, kind, rank, host_type="repository", version="publishedVersion"):
    return {"url": url, "kind": kind, "host_type": host_type, "rank": rank, "version": version}


def test_plan_interleaves_dedupes_and_caps():
    locs = [
        _loc("https://a.org/landing", "landing", 0),
        _loc("https://a.org/paper.pdf", "pdf", 1),
        _loc("https://A.org/paper.pdf#page=2", "pdf", 5),  # duplicate of rank 1
        _loc("https://b.org/paper.pdf", "pdf", 2),
        _loc("https://c.org/record", "landing", 3),
        _loc("ftp://d.org/x.pdf", "pdf", 4),
        _loc("", "pdf", 6),
    ]
    plan = plan_urls(locs, cap=3)
    assert [p["url"] for p in plan] == ["https://a.org/landing", "https://a.org/paper.pdf", "https://c.org/record"]
    assert plan[1]["canonical_url"] == "https://a.org/paper.pdf" and plan[1]["host_type"] == "repository"
    assert len(plan_urls(locs, cap=10)) == 4
    assert [p["kind"] for p in plan_urls(locs, cap=10)] == ["landing", "pdf", "landing", "pdf"]
    assert "_sort" not in plan[0] and "canonical_url" not in locs[0]  # inputs untouched


def test_plan_pdf_first_when_best_ranked_and_only_one_kind():
    locs = [
        _loc("https://x.org/1.pdf", "pdf", 0),
        _loc("https://x.org/2.pdf", "pdf", 1),
        _loc("https://x.org/l", "landing", 2),
        _loc("https://x.org/3.pdf", "pdf", 3),
    ]
    assert [p["url"] for p in plan_urls(locs)] == ["https://x.org/1.pdf", "https://x.org/l", "https://x.org/2.pdf"]
    only = [_loc(f"https://y.org/{i}.pdf", "pdf", i) for i in range(5)]
    assert [p["rank"] for p in plan_urls(only)] == [0, 1, 2]
    assert plan_urls([]) == []
    assert plan_urls(only, cap=0) == []


def test_should_fetch():
    done = {"https://a.org/x", "http://b.org/y?z=1"}
    assert not should_fetch("HTTPS://a.org:443/x#f", done)
    assert not should_fetch("http://b.org/y?z=1", done)
    assert should_fetch("http://b.org/y?z=2", done)


def test_config_pickles_and_freezes_lists():
    cfg = FetchConfig(allow_networks=["127.0.0.0/8"], contact="me@example.org")
    assert cfg.allow_networks == ("127.0.0.0/8",)
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert cfg.full_user_agent.endswith("(+mailto:me@example.org)")
    assert cfg.robots_agent == "openmsd-build"
