"""DC / CC / BC pairs: hand-written expectations, and brute-force properties on random graphs."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from openmsd_build.core.hashing import hash64
from openmsd_build.pairs.relations import (
    MIX_NAMES,
    NEGATIVE_SEED,
    annotate_edges,
    attrs_of,
    compute_pairs,
    ensure_ids,
    hard_negatives,
    keep_draw,
    names_of,
    pair_hash,
    split_codes,
)

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


def _annotated(edges: list[tuple[str, str]], papers: dict[str, tuple[str, str]]):
    lookup = split_codes(_splits(papers))
    annotated, _ = annotate_edges(ensure_ids(_edges(edges)), attrs_of(lookup))
    return annotated, names_of(lookup)


def test_hard_negatives():
    papers = {k: ("train", "en") for k in "abcd"}
    annotated, names = _annotated([("a", "b"), ("b", "c"), ("b", "d"), ("a", "d")], papers)
    neg, counts = hard_negatives(annotated, names)
    assert neg.select("anchor_doi", "positive_doi", "negative_doi").rows() == [(D + "a", D + "b", D + "c")]
    assert counts["neg_cited_by_anchor"] == 1 and counts["negatives.train"] == 1


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


def test_an_odt_en_en_citation_is_no_triplets_positive():
    """ODT holds no En-En pair of any relation, yet 99 of a 600-paper build's 164 ODT triplets
    had an English anchor citing an English positive: a DC pair ODT removes."""
    papers = {"a": ("odt", "en"), "b": ("odt", "en"), "c": ("odt", "de"), "x": ("odt", "de"), "y": ("odt", "en")}
    annotated, names = _annotated([("a", "b"), ("b", "c"), ("x", "y"), ("y", "c"), ("a", "y")], papers)
    neg, counts = hard_negatives(annotated, names)
    rows = {tuple(x[len(D):] for x in r) for r in neg.select("anchor_doi", "positive_doi", "negative_doi").rows()}
    assert rows == {("x", "y", "c")}  # a -> b and a -> y are En-En in ODT: no positive
    assert counts["negatives.odt"] == 1


def test_hard_negatives_exact_and_per_anchor_choice():
    # a->b, b->c, b->d, a->d, b->e (e in IDT), f->b, b->a.
    papers = {k: ("train", "en") for k in "abcdf"}
    papers["e"] = ("idt", "en")
    edges = [("a", "b"), ("b", "c"), ("b", "d"), ("a", "d"), ("b", "e"), ("f", "b"), ("b", "a")]
    annotated, names = _annotated(edges, papers)
    neg, counts = hard_negatives(annotated, names, per_anchor=10)
    got = {tuple(x[len(D):] for x in r) for r in neg.select("anchor_doi", "positive_doi", "negative_doi").rows()}
    # a: d is cited by a, e is in another split, a itself is not its own negative.
    # b (via a): b cites d, and a->b->b would be b itself.
    assert got == {("a", "b", "c"), ("f", "b", "a"), ("f", "b", "c"), ("f", "b", "d")}
    assert counts["negatives.train"] == 4 and counts["neg_cited_by_anchor"] == 2
    assert neg.columns == ["anchor_doi", "positive_doi", "negative_doi", "lang_anchor", "lang_positive",
                           "lang_negative", "split"]
    # Two per anchor: f keeps the two candidates of smallest seeded hash rank.
    two, _ = hard_negatives(annotated, names, per_anchor=2)
    f_negs = {r[len(D):] for r in two.filter(pl.col("anchor_doi") == D + "f")["negative_doi"]}
    seed = hash64("negatives", NEGATIVE_SEED)
    rank = sorted("acd", key=lambda k: int(pair_hash(np.array([hash64(D + "f")]), np.array([hash64(D + k)]), seed)[0]))
    assert f_negs == set(rank[:2])
    assert two.filter(pl.col("anchor_doi") == D + "a").height == 1


@settings(max_examples=40, deadline=None)
@given(graphs, st.integers(1, 4))
def test_every_negative_satisfies_the_definition(graph, per_anchor):
    raw, attrs = graph
    edges = sorted({(f"p{a:02d}", f"p{b:02d}") for a, b in raw if a != b})
    papers = {f"p{i:02d}": attrs[i] for i in range(15)}
    annotated, names = _annotated(edges, papers)
    neg, _ = hard_negatives(annotated, names, per_anchor=per_anchor)
    cites = {(a, b) for a, b in edges}
    split = {k: v[0] for k, v in papers.items()}
    # the positive is a DC pair: ODT holds no En-En pair (B -> C only leads to the negative)
    dc = {(a, b) for a, b in cites if not (split[a] == "odt" and papers[a][1] == papers[b][1] == "en")}
    brute: dict[str, set] = {}
    for a, b in dc:
        for b2, c in edges:
            if b2 == b and c != a and (a, c) not in cites and split[a] == split[b] == split[c]:
                brute.setdefault(a, set()).add(c)
    rows = [tuple(x[len(D):] for x in r) for r in neg.select("anchor_doi", "positive_doi", "negative_doi").rows()]
    by_anchor: dict[str, set] = {}
    for a, b, c in rows:
        assert (a, b) in dc and (b, c) in cites and (a, c) not in cites and a != c
        assert split[a] == split[b] == split[c]
        by_anchor.setdefault(a, set()).add(c)
    assert len(rows) == len({(a, c) for a, _, c in rows})  # one row per (anchor, negative)
    for a, cs in brute.items():  # exactly min(N, candidates) per anchor, all valid
        assert len(by_anchor.get(a, set())) == min(per_anchor, len(cs))
    assert set(by_anchor) <= set(brute)


def test_mixes_exact_intersections_and_downsampled_unions():
    # DC: x->y, y->z, x->z, w->x. CC via x: (y, z); via w: none. BC via z: (x, y); via x: (w?) no;
    # via y: none (only x cites y). So DC={xy, yz, xz, wx}, CC={yz}, BC={xy}.
    papers = {k: ("train", "en") for k in "wxyz"}
    out, counts = compute_pairs(_edges([("x", "y"), ("y", "z"), ("x", "z"), ("w", "x")]), _splits(papers),
                                mixes=MIX_NAMES)
    def pairs(name):
        return {(a[len(D):], b[len(D):]) for a, b in out[(f"mix/{name}", "train")].select("doi_a", "doi_b").rows()}
    assert pairs("dc&cc") == {("y", "z")} and pairs("dc&bc") == {("x", "y")}
    assert pairs("cc&bc") == set() and pairs("dc&cc&bc") == set()
    assert counts["mix_n.dc.train"] == 4 and counts["mix_n.cc.train"] == 1 and counts["mix_n.bc.train"] == 1
    # cc+bc: equal sizes, both kept whole.
    assert pairs("cc+bc") == {("y", "z"), ("x", "y")}
    # dc+cc: CC (1 pair) kept whole, each DC pair drawn with probability 1/4 by its seeded hash.
    ids = {k: hash64(D + k) for k in "wxyz"}
    drawn = {p for p in [("w", "x"), ("x", "y"), ("x", "z"), ("y", "z")]
             if keep_draw(np.array([min(ids[p[0]], ids[p[1]])]), np.array([max(ids[p[0]], ids[p[1]])]), "dc", 0.25)[0]}
    assert pairs("dc+cc") == drawn | {("y", "z")}
    row = out[("mix/dc&cc", "train")].row(0, named=True)
    assert (row["support_dc"], row["support_cc"], row["support_bc"], row["lang_class"]) == (1, 1, 0, "en-en")


@settings(max_examples=30, deadline=None)
@given(graphs)
def test_mix_properties(graph):
    raw, attrs = graph
    edges = sorted({(f"p{a:02d}", f"p{b:02d}") for a, b in raw if a != b})
    papers = {f"p{i:02d}": attrs[i] for i in range(15)}
    out, counts = compute_pairs(_edges(edges) if edges else _edges([]).cast(pl.String), _splits(papers),
                                mixes=MIX_NAMES)
    for s in ("train", "idt", "odt"):
        rel = {}
        for r in ("dc", "cc", "bc"):
            rel[r] = {tuple(sorted(p)) for p in out[(r, s)].select("doi_a", "doi_b").rows()}
            assert counts.get(f"mix_n.{r}.{s}", 0) == len(rel[r])
        for name in MIX_NAMES:
            got = {p for p in out[(f"mix/{name}", s)].select("doi_a", "doi_b").rows()}
            assert all(a < b for a, b in got)
            rels = name.replace("&", "+").split("+")
            if "&" in name:
                assert got == set.intersection(*(rel[r] for r in rels))
            else:
                assert got <= set.union(*(rel[r] for r in rels))
                smallest = min(rels, key=lambda r: (len(rel[r]), r))
                assert rel[smallest] <= got  # the smallest relation is kept whole


def test_every_hard_negative_path_is_accounted_for():
    """A -> B1 -> C and A -> B2 -> C are one (A, C) candidate: the second path, and the
    candidates past `per_anchor`, were dropped without a count (5,243 of 51,664 paths at
    --hard-negatives 1000 on the demo)."""
    papers = {k: ("train", "en") for k in "abcdefg"}
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("b", "e"), ("c", "f"), ("b", "g")]
    annotated, names = _annotated(edges, papers)
    neg, counts = hard_negatives(annotated, names, per_anchor=2)
    written = sum(v for k, v in counts.items() if k.startswith("negatives."))
    assert counts["neg_duplicate_paths"] >= 1 and counts["neg_over_per_anchor"] >= 1
    assert counts["neg_triples"] == written + sum(counts.get(k, 0) for k in (
        "neg_duplicate_paths", "neg_candidates_pruned", "neg_cited_by_anchor", "neg_over_per_anchor"))


def test_a_paper_splits_lists_twice_is_in_no_split_and_counted():
    """A splits/ folder listing b in train and in IDT (two builds' files mixed): every edge of b
    was annotated once per row, so d (IDT) -> b came out as a train DC pair too, CC / BC
    paired papers with themselves (c-c, a-a, d-d) and edges_unannotated went negative. Now b
    is in no split: its edges are dropped and counted, and the counts reconcile."""
    from openmsd_build.core.notices import stage_warnings

    papers = {"a": ("train", "en"), "c": ("train", "de"), "d": ("idt", "en"), "e": ("train", "en")}
    splits = pl.concat([_splits(papers), _splits({"b": ("train", "en")}), _splits({"b": ("idt", "en")})])
    edges = _edges([("a", "b"), ("a", "c"), ("d", "b"), ("b", "c"), ("e", "c"), ("zz", "a")])
    out, counts = compute_pairs(edges, splits, negatives=2, mixes=MIX_NAMES)
    written = [(rel, row) for rel, frame in out.items() if "doi_a" in frame.columns
               for row in frame.select("doi_a", "doi_b").rows()]
    assert [r for r in written if D + "b" in r[1]] == []
    assert [r for r in written if r[1][0] == r[1][1]] == []
    assert _as_set(out[("dc", "train")]) == {("a", "c", 1), ("e", "c", 1)}
    assert _as_set(out[("bc", "train")]) == {("a", "e", 1)}
    assert out[("dc", "idt")].height == 0 and out[("cc", "train")].height == 0
    assert counts["papers_split_ambiguous"] == 1
    assert (counts["edges_read"], counts["edges_unannotated"], counts["edges_split_ambiguous"],
            counts["edges_annotated"]) == (6, 1, 3, 2)
    assert counts["edges_read"] == (counts["edges_unannotated"] + counts["edges_split_ambiguous"]
                                    + counts["edges_annotated"])
    assert stage_warnings("pairs", counts)[0] == (
        "1 paper of splits/ is listed more than once (a splits/ folder mixing two builds' files?): in no split, "
        "3 citation edges of theirs dropped and no pair of theirs written (core.split_rows)")
