"""Module-level work for the pool tests (a pool child imports work by module name)."""

from __future__ import annotations

import os
import time


def sleep_then(value: int, seconds: float) -> int:
    time.sleep(seconds)
    return value


def die(code: int) -> None:
    os._exit(code)


def fail(message: str) -> None:
    raise ValueError(message)


def pid() -> int:
    return os.getpid()
