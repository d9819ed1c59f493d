"""Paratext: metadata records that are not papers (an issue's front matter, a table of contents,
an erratum, an index, a test record), flagged in `papers.paratext` and counted.

Why flagged and not dropped: such records are real DOIs with real metadata, and a user may
want them (an erratum points at its paper); but a title "Front Matter" or "Errata" kept as a
paper pollutes the title and abstract data. The rules read only the record's own fields, in
this order: the DOI (Crossref's test prefix 10.5555), the work type (a whole issue or journal,
a component), then the title as a whole (a label, not the start of a sentence: "Correction of
a split nail deformity" is a paper, "Correction: Pneumococcal carriage ..." is not).

Both merges use these rules: `paratext_reason` row by row (`merge_reference`), and the same
patterns as polars expressions (`merge_fast.paratext_expr`); the patterns avoid look-around so
the Rust regex engine reads them as Python does.
"""

from __future__ import annotations

import re

TEST_DOI_PREFIXES = ("10.5555/",)
"""Crossref's test prefix: deposits made to try the system, not works."""
PARATEXT_TYPES = {"journal-issue": "issue", "journal": "issue", "journal-volume": "issue", "component": "component"}
"""Work types that are never one paper (Crossref / OpenAlex type names)."""

# Titles that are a label of the furniture, in the languages of the world's journals;
# matched against the whole title (case-insensitive, trailing volume / issue details allowed).
_DETAILS = r"(?:\s*[-–—:,.(]?\s*(?:vol(?:ume)?\.?|issue|no\.?|n°|number|band|tome|tomo|\d).*)?\s*$"
PARATEXT_TITLE_PATTERNS = {
    "front_matter": r"^\s*(?:front|back|end|prelim(?:inary)?)\s*matters?" + _DETAILS
    + r"|^\s*(?:cover(?:\s+(?:page|image|picture|story))?|(?:inside|outside)\s+(?:front|back)\s+cover|masthead|"
    r"editorial\s+board|board\s+of\s+editors|issue\s+information|title\s+page|copyright\s+page|impressum|"
    r"expediente|ficha\s+t[ée]cnica|colophon|instructions?\s+(?:for|to)\s+authors)" + _DETAILS,
    "table_of_contents": r"^\s*(?:table\s+of\s+)?contents" + _DETAILS
    + r"|^\s*contents\s+of\s+.{1,160}(?:vol(?:ume)?\.?|issue|no\.?)\s*\d.*$"
    + r"|^\s*(?:sum[áa]rio|sommaire|[íi]ndice|inhalt(?:sverzeichnis)?|spis\s+tre[śs]ci|содержание|зміст|目次|目录|목차)"
    + _DETAILS,
    "index": r"^\s*(?:(?:subject|author|name|general|cumulative)\s+)?index" + _DETAILS
    + r"|^\s*index\s+of\s+(?:names|subjects|authors|persons|places|works|sources|references|authorities|"
    r"scripture|biblical|ancient|modern|greek|latin|classical|manuscripts|passages|terms)\b.*$"
    + r"|^\s*(?:register|sachregister|personenregister|[íi]ndice\s+(?:remissivo|onom[áa]stico))" + _DETAILS,
    "erratum": r"^\s*(?:errat(?:um|a)|corrigend(?:um|a)|addend(?:um|a)|fe\s+de\s+erratas?|errata\s+corrige|"
    r"correction(?:\s+notice)?|retraction(?:\s+notice)?|notice\s+of\s+retraction|retracted\s+article|"
    r"expression\s+of\s+concern|withdrawal\s+notice|berichtigung|erratum\s+zu)"
    r"\s*(?:$|[:.\-–—(\[]|to\b|for\b|on\b|in\b|zu\b|au\b)",
}
_TITLE_RES = {reason: re.compile(pattern, re.IGNORECASE) for reason, pattern in PARATEXT_TITLE_PATTERNS.items()}


def paratext_reason(doi: str | None, title: str | None, work_type: str | None) -> str | None:
    """Why the record is paratext ("test_doi", "issue", "component", "front_matter",
    "table_of_contents", "index", "erratum"), or None for a paper."""
    if doi and doi.lower().startswith(TEST_DOI_PREFIXES):
        return "test_doi"
    if work_type and work_type in PARATEXT_TYPES:
        return PARATEXT_TYPES[work_type]
    if title and len(title) <= 300:
        for reason, pattern in _TITLE_RES.items():
            if pattern.match(title):
                return reason
    return None


MIN_METADATA_ABSTRACT_TOKENS = 5
"""A metadata abstract of fewer tokens (`count_tokens`) is not an abstract ("International
audience", "Errata", a test record's "hola"): the merge passes it over for another source's."""
# `count_tokens` >= MIN_METADATA_ABSTRACT_TOKENS as a regex for polars: a CJK character is a
# token, a run of other word characters is one.
CJK_CLASS = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
TOKEN_PATTERN_RUST = rf"[{CJK_CLASS}]|[\w&&[^{CJK_CLASS}]]+"


def abstract_long_enough(abstract: str | None) -> bool:
    """Whether a metadata abstract has `MIN_METADATA_ABSTRACT_TOKENS` tokens."""
    from openmsd_build.core.textclean import count_tokens

    return count_tokens(abstract) >= MIN_METADATA_ABSTRACT_TOKENS
