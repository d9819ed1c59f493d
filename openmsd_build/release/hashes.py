"""Pure functions of the release and its reconstruction (no Beam here).

- `text_sha256`: the per-field content hash a release stores (sha256 of the UTF-8 text).
- `shard_table`: split a table into `{shard: rows}` by the stable DOI hash every stage uses.
- `release_ids`: documents (+ split assignment) -> the id-only rows of `RELEASE_IDS`.
- `compare_shard`: release rows vs. rebuilt documents -> counts and mismatch rows.
- `recovery_rates`: the summed counts -> recovery rate per split and field.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from openmsd_build.core.hashing import shard_of
from openmsd_build.release.schema import HASHED_FIELDS, LABEL_FIELDS, NO_SPLIT, RELEASE_IDS

DOCUMENT_FIELD = "document"  # all hashed fields equal at once
FIELDS = (*HASHED_FIELDS, *LABEL_FIELDS, DOCUMENT_FIELD)


def text_sha256(value: str | None) -> str | None:
    """sha256 hex of the UTF-8 text; None stays None (no text is not an empty text)."""
    if value is None:
        return None
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def shard_table(table: pa.Table, key: str, num_shards: int) -> dict[int, pa.Table]:
    """Rows of `table` grouped by `shard_of(row[key])`, each group in the input order."""
    if table.num_rows == 0:
        return {}
    shards = pa.array([shard_of(k or "", num_shards) for k in table.column(key).to_pylist()], pa.int32())
    out: dict[int, pa.Table] = {}
    for shard in sorted(set(shards.to_pylist())):
        out[shard] = table.filter(pc.equal(shards, shard))
    return out


def release_ids(documents: pa.Table, split_of: Mapping[str, str]) -> pa.Table:
    """Document rows -> `RELEASE_IDS` rows sorted by DOI: labels, token counts and one
    sha256 per text field, never the text. Papers with no split get `split = none` (so does a
    paper `splits/` lists more than once: the caller leaves it out of `split_of`)."""
    rows = []
    for doc in documents.to_pylist():
        row = {
            "doi": doc["doi"],
            "split": split_of.get(doc["doi"], NO_SPLIT),
            "language": doc.get("language"),
            "language_prob": doc.get("language_prob"),
            "categories": doc.get("categories"),
            "year": doc.get("year"),
            "text_source": doc.get("text_source"),
        }
        for field in HASHED_FIELDS:
            row[f"{field}_sha256"] = text_sha256(doc.get(field))
            row[f"n_tokens_{field}"] = doc.get(f"n_tokens_{field}")
        rows.append(row)
    rows.sort(key=lambda r: r["doi"])
    return pa.Table.from_pylist(rows, schema=RELEASE_IDS)


def compare_shard(expected: pa.Table, rebuilt: pa.Table) -> tuple[Counter, list[dict]]:
    """Compare one shard's release rows with its rebuilt documents.

    Counts, per `{split}.{field}`: `expected` (the release has a value), `recovered` (the
    rebuilt value hashes the same), `missing` (no rebuilt value, or no rebuilt document at
    all), `different` (a value with another hash), `unexpected` (a rebuilt value where the
    release had none). `document` is recovered when every hashed field matches, nulls
    included. Rebuilt documents outside the release count as `rebuilt_not_in_release`.
    """
    counts: Counter = Counter()
    mismatches: list[dict] = []
    by_doi = {d["doi"]: d for d in rebuilt.to_pylist()}
    release_dois = set()
    for exp in sorted(expected.to_pylist(), key=lambda r: r["doi"]):
        doi, split = exp["doi"], exp["split"] or NO_SPLIT
        release_dois.add(doi)
        doc = by_doi.get(doi)
        counts[f"{split}.documents"] += 1
        counts[f"{split}.documents.{'rebuilt' if doc is not None else 'no_document'}"] += 1
        all_equal = doc is not None
        for field in (*HASHED_FIELDS, *LABEL_FIELDS):
            want = exp.get(f"{field}_sha256") if field in HASHED_FIELDS else exp.get(field)
            got = None
            if doc is not None:
                got = text_sha256(doc.get(field)) if field in HASHED_FIELDS else doc.get(field)
            if field in HASHED_FIELDS and want != got:
                all_equal = False
            if want is None:
                if got is not None:
                    counts[f"{split}.{field}.unexpected"] += 1
                    mismatches.append(_mismatch(doi, split, field, "unexpected", want, got))
                continue
            counts[f"{split}.{field}.expected"] += 1
            if got == want:
                counts[f"{split}.{field}.recovered"] += 1
            else:
                outcome = "no_document" if doc is None else ("missing" if got is None else "different")
                counts[f"{split}.{field}.{'missing' if outcome == 'no_document' else outcome}"] += 1
                mismatches.append(_mismatch(doi, split, field, outcome, want, got))
        counts[f"{split}.{DOCUMENT_FIELD}.expected"] += 1
        counts[f"{split}.{DOCUMENT_FIELD}.{'recovered' if all_equal else 'missing' if doc is None else 'different'}"] += 1
    counts["rebuilt_not_in_release"] += len(set(by_doi) - release_dois)
    return counts, mismatches


def _mismatch(doi: str, split: str, field: str, outcome: str, want, got) -> dict:
    return {"doi": doi, "split": split, "field": field, "outcome": outcome, "expected": want, "rebuilt": got}


def recovery_rates(counts: Mapping[str, int]) -> dict[str, dict[str, dict]]:
    """`{split: {field: {"expected", "recovered", "missing", "different", "rate"}}}`."""
    splits = sorted({k.split(".", 1)[0] for k in counts if k.endswith(".documents")})
    out: dict[str, dict[str, dict]] = {}
    for split in splits:
        fields = {}
        for field in FIELDS:
            expected = counts.get(f"{split}.{field}.expected", 0)
            recovered = counts.get(f"{split}.{field}.recovered", 0)
            fields[field] = {
                "expected": expected,
                "recovered": recovered,
                "missing": counts.get(f"{split}.{field}.missing", 0),
                "different": counts.get(f"{split}.{field}.different", 0),
                "unexpected": counts.get(f"{split}.{field}.unexpected", 0),
                "rate": round(recovered / expected, 6) if expected else None,
            }
        out[split] = fields
    return out


