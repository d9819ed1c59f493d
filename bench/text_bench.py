"""Text stage throughput through Beam, next to calling the extractors directly.

    .venv/bin/python bench/text_bench.py --papers 1000

Builds a sample (`openmsd-build sample`, with its WARC of landing pages and PDFs), runs the
papers stage, then times (1) the text stage with `--fetch warc:` on the in-process runner
and (2) a plain loop over the same WARC calling `trafilatura.extract` (with the stage's
options) on every HTML page and pypdfium2's text extraction on every PDF. The difference is the stage's overhead:
planning, WARC lookups, the isolated extractor process, metadata rules, cleaning, language
identification and the Beam shuffles. One process each; 2-core machine figures in README.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

PYTHON = sys.executable


def direct(warc_glob: list[Path], stage_options: bool = True, lane: int = 0, lanes: int = 1) -> dict:
    """trafilatura on every 200 HTML page and pypdfium2's text of every page of every 200
    PDF in the archives, one loop (with `lanes` > 1: only every lanes-th such record from
    the `lane`-th, one of that many processes). `stage_options`: trafilatura called as the stage calls it
    (`landing.TRAFILATURA_OPTIONS`: precision first, no comments or tables), the same settings
    on both sides; False: trafilatura's defaults (the anchor before round nine)."""
    import pypdfium2 as pdfium
    import trafilatura

    from openmsd_build.text.extract.landing import TRAFILATURA_OPTIONS

    options = TRAFILATURA_OPTIONS if stage_options else {}

    html = pdf = 0
    started = time.perf_counter()
    for position, record in responses(warc_glob):
        if position % lanes != lane:
            continue
        body = record.content_stream().read()
        if body[:5] == b"%PDF-":
            doc = pdfium.PdfDocument(body)
            for page in doc:
                page.get_textpage().get_text_range()
            pdf += 1
        else:
            trafilatura.extract(body.decode("utf-8", "replace"), **options)
            html += 1
    return {"seconds": time.perf_counter() - started, "html": html, "pdf": pdf}


def responses(paths: list[Path]):
    """(position, record) of every 200 response of the WARCs, numbered across the files: the
    records the anchor extracts, and how a lane picks its share (`text_floor.py` takes the
    same records through this)."""
    position = 0
    for path in paths:
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type != "response" or record.http_headers.get_statuscode() != "200":
                    continue
                yield position, record
                position += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--direct", type=Path, help="only the direct loop over this folder's WARCs (`make bench`)")
    parser.add_argument("--lane", type=int, default=0)
    parser.add_argument("--lanes", type=int, default=1)
    args = parser.parse_args()
    if args.direct:
        direct(sorted(args.direct.glob("*.warc.gz")), lane=args.lane, lanes=args.lanes)
        return
    with tempfile.TemporaryDirectory() as tmp:
        sample, out = Path(tmp) / "s", Path(tmp) / "b"
        cli = [PYTHON, "-m", "openmsd_build.cli"]
        subprocess.run([*cli, "sample", "--out", str(sample), "--papers", str(args.papers), "--seed", str(args.seed)],
                       check=True, capture_output=True)
        subprocess.run([*cli, "run", "--inputs", str(sample), "--out", str(out), "--to-stage", "papers", "--no-report"],
                       check=True, capture_output=True)
        started = time.perf_counter()
        subprocess.run([*cli, "text", "--out", str(out), "--fetch", f"warc:{sample}/warc/*.warc.gz"],
                       check=True, capture_output=True)
        stage_seconds = time.perf_counter() - started
        counts = json.loads((out / "_stats" / "text.json").read_text())["counts"]
        plain = direct(sorted((sample / "warc").glob("*.warc.gz")))
    stage_pages = counts.get("extracted.landing", 0) + counts.get("extracted.pdf", 0)
    print(f"\ntext stage on {args.papers:,} papers ({stage_pages:,} pages: {counts.get('extracted.landing', 0):,} HTML, "
          f"{counts.get('extracted.pdf', 0):,} PDF)")
    print(f"{'side':44} {'seconds':>8} {'pages/s':>8}")
    print(f"{'openmsd-build text --fetch warc: (FnApiRunner)':44} {stage_seconds:8.1f} {stage_pages / stage_seconds:8.1f}")
    direct_pages = plain["html"] + plain["pdf"]
    print(f"{'trafilatura + pypdfium2 called directly':44} {plain['seconds']:8.1f} {direct_pages / plain['seconds']:8.1f}")
    print(f"stage / direct time per page: {(stage_seconds / stage_pages) / (plain['seconds'] / direct_pages):.2f}x")


if __name__ == "__main__":
    main()
