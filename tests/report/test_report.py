"""`openmsd-build report`: every number in stats.json checked against counts computed here
in plain Python over the same rows the test wrote (not polars), plus partial builds."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pytest

from openmsd_build.core import layout, parquet_io
from openmsd_build.report.command import build_report, headline_table
from openmsd_build.schemas import tables

TOP = 3
RATE = 2.0


def _write(directory: str, rows: list[dict], schema: pa.Schema, shards: int = 1) -> None:
    """Rows over `shards` part files (round robin), as a stage would write them."""
    for i in range(shards):
        part = rows[i::shards]
        parquet_io.write_table(pa.Table.from_pylist(part, schema=schema), parquet_io.part_path(directory, i, shards))


def _present(text) -> bool:
    return text is not None and text.strip() != ""


def _docs() -> list[dict]:
    spec = [
        # doi, language, categories, abstract, content, tokens (title, abstract, content)
        ("10.1/a", "en", ["Physics", "Math"], "An abstract.", "Full text here", (3, 10, 500)),
        ("10.1/b", "en", ["Physics"], "Another one", None, (4, 8, None)),
        ("10.1/c", "de", ["Math", "Math"], "Eine Zusammenfassung", "Volltext", (2, 12, 300)),
        ("10.1/d", "fr", [], "   ", "Texte", (5, 0, 200)),
        ("10.1/e", "de", None, "Noch eine", "", (1, 7, 0)),
        ("10.1/f", None, ["Biology"], None, None, (2, None, None)),
        ("10.1/g", "ja", ["Physics", "Biology", "Chemistry"], "要旨", None, (6, 20, None)),
        ("10.1/h", "en", ["Chemistry"], "Short", "Body", (2, 3, 100)),
        ("10.1/i", "es", ["Physics"], "Resumen", None, (3, 9, None)),
    ]
    rows = []
    for doi, lang, cats, abstract, content, (tt, ta, tc) in spec:
        rows.append(
            {
                "doi": doi,
                "title": f"Title of {doi}",
                "abstract": abstract,
                "content": content,
                "language": lang,
                "categories": cats,
                "n_tokens_title": tt,
                "n_tokens_abstract": ta,
                "n_tokens_content": tc,
                "text_source": "test",
            }
        )
    return rows


CITATIONS = [
    ("10.1/a", "10.1/b"),  # en-en
    ("10.1/a", "10.1/c"),  # en-xx
    ("10.1/c", "10.1/a"),  # xx-en
    ("10.1/c", "10.1/e"),  # xx-xx
    ("10.1/g", "10.1/c"),  # xx-xx
    ("10.1/h", "10.1/zz"),  # cited end not in documents -> unknown
    ("10.1/f", "10.1/a"),  # citing end has no language -> unknown
    ("10.1/b", "10.1/a"),  # en-en
]

SPLITS = [
    ("10.1/a", "train", "en"),
    ("10.1/b", "train", "en"),
    ("10.1/c", "train", "de"),
    ("10.1/h", "idt", "en"),
    ("10.1/e", "idt", "de"),
    ("10.1/g", "odt", "ja"),
    ("10.1/f", "odt", None),
]

FETCH = [
    ("https://Journal.example.org/a.pdf", "10.1/a", 200, None),
    ("https://journal.example.org/b", "10.1/b", 200, None),
    ("https://journal.example.org:8443/c", "10.1/c", 404, "http_404"),
    ("http://user@repo.example.net/x", "10.1/c", 200, None),
    ("https://repo.example.net/y", "10.1/d", None, "timeout"),
    ("https://repo.example.net./z", "10.1/e", 200, None),
    ("https://small.example.com/p", "10.1/f", 500, "http_500"),
    ("https://journal.example.org/d", "10.1/g", None, "timeout"),
]

PAIRS = {
    ("dc", "train"): [("10.1/a", "10.1/b", "en", "en", "en-en", 1), ("10.1/a", "10.1/c", "en", "de", "en-xx", 1)],
    ("cc", "train"): [("10.1/b", "10.1/c", "en", "de", "en-xx", 3), ("10.1/a", "10.1/b", "en", "en", "en-en", 2)],
    ("bc", "train"): [("10.1/a", "10.1/c", "en", "de", "en-xx", 4)],
    ("dc", "idt"): [("10.1/h", "10.1/e", "en", "de", "en-xx", 1)],
    ("dc", "odt"): [("10.1/g", "10.1/f", "ja", None, "xx-xx", 1)],
    ("cc", "odt"): [],
}

PAPER_URLS = {
    "10.1/a": ["https://journal.example.org/a.pdf", "https://journal.example.org/a"],
    "10.1/b": ["https://journal.example.org/b"],
    "10.1/c": ["https://repo.example.net/x", "ftp://old.example.org/c"],
    "10.1/d": [],
}

PAPERS_STATS = {
    "counts": {
        "read.unpaywall": 12,
        "read.crossref": 11,
        "rejected.crossref.bad_doi": 2,
        "merged_records": 9,
        "joined.crossref+unpaywall": 8,
        "written": 10,
        "with_abstract": 7,
    },
    "inputs": ["whatever"],
}
CITATIONS_STATS = {"counts": {"read": 20, "kept": 8, "dropped.no_abstract": 12}}
REJECTS = {
    "papers": [("10.1/bad", "papers", "bad_doi"), ("x", "papers", "bad_doi"), ("y", "papers", "json_error")],
    "text": [("https://small.example.com/p", "text", "http_500")],
}


def _papers() -> list[dict]:
    rows = []
    for i in range(10):
        doi = f"10.1/{'abcdefghij'[i]}"
        urls = PAPER_URLS.get(doi)
        rows.append(
            {
                "doi": doi,
                "title": "t",
                "abstract": None if i % 3 == 0 else ("  " if i == 4 else "abs"),
                "urls": None if urls is None else [{"url": u, "kind": "pdf", "rank": k} for k, u in enumerate(urls)],
                "sources": ["unpaywall"],
            }
        )
    return rows


def _build(out: Path, parts: set[str]) -> None:
    o = str(out)
    if "papers" in parts:
        _write(layout.papers_dir(o), _papers(), tables.PAPERS, shards=2)
    if "fetch" in parts:
        rows = [{"url": u, "doi": d, "status": s, "error": e} for u, d, s, e in FETCH]
        _write(layout.fetch_dir(o), rows, tables.FETCH, shards=3)
    if "documents" in parts:
        _write(layout.documents_dir(o), _docs(), tables.DOCUMENTS, shards=2)
    if "citations" in parts:
        _write(layout.citations_dir(o), [{"citing_doi": a, "cited_doi": b} for a, b in CITATIONS], tables.CITATIONS)
    if "splits" in parts:
        rows = [{"doi": d, "split": s, "language": lang, "paper_id": i} for i, (d, s, lang) in enumerate(SPLITS)]
        _write(layout.splits_dir(o), rows, tables.SPLITS, shards=2)
    if "pairs" in parts:
        for (rel, split), prs in PAIRS.items():
            rows = [
                dict(zip(["doi_a", "doi_b", "lang_a", "lang_b", "lang_class", "support"], p, strict=True)) for p in prs
            ]
            _write(layout.pairs_dir(o, rel, split), rows, tables.PAIRS)
    if "rejects" in parts:
        for stage, rej in REJECTS.items():
            rows = [{"key": k, "stage": s, "reason": r, "detail": "d"} for k, s, r in rej]
            _write(layout.rejects_dir(o, stage), rows, tables.REJECTS)
    if "stats" in parts:
        (out / "_stats").mkdir(parents=True, exist_ok=True)
        (out / "_stats" / "papers.json").write_text(json.dumps(PAPERS_STATS))
        if "citations" in parts:
            (out / "_stats" / "citations.json").write_text(json.dumps(CITATIONS_STATS))


ALL = {"papers", "fetch", "documents", "citations", "splits", "pairs", "rejects", "stats"}


def _ranked(counter: Counter, top: int | None = None) -> list[tuple]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").rstrip(".")


@pytest.fixture()
def full(tmp_path: Path) -> tuple[Path, dict]:
    _build(tmp_path, ALL)
    return tmp_path, build_report(str(tmp_path), top=TOP, rate_per_host=RATE)


def test_files_written_and_stats_json_equals_returned(full):
    out, stats = full
    report = out / "report"
    on_disk = json.loads((report / "stats.json").read_text())
    assert on_disk == json.loads(json.dumps(stats))
    for name in ("report.md", "report.html", "figure1_languages.png", "figure2_categories.png"):
        assert (report / name).stat().st_size > 0, name
    assert stats["built"] == {k: True for k in ("papers", "fetch", "documents", "citations", "splits", "pairs")}
    assert stats["options"] == {"top": TOP, "rate_per_host": RATE}


def test_table1_and_figures(full):
    _, stats = full
    docs = _docs()
    has_abs = [d for d in docs if _present(d["abstract"])]
    has_content = [d for d in docs if _present(d["content"])]
    cited_ends = {a for a, _ in CITATIONS} | {b for _, b in CITATIONS}
    langs = Counter(d["language"] for d in docs if d["language"] is not None)
    cats = Counter(c for d in docs for c in set(d["categories"] or []) if c is not None)
    tokens = {k: sum(d[f"n_tokens_{k}"] or 0 for d in docs) for k in ("title", "abstract", "content")}
    lang_of = {d["doi"]: d["language"] for d in docs}

    def cls(doi):
        lang = lang_of.get(doi)
        return None if lang is None else ("en" if lang == "en" else "xx")

    classes = Counter("unknown" if cls(a) is None or cls(b) is None else f"{cls(a)}-{cls(b)}" for a, b in CITATIONS)
    abs_tok = [d["n_tokens_abstract"] for d in has_abs if d["n_tokens_abstract"] is not None]
    con_tok = [d["n_tokens_content"] for d in has_content if d["n_tokens_content"] is not None]

    t = stats["table1"]
    expected = {
        "papers": len(docs),
        "with_abstract": len(has_abs),
        "with_citations": sum(d["doi"] in cited_ends for d in docs),
        "with_content": len(has_content),
        "english": sum(d["language"] == "en" for d in docs),
        "total_tokens": sum(tokens.values()),
        "n_languages": len(langs),
        "n_categories": len(cats),
        "citations": len(CITATIONS),
        "citations_en_en": classes["en-en"],
        "citations_en_xx": classes["en-xx"],
        "citations_xx_en": classes["xx-en"],
        "citations_xx_xx": classes["xx-xx"],
        "citations_unknown": classes["unknown"],
    }
    for key, value in expected.items():
        assert t[key] == value, key
    assert math.isclose(t["avg_abstract_tokens"], sum(abs_tok) / len(abs_tok))
    assert math.isclose(t["avg_content_tokens"], sum(con_tok) / len(con_tok))
    assert set(t) == set(expected) | {"avg_abstract_tokens", "avg_content_tokens"}
    # sanity on the fixture itself, so the test cannot pass vacuously
    assert expected["citations_en_en"] == 2 and expected["citations_unknown"] == 2 and expected["with_abstract"] == 7

    d = stats["documents"]
    assert d["tokens"] == {**tokens, "total": sum(tokens.values())}
    assert d["without_language"] == sum(x["language"] is None for x in docs)
    for key in ("papers", "with_abstract", "with_content", "english", "n_languages", "n_categories"):
        assert d[key] == t[key]
    assert d["top_languages"] == [{"language": k, "papers": n, "share": n / len(docs)} for k, n in _ranked(langs, TOP)]
    assert d["top_categories"] == [{"category": k, "papers": n, "share": n / len(docs)} for k, n in _ranked(cats, TOP)]

    c = stats["citations"]
    assert c["total"] == len(CITATIONS) and c["papers_with_citations"] == t["with_citations"]
    for k in ("en-en", "en-xx", "xx-en", "xx-xx", "unknown"):
        assert c[k] == classes[k]


def test_papers_section(full):
    _, stats = full
    papers = _papers()
    coverage = stats["papers"].pop("category_coverage")
    paratext = stats["papers"].pop("paratext")
    assert paratext == dict(sorted(Counter(p["paratext"] for p in papers if p.get("paratext")).items()))
    assert stats["papers"] == {
        "rows": len(papers),
        "distinct_dois": len({p["doi"] for p in papers}),
        "with_abstract": sum(_present(p["abstract"]) for p in papers),
        "with_urls": sum(bool(p["urls"]) for p in papers),
    }
    # category coverage, counted independently: per contributing source and over all papers
    expected: dict[str, list[int]] = {}
    for p in papers:
        for source in [*(p.get("sources") or []), "all"]:
            cell = expected.setdefault(source, [0, 0])
            cell[0] += 1
            cell[1] += bool(p.get("categories"))
    assert {r["source"]: [r["papers"], r["with_category"]] for r in coverage} == expected


def test_table2_splits(full):
    _, stats = full
    sp = stats["splits"]
    assert sp["papers"] == len(SPLITS)
    assert list(sp["by_split"]) == ["train", "idt", "odt"]
    for name in ("train", "idt", "odt"):
        langs = Counter(lang for _, s, lang in SPLITS if s == name)
        got = sp["by_split"][name]
        assert got["papers"] == sum(langs.values())
        assert got["n_languages"] == len([k for k in langs if k is not None])
        want = sorted(langs.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))
        assert [(r["language"], r["papers"]) for r in got["languages"]] == want


def test_table3_pairs(full):
    _, stats = full
    pairs = stats["pairs"]
    for rel in ("dc", "cc", "bc"):
        for split in ("train", "idt", "odt"):
            cell = pairs[rel][split]
            if (rel, split) not in PAIRS:
                assert cell is None, (rel, split)
                continue
            rows = PAIRS[(rel, split)]
            assert cell["pairs"] == len(rows)
            assert cell["support"] == sum(r[5] for r in rows)
            by = {c: {"pairs": 0, "support": 0} for c in ("en-en", "en-xx", "xx-en", "xx-xx")}
            for r in rows:
                by.setdefault(r[4], {"pairs": 0, "support": 0})
                by[r[4]]["pairs"] += 1
                by[r[4]]["support"] += r[5]
            assert cell["by_lang_class"] == by, (rel, split)


def test_fetch_health_and_queue(full):
    _, stats = full
    f = stats["fetch"]
    ok = [r for r in FETCH if r[3] is None]
    assert f["urls"] == len(FETCH) and f["ok"] == len(ok) and f["failed"] == len(FETCH) - len(ok)
    assert math.isclose(f["success_rate"], len(ok) / len(FETCH))
    assert f["dois"] == len({r[1] for r in FETCH}) and f["dois_ok"] == len({r[1] for r in ok})
    status = Counter("none" if r[2] is None else str(r[2]) for r in FETCH)
    assert f["by_status"] == dict(status)
    assert f["by_error"] == dict(_ranked(Counter(r[3] for r in FETCH if r[3] is not None)))
    hosts = Counter(_host(r[0]) for r in FETCH)
    host_ok = Counter(_host(r[0]) for r in ok)
    assert f["hosts"] == len(hosts) == 3
    want = [
        {"host": h, "urls": n, "share": n / len(FETCH), "ok": host_ok[h], "success_rate": host_ok[h] / n}
        for h, n in _ranked(hosts, TOP)
    ]
    assert f["top_hosts"] == want

    q = stats["queue"]
    assert q["source"] == "fetch" and q["urls"] == len(FETCH) and q["hosts"] == len(hosts)
    assert q["rate_per_host"] == RATE
    top_host, top_n = _ranked(hosts)[0]
    assert q["slowest_host"] == top_host and math.isclose(q["max_host_seconds"], top_n / RATE)
    assert math.isclose(q["sum_seconds"], len(FETCH) / RATE)
    assert q["top_hosts"] == [
        {"host": h, "urls": n, "share": n / len(FETCH), "seconds": n / RATE} for h, n in _ranked(hosts, TOP)
    ]


def test_funnel_stage_counts_and_rejects(full):
    _, stats = full
    assert stats["stage_counts"] == {"papers": PAPERS_STATS["counts"], "citations": CITATIONS_STATS["counts"]}
    assert stats["rejects"] == {
        stage: {"total": len(rows), "by_reason": dict(_ranked(Counter(r for _, _, r in rows)))}
        for stage, rows in REJECTS.items()
    }
    papers, docs = _papers(), _docs()
    ok = [r for r in FETCH if r[3] is None]
    want = {
        "read.crossref": PAPERS_STATS["counts"]["read.crossref"],
        "read.unpaywall": PAPERS_STATS["counts"]["read.unpaywall"],
        "papers": len(papers),
        "papers.with_urls": sum(bool(p["urls"]) for p in papers),
        "fetch.urls": len(FETCH),
        "fetch.ok": len(ok),
        "fetch.dois_ok": len({r[1] for r in ok}),
        "documents": len(docs),
        "documents.with_abstract": sum(_present(d["abstract"]) for d in docs),
        "splits": len(SPLITS),
        "splits.train": sum(s == "train" for _, s, _ in SPLITS),
        "splits.idt": sum(s == "idt" for _, s, _ in SPLITS),
        "splits.odt": sum(s == "odt" for _, s, _ in SPLITS),
    }
    assert {s["key"]: s["count"] for s in stats["funnel"]} == want
    assert [s["key"] for s in stats["funnel"]][:2] == ["read.crossref", "read.unpaywall"]


def test_every_number_is_shown_in_markdown(full):
    out, stats = full
    md = (out / "report" / "report.md").read_text()
    t = stats["table1"]
    for key in (
        "papers",
        "with_abstract",
        "with_citations",
        "with_content",
        "english",
        "total_tokens",
        "citations_en_en",
    ):
        assert f"{t[key]:,}" in md, key
    assert "figure1_languages.png" in md and "Table 3" in md and "journal.example.org" in md
    assert "bad_doi" in md and "rejected.crossref.bad_doi" in md


def test_headline_table(full):
    _, stats = full
    text = headline_table(stats)
    lines = dict(
        line.split(None, 1) if not line.startswith(("with", "pairs")) else (line[:18].strip(), line[18:].strip())
        for line in text.splitlines()
    )
    assert lines["documents"] == "9" and lines["English"] == "3" and lines["languages"] == "5"
    assert "pairs train" in text and "DC 2, CC 2, BC 1" in text
    assert "DC 1, CC not built, BC not built" in text  # idt
    assert "DC 1, CC 0, BC not built" in text  # odt: cc folder exists but is empty


def test_queue_from_papers_when_fetch_not_built(tmp_path: Path):
    _build(tmp_path, {"papers"})
    stats = build_report(str(tmp_path), top=TOP, rate_per_host=RATE)
    urls = {
        u
        for p in _papers()
        for u in [x["url"] for x in (p["urls"] or [])]
        if u.lower().startswith(("http://", "https://"))
    }
    hosts = Counter(_host(u) for u in urls)
    q = stats["queue"]
    assert q["source"] == "papers" and q["urls"] == len(urls) == 4 and q["hosts"] == len(hosts)
    assert q["slowest_host"] == "journal.example.org" and math.isclose(q["max_host_seconds"], 3 / RATE)


def test_partial_build_only_papers(tmp_path: Path):
    _build(tmp_path, {"papers", "stats"})
    stats = build_report(str(tmp_path))
    assert stats["built"] == {
        "papers": True,
        "fetch": False,
        "documents": False,
        "citations": False,
        "splits": False,
        "pairs": False,
    }
    assert stats["papers"]["rows"] == len(_papers())
    for key in ("table1", "documents", "citations", "splits", "pairs", "fetch"):
        assert stats[key] is None, key
    steps = {s["key"]: s["count"] for s in stats["funnel"]}
    assert steps["papers"] == 10 and steps["documents"] is None and steps["splits.train"] is None
    assert steps["read.unpaywall"] == 12
    html = (tmp_path / "report" / "report.html").read_text()
    md = (tmp_path / "report" / "report.md").read_text()
    assert "documents/: not built" in md and "not built" in html
    assert not (tmp_path / "report" / "figure1_languages.png").exists()
    assert "not built" in headline_table(stats)


def test_empty_root_and_missing_root(tmp_path: Path):
    from openmsd_build.core.errors import UserError

    with pytest.raises(UserError, match="not a build"):
        build_report(str(tmp_path))  # a folder with no stage output is not a build
    with pytest.raises(UserError):
        build_report(str(tmp_path / "nope"))
    # a build that stopped before writing any table still reports its stage counts
    (tmp_path / "_stats").mkdir()
    (tmp_path / "_stats" / "papers.json").write_text(json.dumps({"counts": {"read.unpaywall": 3}}))
    stats = build_report(str(tmp_path))
    assert not any(stats["built"].values()) and stats["queue"] is None
    assert stats["stage_counts"]["papers"]["read.unpaywall"] == 3


def test_cli_report(tmp_path: Path, capsys):
    from openmsd_build.cli import main

    _build(tmp_path, ALL)
    assert main(["report", str(tmp_path), "--top", "2", "--rate-per-host", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert "documents" in printed and "report.html" in printed
    stats = json.loads((tmp_path / "report" / "stats.json").read_text())
    assert stats["options"] == {"top": 2, "rate_per_host": 0.5} and len(stats["documents"]["top_languages"]) == 2


def test_paper_tables_by_language_class(full):
    """Table 1 per language class and Table 3's mono/cross-lingual split add up."""
    _, stats = full
    classes = stats["documents"]["by_language_class"]
    assert classes["all"]["papers"] == stats["documents"]["papers"]
    assert classes["en"]["papers"] == stats["documents"]["english"]
    assert classes["en"]["papers"] + classes["non-en"]["papers"] + stats["documents"]["without_language"] == \
        classes["all"]["papers"]
    assert classes["all"]["total_tokens"] == stats["documents"]["tokens"]["total"]
    for rel, by_split in stats["pairs"].items():
        for split, cell in by_split.items():
            if cell is not None:
                assert cell["monolingual"] + cell["crosslingual"] <= cell["pairs"], (rel, split)
    assert stats["splits"]["n_languages"] >= max(s["n_languages"] for s in stats["splits"]["by_split"].values())


def test_a_paper_splits_lists_twice_is_in_no_split_and_a_warning(tmp_path):
    """A paper `splits/` lists in two splits (two builds' files mixed) is in no split for every
    stage that reads the folder (`core.split_rows`); Table 2 counted it in both, so the split
    sizes and the total were larger than the pools evaluate and export use, and no line said so."""
    _build(tmp_path, ALL)
    doi = SPLITS[0][0]  # in train
    extra = [{"doi": doi, "split": "idt", "language": "en", "paper_id": 0}]
    parquet_io.write_table(pa.Table.from_pylist(extra, schema=tables.SPLITS),
                           str(tmp_path / "splits" / "part-extra.parquet"))
    stats = build_report(str(tmp_path), top=TOP, rate_per_host=RATE)
    sp = stats["splits"]
    assert sp["papers"] == len(SPLITS) - 1
    assert sp["by_split"]["train"]["papers"] == sum(s == "train" for _, s, _ in SPLITS) - 1
    assert sp["by_split"]["idt"]["papers"] == sum(s == "idt" for _, s, _ in SPLITS)
    assert sp["listed_more_than_once"] == 1 and sp["listed_more_than_once_examples"] == [doi]
    steps = {s["key"]: s["count"] for s in stats["funnel"]}
    assert steps["splits"] == len(SPLITS) - 1
    (line,) = stats["warnings"]["splits/"]
    assert line.startswith("1 paper of splits/ is listed more than once") and doi in line
    md = (tmp_path / "report" / "report.md").read_text()
    assert "splits/: 1 paper of splits/ is listed more than once" in md
    assert "Not counted above: 1 paper that splits/ lists more than once" in md


def test_splits_listed_once_add_no_warning(full):
    _, stats = full
    assert stats["splits"]["listed_more_than_once"] == 0 and "splits/" not in stats["warnings"]


def test_splits_rows_without_a_doi_are_counted_and_warned_not_a_traceback(tmp_path):
    """Rows of `splits/` whose DOI is null (a hand edit) name no paper: two of them were taken
    for one paper listed twice, and the warning's `join` of its DOIs met None (TypeError)."""
    _build(tmp_path, ALL)
    blank = [{"doi": None, "split": s, "language": "en", "paper_id": 0} for s in ("train", "idt")]
    parquet_io.write_table(pa.Table.from_pylist(blank, schema=tables.SPLITS),
                           str(tmp_path / "splits" / "part-blank.parquet"))
    stats = build_report(str(tmp_path), top=TOP, rate_per_host=RATE)
    sp = stats["splits"]
    assert sp["papers"] == len(SPLITS)
    assert sp["rows_without_doi"] == 2 and sp["listed_more_than_once"] == 0
    (line,) = stats["warnings"]["splits/"]
    assert line.startswith("2 rows of splits/ have no DOI")
