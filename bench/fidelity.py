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

* `precision` (beside the four, not in `all`): each extracted `abstracts` entry is an abstract
  of the paper (`abstract_is_true`: it holds the start of a truth abstract); the issue asks
  >= 98 % on the shared set.

Measuring generalisation: `--half dev|held` scores one half of a truth set, split by a hash of
the file name within each language (`half_of`); the dev half is the one read while writing
rules, the held half is only scored (its failures are not listed, nor written by `--json`, also
when the whole set is scored).
`--set journals` is held out as a whole, and split the same way: its dev half (`--set journals
--half dev`) lists its failures, its held half and the whole set do not. `--set derived` is truth nobody wrote: the Crossref
/ OpenAlex title and abstract of every sample page or PDF whose DOI has a metadata record among
the samples (`derived_truth`).

Modes:

    .venv/bin/python bench/fidelity.py                       # the multilingual truth set
    .venv/bin/python bench/fidelity.py --half dev            # its dev half (--half held: scores only)
    .venv/bin/python bench/fidelity.py --set journals        # the journals set (held out)
    .venv/bin/python bench/fidelity.py --set derived         # truth derived from metadata records
    .venv/bin/python bench/fidelity.py --earlier             # the earlier html/ + pdf/ samples
    .venv/bin/python bench/fidelity.py --json out.json       # also write per-document results
    .venv/bin/python bench/fidelity.py --metadata BUILD      # metadata cleaning counts of a build

`--metadata BUILD` reads a `run --fetch none` build of every real metadata sample (command in
`metadata_build_command()`) and counts titles still holding markup or entities, abstracts
still starting with a label ("Resumo", "BACKGROUND:"), abstracts under five words, papers
flagged as paratext by reason (`papers.paratext`), and abstracts dropped as wrong by
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
CHECKS = ("title", "abstract", "language", "full_text")
"""The fidelity checks; `all` is their sum. `precision` (every extracted abstract entry is an
abstract of the paper) is reported beside them, not inside `all`: it counts entries, not truth."""
EXTRA_CHECKS = ("precision",)

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


def abstract_is_true(text: str | None, truth_abstracts: list[dict[str, Any]]) -> bool:
    """Whether an extracted abstract entry is an abstract of the paper: it holds the start of
    one of the truth's abstracts (any language), or its own start lies inside one (a truth
    `start` shorter than the entry is the usual case; an entry cut short is the other). Text
    before the abstract (a heading, page furniture) does not make it another text, so the
    first 40 characters of the truth start are looked for anywhere in the entry."""
    have = norm(text)
    if not have:
        return False
    for item in truth_abstracts:
        want = norm(item.get("start"))
        if want and (want[:40] in have or have[:40] in want):
            return True
    return False


def half_of(doc: dict[str, Any], truth: list[dict[str, Any]]) -> str:
    """"dev" or "held": a deterministic split of a truth set stratified by language. Within a
    language the documents are ordered by a hash of their file name and alternate between the
    halves, starting with the half a hash of the language picks (so languages with one
    document fall on both sides). Nothing but the file names and languages decides it: a rule
    written while reading the dev half's failures cannot move a document between halves."""
    import hashlib

    def h(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    same = sorted((d["file"] for d in truth if d["lang"] == doc["lang"]), key=h)
    start = int(h("lang:" + doc["lang"]), 16) % 2
    return ("dev", "held")[(same.index(doc["file"]) + start) % 2]


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

TRUTH_SETS = {"multilingual": "multilingual-truth.json", "journals": "multilingual-journals-truth.json",
              "derived": "(computed: derived_truth)"}
HELD_OUT_SETS = {"journals"}
"""Sets scored but never read document by document: their failures are not listed."""

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


# --- derived truth: the metadata's own title and abstract for the samples' DOIs ----------------

_DOI_RE = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>&]+")
_DOI_META_RE = re.compile(
    rb"<meta[^>]+name=[\"'](?:citation_doi|dc\.identifier|prism\.doi|bepress_citation_doi)[\"'][^>]*>", re.IGNORECASE)
DERIVED_FOLDERS = ("html", "html-multilingual", "pdf", "pdf-multilingual")
"""Sample folders the derived truth is computed for (the journals set stays held out)."""


def _doi_key(doi: str) -> str:
    doi = doi.strip().lower().rstrip(".,;)")
    return doi.split("doi.org/", 1)[-1]


def _metadata_index(samples: Path) -> dict[str, dict[str, Any]]:
    """DOI -> {"title", "abstract"} from every Crossref and OpenAlex record of the samples
    (Crossref first: its abstract is the publisher's deposit)."""
    import gzip

    sys.path.insert(0, str(REPO))
    from openmsd_build.core.textclean import clean_abstract, clean_title

    def records(path: Path):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            text = handle.read()
        try:
            data = json.loads(text)
            items = data.get("message", data) if isinstance(data, dict) else data
            if isinstance(items, dict):
                items = items.get("items") or items.get("results") or [items]
            yield from items if isinstance(items, list) else [items]
        except json.JSONDecodeError:
            for line in text.splitlines():
                if line.strip():
                    item = json.loads(line)
                    yield item.get("openalex_response") or item

    index: dict[str, dict[str, Any]] = {}
    for folder, kind in (("crossref", "crossref"), ("openalex", "openalex")):
        for path in sorted((samples / folder).rglob("*")):
            if path.suffix not in (".json", ".jsonl", ".gz", ".ndjson") or not path.is_file():
                continue
            for item in records(path):
                if not isinstance(item, dict) or not item.get("DOI" if kind == "crossref" else "doi"):
                    continue
                if kind == "crossref":
                    doi, title, abstract = item["DOI"], (item.get("title") or [""])[0], item.get("abstract") or ""
                else:
                    doi, title = item["doi"], item.get("title") or ""
                    inv = item.get("abstract_inverted_index") or {}
                    words = sorted((pos, word) for word, positions in inv.items() for pos in positions)
                    abstract = " ".join(word for _, word in words)
                entry = index.setdefault(_doi_key(doi), {})
                if title and not entry.get("title"):
                    entry["title"] = clean_title(title)
                if abstract and not entry.get("abstract"):
                    entry["abstract"] = clean_abstract(abstract)
    return index


def _document_dois(path: Path) -> list[str]:
    """DOIs a sample names: in its file name (`mpilhlt__10.12775_clr.2013.004.pdf`) and, for
    a page, in its DOI meta tags."""
    dois = []
    name = path.stem.split("__", 1)[-1]
    m = re.match(r"(10\.\d{4,9})[_.](.+)", name)
    if m:
        dois.append(f"{m.group(1)}/{m.group(2)}")
    if path.suffix == ".html":
        for tag in _DOI_META_RE.findall(path.read_bytes()[:500_000]):
            found = _DOI_RE.search(tag.decode("utf-8", "replace"))
            if found:
                dois.append(found.group(0))
    return [_doi_key(d) for d in dois]


def derived_truth(samples: Path) -> list[dict[str, Any]]:
    """Truth nobody wrote by hand: for each real page or PDF whose DOI has a Crossref or
    OpenAlex record among the samples, the record's title and (when it has one) the start of
    its abstract, labelled with the language CLD3 gives it. Only `title` and `abstract` are
    checked (`lang` is the abstract's language, else the title's; the language check is
    skipped: a metadata record's language is often the journal's, not the paper's). A
    metadata abstract is often a translation or a shortened form of the printed one, so a
    miss here is a lead, not a proof."""
    from openmsd_build.core.language import detect_language

    index = _metadata_index(samples)
    docs = []
    for folder in DERIVED_FOLDERS:
        for path in sorted((samples / folder).glob("*")):
            if path.suffix not in (".html", ".pdf"):
                continue
            meta = next((index[d] for d in _document_dois(path) if d in index), None)
            if not meta or not meta.get("title"):
                continue
            abstracts = []
            if meta.get("abstract") and len(meta["abstract"].split()) >= 20:
                lang = detect_language(None, meta["abstract"])[0]
                abstracts.append({"lang": lang, "start": meta["abstract"][:120].rsplit(" ", 1)[0]})
            lang = abstracts[0]["lang"] if abstracts else detect_language(meta["title"])[0]
            docs.append({"file": f"{folder}/{path.name}", "lang": lang, "title": meta["title"], "title_prefix": False,
                         "abstracts": abstracts or None, "full_text": None, "check_language": False})
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
            if doc.get("abstracts") is not None:  # precision: every extracted entry is an abstract
                for a in abstracts:
                    checks.append(("precision", abstract_is_true(a.get("text"), doc["abstracts"]),
                                   f"{a.get('language')}/{a.get('source')}: {(a.get('text') or '')[:60]!r}"))
            if doc.get("check_language", True):
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


def summarize(results: list[dict[str, Any]], failures: bool = True,
              listed: set[str] | None = None) -> tuple[str, dict[str, Any]]:
    """Per-check rates overall, per language group and per language, as a table and a dict.
    Failures are listed when `failures`, and then only those of the files in `listed` when it
    is given (the dev half of a whole set: the held half's are counted, not shown)."""
    tally: dict[str, Counter] = defaultdict(Counter)
    docs: Counter = Counter()
    for r in results:
        for key in ("ALL", f"group:{r['group']}", f"lang:{r['lang']}"):
            docs[key] += 1
            for c in r["checks"]:
                tally[key][(c["check"], "n")] += 1
                tally[key][(c["check"], "ok")] += c["ok"]
                if c["check"] in CHECKS:
                    tally[key][("all", "n")] += 1
                    tally[key][("all", "ok")] += c["ok"]
    keys = ["ALL"] + sorted(k for k in tally if k.startswith("group:")) + sorted(k for k in tally if k.startswith("lang:"))
    columns = (*CHECKS, "all", *EXTRA_CHECKS)
    lines = [f"{'slice':22} {'docs':>4}  " + "  ".join(f"{c:>14}" for c in columns)]
    summary: dict[str, Any] = {}
    for key in keys:
        t = tally[key]
        lines.append(f"{key:22} {docs[key]:>4}  " + "  ".join(f"{_rate(t[(c, 'ok')], t[(c, 'n')]):>14}" for c in columns))
        summary[key] = {"docs": docs[key], **{c: [t[(c, "ok")], t[(c, "n")]] for c in columns}}
    failed = [f"  FAIL {r['file']} [{c['check']}] {c['detail']}" for r in results for c in r["checks"] if not c["ok"]]
    if not failures:  # a held-out set: its failures are not read document by document
        failed = [f"  ({len(failed)} failed checks not listed: held-out)"] if failed else []
    elif listed is not None:
        hidden = sum(1 for r in results if r["file"] not in listed for c in r["checks"] if not c["ok"])
        failed = [f"  FAIL {r['file']} [{c['check']}] {c['detail']}" for r in results if r["file"] in listed
                  for c in r["checks"] if not c["ok"]]
        failed += [f"  ({hidden} failed checks of the held half not listed)"] if hidden else []
    return "\n".join(lines + (["", "failed checks:"] + failed if failed else [])), summary


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
        counts[f"{table}.abstracts_under_five_words"] = sum(
            bool(r.get("abstract")) and len(r["abstract"].split()) < 5 for r in rows)
        if table == "papers" and rows and "paratext" in rows[0]:
            counts["papers.paratext"] = dict(sorted(Counter(r["paratext"] for r in rows if r.get("paratext")).items()))
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
    parser.add_argument("--set", choices=sorted(TRUTH_SETS), default=None,
                        help="a named truth set (multilingual: the shared set; journals: held out, failures not listed)")
    parser.add_argument("--half", choices=("dev", "held"), default=None,
                        help="only one half of the truth set (`half_of`); the held half's failures are not listed")
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
    held_out = args.half == "held" or (args.set in HELD_OUT_SETS and args.half != "dev")
    if args.earlier:
        truth = earlier_truth(args.samples)
    elif args.set == "derived":
        truth = derived_truth(args.samples)
    else:
        path = args.truth or args.samples / TRUTH_SETS[args.set or "multilingual"]
        truth = json.loads(path.read_text(encoding="utf-8"))
    whole = truth
    if args.half:
        truth = [d for d in truth if half_of(d, whole) == args.half]
    if args.only:
        truth = [d for d in truth if args.only in d["file"]]
    results = score(args.samples, truth)
    # a whole truth set lists the failures of its dev half only: the held half stays unread
    listed = ({d["file"] for d in whole if half_of(d, whole) == "dev"}
              if not held_out and args.half is None and not args.earlier and args.set != "derived" else None)
    table, summary = summarize(results, failures=not held_out, listed=listed)
    print(table)
    if args.json and (held_out or listed is not None):  # no details of held documents
        results = [r if listed is not None and r["file"] in listed else
                   {"file": r["file"], "lang": r["lang"], "group": r["group"],
                    "checks": [{"check": c["check"], "ok": c["ok"]} for c in r["checks"]]} for r in results]
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "documents": results}, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
