"""Bytes of a name that are not UTF-8 (a folder ``m\\xff``: Python hands them on as lone surrogates, PEP 383) spelled
as a visible escape, ``\\xff``, in every medium: one rule for the JSON a results file holds (so ``report`` reads it
back), every file and stream a report is written to, and the terminal, Markdown, XML and HTML escapes."""

from __future__ import annotations

import codecs
import re
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
ERRORS = "dummyprof-undecodable"  # an encoding error handler: open(..., errors=ERRORS)


def spelled_char(ch: str) -> str:
    """``\\xff`` for the byte 0xff that surrogateescape made U+DCFF; ``\\udXXX`` for any other lone surrogate."""
    code = ord(ch)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def spelled(text: str) -> str:
    """``text`` with every lone surrogate spelled (text without one is returned as it is, unscanned past a check)."""
    return LONE_SURROGATE.sub(lambda m: spelled_char(m.group()), text)


def spelled_values(value: Any) -> Any:
    """Plain values (``msgspec.to_builtins``) with every string, key or value, spelled."""
    if isinstance(value, str):
        return spelled(value)
    if isinstance(value, dict):
        return {spelled(k) if isinstance(k, str) else k: spelled_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [spelled_values(v) for v in value]
    return value


def _encode_error(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    if not all(LONE_SURROGATE.match(ch) for ch in text):
        raise error  # a character the encoding lacks is another matter (reports/encoding.py)
    return "".join(spelled_char(ch) for ch in text), error.end


codecs.register_error(ERRORS, _encode_error)
