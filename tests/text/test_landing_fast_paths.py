"""The landing rules' fast paths give the answers of the rules without them.

`_may_name_abstract` passes over an element whose class and id cannot name an abstract box
before the per-token regexes run, and `_abstracts_after_headings` passes over an element
whose leading text cannot start a heading word before building its whole text. Both are
there for speed only: on the real pages and on pages built around every form a heading or a
class name takes (leading white space, inline markup, the letters a case-insensitive regex
treats specially), the rules must answer as with the fast paths switched off."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from openmsd_build.text.extract import landing as L

_HEADINGS = ["Abstract", " ABSTRACT: ", "\n<i>Resumo</i>", "Summary.", "ſummary", "Özet", "摘 要", "摘要：", "<b></b>Resumen",
             "Zusammenfassung", "Аннотация", "Keywords", "Introduction", "  ", "\u00a0Abstract", "\u212aurzfassung", "İ"]
_NAMES = ["abstract", "Abstract-Section", "article-summary", "summary", "RESUMO", "résumé", "c-abstract__toggle", "nav",
          "Zusammenfassung", "ſummary", "abstract-link", "x", "", "related-abstract", "Ab-stract"]
_BODY = "This study of river sediment dynamics reports measurements at forty sites over ten years of floods."


def _built_pages(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    pages = []
    for _ in range(n):
        parts = []
        for _k in range(rng.randint(1, 5)):
            tag = rng.choice(["h2", "h3", "b", "strong", "span", "label", "dt", "th", "p"])
            box = rng.choice(["div", "section", "p", "span"])
            cls, ident = rng.choice(_NAMES), rng.choice(_NAMES)
            parts.append(f'<{box} class="{cls}" id="{ident}"><{tag}>{rng.choice(_HEADINGS)}</{tag}>'
                         f"<p>{_BODY * rng.randint(1, 3)}</p></{box}>")
        pages.append(f"<html><body>{''.join(parts)}</body></html>")
    return pages


def _real_pages(root: Path) -> list[bytes]:
    return [p.read_bytes() for sub in ("html", "html-multilingual") for p in sorted((root / sub).glob("*.htm*"))]


@pytest.fixture(scope="module", params=["built", "real"])
def pages(request) -> list[str | bytes]:
    if request.param == "built":
        return _built_pages(1)
    real = _real_pages(request.getfixturevalue("real_samples"))
    assert len(real) > 20
    return real


def test_abstract_rules_answer_as_without_their_gates(pages: list[str | bytes], monkeypatch) -> None:
    trees = [L.parse_html(page) for page in pages]
    got = [(L._abstract_candidates(t), L._abstracts_after_headings(t)) for t in trees]
    monkeypatch.setattr(L, "_may_name_abstract", lambda _names: True)
    monkeypatch.setattr(L, "_may_start_heading_word", lambda _text: True)
    assert got == [(L._abstract_candidates(t), L._abstracts_after_headings(t)) for t in trees]
    assert sum(bool(c) for c, _h in got) > 5 and sum(bool(h) for _c, h in got) > 5  # both rules find abstracts


def test_may_name_abstract_refuses_only_names_without_a_match() -> None:
    rng = random.Random(2)
    pieces = [*_NAMES, " ", "\t", "-", "K", "\u212a", "ı", "ſ", "É", "é", "sum", "mary", "abs", "tract"]
    drawn = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 5))) for _ in range(20_000)]
    refused = 0
    for names in drawn:
        if not L._may_name_abstract(names):
            refused += 1
            assert not any(L._ABSTRACT_TOKEN_RE.search(t) for t in names.split()), repr(names)
    assert refused > 2000
