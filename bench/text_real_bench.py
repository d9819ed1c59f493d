"""The text stage on the real pages and PDFs of ../shared/real-samples, next to its extractors.

    .venv/bin/python bench/text_real_bench.py [--samples ../shared/real-samples] [--turns 3] [--json]
    .venv/bin/python bench/text_real_bench.py --copies 20 --turns 2   # start-up faded

The generated bench sample (`text_bench.py`, `make bench`) is thousands of small documents;
the real samples are the other end: 30 landing pages (a few of them 400 KB of markup) and
43 PDFs of 2-118 pages in a dozen languages and scripts, where the extractors' own work
dominates and the stage's fixed costs (Beam, planning, the isolated children) weigh least.

Every page and PDF is written into a WARC (a 200 response under a made-up
`https://real-samples.invalid/` URL, the file's folder and name as its path) and given one
paper whose only URL is that document, so the stage extracts each exactly once (a landing
page's `citation_pdf_url` then points outside the archive: a miss, counted once a URL). The
paper's metadata title is the document's title where the truth files give it whole (every PDF;
the earlier landing pages' titles are cut short there and they get none), as a Crossref record
would give it: a real build's papers have titles, and a PDF's printed title is looked for only
when a paper needs it (without any, every PDF paid for that rule). The two
sides are timed as whole processes, in turns, as `make bench` times the text row:

* ours — `openmsd-build text --fetch warc:` (FnApiRunner, isolated extractor children with
  their deadlines and memory limits, document building, CLD3, Parquet);
* anchor — `text_bench.direct`: trafilatura (called with the stage's options) and
  pypdfium2's text of every page, one loop.

`--copies N` writes every document N times (copy `c` under the path `/c{c}/...`, with a paper
of its own), so that the run lasts minutes and the fixed start-up of both sides fades: the
per-document ratio of real-sized documents, where the generated sample's are a few kilobytes.
The copies are the same bytes, so caches inside a process answer for a copy seen before: in
the stage, each child's memoized CLD3 answers (building took ~4 % of the stage's CPU in a run
of 20 copies); in the anchor, trafilatura's own caches, and its one process sees every copy
where the stage's children see a share each.

Inputs are made under bench/data/real-text/ (`real-text-x{N}/` with `--copies N`; nothing is
copied into the repository).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run_all import _json_line, text_commands, text_row  # noqa: E402

SAMPLES = HERE.parent.parent / "shared" / "real-samples"
FOLDERS = {"html": "landing", "html-multilingual": "landing", "pdf": "pdf", "pdf-multilingual": "pdf"}
HOST = "https://real-samples.invalid"


def sample_files(samples: Path) -> list[tuple[Path, str]]:
    """(file, url kind) for every real page and PDF, in a fixed order."""
    files = []
    for folder, kind in FOLDERS.items():
        suffix = ".pdf" if kind == "pdf" else ".html"
        files += [(path, kind) for path in sorted((samples / folder).glob(f"*{suffix}"))]
    return files


def data_dir(copies: int = 1) -> Path:
    """Where the inputs and the build of a run with `copies` live (also `profile_text.py --real`)."""
    return HERE / "data" / ("real-text" if copies == 1 else f"real-text-x{copies}")


def truth_titles(samples: Path) -> dict[str, str]:
    """Folder/name -> the document's title as the truth files give it whole (hand-read from the
    document: `multilingual-truth.json`, and the PDFs' titles in MANIFEST.md); the earlier
    landing pages' MANIFEST titles are cut at ~70 characters and are left out."""
    from fidelity import earlier_truth

    truth = json.loads((samples / "multilingual-truth.json").read_text(encoding="utf-8"))
    return {doc["file"]: doc["title"] for doc in [*truth, *earlier_truth(samples)]
            if doc.get("title") and not doc.get("title_prefix")}


def prepare(samples: Path, data: Path, copies: int = 1) -> tuple[Path, int]:
    """Write the WARC and the papers table under `data` (again each time: it takes a second
    a copy), every document `copies` times; return (the papers folder, how many documents)."""
    from openmsd_build.core import parquet_io
    from openmsd_build.sample.generator import WarcSink
    from openmsd_build.schemas import PAPERS

    shutil.rmtree(data, ignore_errors=True)
    (data / "warc").mkdir(parents=True)
    files = sample_files(samples)
    titles = truth_titles(samples)
    rows = []
    with open(data / "warc" / "real.warc.gz", "wb") as f:
        sink = WarcSink(f, seed=0)
        bodies = [path.read_bytes() for path, _kind in files]  # read once, written `copies` times
        documents = ((path, kind, body, copy) for copy in range(copies)
                     for (path, kind), body in zip(files, bodies, strict=True))
        for i, (path, kind, body, copy) in enumerate(documents):
            url = f"{HOST}/{f'c{copy}/' if copy else ''}{path.parent.name}/{path.name}"
            content_type = "application/pdf" if kind == "pdf" else "text/html; charset=utf-8"
            title = titles.get(f"{path.parent.name}/{path.name}")  # what a Crossref record would give
            sink.add(url, 200, content_type, body, when=i)
            rows.append({
                "doi": f"10.0/real.{i}", "title": title, "title_source": "crossref" if title else None,
                "abstract": None, "abstract_source": None,
                "categories": ["Science"], "sources": ["unpaywall"], "n_records": 1, "relations": [],
                "urls": [{"url": url, "kind": kind, "host_type": "repository", "license": None, "version": None,
                          "source": "unpaywall", "rank": 0}],
            })
    parquet_io.write_table(parquet_io.table_from_rows(rows, PAPERS), parquet_io.part_path(str(data / "papers"), 0, 1))
    return data / "papers", len(rows)


def measure(samples: Path, turns: int, copies: int = 1) -> dict:
    """Both sides, in turns, `turns` times; a row as `make bench` writes them (each side's
    median run), with the per-turn ratios and the documents extracted."""
    data = data_dir(copies)
    papers, n_docs = prepare(samples, data, copies)
    build = data / "build"
    commands = text_commands(build, data / "warc")
    runs: tuple[list[dict], list[dict], list[dict]] = ([], [], [])
    for _ in range(turns):
        shutil.rmtree(build, ignore_errors=True)  # a fresh build each turn: nothing resumed
        shutil.copytree(papers, build / "papers")
        for side, cmd in zip(runs, commands, strict=True):
            side.append(_json_line(cmd))
    counts = json.loads((build / "_stats" / "text.json").read_text())["counts"]
    row = text_row("text-real", n_docs, *runs)
    ours, anchor = runs[0], runs[1]
    row.update(turn_ratios=[round(o["seconds"] / a["seconds"], 2) for o, a in zip(ours, anchor, strict=True)],
               extracted_landing=counts.get("extracted.landing", 0), extracted_pdf=counts.get("extracted.pdf", 0))
    return row


def samples_present(samples: Path) -> bool:
    return (samples / "pdf").is_dir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--copies", type=int, default=1, help="every document this many times")
    parser.add_argument("--json", action="store_true", help="print the row as one JSON object last")
    args = parser.parse_args()
    if args.copies < 1:
        parser.error("--copies must be at least 1")
    if not samples_present(args.samples):
        sys.exit(f"no real samples at {args.samples} (the folder ../shared/real-samples beside the repository)")
    row = measure(args.samples, args.turns, args.copies)
    print(f"text stage on the real samples: {row['size']} documents ({row['extracted_landing']} landing pages, "
          f"{row['extracted_pdf']} PDFs extracted), {args.turns} turns, medians")
    print(f"  openmsd-build text --fetch warc:   {row['ours_s']:6.2f} s   peak RSS {row['ours_rss_mb']} MB")
    print(f"  trafilatura + pypdfium2 directly   {row['anchor_s']:6.2f} s   peak RSS {row['anchor_rss_mb']} MB")
    print(f"  ratio {row['ratio']:.2f}x (per turn: {', '.join(f'{r:.2f}' for r in row['turn_ratios'])}); "
          f"CPU {row['ours_cpu_s']:.1f} s vs {row['anchor_cpu_s']:.1f} s ({row['cpu_ratio']:.2f}x); "
          f"anchor on every core {row['anchor_parallel_s']:.2f} s ({row['parallel_ratio']:.2f}x)")
    if args.json:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
