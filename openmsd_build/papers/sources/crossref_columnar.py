"""Crossref public-data-file chunks (`{"items": [...]}`) projected on columns with polars.

`crossref.parse_crossref` is the reference: one work at a time, from a Python dict. Building
those dicts (every field of every work: authors, references, ...) is most of the papers
stage's cost on Crossref, so a chunk is instead parsed by polars' JSON reader into only the
columns the build needs and projected with column expressions; Python runs only where the
text needs cleaning (markup, non-ASCII) or a DOI is not already canonical. A test checks that
both paths give the same records on real and generated chunks.

A chunk that does not fit the schema (a field of an unexpected type) returns None and is
read record by record instead. polars turns a scalar where a list is expected into a
one-element list and a number where text is expected into text; the reference drops such
values, so on corrupt records the two paths may differ in the reject reason, never in
whether a good record is kept. A chunk holding a lone surrogate escape (`\ud800` alone) is
read by the reference, which rejects its work (polars would read it as NUL). Left as it is: a work
object that repeats a key keeps its first value here and its last in the reference.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import polars as pl

from openmsd_build.core.doi import MAX_DOI_LENGTH, InvalidDOI, normalize_doi
from openmsd_build.core.textclean import SPLIT_HINT_PIECES, clean_abstract, clean_title
from openmsd_build.papers.sources.crossref import (
    _DATE_FIELDS,
    SAME_WORK_RELATIONS,
    SOURCE,
    all_titles,
    license_of,
    links_of,
    relations_of,
)

_DATE = pl.Struct({"date-parts": pl.List(pl.List(pl.Int64))})
_RELATION_TYPES = sorted(SAME_WORK_RELATIONS)
ITEM = pl.Struct(
    {
        "DOI": pl.String,
        "title": pl.List(pl.String),
        "original-title": pl.List(pl.String),
        "abstract": pl.String,
        "container-title": pl.List(pl.String),
        "publisher": pl.String,
        "type": pl.String,
        "subject": pl.List(pl.String),
        "language": pl.String,
        **{field: _DATE for field in _DATE_FIELDS},
        "license": pl.List(pl.Struct({"URL": pl.String, "content-version": pl.String})),
        "link": pl.List(pl.Struct({"URL": pl.String, "content-type": pl.String, "content-version": pl.String})),
        "resource": pl.Struct({"primary": pl.Struct({"URL": pl.String})}),
        "relation": pl.Struct({t: pl.List(pl.Struct({"id-type": pl.String, "id": pl.String})) for t in _RELATION_TYPES}),
    }
)
# ASCII text that cleaning leaves as it is: printable, single spaces, no markup or entities.
_PLAIN = r"^[!-%'-;=?-~](?:[ !-%'-;=?-~]*[!-%'-;=?-~])?$"


def _class_of(chars: str) -> str:
    """A regex character class (Rust syntax) of exactly `chars`."""
    return "[" + "".join("\\" + c if c in "\\[]^-&~" else c for c in chars) + "]"


# A DOI whose lower-case form `normalize_doi` returns unchanged: ASCII, registrant prefix,
# no '%', and no last character that normalization would strip.
_CANONICAL_AFTER_LOWER = r"^10\.[0-9]{4,9}(?:\.[0-9]+)*/[!-$&-~]*" + _class_of(
    "".join(c for c in map(chr, range(0x21, 0x7F)) if c not in ".,;:'\">)]}%")
) + "$"


# Python's `str.strip()` whitespace (polars strips Unicode White_Space, which lacks the ASCII
# separators U+001C..U+001F): the record parser strips with Python, so must this reader.
_PY_WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())


def _first_non_blank(column: str) -> pl.Expr:
    return pl.col(column).list.eval(
        pl.element().filter(pl.element().str.strip_chars(_PY_WHITESPACE) != "")).list.first()


def _text_or_none(expr: pl.Expr) -> pl.Expr:
    stripped = expr.str.strip_chars(_PY_WHITESPACE)
    return pl.when(stripped != "").then(stripped).otherwise(None)


def _plain(expr: pl.Expr) -> pl.Expr:
    """Text that this reader keeps as it is, without calling the cleaner (see `_PLAIN`): not
    when it may hold a ligature a PDF text layer split ("scientifi c"), which the cleaner
    repairs (`repair_ligatures` looks no further unless one of `SPLIT_HINT_PIECES` is there)."""
    return (expr.str.contains(_PLAIN) & ~expr.str.contains("  ", literal=True)
            & ~expr.str.contains("|".join(map(re.escape, SPLIT_HINT_PIECES))))


class _TitleMemo(dict):
    """`clean_title` of the titles of one work, each computed once: `all_titles` cleans every
    title and the work's `title` is the first of them (a `when/then` over a Python
    `map_elements` in polars ran the cleaner on every title, plain or not)."""

    def __missing__(self, value: str) -> str:
        cleaned = self[value] = clean_title(value)
        return cleaned


def _title(raw: str | None, plain: bool | None, memo: _TitleMemo) -> str | None:
    """The work's `title`: the first non-blank title, kept as it is when plain, else cleaned."""
    if raw is None:
        return None
    if plain:
        return raw
    return memo[raw] or None


def _same_work_relations() -> pl.Expr:
    """The `relation` struct, null where it lists no relation at all: `relations_of` finds
    none there, and turning a null is much cheaper than a 14-field struct of empty lists into
    a Python dict for every work."""
    relation = pl.col("relation")
    listed = pl.any_horizontal(
        [relation.struct.field(t).list.len().fill_null(0) > 0 for t in _RELATION_TYPES])
    return pl.when(listed).then(relation).otherwise(None).alias("relation")


def _doi_outcome(value: str | None) -> dict:
    try:
        return {"doi": normalize_doi(value), "reason": None}
    except InvalidDOI as exc:
        return {"doi": None, "reason": exc.reason}


# A JSON escape of a lone UTF-16 surrogate (a high one not followed by a low one, a low one
# not after a high one): such chunks are read by the reference, which rejects the work, where
# polars' reader silently made it a NUL character. A pair (an emoji) polars reads right. Both
# branches start with the literal `\u`, so the engine skips in C to the next escape: a branch
# opened by a lookbehind was tried at every byte of every chunk (0.16 s a 10 MB chunk, a
# third of the papers stage's CPU on generated Crossref, against 0.003 s).
_SURROGATE_ESCAPE = re.compile(
    rb"\\u(?:[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|[dD][c-fC-F][0-9a-fA-F]{2}(?<!\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}))")


def read_items(data: bytes) -> pl.DataFrame | None:
    """The chunk's works as columns of `ITEM`, or None when it is not such a chunk."""
    head = data[:4096].lstrip()
    if not head.startswith(b"{") or b'"items"' not in head:
        return None
    if _SURROGATE_ESCAPE.search(data):  # polars reads a lone surrogate as NUL: the reference rejects it
        return None
    try:
        frame = pl.read_json(io.BytesIO(data), schema={"items": pl.List(ITEM)})
    except (pl.exceptions.PolarsError, ValueError):
        return None
    if frame.height != 1 or frame["items"].null_count():
        return None
    return frame.select(pl.col("items").explode()).unnest("items").with_row_index("_index")


# Rows turned into Python dicts at a time: `iter_rows` over a whole chunk is fine for 5,000
# works, but the caller's memory must not depend on how many items a chunk claims.
PROJECT_SLICE = 5_000


def project(items: pl.DataFrame) -> tuple[list[dict], list[tuple[int, str, str | None]]]:
    """Projected records (as `parse_crossref` returns them, in item order) and the rejected
    items as (index, reason, raw DOI)."""
    records: list[dict] = []
    rejects: list[tuple[int, str, str | None]] = []
    for record, rejected in iter_project(items):
        if record is not None:
            records.append(record)
        else:
            assert rejected is not None
            rejects.append(rejected)
    return records, rejects


def iter_project(items: pl.DataFrame) -> Iterator[tuple[dict | None, tuple[int, str, str | None] | None]]:
    """`project` as a stream of `(record, None)` / `(None, (index, reason, raw DOI))` in item
    order, converting `PROJECT_SLICE` rows at a time, so nothing per item accumulates."""
    for offset in range(0, items.height, PROJECT_SLICE):
        yield from _project_slice(items.slice(offset, PROJECT_SLICE))


def _project_slice(items: pl.DataFrame) -> Iterator[tuple[dict | None, tuple[int, str, str | None] | None]]:
    lower = pl.col("DOI").str.to_lowercase()
    fast_doi = (
        pl.col("DOI").str.contains(r"^[!-~]+$") & lower.str.contains(_CANONICAL_AFTER_LOWER)
        & (pl.col("DOI").str.len_chars() <= MAX_DOI_LENGTH)
    )
    year = pl.coalesce([
        pl.col(f).struct.field("date-parts").list.first().list.first().pipe(
            lambda e: pl.when((e >= 1000) & (e <= 2200)).then(e).otherwise(None)
        )
        for f in _DATE_FIELDS
    ]).cast(pl.Int32)
    frame = items.select(
        "_index",
        pl.col("DOI").alias("_raw_doi"),
        pl.when(fast_doi).then(lower).otherwise(None).alias("_fast_doi"),
        _first_non_blank("title").alias("_title"),
        _plain(_first_non_blank("title")).alias("_title_plain"),
        pl.col("title").alias("_titles"),
        pl.col("original-title").alias("_original_titles"),
        pl.col("abstract"),
        _text_or_none(_first_non_blank("container-title")).alias("venue"),
        _text_or_none(pl.col("publisher")).alias("publisher"),
        year.alias("year"),
        _text_or_none(pl.col("type")).alias("type"),
        pl.col("subject").fill_null(pl.lit([], pl.List(pl.String)))
        .list.eval(pl.element().str.strip_chars(_PY_WHITESPACE).filter(pl.element().str.strip_chars(_PY_WHITESPACE) != "")
                   ).list.unique().list.sort().alias("categories"),
        _text_or_none(pl.col("language")).alias("publisher_language"),
        pl.col("license"), pl.col("link"), pl.col("resource"), _same_work_relations(),
    )
    for row in frame.iter_rows(named=True):
        doi = row["_fast_doi"]
        if doi is None:
            raw = row["_raw_doi"]
            # the record parser's rule (`common.doi_of`): absent or blank is `no_doi`
            outcome = _doi_outcome(raw) if raw is not None and raw.strip() else {"doi": None, "reason": "no_doi"}
            if outcome["doi"] is None:
                yield None, (row["_index"], outcome["reason"], row["_raw_doi"])
                continue
            doi = outcome["doi"]
        memo = _TitleMemo()
        titles = all_titles(row["_titles"], row["_original_titles"], clean=memo.__getitem__)
        abstract = row["abstract"]
        record = {
            "doi": doi,
            "source": SOURCE,
            "title": _title(row["_title"], row["_title_plain"], memo),
            "titles": titles,
            "abstract": (clean_abstract(abstract) or None) if abstract is not None else None,
            "venue": row["venue"],
            "publisher": row["publisher"],
            "year": row["year"],
            "type": row["type"],
            "categories": row["categories"],
            "publisher_language": row["publisher_language"],
            "license": license_of(row) if row["license"] else None,
            "is_oa": None,
            "urls": links_of(row),
            "relations": relations_of(row) if row["relation"] else [],
        }
        record["_index"] = row["_index"]
        yield record, None


def parse_chunk(data: bytes) -> tuple[list[dict], list[tuple[int, str, str | None]]] | None:
    """`read_items` + `project`; None when the chunk must be read record by record."""
    items = read_items(data)
    if items is None:
        return None
    return project(items)

