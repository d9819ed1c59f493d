"""Trainer tables: (anchor, positive[, negative]) rows with text columns.

Every table starts with its text columns — `anchor`, `positive` and, for triplets,
`negative` — in the order sentence-transformers' losses take them, followed by id and
language columns (drop them with `dataset.select_columns(["anchor", "positive"])`). A
paper's text is its title and abstract, one per line (`tasks.document_text`).

- Relation mixes (`pairs_for_mix`): "dc+cc" is the union of DC and CC with each relation
  down-sampled to the size of the smallest one in the split (a pair of relation r is kept
  when its draw u < m / n_r, u a seeded hash of the two DOIs and r — deterministic, and
  the smallest relation is kept whole), as in the OpenMSD paper; "dc&cc" is the
  intersection. Pairs are unordered here (DC's direction is dropped); each row lists the
  relations it came from. `pairs/mix/<name>/split=<s>/` is used when the pairs stage wrote it.
- Specter triplets (`specter_triplets`): anchor A, positive B with A cites B, negative C
  with B cites C and A does not cite C (C != A). Read from `negatives/split=<s>/` when the
  pairs stage wrote it; otherwise computed here from `citations/` restricted to the split's
  papers, keeping per (A, B) the `per_positive` candidates C with the smallest seeded hash;
  bridges B citing more than `max_bridge_degree` papers are skipped. This fallback runs on
  one machine (polars) and is meant for samples and mid-size builds.
- Title-abstract pairs (`title_abstract_pairs`): anchor = a paper's title, positive = its
  abstract. Cross-lingual variants need a paper's title in a second language. The build's
  `papers/` and `documents/` keep one title (Crossref lists further titles in `title` /
  `original-title`, but the papers stage keeps the first), so in a standard build there are
  none. When `papers/` carries extra titles — a list column `titles`, string or list columns
  `original_title` / `translated_title`, or `title_translations` as a list of
  {title, language} — each extra title whose language (given, or detected with CLD3) is
  reliable and differs from the paper's language yields a `cross-lingual` row (extra title
  -> abstract) and a `title-title` row (extra title -> main title). Each abstract that
  `documents.abstracts` holds in another language than the paper's also yields a
  `cross-lingual` row (title -> that abstract). No text is invented.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from openmsd_build.core import layout
from openmsd_build.core.errors import short_repr
from openmsd_build.core.hashing import unit_interval
from openmsd_build.core.parquet_io import check_parts, list_parts
from openmsd_build.core.scan import collect, scan
from openmsd_build.core.split_rows import scan_listed_once
from openmsd_build.schemas import tables

MIX_SEED = "openmsd-export-mix-v1"
NEGATIVE_SEED = "openmsd-export-negatives-v1"
EXTRA_TITLE_COLUMNS = ("titles", "original_title", "translated_title", "title_translations")
_M64 = (1 << 64) - 1


# --------------------------------------------------------------------------- helpers


def _unit_draw(keys: list[str], seed: str) -> np.ndarray:
    """Deterministic u in [0, 1) per key (blake2b: stable across processes and versions)."""
    return np.fromiter((unit_interval(k, seed) for k in keys), dtype=np.float64, count=len(keys))


def text_expr(title: str = "title", abstract: str = "abstract") -> pl.Expr:
    """`tasks.document_text` as a polars expression."""
    parts = [pl.col(c).str.strip_chars() for c in (title, abstract)]
    parts = [pl.when(p.str.len_chars() > 0).then(p) for p in parts]
    return pl.concat_list(parts).list.drop_nulls().list.join("\n")


def split_documents(out: str, split: str, text: str = "raw") -> pl.DataFrame:
    """(doi, language, title, abstract, text) of the papers of `split`; `text` "enriched"
    makes `text` the paper's enriched format (`tasks.Pool.text`, `openmsd-build enrich`)."""
    sp = scan(layout.splits_dir(out), ["doi", "split", "language"], tables.SPLITS)
    docs = scan(layout.documents_dir(out), ["doi", "title", "abstract", "abstracts", "language"], tables.DOCUMENTS)
    if sp is None or docs is None:
        return pl.DataFrame(schema={"doi": pl.String, "language": pl.String, "title": pl.String,
                                    "abstract": pl.String, "text": pl.String})
    members = scan_listed_once(sp).filter(pl.col("split") == split).select(
        "doi", pl.col("language").alias("split_language"))
    docs = docs.join(members.select("doi"), on="doi", how="semi").unique(subset="doi", keep="first")
    frame = collect(
        members.join(docs, on="doi", how="left")
        .select("doi", pl.coalesce("split_language", "language").alias("language"), "title", "abstract", "abstracts")
        .with_columns(text_expr().alias("text"))
        .sort("doi"),
        [layout.splits_dir(out), layout.documents_dir(out)], "auto",
    )
    if text == "enriched":
        from openmsd_build.enrich.text import enriched_text
        from openmsd_build.evaluate.tasks import load_summaries

        summaries = load_summaries(out)
        texts = [enriched_text(t, a, summaries.get(d)) for d, t, a in
                 zip(frame["doi"].to_list(), frame["title"].to_list(), frame["abstract"].to_list(), strict=True)]
        frame = frame.with_columns(pl.Series("text", texts, dtype=pl.String))
    return frame


def _attach(frame: pl.DataFrame, docs: pl.DataFrame, key: str, text_col: str, lang_col: str) -> pl.DataFrame:
    side = docs.select(pl.col("doi").alias(key), pl.col("text").alias(text_col), pl.col("language").alias(lang_col))
    return frame.join(side, on=key, how="inner")


# --------------------------------------------------------------------------- mixes


def parse_mix(name: str) -> tuple[str, tuple[str, ...]]:
    """'dc+cc' -> ('union', ('dc', 'cc')); 'dc&cc' -> ('intersection', ...); 'cc' -> one."""
    if "+" in name and "&" in name:
        raise ValueError(f"bad mix {short_repr(name)}: use '+' (union) or '&' (intersection), not both")
    op = "&" if "&" in name else "+"
    rels = tuple(r.strip() for r in name.split(op))
    if not rels or len(set(rels)) != len(rels) or not set(rels) <= set(layout.RELATIONS):
        raise ValueError(f"bad mix {short_repr(name)}: relations from {', '.join(layout.RELATIONS)} joined by '+' or '&'")
    return ("intersection" if op == "&" and len(rels) > 1 else "union"), rels


def mix_slug(name: str) -> str:
    """A file- and config-safe name (the same as the pairs stage's folders)."""
    return layout.mix_slug(name)


def _unordered_pairs(out: str, relation: str, split: str) -> pl.DataFrame:
    lf = scan(layout.pairs_dir(out, relation, split), ["doi_a", "doi_b"], tables.PAIRS)
    if lf is None:
        return pl.DataFrame(schema={"doi_a": pl.String, "doi_b": pl.String})
    lo = pl.min_horizontal("doi_a", "doi_b")
    hi = pl.max_horizontal("doi_a", "doi_b")
    return collect(lf.select(lo.alias("doi_a"), hi.alias("doi_b")).filter(pl.col("doi_a") != pl.col("doi_b")).unique(),
                   [layout.pairs_dir(out, relation, split)], "auto")


def mix_pairs(out: str, name: str, split: str) -> tuple[pl.DataFrame, dict]:
    """(doi_a, doi_b, relations) of the mix `name` in `split`, sorted, and its counts."""
    kind, rels = parse_mix(name)
    frames = {r: _unordered_pairs(out, r, split) for r in rels}
    counts = {f"pairs.{r}": f.height for r, f in frames.items()}
    if kind == "intersection":
        merged = frames[rels[0]]
        for r in rels[1:]:
            merged = merged.join(frames[r], on=["doi_a", "doi_b"], how="semi")
        merged = merged.with_columns(pl.lit(name).alias("relations"))
    else:
        target = min(counts.values()) if counts else 0
        kept = []
        for r, f in frames.items():
            if f.height == 0:
                continue
            keys = [f"{a}\t{b}" for a, b in zip(f["doi_a"].to_list(), f["doi_b"].to_list(), strict=True)]
            keep = _unit_draw(keys, f"{MIX_SEED}:{r}") < target / f.height
            kept.append(f.filter(pl.Series(keep)).with_columns(pl.lit(r).alias("relation")))
            counts[f"kept.{r}"] = int(keep.sum())
        if kept:
            merged = (
                pl.concat(kept)
                .group_by("doi_a", "doi_b")
                .agg(pl.col("relation").sort().str.join("+").alias("relations"))
            )
        else:
            merged = pl.DataFrame(schema={"doi_a": pl.String, "doi_b": pl.String, "relations": pl.String})
    merged = merged.sort("doi_a", "doi_b")
    counts["rows"] = merged.height
    return merged, counts


def read_stage_mix(out: str, name: str, split: str) -> pl.DataFrame | None:
    """The pairs stage's own mix (`pairs/mix/<name>/split=<s>/`), or None."""
    directory = layout.mixes_dir(out, name, split)
    if not list_parts(directory):
        return None
    lf = scan(directory, ["doi_a", "doi_b", "support_dc", "support_cc", "support_bc"], tables.MIXES)
    rel_names = pl.concat_list(
        [pl.when(pl.col(f"support_{r}") > 0).then(pl.lit(r)) for r in layout.RELATIONS]
    ).list.drop_nulls().list.join("+")
    return collect(lf.select("doi_a", "doi_b", rel_names.alias("relations")).sort("doi_a", "doi_b"), [directory],
                   "auto")


def pairs_for_mix(out: str, name: str, split: str, docs: pl.DataFrame) -> tuple[pl.DataFrame, dict]:
    """The trainer table of a relation mix: anchor, positive, anchor_doi, positive_doi,
    lang_anchor, lang_positive, relations."""
    stage = read_stage_mix(out, name, split)
    if stage is not None:
        pairs, counts = stage, {"rows": stage.height, "source": f"pairs/mix/{name}"}
    else:
        pairs, counts = mix_pairs(out, name, split)
        counts["source"] = "pairs/{" + ",".join(parse_mix(name)[1]) + "}"
    frame = pairs.rename({"doi_a": "anchor_doi", "doi_b": "positive_doi"})
    frame = _attach(frame, docs, "anchor_doi", "anchor", "lang_anchor")
    frame = _attach(frame, docs, "positive_doi", "positive", "lang_positive")
    frame = frame.select("anchor", "positive", "anchor_doi", "positive_doi", "lang_anchor", "lang_positive",
                         "relations").sort("anchor_doi", "positive_doi")
    counts["rows"] = frame.height
    return frame, counts


# --------------------------------------------------------------------------- Specter triplets


def compute_negatives(
    edges: pl.DataFrame, per_positive: int = 1, max_bridge_degree: int = 1000, seed: str = NEGATIVE_SEED
) -> pl.DataFrame:
    """Specter hard negatives from citation edges (citing_doi, cited_doi) that all lie in
    one split: (anchor_doi, positive_doi, negative_doi), A cites B, B cites C, A does not
    cite C, C != A; per (A, B) the `per_positive` C with the smallest seeded hash."""
    e = edges.select("citing_doi", "cited_doi").filter(pl.col("citing_doi") != pl.col("cited_doi")).unique()
    outdeg = e.group_by("citing_doi").agg(pl.len().alias("deg"))
    bridges = e.join(outdeg.filter(pl.col("deg") <= max_bridge_degree).select("citing_doi"), on="citing_doi",
                     how="semi")
    first = e.rename({"citing_doi": "anchor_doi", "cited_doi": "positive_doi"})
    second = bridges.rename({"citing_doi": "positive_doi", "cited_doi": "negative_doi"})
    cand = first.join(second, on="positive_doi", how="inner").filter(pl.col("negative_doi") != pl.col("anchor_doi"))
    cites = e.rename({"citing_doi": "anchor_doi", "cited_doi": "negative_doi"})
    cand = cand.join(cites, on=["anchor_doi", "negative_doi"], how="anti").unique()
    if cand.height == 0:
        return pl.DataFrame(schema={"anchor_doi": pl.String, "positive_doi": pl.String, "negative_doi": pl.String})
    keys = [f"{a}\t{b}\t{c}" for a, b, c in cand.select("anchor_doi", "positive_doi", "negative_doi").iter_rows()]
    cand = cand.with_columns(pl.Series("u", _unit_draw(keys, seed)))
    return (
        cand.sort("anchor_doi", "positive_doi", "u", "negative_doi")
        .group_by("anchor_doi", "positive_doi", maintain_order=True)
        .head(per_positive)
        .select("anchor_doi", "positive_doi", "negative_doi")
    )


def split_edges(out: str, docs: pl.DataFrame) -> pl.DataFrame:
    """Citation edges with both ends among `docs` (one split's papers)."""
    lf = scan(layout.citations_dir(out), ["citing_doi", "cited_doi"], tables.CITATIONS)
    if lf is None:
        return pl.DataFrame(schema={"citing_doi": pl.String, "cited_doi": pl.String})
    members = docs.select("doi").lazy()
    return collect(
        lf.join(members.rename({"doi": "citing_doi"}), on="citing_doi", how="semi")
        .join(members.rename({"doi": "cited_doi"}), on="cited_doi", how="semi"),
        [layout.citations_dir(out)], "auto",
    )


def specter_triplets(
    out: str, split: str, docs: pl.DataFrame, per_positive: int = 1, max_bridge_degree: int = 1000
) -> tuple[pl.DataFrame, dict]:
    """The triplet table: anchor, positive, negative, their DOIs and languages; in ODT no
    English anchor with an English positive (no En-En DC pair there)."""
    directory = layout.negatives_dir(out, split)
    if list_parts(directory):
        neg = collect(scan(directory, ["anchor_doi", "positive_doi", "negative_doi"], tables.NEGATIVES), [directory],
                      "auto")
        counts = {"source": "negatives/"}
    else:
        neg = compute_negatives(split_edges(out, docs), per_positive, max_bridge_degree)
        counts = {"source": "citations/ (computed: A cites B, B cites C, A does not cite C)"}
    frame = _attach(neg, docs, "anchor_doi", "anchor", "lang_anchor")
    frame = _attach(frame, docs, "positive_doi", "positive", "lang_positive")
    frame = _attach(frame, docs, "negative_doi", "negative", "lang_negative")
    frame = frame.select("anchor", "positive", "negative", "anchor_doi", "positive_doi", "negative_doi",
                         "lang_anchor", "lang_positive", "lang_negative").sort("anchor_doi", "positive_doi",
                                                                               "negative_doi")
    if split == layout.ODT:  # ODT holds no En-En pair: an English anchor citing an English paper is no positive
        en_en = layout.odt_en_en(pl.lit(split), pl.col("lang_anchor"), pl.col("lang_positive")).fill_null(False)
        counts["odt_en_en_positives_removed"] = frame.filter(en_en).height
        frame = frame.filter(~en_en)
    counts["rows"] = frame.height
    return frame, counts


# --------------------------------------------------------------------------- title <-> abstract


def _extra_titles(row: dict) -> list[tuple[str, str | None]]:
    """(title, language or None) of every extra title a papers row carries."""
    found: list[tuple[str, str | None]] = []
    for col in ("titles", "original_title", "translated_title"):
        value = row.get(col)
        values = value if isinstance(value, list) else [value]
        found += [(v, None) for v in values if isinstance(v, str)]
    for item in row.get("title_translations") or []:
        if isinstance(item, dict) and isinstance(item.get("title"), str):
            found.append((item["title"], item.get("language")))
    return found


def cross_lingual_titles(papers: pl.DataFrame, docs: pl.DataFrame, detect=None) -> pl.DataFrame:
    """Second-language titles: (doi, extra_title, extra_language) for each extra title of
    `papers` (columns doi and any of EXTRA_TITLE_COLUMNS) whose language — given, else
    detected (`detect(title) -> (code, prob, reliable)`, CLD3 by default) and reliable —
    differs from the paper's language in `docs`."""
    schema = {"doi": pl.String, "extra_title": pl.String, "extra_language": pl.String}
    cols = [c for c in EXTRA_TITLE_COLUMNS if c in papers.columns]
    if not cols or papers.height == 0:
        return pl.DataFrame(schema=schema)
    if detect is None:
        from openmsd_build.core.language import detect_language as detect
    info = {r["doi"]: r for r in docs.select("doi", "title", "language").iter_rows(named=True)}
    rows = []
    for row in papers.select("doi", *cols).iter_rows(named=True):
        doc = info.get(row["doi"])
        if doc is None:
            continue
        main = (doc["title"] or "").strip().casefold()
        seen = set()
        for title, language in _extra_titles(row):
            t = title.strip()
            if not t or t.casefold() == main or t.casefold() in seen:
                continue
            seen.add(t.casefold())
            if language is None:
                code, _, reliable = detect(t)
                language = code if reliable else None
            if language and language != doc["language"]:
                rows.append({"doi": row["doi"], "extra_title": t, "extra_language": language})
    return pl.DataFrame(rows, schema=schema)


def read_papers_titles(out: str) -> pl.DataFrame:
    """doi and the extra-title columns present in `papers/` (none in a standard build)."""
    parts = list_parts(layout.papers_dir(out))
    if not parts:
        return pl.DataFrame(schema={"doi": pl.String})
    check_parts(parts, tables.PAPERS, ["doi"])
    names = pl.scan_parquet(parts[0]).collect_schema().names() if "://" not in parts[0] else []
    cols = [c for c in EXTRA_TITLE_COLUMNS if c in names]
    if not cols:
        return pl.DataFrame(schema={"doi": pl.String})
    return collect(pl.scan_parquet(parts, missing_columns="insert", extra_columns="ignore").select("doi", *cols),
                   [layout.papers_dir(out)], "auto")


def title_abstract_pairs(docs: pl.DataFrame, extra: pl.DataFrame | None = None) -> tuple[pl.DataFrame, dict]:
    """anchor (a title), positive (an abstract or the main title), doi, lang_anchor,
    lang_positive, variant (`same-language` / `cross-lingual` / `title-title`)."""
    present = docs.filter(
        (pl.col("title").str.strip_chars().str.len_chars() > 0) & (pl.col("abstract").str.strip_chars().str.len_chars() > 0)
    )
    same = present.select(
        pl.col("title").str.strip_chars().alias("anchor"),
        pl.col("abstract").str.strip_chars().alias("positive"),
        "doi",
        pl.col("language").alias("lang_anchor"),
        pl.col("language").alias("lang_positive"),
        pl.lit("same-language").alias("variant"),
    )
    frames = [same]
    n_cross = 0
    if extra is not None and extra.height:
        x = extra.join(present.select("doi", "title", "abstract", "language"), on="doi", how="inner")
        n_cross = x.height
        base = [pl.col("extra_title").alias("anchor")]
        frames.append(x.select(*base, pl.col("abstract").str.strip_chars().alias("positive"), "doi",
                               pl.col("extra_language").alias("lang_anchor"), pl.col("language").alias("lang_positive"),
                               pl.lit("cross-lingual").alias("variant")))
        frames.append(x.select(*base, pl.col("title").str.strip_chars().alias("positive"), "doi",
                               pl.col("extra_language").alias("lang_anchor"), pl.col("language").alias("lang_positive"),
                               pl.lit("title-title").alias("variant")))
    # the paper's own title -> each of its abstracts printed in another language (documents'
    # `abstracts` column: a Portuguese paper's English abstract, a Chinese thesis's English one)
    n_cross_abstracts = 0
    if "abstracts" in present.columns:
        other = _other_language_abstracts(present)
        n_cross_abstracts = other.height
        if other.height:
            frames.append(other)
    frame = pl.concat(frames).sort("doi", "variant", "anchor")
    return frame, {"rows": frame.height, "same_language": same.height, "cross_lingual_titles": n_cross,
                   "cross_lingual_abstracts": n_cross_abstracts}


def _other_language_abstracts(present: pl.DataFrame) -> pl.DataFrame:
    """`cross-lingual` rows: title -> an abstract of the same paper in a language other than
    the paper's (known languages only; the kept same-language abstract is not repeated)."""
    rows = []
    for doi, title, language, abstracts in present.select("doi", "title", "language", "abstracts").iter_rows():
        for item in abstracts or []:
            lang = item.get("language")
            if lang and lang != "und" and lang != language and (item.get("text") or "").strip():
                rows.append({"anchor": title.strip(), "positive": item["text"].strip(), "doi": doi,
                             "lang_anchor": language, "lang_positive": lang, "variant": "cross-lingual"})
    schema = {"anchor": pl.String, "positive": pl.String, "doi": pl.String, "lang_anchor": pl.String,
              "lang_positive": pl.String, "variant": pl.String}
    return pl.DataFrame(rows, schema=schema)
