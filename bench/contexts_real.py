"""The contexts stage on the real full texts of ../shared/real-samples whose DOI has a Crossref
work with a reference list among the samples, and a dump of every resolved marker with the
reference it matched, for checking by hand.

    .venv/bin/python bench/contexts_real.py [--samples ../shared/real-samples] [--out bench/data/contexts-real]

Which full texts: the pages and PDFs of the samples whose own DOI is that of a Crossref work
with a `reference` array in the samples' Crossref files (found by reading each page's and
PDF's text for DOIs, `FULL_TEXTS`): two PDFs (EFSA Journal 10.2903/j.efsa.2014.3550, 19
references; Comparative Cytogenetics 10.3897/compcytogen.v10i4.9536, 52) and one landing page
(PeerJ 10.7717/peerj.4375, whose fixture keeps 3 of its 52 references). The real stages run
on them as a user would: `papers` on the samples' Crossref chunk, `text --fetch local:` with a
manifest, then `contexts` with the Crossref files (an empty `splits/` stands in for the
split stage: no OpenCitations rows link these papers). Prints the resolution rate per marker
style and per reason and writes `resolved.json` (sentence, marker, matched reference) and
`unresolved.json` under `--out`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent.parent / "shared" / "real-samples"
CLI = [sys.executable, "-m", "openmsd_build.cli"]
CROSSREF = ("crossref/cassette_works_all.public_data_file_style.json.gz",
            "crossref/files_as_found/opencitations_index__crossref_dump.json")
FULL_TEXTS = {
    "10.2903/j.efsa.2014.3550": "pdf/crminer__10.2903_j.efsa.2014.3550.pdf",
    "10.3897/compcytogen.v10i4.9536": "pdf/crminer__10.3897.compcytogen.v10i4.9536.pdf",
    "10.7717/peerj.4375": "html/sandcrawler__peerj_oa_article.html",
}


def build(samples: Path, out: Path) -> Path:
    """papers -> text (local folder) -> contexts into `out/build`; returns the build root."""
    from openmsd_build.core import parquet_io
    from openmsd_build.schemas import SPLITS

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    root = out / "build"
    manifest = out / "manifest.csv"
    manifest.write_text("doi,path\n" + "".join(f"{d},{p}\n" for d, p in FULL_TEXTS.items()), encoding="utf-8")
    crossref = [str(samples / c) for c in CROSSREF]
    subprocess.run([*CLI, "papers", "--out", str(root), "--crossref", *crossref], check=True, capture_output=True)
    subprocess.run([*CLI, "text", "--out", str(root), "--fetch", f"local:{samples}@{manifest}"], check=True,
                   capture_output=True)
    parquet_io.write_table(SPLITS.empty_table(), str(root / "splits" / "part-00000-of-00001.parquet"))
    done = subprocess.run([*CLI, "contexts", "--out", str(root), "--crossref", *crossref], check=True,
                          capture_output=True, text=True)
    print(done.stdout.strip())
    return root


def references_of(samples: Path) -> dict[str, list[dict]]:
    from openmsd_build.contexts.references import lists_of_files

    return {doi: refs for doi, (refs, _listed) in lists_of_files(str(samples / name) for name in CROSSREF).items()}


def marker_outcomes(doi: str, content: str, refs: list[dict] | None) -> list[dict]:
    """Every marker of every sentence (written as a context or not) with its outcome and the
    reference it matched: the stage's own functions, sentence by sentence."""
    from openmsd_build.contexts.extract import as_references, cut_reference_section
    from openmsd_build.contexts.markers import find_markers
    from openmsd_build.contexts.resolve import ReferenceIndex
    from openmsd_build.contexts.sentences import split_sentences

    index = ReferenceIndex(as_references(refs))
    by_order = {r["order"]: r for r in refs or []}
    out = []
    for sentence in split_sentences(cut_reference_section(content)[0]):
        for m in find_markers(sentence):
            r = index.resolve(m)
            out.append({"doi": doi, "sentence": sentence, "marker": sentence[m.start:m.end], "style": m.style,
                        "surname": m.surname, "year": m.year, "suffix": m.suffix, "number": m.number,
                        "method": r.method, "cited_doi": r.doi, "reason": r.reason,
                        "reference": by_order.get(r.reference.order) if r.reference else None})
    return out


def report(samples: Path, root: Path, out: Path) -> dict:
    counts = json.loads((root / "_stats" / "contexts.json").read_text("utf-8"))["counts"]
    lists = references_of(samples)
    docs = pq.read_table(root / "documents", columns=["doi", "content", "language"]).to_pylist()
    outcomes = [o for d in docs if d["doi"] in FULL_TEXTS and d["content"]
                for o in marker_outcomes(d["doi"], d["content"], lists.get(d["doi"]))]
    per_doc: dict[str, Counter] = {}
    for o in outcomes:
        per_doc.setdefault(o["doi"], Counter())[o["reason"] or "resolved"] += 1
    styles = sorted({k.split(".", 1)[1] for k in counts if k.startswith("markers_found.")})
    rates = {s: {"found": counts.get(f"markers_found.{s}", 0), "resolved": counts.get(f"markers_resolved.{s}", 0)}
             for s in styles}
    for name, keep in (("resolved", True), ("unresolved", False)):
        rows = [o for o in outcomes if (o["cited_doi"] is not None) == keep]
        (out / f"{name}.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    assert sum(per_doc[d].total() for d in per_doc) == counts.get("markers_found", 0), "stage and dump disagree"
    return {"stage_counts": counts, "per_document": {d: dict(c) for d, c in per_doc.items()}, "per_style": rates}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    parser.add_argument("--out", type=Path, default=HERE / "data" / "contexts-real")
    args = parser.parse_args(argv)
    root = build(args.samples, args.out)
    result = report(args.samples, root, args.out)
    for style, r in result["per_style"].items():
        rate = r["resolved"] / r["found"] if r["found"] else 0
        print(f"{style}: {r['resolved']}/{r['found']} resolved ({100 * rate:.1f}%)")
    for doi, c in result["per_document"].items():
        print(doi, json.dumps(c))
    print(f"markers to check by hand: {args.out / 'resolved.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
