"""The sample's in-text citations (`sample.citing`): markers are only inserted (the paragraphs
drawn before are otherwise untouched), the Crossref reference array follows the page's list,
and everything comes from the paper's own citation RNG (same seed, same result)."""

from __future__ import annotations

import re

from openmsd_build.contexts.markers import find_markers
from openmsd_build.sample.citing import plan_citations

PARAGRAPHS = ["First sentence here. Second one follows. A third closes it.",
              "Another paragraph starts. It ends here."]
CJK = ["第一句。第二句。第三句。"]
DOIS = [f"10.5555/x.{k}" for k in range(12)]
PRINTED = [("Smith", "A", 2001 + k) for k in range(12)]
_MARKER = re.compile(r" ?(?:\[[^\]]*\]|［[^］]*］|\([^)]*\d{4}\))")


def test_markers_are_only_inserted() -> None:
    for i in range(30):
        cited, _, groups = plan_citations(7, i, "en", 2020, DOIS, PRINTED, PARAGRAPHS, f"10.5555/p.{i}")
        assert [_MARKER.sub("", p) for p in cited] == PARAGRAPHS
        assert len(groups) == sum(len(find_markers(s)) > 0 for p in cited for s in re.split(r"(?<=[.])\s", p))
        cited, _, _ = plan_citations(7, i, "zh", 2020, DOIS, PRINTED, CJK, f"10.5555/p.{i}")
        assert [_MARKER.sub("", p) for p in cited] == CJK


def test_reference_array_follows_the_page_list_and_the_rng_is_the_papers_own() -> None:
    arrays = [plan_citations(7, i, "en", 2020, DOIS, PRINTED, PARAGRAPHS, "10.5555/p")[1] for i in range(40)]
    deposited = [a for a in arrays if a is not None]
    assert 0 < len(deposited) < len(arrays)  # some papers deposit no list
    for array in deposited:
        assert [r["key"] for r in array] == [f"10.5555/p-ref{k + 1}" for k in range(len(DOIS))]
        for k, ref in enumerate(array):
            assert ref.get("DOI") in (None, DOIS[k])
            assert ref.get("year") in (None, str(PRINTED[k][2]))
    assert any("DOI" not in r for a in deposited for r in a)
    assert plan_citations(7, 3, "ru", 2020, DOIS, PRINTED, PARAGRAPHS, "d") == plan_citations(
        7, 3, "ru", 2020, DOIS, PRINTED, PARAGRAPHS, "d")
    assert plan_citations(7, 3, "en", 2020, [], [], PARAGRAPHS, "d") == (PARAGRAPHS, None, [])
