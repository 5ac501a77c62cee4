"""Strings from outside (model, parameter, scenario and loader names, fields of a loaded file) are data.

Every backend passes them through one of these before they reach its medium (issue #17): a terminal
sees control characters spelled out, Markdown sees its syntax characters escaped, XML sees only the
characters XML 1.0 allows. HTML uses :func:`html.escape` (see ``to_html.py``).
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the bidirectional overrides that reorder what a reader sees (Trojan Source).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _spelled(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character spelled out (ESC -> ``\\x1b``, newline -> ``\\n``)."""
    return _CONTROLS.sub(_spelled, text)


def visible_lines(text: str) -> str:
    """Like :func:`visible` but keeping newlines and tabs: for text already laid out in lines."""
    return _CONTROLS.sub(lambda m: m.group() if m.group() in "\n\t" else _spelled(m), text)


# What would end a cell, open code, a link, emphasis or an HTML tag (``<`` before a letter, ``/``, ``!``
# or ``?``; ``<= 2`` stays as typed); ``_`` stays too (names are full of it).
_MARKDOWN = re.compile(r"([\\`*\[\]|]|<(?=[A-Za-z/!?]))")


def markdown_text(text: str) -> str:
    """A string that shows literally in a Markdown paragraph or table cell, on one line."""
    return _MARKDOWN.sub(r"\\\1", visible(text).replace("&", "&amp;"))


def markdown_code(text: str) -> str:
    """A code span showing ``text`` as typed: a fence longer than any run of backticks in it, ``|`` escaped."""
    shown = visible(text)
    runs = [len(run) for run in re.findall("`+", shown)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown.replace('|', chr(92) + '|')}{pad}{fence}"


# XML 1.0 allows tab, newline and carriage return from C0; anything else is spelled out.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]")


def xml_text(text: str) -> str:
    """A string XML 1.0 can carry (ElementTree escapes ``<&"`` itself): forbidden characters spelled out."""
    return _NOT_XML.sub(_spelled, text)
