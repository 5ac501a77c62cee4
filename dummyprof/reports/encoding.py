"""Streams that cannot encode what the reports print get ASCII spellings; imports nothing heavy (--help uses it)."""

from __future__ import annotations

import codecs
import unicodedata
from typing import TextIO

# What the reports print beyond ASCII, spelled in ASCII for a terminal that cannot show it.
ASCII_FALLBACK = {
    "µ": "u",
    "–": "-",
    "—": "--",
    "·": "*",
    "±": "+/-",
    "×": "x",
    "≤": "<=",
    "≥": ">=",
    "≈": "~",
    "…": "...",
    "→": "->",
    "‰": "permille",
    "✓": "ok",
    "✗": "x",
    "█": "#",
    "░": ".",
    "━": "-",
}
ERRORS = "dummyprof-ascii"


def _ascii_char(ch: str) -> str:
    if ch in ASCII_FALLBACK:
        return ASCII_FALLBACK[ch]
    if "\u2500" <= ch <= "\u257f":  # table borders: lines and corners
        name = unicodedata.name(ch, "")
        if "HORIZONTAL" in name and "VERTICAL" not in name:
            return "-"
        if "VERTICAL" in name and "HORIZONTAL" not in name:
            return "|"
        return "+"
    return "?"


def _ascii_fallback(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeEncodeError)
    text = error.object[error.start : error.end]
    return "".join(_ascii_char(ch) for ch in text), error.end


codecs.register_error(ERRORS, _ascii_fallback)


def encoding_safe(stream: TextIO) -> None:
    """A stream that cannot encode µ, –, · ... (PYTHONIOENCODING=ascii, LANG=C) gets ASCII spellings, never a crash."""
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        "".join(ASCII_FALLBACK).encode(encoding)
    except (UnicodeEncodeError, LookupError):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=ERRORS)
