"""Errors that the CLI turns into a one-line message and exit code 2."""

from __future__ import annotations


class DummyprofError(Exception):
    """Base class for errors dummyprof reports to the user."""

    exit_code = 2


class UsageError(DummyprofError):
    """Bad input: names the flag and says how to fix it."""

    def __init__(self, flag: str | None, message: str) -> None:
        self.flag = flag
        self.message = message
        super().__init__(f"{flag}: {message}" if flag else message)


class DoesNotFitError(UsageError):
    """The requested run would not fit in the memory this machine can give."""


class ResultsFileError(DummyprofError):
    """A results or baseline file is missing, corrupt or of an unknown schema."""
