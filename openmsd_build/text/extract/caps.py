"""Caps on what an extractor produces, applied to its output (pure functions).

The fetch caps bound a body's bytes, but extraction can grow text: a PDF's compressed
content stream (deflate expands ~1000x) drawn by every one of 300 pages, or one stream
shared by all of them, turns a 100 KB document into hundreds of MB of text. So every field
an extractor returns is bounded here, whatever the input, and a field is never larger than
the body cap of every source (`MAX_CONTENT_CHARS` characters are at most 4 bytes each in
UTF-8: 16 MB, under the 32 MB of `fetch.result.MAX_BODY_BYTES`).
"""

from __future__ import annotations

from typing import Any

MAX_CONTENT_CHARS = 4_000_000
MAX_ABSTRACT_CHARS = 20_000
MAX_TITLE_CHARS = 2_000
MAX_FIELD_UTF8_BYTES = 4 * MAX_CONTENT_CHARS
_CAPS = {"title": MAX_TITLE_CHARS, "abstract": MAX_ABSTRACT_CHARS, "content": MAX_CONTENT_CHARS}


def cap_extraction(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` (an extractor's result) with `title`, `abstract`, `content` and each entry of
    `abstracts` cut to their caps, in place; the names of the cut fields are listed in
    `rules["truncated"]` (absent when nothing was cut, so ordinary outputs are unchanged)."""
    cut: list[str] = []
    for name, cap in _CAPS.items():
        value = fields.get(name)
        if isinstance(value, str) and len(value) > cap:
            fields[name] = value[:cap]
            cut.append(name)
    for entry in fields.get("abstracts") or ():
        text = entry.get("text") if isinstance(entry, dict) else None
        if isinstance(text, str) and len(text) > MAX_ABSTRACT_CHARS:
            entry["text"] = text[:MAX_ABSTRACT_CHARS]
            if "abstracts" not in cut:
                cut.append("abstracts")
    if cut and isinstance(fields.get("rules"), dict):
        fields["rules"]["truncated"] = cut
    return fields
