"""Bytes of a landing page as text: which encoding decides, and when there is none.

Mis-decoded bytes must never go out as text (a UTF-16 page read as cp1252 is a field of
NULs and mojibake; `errors="replace"` fills a title with U+FFFD). So, in order (the order
of the WHATWG encoding sniffing algorithm, without the HTTP header, which the extractor
does not see):

1. a byte-order mark decides: UTF-8, UTF-16LE or UTF-16BE, whatever the page declares;
2. bytes that are valid UTF-8 are UTF-8 (most pages; a wrong `<meta charset>` is common);
3. the encoding declared in the page (`<?xml ... encoding=?>`, `<meta charset>`,
   `<meta http-equiv content="...; charset=">`), when Python knows it as a text encoding
   (WHATWG's rules: a declared UTF-16 means UTF-8, UTF-7 is never honoured; Python's own
   codecs that are no page encoding, such as `unicode_escape`, count as unknown);
4. else windows-1252 (the web's default for undeclared pages).

Every decoding is strict: bytes the chosen encoding cannot decode raise `UndecodableText`
(the document's reject, with the encoding and the offset), never a silent fallback to
another encoding or replacement characters.
"""

from __future__ import annotations

import codecs
import re

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_XML_ENCODING_RE = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)["'][^>]*\?>""")
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
PRESCAN_BYTES = 8192
DEFAULT_ENCODING = "cp1252"
# Declared encodings that are not honoured as such (WHATWG): UTF-16/32 declared inside the
# bytes cannot be right (the declaration itself was readable as ASCII), UTF-7 is a known
# injection vector. Python also knows names that are no page's encoding at all, and they are
# refused as unknown ones: the escape codecs read `\u00e9`, `\ud835` or `\x00` written in
# the page as characters (mis-decoded text, a lone surrogate, a NUL), `undefined` raises a
# UnicodeError that is no decoding error, `idna` and `punycode` read host names.
_AS_UTF8 = {"utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"}
_REFUSED = {"utf-7", "unicode-escape", "raw-unicode-escape", "undefined", "idna", "punycode"}


class UndecodableText(ValueError):
    """The bytes are not text in the encoding that applies to them."""


def bom_encoding(body: bytes) -> tuple[str, int] | None:
    """(encoding, BOM length) when `body` starts with a byte-order mark."""
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return encoding, len(bom)
    return None


def declared_encoding(body: bytes) -> str | None:
    """The encoding a page declares in its first `PRESCAN_BYTES` (XML declaration, then
    `<meta>`), as Python's codec name, or None (none declared, unknown, not a text
    encoding, or refused)."""
    head = body[:PRESCAN_BYTES]
    match = _XML_ENCODING_RE.match(head) or _META_CHARSET_RE.search(head)
    if not match:
        return None
    try:
        info = codecs.lookup(match.group(1).decode("ascii"))
    except LookupError:
        return None
    if not getattr(info, "_is_text_encoding", True):  # base64, zlib, rot13 ...
        return None
    name = info.name.replace("_", "-")
    if name in _REFUSED:
        return None
    return "utf-8" if name in _AS_UTF8 else name


def _strict(data: bytes, encoding: str, why: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UndecodableText(
            f"undecodable_text: bytes {exc.start}-{exc.end} are not {encoding} ({why})") from None


def decode_page(body: bytes) -> str:
    """`body` as text by the rules of the module docstring; raises `UndecodableText`."""
    bom = bom_encoding(body)
    if bom is not None:
        encoding, size = bom
        return _strict(body[size:], encoding, "byte-order mark")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    declared = declared_encoding(body)
    if declared is not None:
        return _strict(body, declared, "declared")
    return _strict(body, DEFAULT_ENCODING, "no declaration")
