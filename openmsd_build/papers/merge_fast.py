"""The papers merge done on columns with polars: the same result as `merge.merge_records`
applied to every DOI, without a Python loop per record.

`merge.merge_records` is the readable reference of the precedence rules; this module is what
the stage runs, and a property test checks the two agree on random record sets. Records
arrive as Arrow tables of `PROJECTED` rows (one row per source record), which also keeps the
shuffle compact: a column of strings instead of a Python dict per record.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from openmsd_build.papers.caps import MERGED_LIST_CAPS
from openmsd_build.papers.merge_reference import _PRECEDENCE, _URL_SOURCE_ORDER, SOURCE_ORDER
from openmsd_build.papers.paratext import (
    MIN_METADATA_ABSTRACT_TOKENS,
    PARATEXT_TITLE_PATTERNS,
    PARATEXT_TYPES,
    TEST_DOI_PREFIXES,
    TOKEN_PATTERN_RUST,
)
from openmsd_build.schemas import PAPERS, RELATION_STRUCT, URL_STRUCT

# One source record, projected to what the merge needs (the shuffle's row format): the
# `papers` columns a source can fill, plus the record's source, origin and completeness.
_MERGED_ONLY = ("doi", "title_source", "abstract_source", "sources", "n_records", "paratext")
PROJECTED = pa.schema(
    [("doi", pa.string()), ("source", pa.string()), ("origin", pa.string()), ("completeness", pa.int8())]
    + [PAPERS.field(name) for name in PAPERS.names if name not in _MERGED_ONLY]
)
_LIST_FIELDS = ("categories", "titles")


def _priority(field_order: tuple[str, ...]) -> pl.Expr:
    return pl.col("source").replace_strict(
        {s: i for i, s in enumerate(field_order)}, default=len(field_order), return_dtype=pl.Int32
    )


def _non_empty(field: str) -> pl.Expr:
    col = pl.col(field)
    if field in _LIST_FIELDS:
        return col.is_not_null() & (col.list.len() > 0)
    if field in ("year", "is_oa"):
        return col.is_not_null()
    if field == "abstract":  # "International audience", "Errata": not an abstract
        return col.is_not_null() & (col.str.count_matches(TOKEN_PATTERN_RUST) >= MIN_METADATA_ABSTRACT_TOKENS)
    return col.is_not_null() & (col != "")


def paratext_expr() -> pl.Expr:
    """`paratext.paratext_reason` on the merged columns doi, title, type."""
    title = pl.col("title").fill_null("")
    expr = pl.when(pl.col("doi").str.to_lowercase().str.starts_with(TEST_DOI_PREFIXES[0])).then(pl.lit("test_doi"))
    for work_type, reason in PARATEXT_TYPES.items():
        expr = expr.when(pl.col("type") == work_type).then(pl.lit(reason))
    for reason, pattern in PARATEXT_TITLE_PATTERNS.items():
        expr = expr.when((title.str.len_chars() <= 300) & title.str.contains("(?i)" + pattern)).then(pl.lit(reason))
    return expr.otherwise(pl.lit(None, pl.String))


def merge_frame(records: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """PROJECTED rows of any number of DOIs -> (`papers` table sorted by DOI, counts).

    Counts as in `paper_join.merge_shard`: written, merged_records, merged_duplicates.<src>,
    joined.<sources>, with_abstract, with_urls, abstracts_too_short (metadata abstracts passed
    over, records), paratext.<reason> (papers flagged, `paratext.paratext_reason`); and
    truncated.merged.<field> (rows whose `urls` / `relations` union was cut to
    `caps.MERGED_LIST_CAPS`)."""
    if records.num_rows == 0:
        return PAPERS.empty_table(), {}
    df = pl.from_arrow(records.cast(PROJECTED)).with_columns(
        # within one source: most complete record first, then smallest origin
        (-pl.col("completeness").cast(pl.Int32)).alias("_neg_complete"),
        _priority(_URL_SOURCE_ORDER).alias("_p_url"),
    )
    # The tie-break inside one source as one integer: every record's place in the order
    # (completeness desc, origin); origins are unique, so no two records tie. Each field's
    # winner is then the arg-min of one integer key per DOI, not a three-key sort of every
    # DOI's records per field (the merge's main cost; same winner).
    df = df.sort(["_neg_complete", "origin"]).with_row_index("_tie")
    stride = df.height + 1
    aggs = []
    for field, order in _PRECEDENCE.items():
        key = _priority(order).cast(pl.Int64) * stride + pl.col("_tie").cast(pl.Int64)
        df = df.with_columns(pl.when(_non_empty(field)).then(key).otherwise(None).alias(f"_k_{field}"))
        winner = pl.col(f"_k_{field}").arg_min()
        aggs.append(pl.col(field).get(winner).alias(field))
        if field in ("title", "abstract"):
            aggs.append(pl.col("source").get(winner).alias(f"{field}_source"))
    aggs += [
        pl.len().cast(pl.Int32).alias("n_records"),
        pl.col("source").unique().alias("_sources"),
    ]
    merged = df.group_by("doi").agg(aggs)

    urls = _ranked_urls(df)
    relations = _relations(df)
    merged = (
        merged.join(urls, on="doi", how="left")
        .join(relations, on="doi", how="left")
        .with_columns(
            pl.col("categories").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            pl.col("titles").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            pl.col("urls").fill_null(pl.lit([], dtype=pl.from_arrow(pa.array([], pa.list_(URL_STRUCT))).dtype)),
            pl.col("relations").fill_null(
                pl.lit([], dtype=pl.from_arrow(pa.array([], pa.list_(RELATION_STRUCT))).dtype)
            ),
            pl.concat_list([
                pl.when(pl.col("_sources").list.contains(s)).then(pl.lit(s)).otherwise(pl.lit(None, pl.String))
                for s in SOURCE_ORDER
            ]).list.drop_nulls().alias("sources"),
        )
        .with_columns(paratext_expr().alias("paratext"))
        .sort("doi")
    )
    counts = _counts(df, merged)
    for field, cap in MERGED_LIST_CAPS.items():  # unions over a DOI's records: capped again
        over = int(merged.select((pl.col(field).list.len() > cap).sum()).item())
        if over:
            counts[f"truncated.merged.{field}"] = over
            merged = merged.with_columns(pl.col(field).list.head(cap))
    table = merged.select(PAPERS.names).to_arrow().cast(PAPERS)
    return table, counts


def _ranked_urls(df: pl.DataFrame) -> pl.DataFrame:
    """URLs of every source, Unpaywall's order first, deduplicated by URL, re-ranked."""
    fields = [f.name for f in URL_STRUCT]
    exploded = (
        df.select("doi", "_p_url", "_neg_complete", "origin", "urls")
        .filter(pl.col("urls").list.len() > 0)
        .explode("urls")
        .with_columns([pl.col("urls").struct.field(f).alias(f"_u_{f}") for f in fields])
        .with_columns(pl.col("_u_url").str.strip_chars().alias("_key"))
        .sort(["doi", "_p_url", "_neg_complete", "origin", "_u_rank"], nulls_last=False, maintain_order=True)
        .unique(subset=["doi", "_key"], keep="first", maintain_order=True)
        .with_columns(pl.int_range(pl.len()).over("doi").cast(pl.Int32).alias("_u_rank"))
    )
    return exploded.group_by("doi", maintain_order=True).agg(
        pl.struct([pl.col(f"_u_{f}").alias(f) for f in fields]).alias("urls")
    )


def _relations(df: pl.DataFrame) -> pl.DataFrame:
    exploded = df.select("doi", "relations").filter(pl.col("relations").list.len() > 0).explode("relations")
    exploded = exploded.with_columns(
        pl.col("relations").struct.field("type").alias("_type"),
        pl.col("relations").struct.field("doi").alias("_rdoi"),
    ).filter(pl.col("_rdoi") != pl.col("doi"))
    exploded = exploded.unique(subset=["doi", "_type", "_rdoi"]).sort(["doi", "_type", "_rdoi"])
    return exploded.group_by("doi", maintain_order=True).agg(
        pl.struct(pl.col("_type").alias("type"), pl.col("_rdoi").alias("doi")).alias("relations")
    )


def _counts(df: pl.DataFrame, merged: pl.DataFrame) -> dict[str, int]:
    counts: dict[str, int] = {
        "written": merged.height,
        "merged_records": int(df.height - merged.height),
        "with_abstract": int(merged.select(pl.col("abstract").is_not_null().sum()).item()),
        "with_urls": int(merged.select((pl.col("urls").list.len() > 0).sum()).item()),
    }
    # metadata abstracts passed over as too short (records), papers flagged as paratext
    short = df.filter(pl.col("abstract").is_not_null() & (pl.col("abstract") != "") & ~_non_empty("abstract")).height
    if short:
        counts["abstracts_too_short"] = int(short)
    for reason, n in merged.filter(pl.col("paratext").is_not_null()).group_by("paratext").len().iter_rows():
        counts[f"paratext.{reason}"] = int(n)
    dups = df.group_by(["doi", "source"]).len().filter(pl.col("len") > 1)
    for source, extra in dups.group_by("source").agg((pl.col("len") - 1).sum()).iter_rows():
        counts[f"merged_duplicates.{source}"] = int(extra)
    joined = merged.select(pl.col("sources").list.join("+").alias("k")).group_by("k").len()
    for key, n in joined.iter_rows():
        counts[f"joined.{key}"] = int(n)
    return counts
