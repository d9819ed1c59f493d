"""A folder given as an input: the data files under it, recursively (no Beam import, so the
text stage can expand its archives before Beam is loaded)."""

from __future__ import annotations

import os
import stat

from openmsd_build.core.errors import UserError

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


def regular_file_size(path: str, what: str) -> int:
    """The size of the local file `path`, or a `UserError` naming it when it is not a regular
    file that can be read: a named pipe (FIFO), a device or a socket is read forever or
    blocks with no writer (`/dev/zero`, a FIFO nobody writes to: the stage hung), and a link
    whose target is missing raised `FileNotFoundError` from a folder's listing."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise UserError(f"{what} input {path!r} cannot be read ({exc.strerror or exc}: a link to a missing "
                        "file?)") from None
    if not stat.S_ISREG(mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or
                stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise UserError(f"{what} input {path!r} is {kind}, not a file: inputs are read more than once and "
                        "sized before they are read; write it to a file and give that")
    return os.path.getsize(path)


def folder_files(folder: str, left_out: list[str] | None = None, what: str = "an") -> dict[str, int]:
    """Every data file under a local `folder`, recursively, as path -> size. Hidden files and
    folders (names starting with a dot) are left out, and so are notes and checksum lists
    (`is_documentation`), whose paths go to `left_out` when given. A file that is not a
    regular one (a FIFO, a device, a link to nothing) is a `UserError` (`regular_file_size`):
    never a hang, and never a file left out without a word; so is a folder holding a build's
    outputs (`stages.is_build_root`: `papers --out` into the folder of its own inputs, read
    later as a folder of snapshots)."""
    from openmsd_build.core.stages import is_build_root

    found: dict[str, int] = {}
    for top, dirs, names in os.walk(folder.removeprefix("file://")):
        if is_build_root(top):  # its Parquet and JSON read as snapshot records: hundreds of rejects, a 36 % warning
            raise UserError(f"{what} input {folder!r} holds a build's outputs ({top}: _stats/, its stage folders): "
                            "give the input files (a glob such as 'DIR/*.json.gz'), or keep builds out of input "
                            "folders")
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            path = os.path.join(top, name)
            if is_documentation(name):
                if left_out is not None:
                    left_out.append(path)
                continue
            found[path] = regular_file_size(path, what)
    return found
