"""A folder given as an input: the files under it, recursively (no Beam import, so the
text stage can expand its archives before Beam is loaded)."""

from __future__ import annotations

import os


def folder_files(folder: str) -> dict[str, int]:
    """Every file under a local `folder`, recursively (hidden files and folders, whose names
    start with a dot, are left out), as path -> size."""
    found: dict[str, int] = {}
    for top, dirs, names in os.walk(folder.removeprefix("file://")):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if not name.startswith("."):
                path = os.path.join(top, name)
                found[path] = os.path.getsize(path)
    return found
