"""Options fields as the command line names them: the one place the library's field names become flags."""

from __future__ import annotations

from dummyprof.errors import DummyprofError, UsageError

# Fields whose flag is not simply ``--`` + the field with dashes (list fields take one value per flag).
FIELD_FLAGS = {
    "strategies": "--strategy",
    "loaders": "--loader",
    "model_args": "--model-arg",
    "loader_args": "--loader-arg",
    "methods": "--method",
    "time_budget_s": "--time-budget",
    "repeat_auto": "--repeat",
    "deadline_s": "--deadline",
    "dist_timeout_s": "--dist-timeout",
}


def flag_for(field: str) -> str:
    """``--max-depth`` for ``max_depth``, ``--strategy`` for ``strategies``."""
    return FIELD_FLAGS.get(field, "--" + field.replace("_", "-"))


def error_text(exc: DummyprofError) -> str:
    """The one line the user sees: an error about an options field names its flag."""
    if isinstance(exc, UsageError) and exc.flag is None and exc.field is not None:
        return f"{flag_for(exc.field)}: {exc.message}"
    return str(exc)
