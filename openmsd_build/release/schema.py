"""Tables of an id-only release (`RELEASE/ids/split=*/`) and of a reconstruction's
verification (`DIR/reconstruct/mismatches/`)."""

from __future__ import annotations

FORMAT = "openmsd-release/1"
# The text fields whose sha256 a release stores and a reconstruction verifies.
HASHED_FIELDS = ("title", "abstract", "content")
# Label fields a reconstruction also compares (recomputed by the text stage).
LABEL_FIELDS = ("language",)
# `ids/split=none/`: documents with no citation link (not in any split).
NO_SPLIT = "none"

# The tables themselves are defined with every other table in `schemas/`.
from openmsd_build.schemas import MISMATCHES, RELEASE_IDS  # noqa: E402,F401
