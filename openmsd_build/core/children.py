"""What every helper process of ours shares: the environment it starts with, and the watchdog
that ends it when its parent is gone.

Why here: the papers stage's parsing pool (`core.ordered_pool`) starts interpreters of its
own, which must import what their parent imports and must not outlive it. (The text stage's
extractors use the standard library's forkserver and watch their caller themselves:
`text.extract.pool`.)
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping

PARENT_CHECK_S = 0.5


def child_env(defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a helper interpreter: this one's (over `defaults`), with
    PYTHONPATH set to this process's `sys.path`, so the child resolves imports as this
    process does (a checkout on PYTHONPATH, pytest's rootdir, a Beam staging directory)."""
    env = {**(defaults or {}), **os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(0)


def exit_with_parent(parent: int | None = None) -> None:
    """Start a daemon thread that ends this process (`os._exit`) once `parent` (by default
    the current parent) is gone, i.e. this process was re-parented -- even while the main
    thread is busy in a long piece of work. Only the parent enforces time limits, so without
    this a killed parent could leave the child running."""
    parent = os.getppid() if parent is None else parent
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="parent-watchdog").start()
