"""Fault-injecting subclasses of stage DoFns (importable by reference, so Beam can pickle them).

A flaky DoFn fails the *first* attempt of some of its elements: it passes on the first
output of the real DoFn (so the runner sees partial output from the failed attempt) and then
raises `InjectedFault`. Which elements fail is decided by a stable hash of the element, and
"first attempt" is remembered by marker files in `$OPENMSD_FAULT_DIR`, so the decision holds
across pickling, processes and runner retries. No marker dir -> no faults.
"""

from __future__ import annotations

import hashlib
import os

from openmsd_build.papers.beam import MergeAndWriteShard, ReadSourceFile
from openmsd_build.text.beam import BuildDocuments, ReplayArchive

ENV = "OPENMSD_FAULT_DIR"
MOD_ENV = "OPENMSD_FAULT_MOD"  # fail 1 in this many elements (default 2)


class InjectedFault(RuntimeError):
    """A transient error raised on purpose."""


def _first_attempt(kind: str, element) -> bool:
    """True exactly once per (kind, element) chosen to fail (about half of them)."""
    directory = os.environ.get(ENV)
    if not directory:
        return False
    digest = hashlib.sha1(f"{kind}:{element!r}".encode("utf-8", "replace")).hexdigest()
    if int(digest[:8], 16) % int(os.environ.get(MOD_ENV, "2")):
        return False
    marker = os.path.join(directory, f"{kind}-{digest}")
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def injected_faults() -> int:
    directory = os.environ.get(ENV)
    return len(os.listdir(directory)) if directory and os.path.isdir(directory) else 0


def _flaky(kind: str, outputs, element):
    fail = _first_attempt(kind, _key(element))
    for n, out in enumerate(outputs):
        yield out
        if fail and n == 0:
            raise InjectedFault(f"{kind}: first attempt fails after one output")
    if fail:
        raise InjectedFault(f"{kind}: first attempt fails")


def _key(element):
    if isinstance(element, dict) and isinstance(element.get("url"), str):
        # a resolved archive unit (one URL): decide per host, so a run meets a few faults
        # (one per chosen host), as it did when replay elements were whole host groups
        from openmsd_build.text.fetch.plan import host_key

        return host_key(element["url"])
    if isinstance(element, tuple) and element and isinstance(element[0], (str, int)):
        return element[0] if not isinstance(element[1], (str, int)) else element
    return repr(element)[:200]


class FlakyReadSourceFile(ReadSourceFile):
    def process(self, element):
        return _flaky("read", super().process(element), element)


class FlakyMergeAndWriteShard(MergeAndWriteShard):
    def process(self, element):
        return _flaky("merge", super().process(element), element)


class FlakyReplayArchive(ReplayArchive):
    def process(self, element):
        return _flaky("fetch", super().process(element), element)


class FlakyBuildDocuments(BuildDocuments):
    def process(self, element):
        return _flaky("build", super().process(element), element[0])
