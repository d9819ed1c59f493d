"""How well the metadata-title evidence tells a paper's own document from another paper's.

`documents.extraction_title_match` decides whether a fetched document is the paper's (at
least `TITLE_MATCH_MIN`) or another text, whose abstracts and content are then left out. This
script extracts every document of the two hand-read truth sets once (titles known), then asks
the measure about each document with its own title (it must match) and with every other
document's title in the same language (a wrong URL, another paper's PDF: it should not), and
prints how often each does, and by which path a wrong title got through: printed in the
text, similar to the document's own title, or its words found in the text (`_word_coverage`).

    .venv/bin/python bench/title_evidence.py [--samples ../shared/real-samples] [--list] [--metadata]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETS = ("multilingual-truth.json", "multilingual-journals-truth.json")


def extractions(samples: Path) -> list[tuple[dict, dict]]:
    """(truth entry, extraction) of every document with a title in the truth sets."""
    from openmsd_build.text.extract.landing import extract_landing
    from openmsd_build.text.extract.pdf import extract_pdf

    out = []
    for name in SETS:
        for doc in json.loads((samples / name).read_text(encoding="utf-8")):
            if not doc.get("title"):
                continue
            data = (samples / doc["file"]).read_bytes()
            pdf = doc["file"].endswith(".pdf")
            out.append((doc, extract_pdf(data) if pdf else extract_landing(data, url="https://example.org/")))
    return out


def metadata_titles(samples: Path) -> dict[str, list[str]]:
    """The titles of the real metadata records (Crossref works, OpenAlex works, Unpaywall
    lines) by the language CLD3 reliably gives each: thousands of other papers' titles that
    no rule was written from, for `--metadata`."""
    import gzip

    from openmsd_build.core.language import detect_language

    titles: set[str] = set()

    def lines(path: Path):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue

    for work in lines(samples / "crossref" / "cassette_works_all.jsonl"):
        titles.update(t for t in work.get("title") or [] if isinstance(t, str))
    for work in lines(samples / "openalex" / "parseland_eval_multilingual_works.unwrapped.jsonl"):
        titles.add(work.get("title") or "")
    for path in sorted((samples / "unpaywall").glob("*.jsonl.gz")):
        for record in lines(path):
            titles.add(record.get("title") or "")
    by_language: dict[str, list[str]] = {}
    for title in sorted(t for t in titles if t):
        language, _prob, reliable = detect_language(title)[:3]
        if reliable:
            by_language.setdefault(language, []).append(title)
    return by_language


def path_of(title: str, extraction: dict) -> str:
    """Which part of the measure gave a title its match."""
    from openmsd_build.text import documents as d

    text = (extraction.get("content") or "")[:d.MATCH_TEXT_CHARS]
    if d._title_printed([d._squash_title(title)], text):
        return "printed"
    if extraction.get("title") and d.title_similarity(title, extraction["title"]) >= d.TITLE_MATCH_MIN:
        return "similar title"
    return "title words in the text"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=Path, default=REPO.parent / "shared" / "real-samples")
    parser.add_argument("--list", action="store_true", help="list every wrong title that matched")
    parser.add_argument("--metadata", action="store_true",
                        help="also ask about every real metadata record's title in the document's language")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from openmsd_build.text import documents as d

    docs = extractions(args.samples)
    own = sum((d.extraction_title_match([doc["title"]], e) or 0.0) >= d.TITLE_MATCH_MIN for doc, e in docs)
    wrong, paths, listed = 0, Counter(), []
    for doc, e in docs:
        for other, _ in docs:
            if other is doc or other["lang"] != doc["lang"]:
                continue
            if len(d._squash_title(other["title"])) < d.MIN_EVIDENCE_TITLE_CHARS:
                continue  # too short to be evidence either way (the stage does not ask)
            wrong += 1
            match = d.extraction_title_match([other["title"]], e)
            if match is not None and match >= d.TITLE_MATCH_MIN:
                paths[path_of(other["title"], e)] += 1
                listed.append(f"  {doc['file']}: {other['title'][:70]!r} {match}")
    print(f"{len(docs)} documents: own title matched {own}/{len(docs)}; another same-language document's title "
          f"matched {sum(paths.values())}/{wrong} ({sum(paths.values()) / max(wrong, 1):.1%}): {dict(paths)}")
    if args.list:
        print("\n".join(listed))
    if args.metadata:
        by_language = metadata_titles(args.samples)
        asked, matched, listed = 0, Counter(), []
        for doc, e in docs:
            for title in by_language.get(doc["lang"], []):
                if len(d._squash_title(title)) < d.MIN_EVIDENCE_TITLE_CHARS or d.title_similarity(
                        title, doc["title"]) >= d.TITLE_MATCH_MIN:
                    continue  # too short to be evidence, or the document's own paper
                asked += 1
                match = d.extraction_title_match([title], e)
                if match is not None and match >= d.TITLE_MATCH_MIN:
                    matched[path_of(title, e)] += 1
                    listed.append(f"  {doc['file']}: {title[:70]!r} {match}")
        print(f"metadata titles ({sum(map(len, by_language.values()))}, {len(by_language)} languages): another "
              f"paper's title matched {sum(matched.values())}/{asked} ({sum(matched.values()) / max(asked, 1):.1%}): "
              f"{dict(matched)}")
        if args.list:
            print("\n".join(listed))


if __name__ == "__main__":
    main()
