"""A PDF file's bytes from its objects, for tests that write PDFs by hand (a ToUnicode CMap, a
content stream drawn by every page): objects numbered from 1 in order, the cross-reference
table, and a trailer naming object 1 as the catalog."""

from __future__ import annotations


def pdf_file(objects: list[bytes], info: int | None = None) -> bytes:
    """`objects` (each an object's body) as a PDF 1.4 file; `info`: the number of the object
    that is the Info dictionary, if one is."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info_ref = b" /Info %d 0 R" % info if info is not None else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info_ref, xref)
    return bytes(out)
