"""Path joining for local paths and URLs alike, without Beam (child processes import it)."""

from __future__ import annotations

import os
import posixpath


def join_path(base: str, *parts: str) -> str:
    """Join path parts for local paths and URLs (`gs://bucket/x`) alike."""
    if "://" in base:
        return posixpath.join(base, *parts)
    return os.path.join(base, *parts)
