"""Errors that the CLI turns into a one-line message and exit code 2."""

from __future__ import annotations


class DummyprofError(Exception):
    """Base class for errors dummyprof reports to the user."""

    exit_code = 2


class UsageError(DummyprofError):
    """Bad input: names the flag (or the options field) and says how to fix it.

    The library names an options *field* where it can (``UsageError.for_field``):
    the edges translate it, the CLI to its flag (``depth`` -> ``--depth``), the gate
    to its config key (``scenarios.NAME.options.depth``).
    """

    def __init__(self, flag: str | None, message: str, *, field: str | None = None) -> None:
        self.flag = flag
        self.field = field
        self.message = message
        name = flag or field
        super().__init__(f"{name}: {message}" if name else message)

    @classmethod
    def for_field(cls, field: str, message: str) -> UsageError:
        """A bad value of the options field ``field`` (e.g. ``depth``, ``strategies``)."""
        return cls(None, message, field=field)


class DoesNotFitError(UsageError):
    """The requested run would not fit in the memory this machine can give."""


class ResultsFileError(DummyprofError):
    """A results or baseline file is missing, corrupt or of an unknown schema."""


def user_code_error(flag: str, what: str, exc: BaseException, note: str = "") -> UsageError:
    """Code the user gave us (a model factory, a loader, a module it imports) failed: one line naming the flag.

    ``sys.exit()`` inside it is an error too, never the end of the run with its exit code; only the
    first line of a message is kept (torch's C++ errors carry a stack of a dozen lines).
    """
    if isinstance(exc, SystemExit):
        return UsageError(flag, f"{what} called sys.exit({exc.code!r}) instead of returning{note}")
    lines = str(exc).strip().splitlines()
    message = lines[0] if lines else ""
    return UsageError(flag, f"{what} raised {type(exc).__name__}: {message}{note}")
