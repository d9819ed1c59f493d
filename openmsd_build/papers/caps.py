"""Size caps on the papers stage's fields, shared by the source parsers, the projection and
the merge: every step that can grow a field (an inverted index expanded into a text, lists
of records sharing a DOI merged into one row) applies the cap to what it produces.
"""

from __future__ import annotations

# Longest value kept per text field; longer values are cut and counted as
# `truncated.<source>.<field>`. No real title is near 2,000 characters or abstract near 100,000;
# such values are extraction garbage or an attack, and would bloat every later stage.
MAX_ABSTRACT_CHARS = 100_000
FIELD_CAPS: dict[str, int] = {
    "title": 2_000,
    "abstract": MAX_ABSTRACT_CHARS,
    "venue": 2_000,
    "publisher": 2_000,
    "type": 200,
    "publisher_language": 200,
    "license": 2_000,
}
# List fields: at most this many entries, each string capped like a title. Applied to each
# source record, and again to the merged row (`urls` and `relations` are unions over every
# record of a DOI, so one DOI repeated N times would otherwise make a row N times the cap),
# counted there as `truncated.merged.<field>`.
LIST_CAPS: dict[str, int] = {"titles": 20, "categories": 100, "urls": 100, "relations": 100}
MERGED_LIST_CAPS: dict[str, int] = {name: LIST_CAPS[name] for name in ("urls", "relations")}
