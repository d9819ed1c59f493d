"""A minimal, deterministic PDF writer for the sample's full-text PDFs.

The text stage must be tested on real PDF bytes (a text layer that pypdfium2 extracts), but
the sample cannot ship third-party PDFs and must be byte-identical for one seed, so this
writes PDF 1.4 by hand: the standard Type1 Helvetica fonts (no embedding) with
WinAnsiEncoding, Flate-compressed content streams, a classic xref table and no timestamps.
WinAnsiEncoding limits the text to cp1252, so only Latin-script papers get PDFs.
"""

from __future__ import annotations

import textwrap
import zlib

PAGE_W, PAGE_H = 595, 842  # A4 in points
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = 56, 64, 64

# style -> (font resource, size, leading, wrap width in characters, space before)
_STYLES: dict[str, tuple[str, float, float, int, float]] = {
    "title": ("F2", 16, 20, 58, 0),
    "meta": ("F1", 9, 12, 110, 4),
    "heading": ("F2", 12, 16, 80, 10),
    "para": ("F1", 10, 13, 98, 4),
    "ref": ("F1", 8.5, 11, 118, 2),
}


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in cp1252 with the three special characters escaped."""
    raw = text.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _info_string(text: str) -> bytes:
    """Document-information strings in UTF-16BE with BOM, so any title survives in /Info."""
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"


def _layout(blocks: list[tuple[str, str]]) -> list[list[bytes]]:
    """Wrap and place the blocks; returns one list of content-stream operators per page."""
    pages: list[list[bytes]] = [[]]
    y = PAGE_H - MARGIN_TOP
    for style, text in blocks:
        font, size, leading, width, before = _STYLES[style]
        lines = textwrap.wrap(text, width=width, break_long_words=True) or [""]
        y -= before
        for line in lines:
            if y - leading < MARGIN_BOTTOM:
                pages.append([])
                y = PAGE_H - MARGIN_TOP
            y -= leading
            pages[-1].append(b"BT /%s %g Tf 1 0 0 1 %d %.1f Tm %s Tj ET" % (
                font.encode(), size, MARGIN_X, y, _pdf_string(line)))
    return pages


def make_pdf(blocks: list[tuple[str, str]], title: str = "", author: str = "") -> bytes:
    """Render `blocks` — (style, text) with style in title/meta/heading/para/ref — to PDF bytes.

    Output depends only on the arguments (no dates, no random ids), so the sample stays
    byte-identical per seed.
    """
    pages = _layout(blocks)
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the page tree's number is known
    pages_obj = add(b"")
    font1 = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    font2 = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    kids = []
    for ops in pages:
        data = zlib.compress(b"\n".join(ops), 6)
        content = add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data))
        kids.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R /F2 %d 0 R >> >> >>"
            % (pages_obj, PAGE_W, PAGE_H, content, font1, font2)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % pages_obj
    objects[pages_obj - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    info = add(b"<< /Title %s /Author %s /Producer (openmsd-build sample) >>" % (
        _info_string(title), _info_string(author)))

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, catalog, info, xref)
    return bytes(out)
