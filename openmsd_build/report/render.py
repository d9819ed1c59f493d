"""Formatting the stats dict as Markdown and as one self-contained HTML page.

Both renderings come from one list of blocks (heading, paragraph, table, figure), so the
Markdown and the HTML always show the same numbers in the same order; the numbers
themselves come only from the stats dict (see `stats.py`), never recomputed here.

The HTML embeds its figures as base64 PNG data URIs and its CSS inline: a report copied off
a build machine, attached to an issue or opened offline shows everything, and loads nothing
from the network.
"""

from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass, field

from openmsd_build.core import layout

NOT_BUILT = "not built"
CLASS_LABELS = {
    "en-en": "En-En",
    "en-xx": "En-nonEn",
    "xx-en": "nonEn-En",
    "xx-xx": "nonEn-nonEn",
    "unknown": "unknown",
}


@dataclass
class Block:
    """One piece of the report: kind is h1 / h2 / h3 / p / warning / table / figure."""

    kind: str
    text: str = ""
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    png: bytes = b""
    name: str = ""


# --------------------------------------------------------------------------- formatting


def fmt_int(value) -> str:
    return NOT_BUILT if value is None else f"{int(value):,}"


def fmt_float(value, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def fmt_pct(value) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def fmt_seconds(seconds) -> str:
    """Seconds with a human unit beside them: queue times run from minutes to months."""
    if seconds is None:
        return "—"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit} ({seconds:,.0f} s)"
    return f"{seconds:,.1f} s"


def _name(value) -> str:
    return "(none)" if value is None else str(value)


# Longest label drawn in a figure: a label comes from the data (a language code, a category
# name), and a 1 MB "category" must not make a 1 MB-wide figure.
MAX_FIGURE_LABEL = 60
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def figure_label(value) -> str:
    """A data label as plain text for a figure: control characters and line breaks as one
    space, at most `MAX_FIGURE_LABEL` characters. Markup (`$...$` mathtext) is not escaped
    here: `bar_chart` draws with math parsing off, so every character is drawn as itself."""
    text = _CONTROL_RE.sub(" ", _name(value)).strip()
    return text if len(text) <= MAX_FIGURE_LABEL else text[: MAX_FIGURE_LABEL - 1] + "…"


# --------------------------------------------------------------------------- figures


def bar_chart(rows: list[dict], key: str, title: str) -> bytes:
    """A horizontal bar chart (largest on top) as PNG bytes, drawn with the Agg backend so
    it works on headless build machines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator

    labels = [figure_label(r[key]) for r in rows][::-1]
    values = [r["papers"] for r in rows][::-1]
    # labels are data: no mathtext (`$\\frac{$` stopped the report), no TeX
    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        return _draw_bars(plt, MaxNLocator, labels, values, figure_label(title))


def _draw_bars(plt, MaxNLocator, labels: list[str], values: list[int], title: str) -> bytes:  # noqa: N803 - a class
    """`bar_chart`'s drawing, inside its rc context."""
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.32 * len(values) + 1.2)), dpi=100)
    try:
        bars = ax.barh(range(len(values)), values, color="#3b6ea8")
        ax.set_yticks(range(len(values)), labels=labels, fontsize=9)
        ax.set_xlabel("papers")
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # paper counts: no 0.5 ticks
        if values and max(values) > 0:
            ax.set_xlim(0, max(values) * 1.18)
        for bar, v in zip(bars, values, strict=True):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {v:,}", va="center", fontsize=8)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    return buf.getvalue()


def figures(stats: dict) -> dict[str, bytes]:
    """The report's PNG figures by file name; none when documents/ is not built."""
    docs = stats.get("documents")
    if not docs:
        return {}
    top = stats["options"]["top"]
    return {
        "figure1_languages.png": bar_chart(docs["top_languages"], "language", f"Top {top} languages (papers)"),
        "figure2_categories.png": bar_chart(docs["top_categories"], "category", f"Top {top} categories (papers)"),
    }


# --------------------------------------------------------------------------- blocks


def blocks(stats: dict, pngs: dict[str, bytes]) -> list[Block]:
    """The report's content in order, shared by the Markdown and HTML renderers."""
    out: list[Block] = [Block("h1", "OpenMSD build report"), Block("p", f"Output root: {stats['out']}")]
    built = ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in stats["built"].items())
    out.append(Block("p", f"Built parts — {built}."))
    for stage, why in (stats.get("stale") or {}).items():
        out.append(Block("warning", f"STALE: {stage} — {why}; its numbers below describe older inputs. Re-run it."))
    for stage, lines in (stats.get("warnings") or {}).items():
        out += [Block("warning", f"{stage}: {line}") for line in lines]
    out += _table1(stats)
    out += _abstract_languages(stats)
    out += _evidence(stats)
    out += _figures(stats, pngs)
    if _no_pairs(stats):
        # tables of zeros would read as a result; the warnings above say why there is none
        out.append(Block("h2", "Splits, pairs and evaluation"))
        out.append(Block("warning", "No related pairs: the build has no linked papers (citations kept "
                         f"{fmt_int((stats.get('table1') or {}).get('citations'))} edges), so Tables 2 and 3 and the "
                         "evaluation are left out. See the warnings at the top."))
    else:
        out += _table2(stats)
        out += _table3(stats)
        out += evaluation_blocks(stats)
    from openmsd_build.report.contexts import contexts_blocks

    out += contexts_blocks(stats)
    out += _recipes(stats)
    from openmsd_build.report.large_pool import large_pool_blocks

    out += large_pool_blocks(stats)
    out += _funnel(stats)
    out += _fetch(stats)
    out += _queue(stats)
    return out


def _no_pairs(stats: dict) -> bool:
    """pairs/ is built and holds no pair in any relation and split."""
    pairs = stats.get("pairs")
    if not pairs:
        return False
    cells = [pairs[rel][split] for rel in layout.RELATIONS for split in layout.SPLIT_NAMES]
    return all(not cell or not cell.get("pairs") for cell in cells)


def _table1(stats: dict) -> list[Block]:
    t = stats["table1"]
    res = [Block("h2", "Table 1 — papers, tokens and citations")]
    if t is None:
        return res + [Block("p", f"documents/: {NOT_BUILT}.")]
    rows = [
        ["Papers (with text)", fmt_int(t["papers"])],
        ["with abstract", fmt_int(t["with_abstract"])],
        ["with citations (either end)", fmt_int(t["with_citations"])],
        ["with full content", fmt_int(t["with_content"])],
        ["in English", fmt_int(t["english"])],
        ["Avg. abstract tokens", fmt_float(t["avg_abstract_tokens"])],
        ["Avg. content tokens", fmt_float(t["avg_content_tokens"])],
        ["Total tokens", fmt_int(t["total_tokens"])],
        ["Languages", fmt_int(t["n_languages"])],
        ["Categories", fmt_int(t["n_categories"])],
    ]
    res.append(Block("table", headers=["", "value"], rows=rows))
    classes = (stats.get("documents") or {}).get("by_language_class")
    if classes:
        res.append(Block("h3", "Papers and tokens by language class"))
        labels = (("papers", "Papers"), ("with_abstract", "with abstract"), ("with_content", "with full content"),
                  ("avg_abstract_tokens", "Avg. abstract tokens"), ("avg_content_tokens", "Avg. content tokens"),
                  ("total_tokens", "Total tokens"))
        crows = [[label] + [fmt_float(classes[c][key]) if key.startswith("avg") else fmt_int(classes[c][key])
                            for c in ("all", "en", "non-en")] for key, label in labels]
        res.append(Block("table", headers=["", "all", "English", "non-English"], rows=crows))
    coverage = (stats.get("documents") or {}).get("category_coverage")
    if coverage:
        res.append(Block("h3", "Category coverage (papers with text, as in Figure 2, with at least one category)"))
        res.append(Block("table", headers=["source", "papers", "with a category", "share"], rows=[
            [r["source"], fmt_int(r["papers"]), fmt_int(r["with_category"]),
             "—" if r["share"] is None else f"{100 * r['share']:.1f}%"] for r in coverage]))
    if t["citations"] is None:
        res.append(Block("p", f"citations/: {NOT_BUILT}."))
        return res
    crow = [["all", fmt_int(t["citations"])]]
    for key in ("en_en", "en_xx", "xx_en", "xx_xx", "unknown"):
        crow.append([CLASS_LABELS[key.replace("_", "-")], fmt_int(t[f"citations_{key}"])])
    res.append(Block("h3", "Citation pairs by language (citing-cited)"))
    res.append(Block("table", headers=["citing-cited", "citations"], rows=crow))
    return res


def _abstract_languages(stats: dict) -> list[Block]:
    """Papers carrying abstracts in two or more languages (documents.abstracts), by language
    set: what the trainer export's cross-lingual title-abstract pairs are made from."""
    docs = stats.get("documents") or {}
    info = docs.get("abstract_languages")
    if not info:
        return []
    res = [Block("h3", "Abstracts in two or more languages")]
    rows = [[r["pair"], fmt_int(r["papers"])] for r in info["by_pair"]]
    rows.append(["all", fmt_int(info["papers"])])
    return res + [Block("table", headers=["languages", "papers"], rows=rows)]


def _evidence(stats: dict) -> list[Block]:
    """How the kept titles and abstracts were found (the rule behind each), how well the
    fetched documents agree with the metadata title, and the metadata records flagged as
    paratext (not papers)."""
    evidence = (stats.get("documents") or {}).get("evidence") or {}
    paratext = (stats.get("papers") or {}).get("paratext") or {}
    if not evidence and not paratext:
        return []
    res = [Block("h3", "Text evidence: rules behind titles and abstracts, title agreement, paratext")]
    rows = [[f"title: {rule}", fmt_int(n)] for rule, n in (evidence.get("title_rule") or {}).items()]
    rows += [[f"abstract: {rule}", fmt_int(n)] for rule, n in (evidence.get("abstract_rule") or {}).items()]
    rows += [[f"title match with metadata: {name}", fmt_int(n)] for name, n in (evidence.get("title_match") or {}).items()]
    rows += [[f"papers/ flagged paratext: {reason}", fmt_int(n)] for reason, n in paratext.items()]
    return res + [Block("table", headers=["", "papers"], rows=rows)]


def _figures(stats: dict, pngs: dict[str, bytes]) -> list[Block]:
    top = stats["options"]["top"]
    res = []
    for i, (name, what) in enumerate(
        (("figure1_languages.png", "languages"), ("figure2_categories.png", "categories")), 1
    ):
        res.append(Block("h2", f"Figure {i} — top {top} {what}"))
        if name in pngs:
            res.append(Block("figure", text=f"Top {top} {what} by papers", png=pngs[name], name=name))
        else:
            res.append(Block("p", f"documents/: {NOT_BUILT}."))
    return res


def _table2(stats: dict) -> list[Block]:
    sp = stats["splits"]
    res = [Block("h2", "Table 2 — languages of each split")]
    if sp is None:
        return res + [Block("p", f"splits/: {NOT_BUILT}.")]
    top = stats["options"]["top"]
    rows = []
    for name, s in sp["by_split"].items():
        langs = s["languages"]
        shown = ", ".join(f"{_name(r['language'])} {r['papers']:,}" for r in langs[:top])
        if len(langs) > top:
            shown += f", … {len(langs) - top} more"
        rows.append([name, fmt_int(s["papers"]), fmt_int(s["n_languages"]), shown or "—"])
    every = sp.get("languages") or []
    shown = ", ".join(f"{_name(r['language'])} {r['papers']:,}" for r in every[:top])
    if len(every) > top:
        shown += f", … {len(every) - top} more"
    rows.append(["all", fmt_int(sp["papers"]), fmt_int(sp.get("n_languages")), shown or "—"])
    res.append(Block("table", headers=["split", "papers", "languages", "languages by size"], rows=rows))
    twice = sp.get("listed_more_than_once") or 0
    if twice:  # why the table holds fewer papers than splits/ has rows (the warning at the top says more)
        res.append(Block("p", f"Not counted above: {fmt_int(twice)} {'paper' if twice == 1 else 'papers'} that "
                         "splits/ lists more than once, in no split (see the warnings at the top)."))
    return res


def _table3(stats: dict) -> list[Block]:
    pairs = stats["pairs"]
    res = [Block("h2", "Table 3 — related pairs per split and language class")]
    if pairs is None:
        return res + [Block("p", f"pairs/: {NOT_BUILT}.")]
    classes = ["en-en", "en-xx", "xx-en", "xx-xx"]
    rows = []
    for rel in layout.RELATIONS:
        for split in layout.SPLIT_NAMES:
            cell = pairs[rel][split]
            if cell is None:
                rows.append([rel.upper(), split] + [NOT_BUILT] * (len(classes) + 2))
                continue
            rows.append(
                [rel.upper(), split]
                + [fmt_int(cell["by_lang_class"].get(c, {}).get("pairs", 0)) for c in classes]
                + [fmt_int(cell["pairs"]), fmt_int(cell["support"])]
            )
    headers = ["relation", "split"] + [CLASS_LABELS[c] for c in classes] + ["pairs", "total support"]
    res.append(Block("table", headers=headers, rows=rows))
    # As in the paper: DC is directed (four classes); CC and BC are symmetric, so En-nonEn
    # and nonEn-En are one class; and how many pairs join papers of one language.
    res.append(Block("h3", "As in the paper: directed DC, symmetric CC / BC, mono- and cross-lingual"))
    prow = []
    for rel in layout.RELATIONS:
        for split in layout.SPLIT_NAMES:
            cell = pairs[rel][split]
            if cell is None:
                continue
            by = cell["by_lang_class"]
            n = {c: by.get(c, {}).get("pairs", 0) for c in classes}
            if rel == "dc":
                cls = [fmt_int(n["en-en"]), fmt_int(n["en-xx"]), fmt_int(n["xx-en"]), fmt_int(n["xx-xx"])]
            else:
                cls = [fmt_int(n["en-en"]), fmt_int(n["en-xx"] + n["xx-en"]), "", fmt_int(n["xx-xx"])]
            prow.append([rel.upper(), split, *cls, fmt_int(cell.get("monolingual")), fmt_int(cell.get("crosslingual"))])
    res.append(Block("table", headers=["relation", "split", "En-En", "En-nonEn", "nonEn-En (DC only)", "nonEn-nonEn",
                                       "monolingual", "cross-lingual"], rows=prow))
    return res


def evaluation_blocks(stats: dict) -> list[Block]:
    """Retrieval evaluation (`openmsd-build evaluate`, e.g. the BM25 baseline); shown only
    when `evaluation/` holds results."""
    ev = stats.get("evaluation")
    if not ev:
        return []
    res = [Block("h2", "Retrieval evaluation — MAP and nDCG on IDT / ODT")]
    first = next(iter(next(iter(ev.values())).values()))
    res.append(Block("p", "Every paper of the split is a query ranking the whole split except itself; relevant "
                          "papers are its DC / CC / BC partners. Class X-Y ranks the side-Y papers for side-X "
                          "queries (en = English, xx = other). Queries without a relevant paper are left out of "
                          f"the means and counted. Ties: {first.get('tie_rule') or '—'}."))
    for model, by_split in ev.items():
        for split, r in by_split.items():
            k = r.get("k") or 10
            res.append(Block("h3", f"{model} on {split} (pool {fmt_int(r.get('pool'))} papers)"))
            rows = []
            for rel, by_cls in (r.get("relations") or {}).items():
                for cls, m in by_cls.items():
                    rows.append([rel.upper(), CLASS_LABELS.get(cls, cls), fmt_float(m.get("map"), 4),
                                 fmt_float(m.get(f"ndcg@{k}"), 4), fmt_int(m.get("queries")),
                                 fmt_int(m.get("queries_without_relevant"))])
            headers = ["relation", "class", "MAP", f"nDCG@{k}", "queries", "no relevant"]
            res.append(Block("table", headers=headers, rows=rows))
    return res


def _recipes(stats: dict) -> list[Block]:
    """Training recipes exported (`export --recipe`): examples and tokens per language pair
    and type, before and after caps, and the measured shares; shown only when exported."""
    from openmsd_build.export.recipe_card import shares_lines, table_rows

    res = []
    for summary in stats.get("training_recipes") or []:
        name = summary.get("recipe", {}).get("name", "?")
        res.append(Block("h2", f"Training recipe {name}"))
        res.append(Block("p", f"{summary.get('folder', '')}: examples and tokens (count_tokens) per language pair "
                              "and dataset type, before and after the caps (dedup, per-anchor cap, token budgets)."))
        headers, rows = table_rows(summary, limit=30)
        res.append(Block("table", headers=headers, rows=rows))
        for line in shares_lines(summary):
            res.append(Block("p", line.lstrip("- ")))
    return res


def _funnel(stats: dict) -> list[Block]:
    res = [Block("h2", "Funnel — from records read to pairs-ready papers")]
    rows = [[s["label"], s["key"], fmt_int(s["count"])] for s in stats["funnel"]]
    res.append(Block("table", headers=["step", "key", "count"], rows=rows))
    if stats.get("stage_resources"):
        res.append(Block("h3", "Stage time and memory (_stats/*.json resources)"))
        rows = [[stage, f"{r.get('wall_s', 0):.1f}", f"{r.get('cpu_s', 0):.1f}", f"{r.get('peak_rss_mb', 0):.0f}"]
                for stage, r in stats["stage_resources"].items()]
        res.append(Block("table", headers=["stage", "wall s", "CPU s", "peak RSS MB"], rows=rows))
    res.append(Block("h3", "Stage counts (_stats/*.json)"))
    if not stats["stage_counts"]:
        res.append(Block("p", "No _stats/*.json files."))
    for stage, counts in stats["stage_counts"].items():
        res.append(Block("p", f"Stage {stage}:"))
        res.append(Block("table", headers=["count", "value"], rows=[[k, fmt_int(v)] for k, v in counts.items()]))
    res.append(Block("h3", "Rejected records (rejects/<stage>/) by reason"))
    if not stats["rejects"]:
        res.append(Block("p", "No rejects/ files."))
    rows = []
    for stage, r in stats["rejects"].items():
        rows += [[stage, reason, fmt_int(n)] for reason, n in r["by_reason"].items()]
        rows.append([stage, "(total)", fmt_int(r["total"])])
    if rows:
        res.append(Block("table", headers=["stage", "reason", "records"], rows=rows))
    return res


def _fetch(stats: dict) -> list[Block]:
    f = stats["fetch"]
    res = [Block("h2", "Fetch health")]
    if f is None:
        return res + [Block("p", f"fetch/: {NOT_BUILT} (e.g. a build with --fetch none).")]
    offline = stats.get("offline")
    misses = sum(v for k, v in f["by_error"].items() if k in ("not_in_archive", "not_in_folder"))
    summary = [
        ["URLs looked up (offline)" if offline else "URLs fetched", fmt_int(f["urls"])],
        *([["not there (misses)", fmt_int(misses)]] if offline else []),
        ["without error", fmt_int(f["ok"])],
        ["failed", fmt_int(f["failed"])],
        ["success rate", fmt_pct(f["success_rate"])],
        ["papers (DOIs) tried", fmt_int(f["dois"])],
        ["papers with a success", fmt_int(f["dois_ok"])],
        ["hosts", fmt_int(f["hosts"])],
    ]
    res.append(Block("table", headers=["", "value"], rows=summary))
    res.append(Block("h3", "By HTTP status"))
    res.append(Block("table", headers=["status", "URLs"], rows=[[k, fmt_int(v)] for k, v in f["by_status"].items()]))
    res.append(Block("h3", "By error"))
    if f["by_error"]:
        res.append(Block("table", headers=["error", "URLs"], rows=[[k, fmt_int(v)] for k, v in f["by_error"].items()]))
    else:
        res.append(Block("p", "No errors."))
    res.append(Block("h3", "Success rate of the top hosts"))
    rows = [
        [_name(h["host"]), fmt_int(h["urls"]), fmt_pct(h["share"]), fmt_int(h["ok"]), fmt_pct(h["success_rate"])]
        for h in f["top_hosts"]
    ]
    res.append(Block("table", headers=["host", "URLs", "share", "ok", "success rate"], rows=rows))
    return res


def _queue(stats: dict) -> list[Block]:
    q = stats["queue"]
    res = [Block("h2", "Fetch queue — dominating hosts and time at the per-host rate")]
    if stats.get("offline"):
        return res + [Block("p", "An offline build (replayed from archives or read from a folder): nothing was "
                                 "fetched, so there is no fetch time to estimate.")]
    if q is None:
        return res + [Block("p", f"papers/ and fetch/: {NOT_BUILT}.")]
    source = "fetch/ (URLs queued)" if q["source"] == "fetch" else "papers/ (every distinct listed URL; an upper bound)"
    rate = q["rate_per_host"]
    summary = [
        ["queue from", source],
        ["URLs", fmt_int(q["urls"])],
        ["hosts", fmt_int(q["hosts"])],
        ["rate per host", "unlimited" if rate is None else f"{rate:g} req/s"],
        ["wall time on a distributed runner (the slowest host)",
         f"{fmt_seconds(q['max_host_seconds'])} — {_name(q['slowest_host'])}"],
        ["wall time on the local runner (the hosts one at a time)", fmt_seconds(q["sum_seconds"])],
    ]
    res.append(Block("table", headers=["", "value"], rows=summary))
    rows = [
        [_name(h["host"]), fmt_int(h["urls"]), fmt_pct(h["share"]), fmt_seconds(h["seconds"])] for h in q["top_hosts"]
    ]
    res.append(Block("table", headers=["host", "URLs", "share", "time at rate"], rows=rows))
    return res


# --------------------------------------------------------------------------- renderers


def _is_number(text: str) -> bool:
    """Numbers (and "not built" / "—" placeholders) are right-aligned; words left-aligned."""
    text = str(text)
    return text in (NOT_BUILT, "—", "") or text.replace(",", "").replace(".", "").replace("%", "").isdigit()


# Markdown that a table cell's text could start: HTML tags, links and images, code spans,
# emphasis (an underscore inside a word is not emphasis, so `bad_doi` stays as written).
_MD_MARKUP_RE = re.compile(r"([\\`*\[\]<>!])|(?<!\w)_|_(?!\w)")


def _md_cell(text: str) -> str:
    """A table cell's text as literal Markdown: markup characters escaped, `|` and line
    breaks neutralised (a label from the data must not become a link, image or tag)."""
    text = _CONTROL_RE.sub(" ", str(text))
    return _MD_MARKUP_RE.sub(lambda m: "\\" + m.group(0), text).replace("|", "\\|")


def render_markdown(stats: dict, pngs: dict[str, bytes]) -> str:
    """GitHub-flavoured Markdown; figures are linked as the PNG files beside report.md."""
    lines: list[str] = []
    for b in blocks(stats, pngs):
        if b.kind in ("h1", "h2", "h3"):
            lines += ["#" * int(b.kind[1]) + " " + b.text, ""]
        elif b.kind == "p":
            lines += [b.text, ""]
        elif b.kind == "warning":
            lines += [f"> **Warning:** {b.text}", ""]
        elif b.kind == "figure":
            lines += [f"![{b.text}]({b.name})", ""]
        elif b.kind == "table":
            lines.append("| " + " | ".join(_md_cell(h) for h in b.headers) + " |")
            numeric = [all(_is_number(row[i]) for row in b.rows) for i in range(len(b.headers))]
            lines.append("|" + "|".join("---:" if n and i else "---" for i, n in enumerate(numeric)) + "|")
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            lines.append("")
    return "\n".join(lines)


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1100px;
       color: #1d2330; background: #fff; line-height: 1.4; }
h1 { border-bottom: 2px solid #3b6ea8; padding-bottom: 4px; }
h2 { margin-top: 28px; color: #24466e; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 14px; }
th, td { border: 1px solid #c9d2de; padding: 3px 9px; text-align: right; vertical-align: top; }
th { background: #eaf0f7; }
td:first-child, th:first-child { text-align: left; }
td.text, th.text { text-align: left; }
figure { margin: 8px 0; }
p.warning { background: #fff4e0; border-left: 5px solid #d9822b; padding: 6px 10px; color: #5c3300; }
figure img { max-width: 100%; border: 1px solid #dde3ea; }
"""


def render_html(stats: dict, pngs: dict[str, bytes]) -> str:
    """One self-contained page: inline CSS, figures as data URIs, no scripts, no links."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', "<title>OpenMSD build report</title>"]
    parts.append(f"<style>{_CSS}</style></head><body>")
    for b in blocks(stats, pngs):
        if b.kind in ("h1", "h2", "h3", "p"):
            parts.append(f"<{b.kind}>{e(b.text)}</{b.kind}>")
        elif b.kind == "warning":
            parts.append(f'<p class="warning" role="alert"><strong>Warning:</strong> {e(b.text)}</p>')
        elif b.kind == "figure":
            data = base64.b64encode(b.png).decode("ascii")
            parts.append(
                f'<figure><img alt="{e(b.text)}" src="data:image/png;base64,{data}"><figcaption>{e(b.text)}</figcaption></figure>'
            )
        elif b.kind == "table":
            # A column is right-aligned (header included) only when all its cells are numbers.
            numeric = [all(_is_number(row[i]) for row in b.rows) for i in range(len(b.headers))]
            heads = "".join(
                f"<th>{e(h)}</th>" if n else f'<th class="text">{e(h)}</th>'
                for h, n in zip(b.headers, numeric, strict=True)
            )
            parts.append(f"<table><thead><tr>{heads}</tr></thead><tbody>")
            for row in b.rows:
                cells = "".join(f"<td>{e(c)}</td>" if _is_number(c) else f'<td class="text">{e(c)}</td>' for c in row)
                parts.append(f"<tr>{cells}</tr>")
            parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts)
