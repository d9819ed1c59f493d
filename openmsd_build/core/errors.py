"""Exceptions the command line prints as one clear line instead of a traceback."""


class UserError(Exception):
    """A problem with the user's input or options (missing file, bad flag value, ...)."""
