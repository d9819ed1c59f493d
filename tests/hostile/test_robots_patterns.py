"""robots.txt patterns against hostile inputs: the matcher must be linear-time and every
size (file, rules, pattern, path) capped, because a site controls its robots.txt and one
backtracking regex per URL would stall a fetch worker for minutes (see
`politeness.RobotsPattern`)."""

from __future__ import annotations

import random
import re

import pytest

from openmsd_build.text.fetch import politeness
from openmsd_build.text.fetch.politeness import RobotsPattern, parse_robots


def _reference(raw: str, path: str) -> bool:
    """The old regex semantics (correct, only slow): `*` any run, trailing `$` end."""
    anchored = raw.endswith("$")
    body = raw[:-1] if anchored else raw
    regex = ".*".join(re.escape(part) for part in body.split("*")) + (r"\Z" if anchored else "")
    return re.match(regex, path) is not None


def test_matcher_agrees_with_regex_semantics():
    """Linear matching changes the cost, not the answer: random small patterns and paths
    over a tiny alphabet (many near-matches) give the regex's result."""
    rng = random.Random(9309)
    for _ in range(20_000):
        pattern = "/" + "".join(rng.choice("ab*") for _ in range(rng.randint(0, 6)))
        if rng.random() < 0.4:
            pattern += "$"
        path = "/" + "".join(rng.choice("ab") for _ in range(rng.randint(0, 8)))
        assert RobotsPattern(pattern).match(path) == _reference(pattern, path), (pattern, path)


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
@pytest.mark.parametrize("rule", ["/*a*a*a*a*a*a*a*a*b", "/*a*a*a*a*a*a*a*a*b$", "/" + "*a" * 500 + "*b",
                                  "/" + "a*" * 1000 + "$x"])
def test_backtracking_pattern_is_linear(rule):
    """The regex `.*a.*a...b` on a path of 'a's needs O(n**k) steps; the matcher one pass."""
    rules = parse_robots(f"User-agent: *\nDisallow: {rule}\n", "openmsd")
    path = "/" + "a" * (politeness.MAX_ROBOTS_PATH_CHARS - 1)
    for _ in range(10):
        assert rules.allowed(path)


@pytest.mark.timeout(60)  # a hang guard, not a speed check: the quadratic code took minutes (speed: bench/)
def test_many_worst_case_rules_cost_bounded():
    """A robots.txt filled (up to its size cap) with expensive rules: parsing keeps at most
    `MAX_ROBOTS_RULES` of them and one `allowed()` call on the longest accepted path ends
    (it takes milliseconds; the backtracking matcher took minutes)."""
    line = "Disallow: /" + "*a" * 200 + "*b\n"
    text = "User-agent: *\n" + line * 100_000  # ~40 MB, cut to MAX_ROBOTS_CHARS
    rules = parse_robots(text, "openmsd")
    assert len(rules.rules) <= politeness.MAX_ROBOTS_RULES
    path = "/" + "a" * (politeness.MAX_ROBOTS_PATH_CHARS - 1)
    assert rules.allowed(path)


def test_caps():
    """Rules past the count cap and over-long patterns are ignored; a path over the cap is
    refused when the site has rules (and allowed when it has none)."""
    many = "User-agent: *\n" + "".join(f"Disallow: /p{i}\n" for i in range(politeness.MAX_ROBOTS_RULES + 50))
    assert len(parse_robots(many, "x").rules) == politeness.MAX_ROBOTS_RULES
    long_rule = "User-agent: *\nDisallow: /" + "x" * politeness.MAX_PATTERN_CHARS + "\nDisallow: /private\n"
    rules = parse_robots(long_rule, "x")
    assert [raw for _, raw, _ in rules.rules] == ["/private"]
    huge_path = "/" + "a" * politeness.MAX_ROBOTS_PATH_CHARS
    assert not rules.allowed(huge_path)
    assert parse_robots("", "x").allowed(huge_path)
    # content past the size cap is not parsed
    padded = "User-agent: *\n" + "#" * politeness.MAX_ROBOTS_CHARS + "\nDisallow: /\n"
    assert parse_robots(padded, "x").allowed("/anything")


def test_rfc9309_examples_still_hold():
    """Longest match wins, allow wins ties, `$` anchors, `*` spans slashes."""
    rules = parse_robots("User-agent: *\nDisallow: /\nAllow: /oa/\nDisallow: /*.pdf$\nAllow: /oa/*.pdf$\n", "x")
    assert rules.allowed("/oa/paper") and not rules.allowed("/closed")
    assert rules.allowed("/oa/x/y.pdf") and not rules.allowed("/a/y.pdf")
    assert not parse_robots("User-agent: *\nDisallow: /*.pdf$\n", "x").allowed("/x.pdf")
    assert parse_robots("User-agent: *\nDisallow: /*.pdf$\n", "x").allowed("/x.pdf?download=1")
