"""Tables of an id-only release (`RELEASE/ids/split=*/`) and of a reconstruction's
verification (`DIR/reconstruct/mismatches/`)."""

from __future__ import annotations

import pyarrow as pa

FORMAT = "openmsd-release/1"
# The text fields whose sha256 a release stores and a reconstruction verifies.
HASHED_FIELDS = ("title", "abstract", "content")
# Label fields a reconstruction also compares (recomputed by the text stage).
LABEL_FIELDS = ("language",)
# `ids/split=none/`: documents with no citation link (not in any split).
NO_SPLIT = "none"

RELEASE_IDS = pa.schema(
    [
        ("doi", pa.string()),
        ("split", pa.string()),  # train / idt / odt / none
        ("language", pa.string()),
        ("language_prob", pa.float32()),
        ("categories", pa.list_(pa.string())),
        ("year", pa.int32()),
        ("text_source", pa.string()),
        # sha256 (hex) of the UTF-8 text; null when the build had no such text.
        ("title_sha256", pa.string()),
        ("abstract_sha256", pa.string()),
        ("content_sha256", pa.string()),
        ("n_tokens_title", pa.int32()),
        ("n_tokens_abstract", pa.int32()),
        ("n_tokens_content", pa.int32()),
    ]
)

MISMATCHES = pa.schema(
    [
        ("doi", pa.string()),
        ("split", pa.string()),
        ("field", pa.string()),  # title / abstract / content / language / document
        ("outcome", pa.string()),  # no_document / missing / different / unexpected
        ("expected", pa.string()),  # release hash (or label)
        ("rebuilt", pa.string()),  # rebuilt hash (or label)
    ]
)
