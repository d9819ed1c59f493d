"""The output root's folders: where each stage reads and writes (README, "What a build produces").

Every path of the build is derived here from the output root, so stages, the report, the
release and the tests agree on one layout:

    OUT/papers/  OUT/fetch/  OUT/documents/  OUT/citations/  OUT/splits/
    OUT/pairs/{dc,cc,bc,ccs}/split={train,idt,odt}/  OUT/contexts/  OUT/rejects/<stage>/
    OUT/warc/  OUT/_stats/<stage>.json  OUT/report/
"""

from __future__ import annotations

import re
from typing import Any

from openmsd_build.core.parquet_io import join_path
from openmsd_build.core.stages import STAGE_NAMES

STAGES = STAGE_NAMES  # build order, from the stage registry
SPLIT_NAMES = ("train", "idt", "odt")
RELATIONS = ("dc", "cc", "bc")  # the pairs stage's relations
CONTEXT_RELATIONS = ("ccs",)  # the contexts stage's: co-cited in one sentence
PAIR_RELATIONS = RELATIONS + CONTEXT_RELATIONS  # every pairs/<relation>/ folder a build may hold
ODT = "odt"
ENGLISH = "en"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def odt_en_en(split: Any, lang_a: Any, lang_b: Any, odt: Any = ODT, english: Any = ENGLISH) -> Any:
    """Where a pair may not be in the dataset: OpenMSD's ODT holds no pair of two English papers,
    in any relation (DC, CC, BC, papers co-cited in one sentence), so no triplet's anchor and
    positive either. The one statement of that rule, for every stage that makes or exports
    pairs; it works on whatever the caller holds (polars expressions or Series, numpy arrays),
    given the caller's form of "odt" and of English (a split code, a boolean flag). A null
    compares as null in polars: a caller whose languages may be null fills the result."""
    return (split == odt) & (lang_a == english) & (lang_b == english)


MAX_NAME_CHARS = 200
"""A user-given name (a recipe's, an evaluation's) becomes a file name with suffixes added:
the file system refuses names over 255 bytes (a 300-character name ended in OSError)."""


def check_name(name: object, what: str) -> str:
    """`name` when it can be one file or folder name of its own inside an output folder
    (letters, digits and . _ + -, starting with a letter or a digit); else a `UserError`
    naming `what`. A user's name joined to a path must not leave its folder: ".." or
    "a/../../x" would write, or replace, something else (DEST itself, another build)."""
    from openmsd_build.core.errors import UserError

    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or len(name) > MAX_NAME_CHARS:
        shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:77] + "..."
        raise UserError(f"{what} {shown} must be letters, digits and . _ + -, starting with a letter or a digit, at "
                        f"most {MAX_NAME_CHARS} characters (it names a file or folder of the output)")
    return name


def papers_dir(out: str) -> str:
    return join_path(out, "papers")


def fetch_dir(out: str) -> str:
    return join_path(out, "fetch")


def documents_dir(out: str) -> str:
    return join_path(out, "documents")


def citations_dir(out: str) -> str:
    return join_path(out, "citations")


def splits_dir(out: str) -> str:
    return join_path(out, "splits")


def contexts_dir(out: str) -> str:
    return join_path(out, "contexts")


def pairs_dir(out: str, relation: str, split: str) -> str:
    return join_path(out, "pairs", relation, f"split={split}")


def rejects_dir(out: str, stage: str) -> str:
    return join_path(out, "rejects", stage)


def warc_dir(out: str) -> str:
    return join_path(out, "warc")


def stats_path(out: str, stage: str) -> str:
    return join_path(out, "_stats", f"{stage}.json")


def report_dir(out: str) -> str:
    return join_path(out, "report")


def negatives_dir(out: str, split: str) -> str:
    """Hard negatives of `pairs --hard-negatives` (schema NEGATIVES)."""
    return join_path(out, "negatives", f"split={split}")


def mix_slug(name: str) -> str:
    """A file- and shell-safe name of a relation mix: 'dc+cc' -> 'dc_or_cc', 'dc&cc' -> 'dc_and_cc'."""
    return name.replace("+", "_or_").replace("&", "_and_")


def mixes_dir(out: str, name: str, split: str) -> str:
    """A relation mix of `pairs --mixes` (schema MIXES), e.g. name `dc+cc` or `dc&cc`, in a
    folder named by `mix_slug` (no `&` or `+` in paths)."""
    return join_path(out, "pairs", "mix", mix_slug(name), f"split={split}")
