"""The numbers of a build, computed from its output root with polars lazy scans.

Everything the report shows is computed here, as one JSON-able dict, so `stats.json`,
`report.md` and `report.html` can never disagree: the renderers only format this dict.

Why polars and not Beam: the report is a handful of group-bys and two joins over columns
that a single machine scans in seconds at sample scale and minutes at full scale; a Beam
pipeline would spend most of that time on per-element overhead. Scans are lazy and projected, so only the columns a number needs are read.

A build may have stopped early (or run with `--fetch none`): every folder is optional and a
missing one yields `None` for its section ("not built") instead of an error.

Definitions (stable, because tests and downstream readers rely on them):

- a text field is *present* when it is non-null and not blank after stripping whitespace;
- *English* means `language == "en"` (CLD3's code); a null language counts in no language;
- a citation's language class is `<citing>-<cited>` with `en` for English and `xx` for any
  other detected language; an end that is missing from `documents/` (or has no language)
  makes the edge `unknown`;
- a fetch row *succeeded* when its `error` is null;
- a URL's *host* is the lower-cased host name (no userinfo, no port, no trailing dot), as
  the fetch stage's politeness unit (`fetch.plan.host_key`) defines it.
"""

from __future__ import annotations

import math
import posixpath

import polars as pl

from openmsd_build.core import layout
from openmsd_build.core.notices import build_warnings, listed_twice_said
from openmsd_build.core.parquet_io import join_path, match_paths
from openmsd_build.core.scan import collect, collect_all, scan
from openmsd_build.core.split_rows import scan_listed_once, scan_listed_twice
from openmsd_build.core.stages import read_stage_stats, stale_stages
from openmsd_build.core.stats import read_optional_json, read_stats
from openmsd_build.schemas import tables

SCHEMA_VERSION = 1
LANG_CLASSES = ("en-en", "en-xx", "xx-en", "xx-xx")
# scheme://[userinfo@]host[:port]... -> host (bracketed IPv6 literals kept with brackets)
_HOST_RE = r"^[A-Za-z][A-Za-z0-9+.\-]*://(?:[^@/?#]*@)?(\[[^\]/?#]*\]|[^:/?#\[\]]+)"


# --------------------------------------------------------------------------- reading


def _present(col: str) -> pl.Expr:
    """Non-null and not blank: an empty abstract is no abstract."""
    return pl.col(col).is_not_null() & (pl.col(col).str.strip_chars().str.len_bytes() > 0)


def _host(col: str = "url") -> pl.Expr:
    return pl.col(col).str.strip_chars().str.extract(_HOST_RE, 1).str.to_lowercase().str.strip_chars_end(".")


def _int(value) -> int:
    return int(value or 0)


def _label(value) -> str:
    """A JSON key for a grouping value; null groups are shown as "(none)"."""
    return "(none)" if value is None else str(value)


def _collect(lf: pl.LazyFrame) -> pl.DataFrame:
    """Streaming engine: bounded memory on full-scale folders (`core.scan.collect`)."""
    return collect(lf)


def _collect_all(frames: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    """Several queries over one scan at once (polars shares the scan between them), streaming."""
    return collect_all(frames)


def _ranked(df: pl.DataFrame, key: str, count: str, top: int | None, total: int | None = None) -> list[dict]:
    """Rows sorted by count (descending) then key, so ties never reorder between runs."""
    df = df.sort([count, key], descending=[True, False], nulls_last=True)
    if top is not None:
        df = df.head(top)
    rows = []
    for rec in df.iter_rows(named=True):
        row = {key: rec[key], count: int(rec[count])}
        if total:
            row["share"] = row[count] / total
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- sections


def papers_section(out: str) -> dict | None:
    """Stage 1's table: how many DOIs were joined, and how many carry what later stages need."""
    lf = scan(layout.papers_dir(out), ["doi", "abstract", "urls", "categories", "sources", "paratext"], tables.PAPERS)
    if lf is None:
        return None
    coverage = _category_coverage(lf)
    paratext, totals = _collect_all([
        lf.filter(pl.col("paratext").is_not_null()).group_by("paratext").agg(pl.len().alias("n")),
        lf.select(
            pl.len().alias("rows"),
            pl.col("doi").n_unique().alias("distinct_dois"),
            _present("abstract").sum().alias("with_abstract"),
            (pl.col("urls").list.len().fill_null(0) > 0).sum().alias("with_urls"),
        ),
    ])
    row = totals.row(0, named=True)
    return {**{k: _int(v) for k, v in row.items()}, "category_coverage": coverage,
            # records that are not papers (papers/paratext.py), flagged by reason
            "paratext": {str(r["paratext"]): _int(r["n"]) for r in paratext.sort("paratext").iter_rows(named=True)}}


def _category_coverage(lf: pl.LazyFrame) -> list[dict]:
    """Share of papers with at least one category, per source that contributed the paper
    (a paper joined from several sources counts for each), and over all papers."""
    has = (pl.col("categories").list.len().fill_null(0) > 0)
    per_source = _collect(
        lf.select(pl.col("sources"), has.alias("has"))
        .explode("sources")
        .group_by("sources")
        .agg(pl.len().alias("papers"), pl.col("has").sum().alias("with_category"))
        .sort("sources")
    )
    total = _collect(lf.select(pl.len().alias("papers"), has.sum().alias("with_category"))).row(0, named=True)
    rows = [{"source": str(r["sources"]), "papers": _int(r["papers"]), "with_category": _int(r["with_category"])}
            for r in per_source.iter_rows(named=True) if r["sources"] is not None]
    rows.append({"source": "all", "papers": _int(total["papers"]), "with_category": _int(total["with_category"])})
    for r in rows:
        r["share"] = r["with_category"] / r["papers"] if r["papers"] else None
    return rows


def documents_category_coverage(out: str) -> list[dict] | None:
    """`_category_coverage` over the papers with text (documents/, the papers Figures 1 and 2
    count), each with the sources papers/ joined it from; None without documents/."""
    docs = scan(layout.documents_dir(out), ["doi", "categories"], tables.DOCUMENTS)
    if docs is None:
        return None
    papers = scan(layout.papers_dir(out), ["doi", "sources"], tables.PAPERS)
    if papers is None:
        docs = docs.with_columns(pl.lit(None, dtype=pl.List(pl.String)).alias("sources"))
    else:
        docs = docs.join(papers, on="doi", how="left")
    return _category_coverage(docs)


def documents_section(out: str, top: int) -> dict | None:
    """Table 1 (papers part) and the data of Figures 1 and 2."""
    cols = [
        "doi",
        "abstract",
        "abstracts",
        "content",
        "language",
        "categories",
        "n_tokens_title",
        "n_tokens_abstract",
        "n_tokens_content",
    ]
    lf = scan(layout.documents_dir(out), cols, tables.DOCUMENTS)
    if lf is None:
        return None
    tok = {c: pl.col(f"n_tokens_{c}").cast(pl.Int64) for c in ("title", "abstract", "content")}
    has_abs, has_content = _present("abstract"), _present("content")
    row = _collect(
        lf.select(
            pl.len().alias("papers"),
            has_abs.sum().alias("with_abstract"),
            has_content.sum().alias("with_content"),
            (pl.col("language") == "en").fill_null(False).sum().alias("english"),
            pl.col("language").is_null().sum().alias("without_language"),
            pl.col("language").drop_nulls().n_unique().alias("n_languages"),
            tok["abstract"].filter(has_abs).mean().alias("avg_abstract_tokens"),
            tok["content"].filter(has_content).mean().alias("avg_content_tokens"),
            tok["title"].sum().alias("tokens_title"),
            tok["abstract"].sum().alias("tokens_abstract"),
            tok["content"].sum().alias("tokens_content"),
        )
    ).row(0, named=True)
    tokens = {c: _int(row[f"tokens_{c}"]) for c in ("title", "abstract", "content")}
    tokens["total"] = sum(tokens.values())
    section = {
        "papers": _int(row["papers"]),
        "with_abstract": _int(row["with_abstract"]),
        "with_content": _int(row["with_content"]),
        "english": _int(row["english"]),
        "without_language": _int(row["without_language"]),
        "avg_abstract_tokens": row["avg_abstract_tokens"],
        "avg_content_tokens": row["avg_content_tokens"],
        "tokens": tokens,
        "n_languages": _int(row["n_languages"]),
    }
    langs = _collect(lf.filter(pl.col("language").is_not_null()).group_by("language").agg(pl.len().alias("papers")))
    # A paper counts once per distinct category it lists.
    cats = _collect(
        lf.select(pl.col("categories").list.unique().alias("category"))
        .explode("category")
        .filter(pl.col("category").is_not_null())
        .group_by("category")
        .agg(pl.len().alias("papers"))
    )
    section["evidence"] = _evidence(out, top)
    section["by_language_class"] = _by_language_class(lf, tok, has_abs, has_content)
    section["abstract_languages"] = _abstract_language_pairs(lf, top)
    section["n_categories"] = cats.height
    section["top_languages"] = _ranked(langs, "language", "papers", top, section["papers"])
    section["top_categories"] = _ranked(cats, "category", "papers", top, section["papers"])
    return section


TITLE_MATCH_BUCKETS = ((0.5, "below 0.5"), (0.9, "0.5 to 0.9"), (1.01, "0.9 or more"))


def _evidence(out: str, top: int) -> dict:
    """How each kept title and abstract was found (`title_rule`, `abstract_rule`: papers per
    rule) and how well the fetched documents agree with the metadata title (`title_match`
    in buckets; "none" when there was no metadata title or nothing fetched)."""
    lf = scan(layout.documents_dir(out), ["title_rule", "abstract_rule", "title_match"], tables.DOCUMENTS)
    if lf is None:
        return {}
    result: dict = {}
    match = pl.col("title_match").cast(pl.Float64)
    bucket = pl.when(match.is_null()).then(pl.lit("none"))
    low = -1.0
    for high, name in TITLE_MATCH_BUCKETS:
        bucket = bucket.when((match >= low) & (match < high)).then(pl.lit(name))
        low = high
    columns = ("title_rule", "abstract_rule")
    *by_rule, buckets = _collect_all(
        [lf.filter(pl.col(c).is_not_null()).group_by(c).agg(pl.len().alias("papers")) for c in columns]
        + [lf.select(bucket.otherwise(pl.lit("none")).alias("b")).group_by("b").agg(pl.len().alias("n"))])
    for column, counts in zip(columns, by_rule, strict=True):
        rows = sorted(counts.iter_rows(named=True), key=lambda r: (-r["papers"], str(r[column])))[:top]
        result[column] = {str(r[column]): _int(r["papers"]) for r in rows}
    found = {r["b"]: _int(r["n"]) for r in buckets.iter_rows(named=True)}
    result["title_match"] = {name: found.get(name, 0) for name in ("none", *(n for _, n in TITLE_MATCH_BUCKETS))}
    return result


def _by_language_class(lf: pl.LazyFrame, tok: dict, has_abs: pl.Expr, has_content: pl.Expr) -> dict:
    """Table 1 as in the paper, per language class: all papers, English, non-English
    (papers without a detected language count in `all` only)."""
    english = (pl.col("language") == "en").fill_null(False)
    other = pl.col("language").is_not_null() & (pl.col("language") != "en")
    result = {}
    for name, keep in (("all", pl.lit(True)), ("en", english), ("non-en", other)):
        row = _collect(lf.filter(keep).select(
            pl.len().alias("papers"),
            has_abs.sum().alias("with_abstract"),
            has_content.sum().alias("with_content"),
            tok["abstract"].filter(has_abs).mean().alias("avg_abstract_tokens"),
            tok["content"].filter(has_content).mean().alias("avg_content_tokens"),
            (tok["title"].fill_null(0) + tok["abstract"].fill_null(0) + tok["content"].fill_null(0)).sum()
            .alias("total_tokens"),
        )).row(0, named=True)
        result[name] = {k: (v if k.startswith("avg") else _int(v)) for k, v in row.items()}
    return result


def _abstract_language_pairs(lf: pl.LazyFrame, top: int) -> dict:
    """Papers whose `abstracts` hold two or more known languages, in all and by language
    set ("en+pt"): the supply of cross-lingual title-abstract training pairs."""
    langs = pl.col("abstracts").list.eval(pl.element().struct.field("language")).list.eval(
        pl.element().filter(pl.element().is_not_null() & (pl.element() != "und"))
    ).list.unique().list.sort()
    multi = _collect(
        lf.select(langs.alias("langs"))
        .filter(pl.col("langs").list.len() >= 2)
        .group_by(pl.col("langs").list.join("+").alias("pair"))
        .agg(pl.len().alias("papers"))
    )
    total = _int(multi["papers"].sum()) if multi.height else 0
    ranked = sorted(zip(multi["pair"].to_list(), multi["papers"].to_list(), strict=True), key=lambda r: (-r[1], r[0]))
    return {"papers": total, "by_pair": [{"pair": p, "papers": _int(n)} for p, n in ranked[:top]],
            "n_pairs": multi.height}


def _doi_key(col: str) -> pl.Expr:
    """A 64-bit hash of the DOI as the join key: joining ~10^9 citation ends against ~10^8
    documents on 8-byte integers is about 3x faster than on strings and needs a third of the
    memory. A collision (two DOIs, one hash) could at worst mislabel one edge's language;
    with 10^8 documents and 10^9 ends the expected number of such edges is below 0.01, so
    the counts are exact in practice (and exact in the tests). Null DOIs never match."""
    return pl.when(pl.col(col).is_not_null()).then(pl.col(col).hash(seed=0x0DE5))


def citations_section(out: str) -> dict | None:
    """Citation edges by language class, and which documents have any link (Table 1)."""
    cit = scan(layout.citations_dir(out), ["citing_doi", "cited_doi"], tables.CITATIONS)
    if cit is None:
        return None
    docs = scan(layout.documents_dir(out), ["doi", "language"], tables.DOCUMENTS)
    section: dict = {"total": _int(_collect(cit.select(pl.len())).item())}
    if docs is None:
        section.update({c: None for c in LANG_CLASSES}, unknown=None, papers_with_citations=None)
        return section

    lang = pl.col("language")
    side = pl.when(lang == "en").then(pl.lit("en")).when(lang.is_not_null()).then(pl.lit("xx"))
    docs_key = docs.select(_doi_key("doi").alias("k"), side.alias("side"))
    by_doi = docs_key.unique(subset="k", keep="any")
    ends = cit.select(_doi_key("citing_doi").alias("a"), _doi_key("cited_doi").alias("b"))
    joined = ends.join(by_doi.rename({"k": "a", "side": "side_a"}), on="a", how="left").join(
        by_doi.rename({"k": "b", "side": "side_b"}), on="b", how="left"
    )
    cls = pl.when(pl.col("side_a").is_null() | pl.col("side_b").is_null()).then(pl.lit("unknown"))
    cls = cls.otherwise(pl.concat_str([pl.col("side_a"), pl.col("side_b")], separator="-"))
    counts = dict(_collect(joined.group_by(cls.alias("cls")).agg(pl.len())).iter_rows())
    for c in (*LANG_CLASSES, "unknown"):
        section[c] = _int(counts.get(c))
    linked = pl.concat([ends.select(pl.col("a").alias("k")), ends.select(pl.col("b").alias("k"))]).drop_nulls().unique()
    section["papers_with_citations"] = _int(_collect(docs_key.join(linked, on="k", how="semi").select(pl.len())).item())
    return section


SPLIT_AMBIGUOUS_EXAMPLES = 5
"""How many DOIs of the papers `splits/` lists more than once the report names."""


def splits_section(out: str) -> dict | None:
    """Table 2: each split's size and its languages by size.

    A paper `splits/` lists more than once is in no split, as every stage that reads the
    folder holds it (`core.split_rows`): counted here in every split it was listed in, it
    inflated the split sizes and the total over the pools evaluate and export use. It is left
    out of every number of the table and counted on its own (`listed_more_than_once`, with a
    few DOIs in `listed_more_than_once_examples`): a data problem (two builds' files mixed, a
    hand edit) that `compute_stats` also makes a warning."""
    lf = scan(layout.splits_dir(out), ["doi", "split", "language"], tables.SPLITS)
    if lf is None:
        return None
    twice = scan_listed_twice(lf)
    df, n_twice, examples, n_without_doi = _collect_all([
        scan_listed_once(lf).group_by(["split", "language"]).agg(pl.len().alias("papers")),
        twice.select(pl.len()), twice.head(SPLIT_AMBIGUOUS_EXAMPLES),
        lf.filter(pl.col("doi").is_null()).select(pl.len())])
    names = list(layout.SPLIT_NAMES) + sorted(
        {s for s in df["split"].to_list() if s not in layout.SPLIT_NAMES}, key=str
    )
    by_split = {}
    for name in names:
        part = df.filter(pl.col("split") == name) if name is not None else df.filter(pl.col("split").is_null())
        by_split[str(name)] = {
            "papers": _int(part["papers"].sum()),
            "n_languages": part.filter(pl.col("language").is_not_null()).height,
            "languages": _ranked(part.select("language", "papers"), "language", "papers", None),
        }
    every = df.group_by("language").agg(pl.col("papers").sum())
    return {
        "papers": _int(df["papers"].sum()),
        "n_languages": every.filter(pl.col("language").is_not_null()).height,
        "languages": _ranked(every.select("language", "papers"), "language", "papers", None),
        "by_split": by_split,
        "listed_more_than_once": _int(n_twice.item()),
        "listed_more_than_once_examples": examples["doi"].to_list(),
        "rows_without_doi": _int(n_without_doi.item()),
    }


def splits_warnings(splits: dict | None) -> list[str]:
    """What the report says of `splits/` itself: the papers it lists more than once, and rows
    that name no paper (a null DOI: a hand edit; such a row is in no split's count either)."""
    out = []
    without_doi = (splits or {}).get("rows_without_doi") or 0
    if without_doi:
        out.append(f"{without_doi:,} {'row' if without_doi == 1 else 'rows'} of splits/ {'has' if without_doi == 1 else 'have'}"
                   " no DOI (a hand edit?): naming no paper, left out of Table 2's counts and of every split")
    twice = (splits or {}).get("listed_more_than_once") or 0
    if not twice:
        return out
    shown = ", ".join(splits["listed_more_than_once_examples"])
    out.append(f"{listed_twice_said(twice)}: in no split, left out of Table 2's counts as every stage leaves "
               f"{'it' if twice == 1 else 'them'} out of its splits (core.split_rows), e.g. {shown}")
    return out


def pairs_section(out: str) -> dict | None:
    """Table 3: DC / CC / BC pairs and their total support per split and language class."""
    result: dict = {}
    any_built = False
    for rel in layout.RELATIONS:
        result[rel] = {}
        for split in layout.SPLIT_NAMES:
            lf = scan(layout.pairs_dir(out, rel, split), ["lang_a", "lang_b", "lang_class", "support"], tables.PAIRS)
            if lf is None:
                result[rel][split] = None
                continue
            any_built = True
            df = _collect(
                lf.group_by("lang_class").agg(
                    pl.len().alias("pairs"), pl.col("support").cast(pl.Int64).sum().alias("support")
                )
            )
            by_class = {
                str(r["lang_class"]): {"pairs": _int(r["pairs"]), "support": _int(r["support"])}
                for r in df.iter_rows(named=True)
            }
            for c in LANG_CLASSES:
                by_class.setdefault(c, {"pairs": 0, "support": 0})
            lingual = _collect(lf.select(
                (pl.col("lang_a") == pl.col("lang_b")).fill_null(False).sum().alias("monolingual"),
                (pl.col("lang_a") != pl.col("lang_b")).fill_null(False).sum().alias("crosslingual"),
            )).row(0, named=True)
            result[rel][split] = {
                "monolingual": _int(lingual["monolingual"]),
                "crosslingual": _int(lingual["crosslingual"]),
                "pairs": _int(df["pairs"].sum()),
                "support": _int(df["support"].sum()),
                "by_lang_class": dict(sorted(by_class.items())),
            }
    return result if any_built else None


def _hosts_of(lf: pl.LazyFrame, *sums: pl.Expr) -> pl.DataFrame:
    """URLs per host (plus the summed `sums`, each an aggregation of the URL rows).

    Two steps, because a regex over every URL is the slowest part of the fetch numbers:
    first group by the raw `scheme://authority` prefix (a cheap split), then parse the host
    out of the few distinct prefixes and re-aggregate."""
    parts = pl.col("url").str.strip_chars().str.splitn("/", 4)
    prefix = pl.concat_str([parts.struct.field(f"field_{i}") for i in range(3)], separator="/")
    by_prefix = _collect(lf.group_by(prefix.alias("url")).agg(pl.len().alias("urls"), *sums))
    names = [c for c in by_prefix.columns if c != "url"]
    return by_prefix.group_by(_host().alias("host")).agg(pl.col(c).sum() for c in names)


def fetch_hosts(out: str) -> pl.DataFrame | None:
    """URLs and successes per host in fetch/ (host extraction is the costly part of the
    fetch numbers, so both the health and the queue sections share this one frame)."""
    lf = scan(layout.fetch_dir(out), ["url", "error"], tables.FETCH)
    if lf is None:
        return None
    return _hosts_of(lf, pl.col("error").is_null().sum().alias("ok"))


def fetch_section(out: str, top: int, hosts: pl.DataFrame | None) -> dict | None:
    """Fetch health: outcomes by status and error, and success per host (the top hosts)."""
    lf = scan(layout.fetch_dir(out), ["doi", "status", "error"], tables.FETCH)
    if lf is None or hosts is None:
        return None
    ok = pl.col("error").is_null()
    row = _collect(
        lf.select(
            pl.len().alias("urls"),
            ok.sum().alias("ok"),
            pl.col("doi").drop_nulls().n_unique().alias("dois"),
            pl.col("doi").filter(ok).drop_nulls().n_unique().alias("dois_ok"),
        )
    ).row(0, named=True)
    urls, n_ok = _int(row["urls"]), _int(row["ok"])
    status = _collect(lf.group_by("status").agg(pl.len().alias("n")))
    errors = _collect(lf.filter(~ok).group_by("error").agg(pl.len().alias("n")))
    ok_of = dict(hosts.select("host", "ok").iter_rows())
    top_hosts = []
    for r in _ranked(hosts, "host", "urls", top, urls):
        h_ok = _int(ok_of.get(r["host"]))
        top_hosts.append({**r, "ok": h_ok, "success_rate": h_ok / r["urls"] if r["urls"] else None})
    return {
        "urls": urls,
        "ok": n_ok,
        "failed": urls - n_ok,
        "success_rate": n_ok / urls if urls else None,
        "dois": _int(row["dois"]),
        "dois_ok": _int(row["dois_ok"]),
        "by_status": {
            ("none" if s is None else str(s)): _int(n)
            for s, n in sorted(status.iter_rows(), key=lambda t: (t[0] is None, t[0] or 0))
        },
        "by_error": {_label(r["error"]): r["n"] for r in _ranked(errors, "error", "n", None)},
        "hosts": hosts.height,
        "top_hosts": top_hosts,
    }


def queue_section(out: str, top: int, rate_per_host: float | None, hosts: pl.DataFrame | None = None) -> dict | None:
    """The fetch queue's shape: which hosts dominate it and how long it takes when each host
    is fetched at `rate_per_host` requests/s. Hosts are fetched in parallel, so the slowest
    host bounds wall time (max of urls/rate); the sum is the serial worst case.

    The queue is `fetch/` when it exists (what was queued; `hosts` from `fetch_hosts`), else
    every distinct http(s) URL listed in `papers/` (an upper bound: the fetch planner keeps
    at most a few per paper)."""
    source = "fetch"
    if hosts is None:
        papers = scan(layout.papers_dir(out), ["urls"], tables.PAPERS)
        if papers is None:
            return None
        source = "papers"
        lf = (
            papers.select(pl.col("urls").explode().struct.field("url").alias("url"))
            .filter(pl.col("url").is_not_null() & pl.col("url").str.to_lowercase().str.contains(r"^\s*https?://"))
            .unique()
        )
        hosts = _hosts_of(lf)
    total = _int(hosts["urls"].sum())
    rate = rate_per_host if rate_per_host and rate_per_host > 0 else None
    ranked = _ranked(hosts.select("host", "urls"), "host", "urls", top, total)
    for r in ranked:
        r["seconds"] = r["urls"] / rate if rate else None
    slowest = ranked[0] if ranked else None
    return {
        "source": source,
        "urls": total,
        "hosts": hosts.height,
        "rate_per_host": rate,
        "max_host_seconds": slowest["seconds"] if slowest else (0.0 if rate else None),
        "slowest_host": slowest["host"] if slowest else None,
        "sum_seconds": total / rate if rate else None,
        "top_hosts": ranked,
    }


def _stem(path: str) -> str:
    return posixpath.basename(path.replace("\\", "/"))[: -len(".json")]


def stage_counts(out: str) -> dict[str, dict[str, int]]:
    """Every `_stats/<stage>.json`'s counts, by stage name (the names are the stage's own)."""
    pattern = join_path(out, "_stats", "*.json")
    paths = match_paths(pattern)
    # Pipeline order first (papers, text, ...), then any other stage by name.
    order = {stage: i for i, stage in enumerate(layout.STAGES)}
    paths.sort(key=lambda p: (order.get(_stem(p), len(order)), _stem(p)))
    result = {}
    for path in paths:
        stage = _stem(path)
        counts = read_stats(path).get("counts") or {}
        # a count that is no finite number (null, a string, NaN) is left out, not a crash
        result[stage] = {str(k): int(v) for k, v in sorted(counts.items())
                         if isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))}
    return result


def stage_resources(out: str) -> dict[str, dict]:
    """Each stage's `resources` (wall s, CPU s, peak RSS MB) from `_stats/<stage>.json`."""
    paths = match_paths(join_path(out, "_stats", "*.json"))
    order = {stage: i for i, stage in enumerate(layout.STAGES)}
    paths.sort(key=lambda p: (order.get(_stem(p), len(order)), _stem(p)))
    return {_stem(p): r for p in paths if (r := read_stats(p).get("resources"))}


def rejects_section(out: str) -> dict[str, dict]:
    """Rejected records per stage folder (`rejects/<stage>/`) and reason."""
    # Stage names are the folders that hold part files (a local glob of folders alone
    # does not match on every filesystem, so go through the parts).
    stages = sorted({posixpath.basename(posixpath.dirname(p.replace("\\", "/"))) for p in _reject_parts(out)})
    result = {}
    for stage in stages:
        lf = scan(layout.rejects_dir(out, stage), ["reason"], tables.REJECTS)
        if lf is None:
            continue
        df = _collect(lf.group_by("reason").agg(pl.len().alias("n")))
        by_reason = {_label(r["reason"]): r["n"] for r in _ranked(df, "reason", "n", None)}
        result[stage] = {"total": _int(df["n"].sum()), "by_reason": by_reason}
    return result


def _reject_parts(out: str) -> list[str]:
    pattern = join_path(out, "rejects", "*", "*.parquet")
    return match_paths(pattern)


def funnel(stats: dict) -> list[dict]:
    """The build as one funnel, each step's count or None ("not built"), from records read
    per source down to pairs-ready papers per split."""
    steps: list[dict] = []

    def add(key: str, label: str, count) -> None:
        steps.append({"key": key, "label": label, "count": None if count is None else int(count)})

    papers_counts = stats["stage_counts"].get("papers", {})
    for name in sorted(k for k in papers_counts if k.startswith("read.")):
        add(name, f"records read from {name[len('read.') :]}", papers_counts[name])
    papers, fetch, docs, splits = stats["papers"], stats["fetch"], stats["documents"], stats["splits"]
    add("papers", "joined papers (one row per DOI)", papers and papers["rows"])
    add("papers.with_urls", "joined papers with an OA URL", papers and papers["with_urls"])
    if stats.get("offline"):  # replayed from archives or read from a folder: nothing was fetched
        misses = fetch and sum(v for k, v in fetch["by_error"].items() if k in MISS_ERRORS)
        add("fetch.urls", "URLs looked up in the archives / folder", fetch and fetch["urls"])
        add("fetch.misses", "URLs not there (misses)", misses)
        add("fetch.ok", "URLs found and read without error", fetch and fetch["ok"])
        add("fetch.dois_ok", "papers with a URL found", fetch and fetch["dois_ok"])
    else:
        add("fetch.urls", "URLs fetched", fetch and fetch["urls"])
        add("fetch.ok", "URLs fetched without error", fetch and fetch["ok"])
        add("fetch.dois_ok", "papers with a successful fetch", fetch and fetch["dois_ok"])
    add("documents", "papers with text (documents)", docs and docs["papers"])
    add("documents.with_abstract", "papers with an abstract", docs and docs["with_abstract"])
    add("splits", "papers with a citation link (in splits)", splits and splits["papers"])
    for name in layout.SPLIT_NAMES:
        sp = splits and splits["by_split"].get(name)
        add(f"splits.{name}", f"papers in {name}", sp["papers"] if sp else (0 if splits else None))
    return steps


def recipes_section(out: str) -> list[dict]:
    """The statistics of every `export --recipe` under `OUT/export/recipes/` (stats.json)."""
    from openmsd_build.export.recipe_export import read_recipe_stats

    return read_recipe_stats(out)


def _evaluation_entry(doc: dict) -> dict | None:
    """One `evaluation/<model>_<split>.json` as the report keeps it, None when the file is no
    evaluation result (another tool's JSON). Raises when it is one but of the wrong shape
    inside (the report's table is rendered from it here, so it fails here, on its own file)."""
    if not {"model", "split", "relations", "k"} <= set(doc):
        return None
    from openmsd_build.report.render import evaluation_blocks

    keep = ("model", "split", "k", "pool", "pool_english", "tie_rule", "protocol", "params")
    entry = {key: doc.get(key) for key in keep}
    # Relations in build order (dc, cc, bc), classes as "all" then LANG_CLASSES.
    rels = doc.get("relations") or {}
    rel_order = [r for r in layout.RELATIONS if r in rels] + sorted(r for r in rels if r not in layout.RELATIONS)
    cls_order = ("all", *LANG_CLASSES)
    entry["relations"] = {
        r: dict(sorted(rels[r].items(), key=lambda kv: (cls_order.index(kv[0]) if kv[0] in cls_order else 99, kv[0])))
        for r in rel_order
    }
    evaluation_blocks({"evaluation": {"model": {"split": entry}}})
    return entry


def evaluation_section(out: str) -> dict | None:
    """Retrieval results of `openmsd-build evaluate` (`evaluation/<model>_<split>.json`,
    e.g. the BM25 baseline's `bm25_idt.json`): per model and split, MAP and nDCG@k per
    relation and language class, as written. None when the folder has no results."""
    pattern = join_path(out, "evaluation", "*.json")
    paths = match_paths(pattern)
    results: dict[str, dict] = {}
    for path in paths:
        # a broken or foreign JSON file (or one of the wrong shape inside) is skipped, not fatal
        entry = read_optional_json(path, _evaluation_entry, "retrieval result")
        if entry is not None:
            results.setdefault(str(entry["model"]), {})[str(entry["split"])] = entry
    if not results:
        return None
    # The BM25 baseline first, then other models by name; splits in build order.
    order = sorted(results, key=lambda m: (m != "bm25", m))
    split_order = {s: i for i, s in enumerate(layout.SPLIT_NAMES)}
    return {
        m: dict(sorted(results[m].items(), key=lambda kv: (split_order.get(kv[0], len(split_order)), kv[0])))
        for m in order
    }


def large_pool_section(out: str) -> dict | None:
    """`evaluate-pools` results (report/large_pool.py)."""
    from openmsd_build.report.large_pool import large_pool_section as section

    return section(out)
MISS_ERRORS = ("not_in_archive", "not_in_folder")
"""Fetch errors of an offline build that mean "not there", not a failed download."""


def compute_stats(out: str, top: int = 20, rate_per_host: float | None = 1.0) -> dict:
    """All numbers of the report for the output root `out` (local path or gs://)."""
    docs = documents_section(out, top)
    cit = citations_section(out)
    hosts = fetch_hosts(out)
    text_stats = read_stage_stats(out, "text") or {}
    offline = text_stats.get("fetch", "http") != "http"  # a replay fetched nothing: no queue time
    stats: dict = {
        "schema_version": SCHEMA_VERSION,
        "out": out,
        "stale": stale_stages(out),
        "options": {"top": top, "rate_per_host": rate_per_host},
        "papers": papers_section(out),
        "documents": docs,
        "citations": cit,
        "splits": splits_section(out),
        "pairs": pairs_section(out),
        "fetch": fetch_section(out, top, hosts),
        "offline": offline,
        "queue": None if offline else queue_section(out, top, rate_per_host, hosts),
        "warnings": build_warnings(out),
        "stage_counts": stage_counts(out),
        "stage_resources": stage_resources(out),
        "rejects": rejects_section(out),
        "evaluation": evaluation_section(out),
        "training_recipes": recipes_section(out),
        "large_pool": large_pool_section(out),
    }
    folder_warnings = splits_warnings(stats["splits"])
    if folder_warnings:  # a data problem of the folder, not a stage's recorded warning
        stats["warnings"] = {**stats["warnings"], "splits/": folder_warnings}
    if docs is not None:
        docs["category_coverage"] = documents_category_coverage(out)
    stats["table1"] = table1(docs, cit)
    stats["funnel"] = funnel(stats)
    stats["built"] = {k: stats[k] is not None for k in ("papers", "fetch", "documents", "citations", "splits", "pairs")}
    return stats


def table1(docs: dict | None, cit: dict | None) -> dict | None:
    """Table 1 of the OpenMSD paper, flattened: the paper counts, token figures and the
    citation pairs by language class. None when documents/ is not built."""
    if docs is None:
        return None
    return {
        "papers": docs["papers"],
        "with_abstract": docs["with_abstract"],
        "with_citations": cit["papers_with_citations"] if cit else None,
        "with_content": docs["with_content"],
        "english": docs["english"],
        "avg_abstract_tokens": docs["avg_abstract_tokens"],
        "avg_content_tokens": docs["avg_content_tokens"],
        "total_tokens": docs["tokens"]["total"],
        "n_languages": docs["n_languages"],
        "n_categories": docs["n_categories"],
        "citations": cit["total"] if cit else None,
        "citations_en_en": cit["en-en"] if cit else None,
        "citations_en_xx": cit["en-xx"] if cit else None,
        "citations_xx_en": cit["xx-en"] if cit else None,
        "citations_xx_xx": cit["xx-xx"] if cit else None,
        "citations_unknown": cit["unknown"] if cit else None,
    }
