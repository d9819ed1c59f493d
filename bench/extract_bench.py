"""Throughput of the text extractors against the libraries they wrap, on the real samples.

Answers: what do our rules (meta parsing, abstract search, cleaning, layout repair) and the
worker-process isolation cost on top of trafilatura / pypdfium2 alone? One core, documents
repeated `--rounds` times.

    .venv/bin/python bench/extract_bench.py [--samples ../shared/real-samples] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(fn: Callable[[bytes], object], docs: list[bytes], rounds: int) -> float:
    """Seconds for `rounds` passes over `docs` (after one warm-up document)."""
    fn(docs[0])
    started = time.perf_counter()
    for _ in range(rounds):
        for doc in docs:
            fn(doc)
    return time.perf_counter() - started


def trafilatura_direct(doc: bytes) -> object:
    """trafilatura alone, called with the stage's options (the same extraction)."""
    import trafilatura

    from openmsd_build.text.extract.landing import TRAFILATURA_OPTIONS

    return trafilatura.extract(doc, **TRAFILATURA_OPTIONS)


def pdfium_direct(doc: bytes) -> int:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(doc)
    total = 0
    for i in range(len(pdf)):
        page = pdf[i]
        textpage = page.get_textpage()
        total += len(textpage.get_text_range())
        textpage.close()
        page.close()
    pdf.close()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path, default=REPO.parent / "shared" / "real-samples")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import pypdfium2 as pdfium

    from openmsd_build.text.extract.landing import extract_landing
    from openmsd_build.text.extract.pdf import extract_pdf
    from openmsd_build.text.extract.pool import ExtractorPool

    pages = [p.read_bytes() for p in sorted((args.samples / "html").glob("*.html"))]
    pdfs = [p.read_bytes() for p in sorted((args.samples / "pdf").glob("*.pdf"))]
    n_pdf_pages = sum(len(pdfium.PdfDocument(d)) for d in pdfs)
    isolated = ExtractorPool(timeout=60)
    isolated.start()

    rows = []
    n = len(pages) * args.rounds
    for label, fn in [
        ("trafilatura.extract (direct)", trafilatura_direct),
        ("extract_landing (meta + abstract + trafilatura + cleaning)", extract_landing),
        ("extract_landing with_content=False (meta + abstract only)", lambda d: extract_landing(d, with_content=False)),
        ("extract_landing in ExtractorPool", lambda d: isolated.extract("html", d)),
    ]:
        seconds = timed(fn, pages, args.rounds)
        rows.append(("html", label, n, seconds, n / seconds, None))
    n = len(pdfs) * args.rounds
    for label, fn in [
        ("pypdfium2 get_text_range, all pages (direct)", pdfium_direct),
        ("extract_pdf (layout repair, title, abstract, refs)", extract_pdf),
        ("extract_pdf in ExtractorPool", lambda d: isolated.extract("pdf", d)),
    ]:
        seconds = timed(fn, pdfs, args.rounds)
        rows.append(("pdf", label, n, seconds, n / seconds, n_pdf_pages * args.rounds / seconds))
    isolated.close()

    print(f"{len(pages)} landing pages, {len(pdfs)} PDFs ({n_pdf_pages} pages), {args.rounds} rounds, one core\n")
    print("| kind | extractor | docs | seconds | docs/s | PDF pages/s |\n|---|---|---:|---:|---:|---:|")
    for kind, label, count, seconds, docs_s, pages_s in rows:
        pages_col = f"{pages_s:.0f}" if pages_s else ""
        print(f"| {kind} | {label} | {count} | {seconds:.2f} | {docs_s:.1f} | {pages_col} |")


if __name__ == "__main__":
    main()
