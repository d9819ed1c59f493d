"""Importing Beam for a command without the MongoDB client it loads eagerly.

`import apache_beam` imports pymongo with its bson (for `ReadFromMongoDB`), which Beam
installs as its own dependency: ~0.13 s of CPU of the ~1.2 s Beam's import takes
(`python -X importtime -c "import apache_beam"`), on the launching process's critical path
before the first bundle, for an IO no stage uses.

Beam imports it inside `try: ... except ImportError`, treating it as absent when the import
fails. `import_beam` makes it fail for the length of Beam's own import only (a `None` entry
in `sys.modules`, which makes `import` raise ModuleNotFoundError and `find_spec` answer None),
then removes the entries: anything that imports pymongo later gets the real module. What is
lost is `ReadFromMongoDB` / `WriteToMongoDB` in this launching process, which no command of
ours uses; distributed workers import Beam themselves, in full. Beam's log line about the
missing bson package is held back meanwhile.

Not pandas, though Beam imports it eagerly too (~0.25 s, for DataFrame batch converters):
pyarrow imports pandas anyway on its first conversion of Python values (`pa.array`,
`Table.from_pylist`, when a stage writes its first Parquet rows), so deferring it only moved
its cost into the single-core tail of a run; and pyarrow, if the import failed there, would
take pandas for absent for the rest of the process.

Only the command line uses this (`cli._run_command`): a library user or a test that
imports Beam first gets the whole of it, as before. The `openmsd-build` program imports it
with the garbage collector paused and then frozen (`core.collector.paused_collector`).
"""

from __future__ import annotations

import logging
import sys
from types import ModuleType

DEFERRED = frozenset({"pymongo", "bson"})
"""Top-level packages Beam imports optionally and no stage of ours uses."""

# Beam's module that warns when bson is missing ("Could not find a compatible bson package").
_QUIET_LOGGERS = ("apache_beam.io.mongodbio",)


def import_beam() -> ModuleType:
    """`apache_beam`, imported now without the `DEFERRED` packages unless Beam (or one of
    them) is imported already, in which case nothing changes."""
    if "apache_beam" in sys.modules or any(name in sys.modules for name in DEFERRED):
        import apache_beam

        return apache_beam
    loggers = [logging.getLogger(name) for name in _QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for name in DEFERRED:
        sys.modules[name] = None  # type: ignore[assignment]  # `import` raises ModuleNotFoundError
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        import apache_beam
    finally:
        for name in DEFERRED:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
    return apache_beam
