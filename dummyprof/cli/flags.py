"""Options fields as the command line names them: the one place the library's field names become flags."""

from __future__ import annotations

from dummyprof.errors import flag_for, flag_text

error_text = flag_text  # the one line the user sees: an error about an options field names its flag

__all__ = ["error_text", "flag_for"]
