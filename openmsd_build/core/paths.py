"""Paths that come from data (an index row's file name, a release manifest's entry): confined
to the folder they are meant to be under, and errors about reading them that never quote
what was read.

A path from data is untrusted: `../../etc/passwd`, `/etc/passwd`, `s3://other-bucket/x`,
`a\\..\\b`, a NUL byte, or a symbolic link pointing out of the folder would make the build
read (or, for a manifest, write) a file the user never named. `confined_path` joins such a
name to its root and refuses it with a reason (`UnsafePath.reason`) unless the result stays
under the root, checked on the normalised name and, for local roots, on the resolved path
(symbolic links followed).
"""

from __future__ import annotations

import os
import posixpath
import re

_SCHEME_RE = re.compile(r"^[A-Za-z][-A-Za-z0-9+.]*:")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# what follows such a label is the bytes read, unquoted (warcio's `first line: <html>...`)
_ECHOED_RE = re.compile(r"(first line:|Found:|Remainder:).*", re.DOTALL)
_QUOTED_RE = re.compile(r"""b?'(?:[^'\\]|\\.)*'|b?"(?:[^"\\]|\\.)*"|\[.*\]""", re.DOTALL)


class UnsafePath(ValueError):
    """A path from data that would leave its root; `reason` is a short code for counts."""

    def __init__(self, reason: str, name: object) -> None:
        super().__init__(f"{reason}: {str(name)[:200]!r}")
        self.reason = reason


def _is_remote(root: str) -> bool:
    return "://" in root


def relative_parts(name: object, strip_leading_slash: bool = False) -> list[str]:
    """The components of a relative path from data, or `UnsafePath`: not a string, empty,
    control characters, backslashes, a scheme or drive, absolute (unless
    `strip_leading_slash`), or a `..` component."""
    if not isinstance(name, str) or not name.strip():
        raise UnsafePath("path_empty", name)
    if _CONTROL_RE.search(name):
        raise UnsafePath("path_control_character", name)
    if "\\" in name:
        raise UnsafePath("path_backslash", name)
    if _SCHEME_RE.match(name):
        raise UnsafePath("path_has_scheme", name)
    if name.startswith("/"):
        if not strip_leading_slash:
            raise UnsafePath("path_absolute", name)
        name = name.lstrip("/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafePath("path_traversal", name)
    if not parts:
        raise UnsafePath("path_empty", name)
    return parts


def confined_path(root: str, name: object, strip_leading_slash: bool = False) -> str:
    """`name` (relative, from data) under `root` (configured), or `UnsafePath`. A local
    root is also checked after resolving symbolic links: a link inside the folder that
    points out of it is refused (`path_outside_root`). The returned path is the joined
    name, not the resolved one, so it reads as the user's folder."""
    parts = relative_parts(name, strip_leading_slash)
    root = root or "."
    joined = root.rstrip("/") + "/" + "/".join(parts) if root.rstrip("/") else "/" + "/".join(parts)
    if _is_remote(root):
        return joined
    real_root = os.path.realpath(root)
    real = os.path.realpath(joined)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UnsafePath("path_outside_root", name)
    return joined


def inside(root: str, path: str) -> bool:
    """Whether `path` (normalised; resolved when local) is `root` or under it."""
    if _is_remote(root) or _is_remote(path):
        r, p = posixpath.normpath(root.rstrip("/")), posixpath.normpath(path)
        return p == r or p.startswith(r + "/")
    r, p = os.path.realpath(root), os.path.realpath(path)
    return p == r or p.startswith(r.rstrip(os.sep) + os.sep)


def describe_failure(exc: BaseException) -> str:
    """An exception as `TypeName: message` for an error message or a reject's detail, with
    anything the message quotes removed: readers quote what they read (gzip's
    `Not a gzipped file (b'ro')`, warcio's `first line: <html>...` or `[...]`), and a failed read must not
    echo a file's content (the file may be one an index row should never have named)."""
    message = _ECHOED_RE.sub(r"\1 <...>", _QUOTED_RE.sub("<...>", str(exc)))
    if isinstance(exc, OSError) and exc.strerror:
        message = exc.strerror if exc.errno is None else f"[Errno {exc.errno}] {exc.strerror}"
    return f"{type(exc).__name__}: {message}"[:300] if message else type(exc).__name__


def quiet_exception(exc: BaseException) -> BaseException:
    """`exc` itself when its message quotes nothing, else an exception of the same type (a
    `ValueError` when that type cannot be built from one message) whose message has the
    quoted parts removed (`describe_failure`): for re-raising a reader's error without the
    bytes it read."""
    message = _QUOTED_RE.sub("<...>", str(exc))
    if message == str(exc):
        return exc
    try:
        return type(exc)(message)
    except Exception:  # noqa: BLE001 - an exception type with other arguments
        return ValueError(f"{type(exc).__name__}: {message}")
