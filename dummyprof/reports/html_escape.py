"""Escaping for the HTML report: every string from a model or a file is data, in markup, in charts and in scripts.

Three places a string can reach on the page, each with its own rule:

- page markup (headings, paragraphs, table cells, attributes): :func:`text`, which also spells
  out control characters (as the terminal does) and writes ``=`` as ``&#61;``, so no attribute a
  payload carries (``onerror=...``) appears verbatim anywhere in the file;
- text that plotly.js draws (axis ticks, legends, labels, hover, titles): plotly reads a
  subset of HTML in those strings (``<br>``, ``<b>``, ``<a href>``) and decodes entities,
  so a name is escaped with :func:`text` before it is handed to a figure, and shows as typed;
- JSON inside a ``<script>`` element: :func:`script_json` (a ``</script>``, ``<!--`` or
  U+2028/U+2029 inside a string must not end or change the script).
"""

from __future__ import annotations

import html
import json
from typing import Any

from dummyprof.reports.tables.escape import visible

_MARKUP_SAFE = str.maketrans({"=": "&#61;"})
_SCRIPT_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "=": "\\u003d", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def text(value: object) -> str:
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
    """A value as JSON, safe inside ``<script>``."""
    return script_safe(json.dumps(value, ensure_ascii=False, allow_nan=False))
