"""Errors quote a hostile value bounded (`core.errors.MAX_QUOTE`), not whole: a recipe with a
5 MB part, kind or language code, or a 300 KB `--mix`, printed an error line of megabytes."""

from __future__ import annotations

import pytest

from openmsd_build.core.errors import UserError, short_repr, shorten
from openmsd_build.export import recipes
from openmsd_build.export.trainer import parse_mix

HUGE = "x" * 5_000_000

RECIPES = {
    "part_not_an_object": {"parts": [HUGE]},
    "part_kind": {"parts": [{"kind": HUGE}]},
    "pairs_relation": {"parts": [{"kind": "pairs", "relation": HUGE}]},
    "language_code": {"parts": [{"kind": "title-abstract"}], "languages": [HUGE]},
}


@pytest.mark.parametrize("case", sorted(RECIPES))
def test_a_recipe_error_quotes_a_huge_value_bounded(case) -> None:
    with pytest.raises(UserError) as caught:
        recipes.parse_recipe({"name": "x", **RECIPES[case]})
    assert len(str(caught.value)) < 1000 and "(5,000,000 characters)" in str(caught.value)


def test_a_huge_mix_is_quoted_bounded() -> None:
    with pytest.raises(ValueError) as caught:
        parse_mix("dc+" + "cc&" * 100_000)
    assert len(str(caught.value)) < 1000


def test_short_values_are_quoted_as_before() -> None:
    assert short_repr("dc+zz") == "'dc+zz'" and shorten("abc") == "abc"
    assert short_repr("y" * 300) == repr("y" * 200) + "… (300 characters)"
