"""Text fidelity: score what `openmsd-build inspect --json` extracts against a hand-checked truth.

Why this exists: extraction rules are easy to tune on the pages one has looked at and hard to
keep right on pages nobody has seen. This script measures four checks per document against a
truth file written by reading the documents (never by running an extractor), and prints the
rate of each check per language and per language group, so a rule that helps Portuguese and
hurts Chinese shows up as such.

Checks (matching as `real-samples/MANIFEST.md` advises: NFKC, whitespace collapsed, soft
hyphens / ZWNJ / ZWJ / bidi marks removed, Persian/Arabic yeh and kaf folded, case folded; CJK,
Persian and Arabic compared without any spaces, other scripts without whitespace too, so a
line break the PDF put inside a word does not count as a different text):

* `title`: the kept title equals the truth title, or one contains the other and the shorter
  is at least 60 % of the longer (a subtitle on either side); a truth title that the
  MANIFEST truncated only needs to be a prefix;
* `abstract`: one check per truth abstract: its `start` is a substring of one extracted
  abstract labelled with the same language (the `abstracts` list of the document row; before
  that column existed, the single `abstract` with the document's language);
* `language`: the document's language equals the truth's;
* `full_text`: the document has content exactly when the truth says the file has a body.

The documents run through `openmsd_build.text.inspect.inspect_document` in this process with
one isolated extractor: the code path of `openmsd-build inspect PATH --json`, i.e. the text
stage's extractor + `build_document`, without a process start per file.

Modes:

    .venv/bin/python bench/fidelity.py                       # the multilingual truth set
    .venv/bin/python bench/fidelity.py --earlier             # the earlier html/ + pdf/ samples
    .venv/bin/python bench/fidelity.py --json out.json       # also write per-document results
    .venv/bin/python bench/fidelity.py --metadata BUILD      # metadata cleaning counts of a build

`--metadata BUILD` reads a `run --fetch none` build of every real metadata sample (command in
`metadata_build_command()`) and counts titles still holding markup or entities, abstracts
still starting with a label ("Resumo", "BACKGROUND:"), and abstracts dropped as wrong by
reason: re-detected here, and as the text stage counted them in `_stats/text.json`
(`abstracts_wrong.<reason>`, incl. `abstract_duplicate_across_dois`).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SAMPLES = Path(os.environ.get("OPENMSD_REAL_SAMPLES", REPO.parent / "shared" / "real-samples"))

# Language groups: by script and family, so each group's rate says whether one kind of rule
# (Latin heading lexicon, CJK script evidence, right-to-left text layers) works.
LANGUAGE_GROUPS = {
    "romance": {"pt", "es", "fr", "it", "ca", "ro", "gl"},
    "germanic": {"en", "de", "nl", "sv", "da", "no", "nb", "af"},
    "cjk": {"zh", "ja", "ko"},
    "cyrillic": {"ru", "uk", "bg", "sr", "be", "mk", "kk"},
    "arabic-script": {"ar", "fa", "ur", "ps"},
}
NO_SPACE_LANGUAGES = {"zh", "ja", "ko", "fa", "ar", "ur", "th"}
CHECKS = ("title", "abstract", "language", "full_text")

_INVISIBLE_RE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\u0640]")
_FOLD = str.maketrans({"ي": "ی", "ى": "ی", "ك": "ک", "ة": "ه", "ۀ": "ه", "أ": "ا", "إ": "ا", "آ": "ا"})


def group_of(lang: str) -> str:
    return next((g for g, langs in LANGUAGE_GROUPS.items() if lang in langs), "other-latin")


def norm(text: str | None) -> str:
    """Comparison form: NFKC, invisible marks removed, folded, case-folded, no whitespace."""
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", html.unescape(text))
    text = _INVISIBLE_RE.sub("", text).translate(_FOLD).casefold()
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text)
    text = re.sub(r"[\u2018\u2019\u201a\u201b`´]", "'", text)
    text = re.sub(r"[\u201c\u201d\u201e\u00ab\u00bb]", '"', text)
    return re.sub(r"\s+", "", text)


def title_ok(found: str | None, truth: str, prefix: bool = False) -> bool:
    """See the module docstring. A " / " in a truth title marks where the printed title
    breaks its line (the truth notes write "'Narodziny legendy.' / 'Sutra ...'"), so a title
    found without the slash also matches."""
    if " / " in truth and title_ok(found, truth.replace(" / ", " "), prefix):
        return True
    a, b = norm(found), norm(truth)
    if not a or not b:
        return False
    if a == b or (prefix and a.startswith(b)):
        return True
    short, long_ = sorted((a, b), key=len)
    return short in long_ and len(short) >= 0.6 * len(long_)


def abstract_found(start: str, lang: str, abstracts: list[dict[str, Any]]) -> bool:
    want = norm(start)
    return bool(want) and any(
        (a.get("language") == lang) and want in norm(a.get("text")) for a in abstracts
    )


def extracted_abstracts(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's abstracts with their languages (the `abstracts` column when inspect
    reports it; else the one kept abstract in the document's language)."""
    if report.get("abstracts") is not None:
        return list(report["abstracts"])
    if report.get("abstract"):
        return [{"text": report["abstract"], "language": report.get("language")}]
    return []


# --- truth files -------------------------------------------------------------------------------

_MANIFEST_ROW_RE = re.compile(r"^\| `([^`]+\.(?:html|pdf))` \|(.*)$")


def earlier_truth(samples: Path) -> list[dict[str, Any]]:
    """Truth for the earlier `html/` and `pdf/` samples, read from MANIFEST.md's tables: the
    title (truncated to ~70 characters for pages, so checked as a prefix) and the language
    (the PDF table's language column; a page's `citation_language`, else `html lang`). No
    abstract or full-text truth exists for them."""
    docs = []
    for line in (samples / "MANIFEST.md").read_text(encoding="utf-8").splitlines():
        m = _MANIFEST_ROW_RE.match(line)
        if not m:
            continue
        name, rest = m.group(1), m.group(2)
        cells = [c.strip() for c in rest.split("|")]
        if name.endswith(".pdf") and (samples / "pdf" / name).exists():
            title = re.search(r'"([^"]+)"', rest)
            docs.append({"file": f"pdf/{name}", "lang": cells[4], "title": title.group(1) if title else None,
                         "title_prefix": False, "abstracts": None, "full_text": None})
        elif name.endswith(".html") and (samples / "html" / name).exists():
            lang_cell, note = cells[4], cells[5]
            meta_lang = re.search(r"language=([A-Za-z]+)", lang_cell)
            page_lang = re.search(r"html lang=([A-Za-z]+)", lang_cell)
            lang = (meta_lang.group(1) if meta_lang and meta_lang.group(1) != "None" else
                    page_lang.group(1) if page_lang else "en").lower()[:2]
            title = re.search(r"title: (.*?); DOI", note)
            docs.append({"file": f"html/{name}", "lang": lang, "title": html.unescape(title.group(1)) if title else None,
                         "title_prefix": True, "abstracts": None, "full_text": None})
    return docs


# --- scoring -----------------------------------------------------------------------------------


def score(samples: Path, truth: list[dict[str, Any]], timeout: float = 60.0) -> list[dict[str, Any]]:
    sys.path.insert(0, str(REPO))
    from openmsd_build.text.extract.pool import ExtractorPool
    from openmsd_build.text.inspect import inspect_document

    results = []
    extractor = ExtractorPool(timeout=timeout)
    try:
        for doc in truth:
            data = (samples / doc["file"]).read_bytes()
            report = inspect_document(data, extractor=extractor)
            abstracts = extracted_abstracts(report)
            checks: list[tuple[str, bool, str]] = []
            if doc.get("title"):
                checks.append(("title", title_ok(report["title"], doc["title"], doc.get("title_prefix", False)),
                               f"{report['title']!r} vs {doc['title']!r}"))
            for item in doc.get("abstracts") or []:
                checks.append(("abstract", abstract_found(item["start"], item["lang"], abstracts),
                               f"{item['lang']}: {item['start'][:50]!r}"))
            checks.append(("language", report["language"] == doc["lang"], f"{report['language']} vs {doc['lang']}"))
            if doc.get("full_text") is not None:
                checks.append(("full_text", bool(report["content"]) == bool(doc["full_text"]),
                               f"content={bool(report['content'])} vs {doc['full_text']}"))
            results.append({
                "file": doc["file"], "lang": doc["lang"], "group": group_of(doc["lang"]),
                "checks": [{"check": c, "ok": ok, "detail": d} for c, ok, d in checks],
                "title": report["title"], "language": report["language"],
                "abstracts": [{"language": a.get("language"), "source": a.get("source"), "start": (a.get("text") or "")[:80]}
                              for a in abstracts],
                "error": report.get("error"), "dropped": report.get("dropped"),
            })
    finally:
        extractor.close()
    return results


def _rate(ok: int, n: int) -> str:
    return f"{ok}/{n} {100.0 * ok / n:5.1f}%" if n else "-"


def summarize(results: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Per-check rates overall, per language group and per language, as a table and a dict."""
    tally: dict[str, Counter] = defaultdict(Counter)
    docs: Counter = Counter()
    for r in results:
        for key in ("ALL", f"group:{r['group']}", f"lang:{r['lang']}"):
            docs[key] += 1
            for c in r["checks"]:
                tally[key][(c["check"], "n")] += 1
                tally[key][(c["check"], "ok")] += c["ok"]
                tally[key][("all", "n")] += 1
                tally[key][("all", "ok")] += c["ok"]
    keys = ["ALL"] + sorted(k for k in tally if k.startswith("group:")) + sorted(k for k in tally if k.startswith("lang:"))
    lines = [f"{'slice':22} {'docs':>4}  " + "  ".join(f"{c:>14}" for c in (*CHECKS, "all"))]
    summary: dict[str, Any] = {}
    for key in keys:
        t = tally[key]
        lines.append(f"{key:22} {docs[key]:>4}  " + "  ".join(f"{_rate(t[(c, 'ok')], t[(c, 'n')]):>14}" for c in (*CHECKS, "all")))
        summary[key] = {"docs": docs[key], **{c: [t[(c, "ok")], t[(c, "n")]] for c in (*CHECKS, "all")}}
    failures = [f"  FAIL {r['file']} [{c['check']}] {c['detail']}" for r in results for c in r["checks"] if not c["ok"]]
    return "\n".join(lines + (["", "failed checks:"] + failures if failures else [])), summary


# --- metadata cleaning counts --------------------------------------------------------------------

MARKUP_RE = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>|&(?:[A-Za-z][A-Za-z0-9]{1,31}|#\d{1,7}|#x[0-9A-Fa-f]{1,6});")
LABEL_PREFIX_RE = re.compile(  # abstract-heading words only: structured labels (OBJECTIVE:) stay, as printed
    r"^\s*(?:abstract|summary|resumo|resumen|r[ée]sum[ée]|zusammenfassung|riassunto|sommario|samenvatting|streszczenie|"
    r"аннотация|анотація|реферат|резюме|摘要|要旨|özet|abstrak|ملخص|چکیده)(?:\s*[:.\-–—]|\s+[A-ZÀ-ÞА-Я])",
    re.IGNORECASE,
)


def metadata_build_command(samples: Path, out: str) -> list[str]:
    """`run --fetch none` over every real metadata sample (Unpaywall, Crossref, OpenAlex)."""
    s = str(samples)
    return [
        str(REPO / ".venv/bin/openmsd-build"), "run", "--out", out,
        "--unpaywall", f"{s}/unpaywall/*.jsonl.gz",
        "--crossref", f"{s}/crossref/cassette_works_all.jsonl", f"{s}/crossref/files_as_found/*.json",
        f"{s}/crossref/files_as_found/*.json.gz", f"{s}/crossref/api_single_work_responses/*.json",
        f"{s}/crossref/api_list_responses/*.json",
        "--openalex", f"{s}/openalex/parseland_eval_multilingual_works.unwrapped.jsonl",
        f"{s}/openalex/api_responses/*.json", f"{s}/openalex/parseland_eval_shards/*.ndjson.gz",
        "--opencitations", f"{s}/opencitations/files_as_found/opencitations_index__crossref_citations.csv",
        "--fetch", "none", "--to-stage", "text", "--no-report",
    ]


def metadata_counts(build: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    counts: dict[str, Any] = {}
    for table in ("papers", "documents"):
        rows = pq.read_table(build / table).to_pylist()
        counts[f"{table}.rows"] = len(rows)
        counts[f"{table}.titles_with_markup_or_entities"] = sum(bool(MARKUP_RE.search(r.get("title") or "")) for r in rows)
        counts[f"{table}.abstracts_with_markup_or_entities"] = sum(bool(MARKUP_RE.search(r.get("abstract") or "")) for r in rows)
        counts[f"{table}.abstracts_with_label_prefix"] = sum(bool(LABEL_PREFIX_RE.match(r.get("abstract") or "")) for r in rows)
        counts[f"{table}.abstracts"] = sum(bool(r.get("abstract")) for r in rows)
        if table == "documents" and rows and "abstracts" in rows[0]:
            counts["documents.with_two_abstract_languages"] = sum(
                len({a["language"] for a in (r.get("abstracts") or [])}) >= 2 for r in rows)
    # abstracts the text stage drops as wrong, by reason: the stage's own rule
    # (`documents.abstract_entries`) re-applied to every metadata abstract of the build, plus
    # the same abstract text on several DOIs (detected here; the stage sees one paper at a time)
    from openmsd_build.text.documents import abstract_entries

    papers = pq.read_table(build / "papers", columns=["doi", "title", "abstract", "abstract_source"]).to_pylist()
    reasons: Counter = Counter()
    by_text: dict[str, set] = defaultdict(set)
    for paper in papers:
        if not paper.get("abstract"):
            continue
        by_text[norm(paper["abstract"])[:500]].add(paper["doi"])
        _entries, dropped = abstract_entries(paper, [], paper.get("title") or "")
        reasons.update(f"{source}:{reason}" for source, reason in dropped)
    reasons["duplicate_text_across_dois (detected)"] = sum(len(d) for d in by_text.values() if len(d) > 1)
    counts["abstracts_dropped_as_wrong"] = dict(sorted(reasons.items()))
    # what the stage itself counted (`abstracts_wrong.<reason>`, papers dropped by reason)
    stats = build / "_stats" / "text.json"
    if stats.exists():
        stage = json.loads(stats.read_text(encoding="utf-8")).get("counts", {})
        counts["text_stage_abstracts_wrong"] = {k: v for k, v in sorted(stage.items()) if k.startswith("abstracts_wrong")}
        counts["text_stage_documents"] = {k: v for k, v in sorted(stage.items()) if k.startswith("documents.")}
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, default=DEFAULT_SAMPLES)
    parser.add_argument("--truth", type=Path, default=None, help="truth JSON (default: SAMPLES/multilingual-truth.json)")
    parser.add_argument("--earlier", action="store_true", help="score the earlier html/ + pdf/ samples (MANIFEST titles)")
    parser.add_argument("--json", type=Path, default=None, help="write per-document results and the summary here")
    parser.add_argument("--only", default=None, help="only files whose path contains this")
    parser.add_argument("--metadata", type=Path, default=None, help="count metadata cleaning problems in this build")
    args = parser.parse_args(argv)
    if args.metadata:
        if not (args.metadata / "papers").exists():
            print("build it first:", " ".join(metadata_build_command(args.samples, str(args.metadata))))
            return 2
        print(json.dumps(metadata_counts(args.metadata), indent=2, ensure_ascii=False))
        return 0
    if not args.samples.is_dir():
        print(f"no real samples at {args.samples} (set OPENMSD_REAL_SAMPLES)", file=sys.stderr)
        return 2
    truth = earlier_truth(args.samples) if args.earlier else json.loads(
        (args.truth or args.samples / "multilingual-truth.json").read_text(encoding="utf-8"))
    if args.only:
        truth = [d for d in truth if args.only in d["file"]]
    results = score(args.samples, truth)
    table, summary = summarize(results)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "documents": results}, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
