"""Errors that the CLI turns into a one-line message and exit code 2."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


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
        self.given_flag = flag
        self.field = field
        self.message = message
        name = flag or field
        super().__init__(f"{name}: {message}" if name else message)

    @property
    def flag(self) -> str | None:
        """The flag this error is about: the one given, else the field's (``depth`` -> ``--depth``)."""
        if self.given_flag is not None:
            return self.given_flag
        return flag_for(self.field) if self.field is not None else None

    @classmethod
    def for_field(cls, field: str, message: str) -> UsageError:
        """A bad value of the options field ``field`` (e.g. ``depth``, ``strategies``)."""
        return cls(None, message, field=field)


# The flag of each options field whose flag is not ``--`` + the field with dashes, as the field declares it
# (``schema.option(flag="--strategy")``): filled as each options class is made (``schema``), never by hand.
_DECLARED_FLAGS: dict[str, str] = {}


def declare_flag(field: str, flag: str) -> None:
    """Field ``field`` is given as ``flag`` (on every options class that has it: one flag per field name)."""
    known = _DECLARED_FLAGS.setdefault(field, flag)
    if known != flag:
        raise TypeError(f"options field {field!r} declared with two flags: {known} and {flag}")


def flag_for(field: str, options: type | None = None) -> str:
    """``--max-depth`` for ``max_depth``, ``--strategy`` for ``strategies``: the flag the field declares on
    ``options`` (its options class), else the one it declares on any options class, else the field with dashes."""
    declared = getattr(options, "__dataclass_fields__", {}).get(field) if options is not None else None
    metadata = declared.metadata if declared is not None else {}
    flag = metadata.get("flag") or getattr(metadata.get("spec"), "flag", None)
    if flag:
        return str(flag)
    return _DECLARED_FLAGS.get(field, "--" + field.replace("_", "-"))


def flag_text(exc: BaseException, options: type | None = None) -> str:
    """The error as a command line shows it: an error about an options field names its flag."""
    if isinstance(exc, UsageError) and exc.given_flag is None and exc.field is not None:
        return f"{flag_for(exc.field, options)}: {exc.message}"
    return str(exc)


class DoesNotFitError(UsageError):
    """The requested run would not fit in the memory this machine can give."""


class ResultsFileError(DummyprofError):
    """A results or baseline file is missing, corrupt or of an unknown schema."""


class ImpossibleFigure(DummyprofError):
    """A figure a run computed that no run can have (bytes below zero, more room than the device): a bug caught
    before it is shown or written, never printed."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"a figure this run computed is impossible ({where}); nothing was shown or written. This is a bug in "
            "dummyprof: please report it with the command and the model's config"
        )


@contextmanager
def running_user_code(
    flag: str, what: str, note: str = "", passes: tuple[type[BaseException], ...] = ()
) -> Iterator[None]:
    """Code the user gave us (a model factory, a loader, a module it imports) runs inside: its failure is one line
    naming the flag, with ``note`` (why it may have failed). ^C is the user's; ``passes`` already say why.

    ``sys.exit()`` inside it is an error too, never the end of the run with its exit code; only the
    first line of a message is kept (torch's C++ errors carry a stack of a dozen lines).
    """
    stops: tuple[type[BaseException], ...] = (KeyboardInterrupt, *passes)
    try:
        yield
    except stops:
        raise
    except SystemExit as exc:
        raise UsageError(flag, f"{what} called sys.exit({exc.code!r}) instead of returning") from exc
    except BaseException as exc:
        lines = str(exc).strip().splitlines()
        message = lines[0] if lines else ""
        raise UsageError(flag, f"{what} raised {type(exc).__name__}: {message}{note}") from exc
