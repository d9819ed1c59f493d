"""A release's manifest is data: its file paths are confined and its checksums verified
before any file is used.

`reconstruct` reads the release's `ids/` files and copies its graph files (citations,
pairs, negatives) into the output folder, by paths listed in `MANIFEST.json`. A manifest
edited or corrupted in transit could name `../../etc/x.parquet` (read outside the release,
written outside the output) or list a file whose bytes are not the ones released. So every
path is confined to the release (to read) and to the output folder (to write)
(`core.paths.confined_path`), and every file's sha256 and size are compared with the
manifest's before it is read; a file that fails is refused with a reason.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core.errors import short_repr, shorten
from openmsd_build.core.paths import UnsafePath, confined_path

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1 << 22


def file_digest(path: str) -> tuple[str, int]:
    """(sha256 hex, size) of a local or remote file, read in 4 MB chunks: what the release
    manifest records (`beam.FileChecksum`) and what `check_entry` verifies."""
    digest = hashlib.sha256()
    size = 0
    with FileSystems.open(path, compression_type="uncompressed") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def check_entry(release: str, entry: object) -> tuple[str, str | None]:
    """(relative path, None) when the manifest entry names a file inside the release whose
    bytes have the manifest's sha256 (and size, when listed); else (path or "", reason):
    `manifest_entry_malformed`, a `core.paths` reason, `checksum_missing`, `not_a_file`,
    `file_unreadable`, `size_mismatch`, `checksum_mismatch`."""
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        return "", "manifest_entry_malformed"
    rel = entry["path"]
    try:
        source = confined_path(release, rel)
    except UnsafePath as exc:
        return rel, exc.reason
    expected = entry.get("sha256")
    if not isinstance(expected, str) or not _SHA256_RE.match(expected.lower()):
        return rel, "checksum_missing"
    reason = _not_a_file_of_its_size(source, entry.get("bytes"))
    if reason is not None:  # before reading: a FIFO blocks the read forever, a huge file takes minutes
        return rel, reason
    try:
        actual, size = file_digest(source)
    except Exception:  # noqa: BLE001 - missing or unreadable: this file's refusal
        return rel, "file_unreadable"
    if isinstance(entry.get("bytes"), int) and entry["bytes"] != size:
        return rel, "size_mismatch"
    if actual != expected.lower():
        return rel, "checksum_mismatch"
    return rel, None


def _not_a_file_of_its_size(source: str, listed: object) -> str | None:
    """`not_a_file` (a FIFO, a device, a folder: reading a FIFO named in a release blocked
    `reconstruct` forever), `size_mismatch` (the listed size checked before the file is hashed:
    a 16 GB file listed as 100 bytes was read whole first), `file_unreadable`, or None."""

    if "://" in source:
        try:
            size = FileSystems.match([source])[0].metadata_list[0].size_in_bytes
        except Exception:  # noqa: BLE001 - no such object: this file's refusal
            return "file_unreadable"
    else:
        try:
            info = os.stat(source)
        except OSError:
            return "file_unreadable"
        if not stat.S_ISREG(info.st_mode):
            return "not_a_file"
        size = info.st_size
    return "size_mismatch" if isinstance(listed, int) and listed != size else None


def verified_files(release: str, manifest: dict, wanted) -> tuple[list[str], dict[str, str]]:
    """The manifest's files for which `wanted(relative path)` holds, split into verified
    relative paths (sorted) and refused ones -> reason. A manifest without a file list
    refuses nothing and verifies nothing."""
    ok: list[str] = []
    refused: dict[str, str] = {}
    files = manifest.get("files") if isinstance(manifest, dict) else None
    for entry in files if isinstance(files, list) else []:
        rel = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(rel, str) or not wanted(rel):
            continue  # not a file of this use (an entry without a path names no file)
        rel, reason = check_entry(release, entry)
        if reason is None:
            ok.append(rel)
        else:
            refused[rel] = reason
    # a file listed twice is used only when every listing verifies (else the log and the
    # copy would disagree about it)
    return sorted({rel for rel in ok if rel not in refused}), refused


def output_path(out: str, rel: str) -> str:
    """Where a release file `rel` is written under `out`, confined to it (`UnsafePath`)."""
    return confined_path(out, rel)


def verify_ids(release: str, manifest: dict, found: list[str]) -> None:
    """Every `ids/` file found in the release is listed in the manifest with its checksum,
    and every listed one is there and verifies; else `UnsafePath`-style reasons are raised
    as one `ValueError` naming each refused file (the split labels are the release's
    substance: a reconstruction from altered ones would be silently wrong)."""
    ok, refused = verified_files(release, manifest, lambda rel: rel.startswith("ids/"))
    prefix = release.rstrip("/") + "/"
    for path in found:
        rel = path[len(prefix):] if path.startswith(prefix) else path
        if rel not in ok and rel not in refused:
            refused[rel] = "not_in_manifest"
    if refused:
        # a path is quoted up to `MAX_QUOTE` characters: a 5,000-character entry made a 5 KB line
        listed = ", ".join(f"{shorten(rel)} ({reason})" for rel, reason in sorted(refused.items())[:10])
        raise ValueError(f"{len(refused)} release file(s) refused: {listed}")
    counts = manifest.get("release_counts")
    if isinstance(counts, dict):  # a file removed with its manifest entry verifies; the split's count does not
        from openmsd_build.core.parquet_io import footer_rows

        splits = {rel.split("/")[1].removeprefix("split=") for rel in ok if rel.startswith("ids/split=")}
        splits |= {key.removeprefix("ids.") for key, n in counts.items() if key.startswith("ids.") and n}
        for split in sorted(splits):
            want = counts.get(f"ids.{split}")
            have = footer_rows([prefix + rel for rel in ok if rel.startswith(f"ids/split={split}/")])
            if isinstance(want, int) and have != want:
                raise ValueError(f"the ids of split {split} hold {have:,} rows, and the manifest's release_counts "
                                 f"say {want:,}: files are missing from the release")


def check_ids_labels(paths: list[str]) -> None:
    """Every row of `ids/split=S/...` says split S, and no DOI is in two rows; else a
    `ValueError` naming the file. Checksums say the files are the ones signed, not that they
    agree: a row labelled `../../evil` inside `split=train/` was written into `splits/` as it
    was (and dropped out of train's recovery rates), and a DOI in train and in ODT was
    exported twice. One file at a time, the DOIs kept as 64-bit hashes (8 bytes a paper)."""
    import numpy as np
    import pyarrow.compute as pc

    from openmsd_build.core.hashing import paper_ids
    from openmsd_build.core.parquet_io import read_file_bytes

    seen: list[np.ndarray] = []
    for path in paths:
        label = next((part.removeprefix("split=") for part in reversed(path.split("/")) if part.startswith("split=")),
                     None)
        with FileSystems.open(path) as f:
            table = read_file_bytes(f.read(), ["doi", "split"], path)
        other = pc.not_equal(table["split"], label) if label is not None else None
        if other is not None and pc.any(other).as_py():
            bad = table.filter(other)["split"][0].as_py()
            raise ValueError(f"{shorten(path)}: rows of split {short_repr(bad)} in the folder of split {label!r}")
        seen.append(np.asarray(paper_ids(table["doi"].to_pylist()), dtype=np.int64))
    ids = np.sort(np.concatenate(seen)) if seen else np.empty(0, np.int64)
    twice = np.flatnonzero(ids[1:] == ids[:-1])
    if twice.size:
        raise ValueError(f"{twice.size:,} DOI(s) are listed twice in ids/ (in two splits, or two rows): a paper is "
                         "in one split")

