"""A folder given as an input: the data files under it, recursively (no Beam import, so the
text stage can expand its archives before Beam is loaded)."""

from __future__ import annotations

import os

NOT_DATA_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".tsv", ".md5", ".sha1", ".sha256", ".sha512")
NOT_DATA_PREFIXES = ("readme", "license", "licence", "changelog")
NOT_DATA_NAMES = ("manifest", "manifest.json")
"""Files a folder of snapshot files often holds beside them (notes, provenance tables,
checksums, the OpenAlex snapshot's `manifest` listing its parts) that no source reads: their lines would be counted as bad records, and enough of
them fail a stage (`--max-reject-rate`). Named on their own (not through their folder), they
are read like any file."""


def is_documentation(name: str) -> bool:
    """Whether a file name is a note or a checksum list rather than data (see above)."""
    lower = name.lower()
    return lower.endswith(NOT_DATA_SUFFIXES) or lower.startswith(NOT_DATA_PREFIXES) or lower in NOT_DATA_NAMES


def folder_files(folder: str, left_out: list[str] | None = None) -> dict[str, int]:
    """Every data file under a local `folder`, recursively, as path -> size. Hidden files and
    folders (names starting with a dot) are left out, and so are notes and checksum lists
    (`is_documentation`), whose paths go to `left_out` when given."""
    found: dict[str, int] = {}
    for top, dirs, names in os.walk(folder.removeprefix("file://")):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = os.path.join(top, name)
            if is_documentation(name):
                if left_out is not None:
                    left_out.append(path)
                continue
            found[path] = os.path.getsize(path)
    return found
