"""DC / CC / BC pairs: hand-written expectations, and brute-force properties on random graphs."""

from __future__ import annotations

from itertools import combinations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from openmsd_build.hashing import hash64
from openmsd_build.pairing import annotate_edges, compute_pairs, hard_negatives, split_codes

D = "10.1000/"


def _splits(papers: dict[str, tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "doi": [D + k for k in papers],
            "paper_id": [hash64(D + k) for k in papers],
            "split": [v[0] for v in papers.values()],
            "language": [v[1] for v in papers.values()],
        }
    )


def _edges(pairs: list[tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame({"citing_doi": [D + a for a, _ in pairs], "cited_doi": [D + b for _, b in pairs]})


def _as_set(frame: pl.DataFrame) -> set[tuple[str, str, int]]:
    return {(a[len(D):], b[len(D):], s) for a, b, s in frame.select("doi_a", "doi_b", "support").rows()}


def test_hand_built_graph_exact_pairs():
    # z cites y, x and w; v cites y and x; x cites y. (Reverse DOI order on purpose.)
    papers = {k: ("train", "en") for k in "vwxyz"}
    papers["w"] = ("train", "de")
    out, counts = compute_pairs(_edges([("z", "y"), ("z", "x"), ("z", "w"), ("v", "y"), ("v", "x"), ("x", "y")]),
                                _splits(papers))
    assert _as_set(out[("dc", "train")]) == {("z", "y", 1), ("z", "x", 1), ("z", "w", 1), ("v", "y", 1),
                                             ("v", "x", 1), ("x", "y", 1)}
    # CC: pairs among the references of each citer; each unordered pair once, doi_a < doi_b.
    assert _as_set(out[("cc", "train")]) == {("x", "y", 2), ("w", "y", 1), ("w", "x", 1)}
    # BC: pairs among the citers of each cited paper: y <- z, v, x; x <- z, v; w <- z.
    assert _as_set(out[("bc", "train")]) == {("v", "z", 2), ("v", "x", 1), ("x", "z", 1)}
    cc = out[("cc", "train")]
    assert cc.filter(pl.col("doi_a") == D + "w")["lang_class"].to_list() == ["xx-en", "xx-en"]
    assert counts["cc_instances"] == int(cc["support"].sum()) == 4
    assert counts["bc_pairs.train"] == 3


def test_cross_split_and_odt_en_en_removed():
    papers = {"a": ("train", "en"), "b": ("odt", "en"), "c": ("odt", "en"), "d": ("odt", "fr"), "e": ("odt", "en")}
    out, counts = compute_pairs(_edges([("a", "b"), ("a", "c"), ("a", "d"), ("e", "b"), ("e", "d")]), _splits(papers))
    assert out[("dc", "odt")].height == 1 and _as_set(out[("dc", "odt")]) == {("e", "d", 1)}
    assert counts["dc_cross_split"] == 3 and counts["dc_odt_en_en"] == 1
    # CC via a: (b,c) en-en odt removed, (b,d) and (c,d) kept; via e: (b,d) again -> support 2.
    assert _as_set(out[("cc", "odt")]) == {("b", "d", 2), ("c", "d", 1)}
    assert counts["cc_instances_odt_en_en"] == 1
    assert out[("cc", "train")].height == 0


def test_max_degree_cap_skips_hubs_and_counts():
    papers = {k: ("train", "en") for k in "abcdef"}
    edges = _edges([("a", x) for x in "bcdef"] + [("b", "c"), ("b", "d")])
    out, counts = compute_pairs(edges, _splits(papers), max_degree=3)
    assert _as_set(out[("cc", "train")]) == {("c", "d", 1)}
    assert counts["cc_c_skipped_cap"] == 1 and counts["cc_instances_skipped_cap"] == 10


def test_hard_negatives():
    papers = {k: ("train", "en") for k in "abcd"}
    annotated, _ = annotate_edges(_edges([("a", "b"), ("b", "c"), ("b", "d"), ("a", "d")]), split_codes(_splits(papers)))
    neg = hard_negatives(annotated)
    assert neg.select("anchor_doi", "positive_doi", "negative_doi").rows() == [(D + "a", D + "b", D + "c")]


graphs = st.tuples(
    st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), max_size=60),
    st.lists(st.tuples(st.sampled_from(["train", "idt", "odt"]), st.sampled_from(["en", "de", "ja"])),
             min_size=15, max_size=15),
)


@settings(max_examples=60, deadline=None)
@given(graphs)
def test_supports_equal_brute_force_common_neighbours(graph):
    raw, attrs = graph
    edges = sorted({(f"p{a:02d}", f"p{b:02d}") for a, b in raw if a != b})
    papers = {f"p{i:02d}": attrs[i] for i in range(15)}
    out, counts = compute_pairs(_edges(edges) if edges else _edges([]).cast(pl.String), _splits(papers))
    cites = {p: {b for a, b in edges if a == p} for p in papers}
    cited_by = {p: {a for a, b in edges if b == p} for p in papers}
    for rel, common in (("cc", cited_by), ("bc", cites)):
        expected: dict[str, set] = {s: set() for s in ("train", "idt", "odt")}
        for x, y in combinations(sorted(papers), 2):
            n = len(common[x] & common[y])
            sx, lx = papers[x]
            sy, ly = papers[y]
            if n and sx == sy and not (sx == "odt" and lx == ly == "en"):
                expected[sx].add((x, y, n))
        for s in expected:
            got = out[(rel, s)]
            assert _as_set(got) == expected[s], (rel, s)
            assert got.select("doi_a", "doi_b").n_unique() == got.height
        assert counts[f"{rel}_instances"] == sum(int(out[(rel, s)]["support"].sum() or 0) for s in expected)
    for s in ("train", "idt", "odt"):
        for rel in ("dc", "cc", "bc"):
            got = out[(rel, s)]
            for a, b in got.select("doi_a", "doi_b").rows():
                assert papers[a[len(D):]][0] == papers[b[len(D):]][0] == s  # no pair crosses splits
            if s == "odt":
                assert got.filter(pl.col("lang_class") == "en-en").height == 0
