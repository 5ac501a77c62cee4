"""Strings from outside (model, parameter, scenario and loader names, fields of a loaded file) are data.

Every backend passes them through one of these before they reach its medium: a terminal
sees control characters spelled out, Markdown sees its syntax characters escaped, XML sees only the
characters XML 1.0 allows. On an HTML page a string can reach three places, each with its own rule:

- page markup (headings, paragraphs, table cells, attributes): :func:`html_text`, which also spells
  out control characters (as the terminal does) and writes ``=`` as ``&#61;``, so no attribute a
  payload carries (``onerror=...``) appears verbatim anywhere in the file;
- text that plotly.js draws (axis ticks, legends, labels, hover, titles): plotly reads a subset of HTML
  in those strings (``<br>``, ``<b>``, ``<a href>``) and decodes entities, so a name is escaped with
  :func:`html_text` before it is handed to a figure, and shows as typed;
- JSON inside a ``<script>`` element: :func:`script_json` (a ``</script>``, ``<!--`` or U+2028/U+2029
  inside a string must not end or change the script).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from dummyprof.files.undecodable import LONE_SURROGATE, spelled_char

# C0 and C1 controls, DEL, the bidirectional overrides that reorder what a reader sees (Trojan Source), and the
# lone surrogates of a name that was not UTF-8 (files/undecodable.py: m\udcff shows as m\xff).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _spelled(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    if LONE_SURROGATE.match(ch):
        return spelled_char(ch)
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


_MARKUP_SAFE = str.maketrans({"=": "&#61;"})
_SCRIPT_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "=": "\\u003d", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def html_text(value: object) -> str:
    """Any value as HTML text: ``& < > " ' =`` escaped and controls spelled out, so it is shown, never interpreted.

    plotly.js decodes these character references in the text it draws, so a chart shows the string as typed.
    """
    return html.escape(visible(str(value)), quote=True).translate(_MARKUP_SAFE)


def script_safe(json_text: str) -> str:
    """JSON text made safe inside ``<script>``: ``< > & =`` and U+2028/9 as ``\\uXXXX`` escapes.

    These characters occur in JSON only inside strings, where the escape means the same
    character, so the JSON parses to the same value.
    """
    return json_text.translate(_SCRIPT_SAFE)


def script_json(value: Any) -> str:
    return script_safe(json.dumps(value, ensure_ascii=False, allow_nan=False))
