"""Atomic replacement of a stage's outputs: a failed, killed or interrupted run never
destroys the previous good outputs.

A stage used to clear its folders before running, so a crash, a Ctrl-C or a typo in
`--runner` left the build without the outputs of its last good run. Now every stage runs
inside `stage_outputs(out, stage)`:

* the stage reads its inputs from the real `OUT` (the previous stages' outputs) and writes
  everything it owns -- its folders (`stages.Stage.outputs`), `rejects/<stage>/` and
  `_stats/<stage>.json` -- under a private temporary root `OUT/_tmp/<stage>-<pid>-<ms>/`
  that mirrors the layout of `OUT`;
* on success each owned path is swapped in: the old one is renamed aside (into the
  temporary root's `.old/`), the new one renamed into place, then the old ones deleted.
  A path the run did not write (no rejects this time, `pairs` without
  `--hard-negatives`) is removed, as the old "clear first" did, so stale files never
  survive a good run. `_stats/<stage>.json` is swapped last: it is what says the stage
  finished. SIGINT / SIGTERM are held during the swap (a few renames) and delivered after
  it;
* on failure (any exception, KeyboardInterrupt included) the temporary root is deleted and
  `OUT` is untouched.

Local paths use `os.rename` (atomic per folder: the temporary root lives under `OUT`, so on
the same filesystem). Object stores (`gs://`) have no folder rename; there the swap is copy +
delete through Beam's `FileSystems` (file by file, old files first moved aside), which is
not atomic but still never deletes the old outputs before the new ones are complete.

A run killed with SIGKILL (or a power loss) cannot clean up: the next run of the same stage
deletes `_tmp/<stage>-*` roots whose process is gone, and if the kill fell inside the swap
(old outputs already aside, new not yet in) it first moves the old outputs back. Two runs
of the same stage into one `OUT` at once are not supported (they were not before either).

Not swapped, on purpose: the text stage's `warc/` archive. It is append-only and is the
resume store: each bundle writes a new uniquely named WARC file straight into `OUT/warc/`,
whole records only (see `text.beam.FetchLive`), so an interrupted run's WARC files
stay and the next `--fetch http` run serves those URLs from them instead of refetching.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from apache_beam.io.filesystems import FileSystems

from openmsd_build.core import interrupts
from openmsd_build.core.parquet_io import join_path, match_paths

LOG = logging.getLogger(__name__)

TMP_DIR = "_tmp"
OLD_DIR = ".old"


def owned_paths(stage: str, folders: Sequence[str]) -> list[str]:
    """The paths (relative to OUT) a stage replaces, in swap order: its folders, its
    rejects, and last its stats file."""
    return [*folders, os.path.join("rejects", stage), os.path.join("_stats", f"{stage}.json")]


def _is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def _rel_join(base: str, rel: str) -> str:
    return join_path(base, *rel.split(os.sep))


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


# ---------------------------------------------------------------- filesystem primitives


def path_exists(path: str) -> bool:
    """Whether a file, a folder or a link is at `path` (on an object store: any object at or
    under it, where a folder is no object of its own)."""
    if _is_remote(path):
        return bool(_remote_files(path))
    return os.path.lexists(_local(path))


def _remote_files(path: str) -> list[str]:
    """Every object at `path` (a file) or under it (a folder)."""
    found = set(match_paths(path.rstrip("/") + "/**"))
    if FileSystems.exists(path):
        found.add(path)
    return sorted(found)


def delete_path(path: str) -> None:
    """Delete a file or a folder tree; nothing there is fine."""
    if _is_remote(path):
        files = _remote_files(path)
        if files:
            FileSystems.delete(files)
        return
    local = _local(path)
    if os.path.isdir(local) and not os.path.islink(local):
        shutil.rmtree(local, ignore_errors=True)
    elif os.path.lexists(local):
        os.remove(local)


def move_path(src: str, dst: str) -> None:
    """Move a file or folder `src` to the (absent) `dst`: one rename locally, copy + delete
    per object on an object store."""
    if _is_remote(src):
        files = _remote_files(src)
        prefix = src.rstrip("/")
        targets = [dst.rstrip("/") + f[len(prefix) :] for f in files]
        if files:
            FileSystems.rename(files, targets)
        return
    local_dst = _local(dst)
    os.makedirs(os.path.dirname(local_dst), exist_ok=True)
    os.rename(_local(src), local_dst)


def _remove_if_empty(path: str) -> None:
    if _is_remote(path):
        return  # object stores have no empty folders
    with contextlib.suppress(OSError):
        os.rmdir(_local(path))


# ---------------------------------------------------------------- signals during the swap


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the swap renames (only the main thread can set
    handlers); a signal that arrived is delivered right after, so Ctrl-C still stops the
    command but never leaves half the folders swapped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def hold(signum: int, frame: object) -> None:
        received.append(signum)

    for s in previous:
        signal.signal(s, hold)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if received:
            signal.raise_signal(received[0])


# ---------------------------------------------------------------- swap, rollback, recovery


def swap_in(out: str, root: str, paths: Sequence[str]) -> None:
    """Old paths aside into `root/.old/`, new paths from `root` into `out`, old deleted.
    On an error in between, what was moved is moved back before the error propagates."""
    old_root = join_path(root, OLD_DIR)
    aside: list[str] = []
    placed: list[str] = []
    try:
        for rel in paths:
            if path_exists(_rel_join(out, rel)):
                aside.append(rel)  # before the move: on an object store it can stop half way
                move_path(_rel_join(out, rel), _rel_join(old_root, rel))
        for rel in paths:
            if path_exists(_rel_join(root, rel)):
                placed.append(rel)
                move_path(_rel_join(root, rel), _rel_join(out, rel))
    except BaseException:
        LOG.error("swapping outputs into %s failed; restoring the previous outputs", out)
        for rel in placed:
            delete_path(_rel_join(out, rel))
        for rel in aside:
            if path_exists(_rel_join(old_root, rel)):  # what of it was moved goes back
                move_path(_rel_join(old_root, rel), _rel_join(out, rel))
        raise
    delete_path(old_root)


SWAP_LIST = ".entries"  # under a partial folder while its swap runs: the entries it places


def replace_entries(dest: str, partial: str, entries: Sequence[str]) -> None:
    """A whole new set of `entries` (names at the top of `dest`: an export's, a release's)
    written under `partial` (a hidden folder in `dest`) takes the place of the earlier one's:
    an entry the new one lacks is removed, so nothing of the last survives for a loader that
    globs the folder, and a run that fails before this leaves the last as it was. Files of
    `dest` that are no entry are kept.

    The swap is the stages' own (`swap_in`, SIGINT / SIGTERM held): the earlier entries go
    aside under `partial/.old/` and the new ones in, and any error in between moves them back,
    so a Ctrl-C or a failed move leaves one whole set or the other. Before it,
    `partial/.entries` lists the entries and which of them are new, so that the swap of a run
    killed inside it can be finished (`recover_entries`). An entry may be a path below `dest`
    (`pools/idt`)."""
    new = [entry for entry in entries if path_exists(join_path(partial, entry))]
    with FileSystems.create(join_path(partial, SWAP_LIST)) as fh:
        fh.write(json.dumps({"entries": list(entries), "new": new}).encode("utf-8"))
    try:
        with signals_held():
            swap_in(dest, partial, entries)
    finally:  # after a failed swap (undone) as after a Ctrl-C held during it
        delete_path(partial)


T = TypeVar("T")


def write_then_replace(dest: str, partial: str, entries: Sequence[str], write: Callable[[], T]) -> T:
    """`write()` (which writes a new set of `entries` under `partial`), then the earlier set's
    replacement by it (`replace_entries`); `write`'s result. On any error in `write`, or a
    Ctrl-C that something caught on the way (`core.interrupts`: Beam logs one from a DoFn's
    teardown and carries on), `partial` is removed and the earlier set stays whole: what
    `export`, `release` and `evaluate-pools` each do with their own folder."""
    ctrl_cs = interrupts.count()
    try:
        result = write()
        interrupts.stop_if_seen_since(ctrl_cs)
    except BaseException:
        delete_path(partial)
        raise
    replace_entries(dest, partial, entries)
    return result


def recover_entries(dest: str, partial: str, entries: Sequence[str] = ()) -> None:
    """Before a run checks or writes `dest`: the swap of one killed inside it (its
    `partial/.entries` is there, so the new set was whole) is finished: every entry not placed
    yet goes in, and every earlier entry still in place goes aside, as `swap_in` would have
    done; then `partial` (aside entries included) is removed. A partial folder without that
    list is a run that never finished writing (killed, interrupted): removed. The entries are
    the killed run's own (in its list); `entries` for a list that only names the new ones."""
    listed = join_path(partial, SWAP_LIST)
    if path_exists(listed):
        with FileSystems.open(listed) as fh:
            record = json.loads(fh.read().decode("utf-8"))
        if isinstance(record, dict):
            entries, new = record["entries"], set(record["new"])
        else:  # a list of the new entries (an export killed by an earlier version)
            new = set(record)
        aside = join_path(partial, OLD_DIR)
        for entry in entries:
            unplaced = entry in new and path_exists(join_path(partial, entry))
            if (unplaced or entry not in new) and path_exists(join_path(dest, entry)):
                move_path(join_path(dest, entry), join_path(aside, entry))  # an earlier run's
            if unplaced:
                move_path(join_path(partial, entry), join_path(dest, entry))
    delete_path(partial)


def _restore_aside(out: str, stale_root: str, paths: Sequence[str]) -> None:
    """A run killed inside its swap left old outputs in `.old/`: put back any whose place
    is empty (the new one never arrived), so the build is as it was before that run."""
    old_root = join_path(stale_root, OLD_DIR)
    for rel in paths:
        if path_exists(_rel_join(old_root, rel)) and not path_exists(_rel_join(out, rel)):
            LOG.warning("restoring %s left aside by an interrupted swap", rel)
            move_path(_rel_join(old_root, rel), _rel_join(out, rel))


_ROOT_NAME = re.compile(r"[a-z]+-\d+-\d+")  # `<stage>-<pid>-<ms>`, as `stage_outputs` names a root


def _tmp_names(out: str) -> set[str]:
    """The names directly under `OUT/_tmp/` (none when it is not there)."""
    tmp = join_path(out, TMP_DIR)
    if _is_remote(out):
        return {p[len(tmp.rstrip("/")) + 1 :].split("/", 1)[0] for p in match_paths(tmp.rstrip("/") + "/**")}
    try:
        return set(os.listdir(_local(tmp)))
    except (FileNotFoundError, NotADirectoryError):
        return set()


def holds_stage_roots(out: str) -> bool:
    """Whether `OUT/_tmp/` holds a stage's temporary root (a stage ran in OUT), not just any
    folder called `_tmp`."""
    return any(_ROOT_NAME.fullmatch(name) for name in _tmp_names(out))


def _stale_roots(out: str, stage: str) -> list[str]:
    tmp = join_path(out, TMP_DIR)
    prefix = f"{stage}-"
    names = _tmp_names(out)
    roots = []
    for name in sorted(names):
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix) :].split("-", 1)[0]
        if not _is_remote(out) and pid.isdigit() and _pid_alive(int(pid)):
            continue  # a run of this stage still going (same host)
        roots.append(join_path(tmp, name))
    return roots


def clean_stale(out: str, stage: str, paths: Sequence[str]) -> None:
    """Remove what killed earlier runs of `stage` left under `OUT/_tmp/` (restoring old
    outputs a killed swap had moved aside)."""
    for root in _stale_roots(out, stage):
        _restore_aside(out, root, paths)
        delete_path(root)
    _remove_if_empty(join_path(out, TMP_DIR))


def _record_built_from(out: str, root: str, stage: str) -> None:
    """The stage's provenance (`stages.built_from`) into the stats it wrote under `root`, so
    that the swap puts in a record that says what the outputs were built from. Written only
    after the swap (by `stages.record_provenance`), a Ctrl-C in between left a stage without
    it, which staleness never judges again (`stages.stale_stages`): a later rebuild of its
    upstream went unnoticed, and release / export took the stale build."""
    from openmsd_build.core.stages import STAGE_NAMES, built_from
    from openmsd_build.core.stats import update_stage_stats

    if stage in STAGE_NAMES:
        update_stage_stats(root, stage, {"built_from": built_from(out, stage)})


@contextlib.contextmanager
def stage_outputs(out: str, stage: str, folders: Sequence[str] | None = None) -> Iterator[str]:
    """Run a stage's writes against a temporary root and swap them into `out` on success.

    Yields the root the stage must write to (its `dest`); inputs are still read from `out`.
    `folders` are the stage's output folders relative to `out` (default: the stage
    registry's `outputs`); `rejects/<stage>/` and `_stats/<stage>.json` are always included.
    An `out` that is no build yet (no `_stats/`) but holds one of them is refused before the
    stage runs: those are someone's folders, and the swap would delete them. On any exception the temporary root is deleted and `out` is left as it was; an
    interrupt that Beam wrapped in a RuntimeError is re-raised as KeyboardInterrupt, so the
    command exits like any interrupted program. So is one that Beam caught and only logged (a
    Ctrl-C in a DoFn's teardown, `core.interrupts`): a stage that saw a Ctrl-C is never swapped in.
    """
    if folders is None:
        from openmsd_build.core.stages import stage as registry_stage

        folders = registry_stage(stage).outputs
    paths = owned_paths(stage, folders)
    from openmsd_build.core.inputs import refuse_foreign_folders

    refuse_foreign_folders(out, paths)  # someone's papers/ in a folder no stage has built
    clean_stale(out, stage, paths)
    root = join_path(out, TMP_DIR, f"{stage}-{os.getpid()}-{time.time_ns() // 1_000_000}")
    if not _is_remote(root):
        os.makedirs(_local(root), exist_ok=True)
    ctrl_cs = interrupts.count()
    try:
        yield root
        interrupts.stop_if_seen_since(ctrl_cs)  # a Ctrl-C that Beam caught (a DoFn's teardown): not swapped in
        _record_built_from(out, root, stage)
    except BaseException as exc:
        with signals_held():
            delete_path(root)
            _remove_if_empty(join_path(out, TMP_DIR))
        if not isinstance(exc, KeyboardInterrupt) and interrupts.was_interrupted(exc):
            raise KeyboardInterrupt(f"{stage} interrupted; previous outputs kept") from exc
        raise
    with signals_held():
        try:
            swap_in(out, root, paths)
        finally:
            delete_path(root)
            _remove_if_empty(join_path(out, TMP_DIR))

