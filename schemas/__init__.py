"""The pyarrow schemas of every table the build writes: the data contracts between stages.

Each stage module imports its schema from here; nothing else defines column names. A stage
writes every column of its schema in every file (nullable columns as nulls), so downstream
readers and other trainers can rely on the names and types below.
"""

from openmsd_build.schemas.tables import (
    CITATIONS,
    CONTEXT_MARKER_STRUCT,
    CONTEXTS,
    DOCUMENTS,
    ENRICHED,
    FETCH,
    MISMATCHES,
    MIXES,
    NEGATIVES,
    PAIRS,
    PAPERS,
    REJECTS,
    RELATION_STRUCT,
    RELEASE_IDS,
    SCHEMAS,
    SPLITS,
    URL_STRUCT,
)

__all__ = [
    "CITATIONS",
    "CONTEXT_MARKER_STRUCT",
    "CONTEXTS",
    "DOCUMENTS",
    "ENRICHED",
    "FETCH",
    "PAIRS",
    "NEGATIVES",
    "MIXES",
    "PAPERS",
    "RELEASE_IDS",
    "MISMATCHES",
    "REJECTS",
    "SPLITS",
    "URL_STRUCT",
    "RELATION_STRUCT",
    "SCHEMAS",
    "RELEASE_IDS",
    "MISMATCHES",
]
