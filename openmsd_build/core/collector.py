"""Keeping CPython's cyclic garbage collector off what lives as long as a helper process.

The papers stage's parsing children (`core.ordered_pool`) import a great deal (pyarrow,
polars: 50,000-200,000 objects) and keep it all until they exit, but the collector walks every
tracked object on each full collection, and the young generations' collections every 700 new
containers. The objects their work makes are freed by reference counting; cycles are rare.
So once a child has imported what it needs, `quiet_collector` takes everything alive out of
later collections (`gc.freeze`) and makes young collections rarer; `paused_collector` runs the
imports themselves without collections (they make few cycles).

Measured: the parsing children spent ~9% of their CPU in the collector, ~2% after
`quiet_collector` (`gc.callbacks` timings). The text stage leaves the collector as it is: its
worker and extractor children spend ~2% of their CPU in it at 20,000 papers
(bench/README.md, seventeenth and twenty-second rounds).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Young-generation collections: every this many new container objects (Python's default: 700).
QUIET_GC_THRESHOLD = (10_000, 10, 10)


def quiet_collector(young: bool = True) -> None:
    """Called once a process's imports are done: everything alive now is left out of later
    collections; with `young`, young collections come every `QUIET_GC_THRESHOLD[0]` new
    containers (a piece of work keeps thousands of records alive until their batches are
    built, which a collection every 700 walked again and again); without it, only the
    freeze, so cyclic garbage is collected as often as before."""
    gc.freeze()
    if young:
        gc.set_threshold(*QUIET_GC_THRESHOLD)


@contextmanager
def paused_collector(young: bool = True) -> Iterator[None]:
    """No collections inside (imports), then `quiet_collector(young)`. Imports make few
    cycles: the full collection after Beam's import found 739 garbage objects among 157,000
    (kept for good when frozen), and the collections during the imports are saved."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        quiet_collector(young)
        if was_enabled:
            gc.enable()
