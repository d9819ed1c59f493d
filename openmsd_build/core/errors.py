"""Exceptions the command line prints as one clear line instead of a traceback."""

from __future__ import annotations

import argparse
from typing import NoReturn

MAX_QUOTE = 200
"""Characters of a value, path or library message quoted in an error: a hostile input (a
5 MB recipe value, a 5,000-character path) must not turn one error line into megabytes."""


class UserError(Exception):
    """A problem with the user's input or options (missing file, bad flag value, ...)."""


def shorten(text: object, limit: int = MAX_QUOTE) -> str:
    """`text` (str() of it) cut to `limit` characters, saying how much was left out."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def short_repr(value: object, limit: int = MAX_QUOTE) -> str:
    """`repr(value)` for a message, bounded as `shorten` bounds text. The repr of a huge value
    is cut before it is built where that is cheap (a string), not after."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value):,} characters)"
    return shorten(repr(value), limit)


def damaged(path: str, what: str, exc: BaseException | None = None) -> UserError:
    """The one-line error for a file that is there but cannot be used: the file, what is
    wrong with it and, when a library refused it, the exception's type and first line (its
    own message can be long, and anything it quotes from the file is left out:
    `core.paths.describe_failure`)."""
    why = ""
    if exc is not None:
        from openmsd_build.core.paths import describe_failure

        why = f" ({shorten((describe_failure(exc).strip().splitlines() or [''])[0])})"
    return UserError(f"{shorten(path)}: {what}{why}")


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage error is the error line and where the help is: its own
    usage block (24 lines for `run`) printed above the error buried the one line that says
    which flag is wrong. A subcommand's parser is of this class too (argparse makes it of its
    parent's); `run` parses each stage's flags with one."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n  (see {self.prog} --help)\n")
