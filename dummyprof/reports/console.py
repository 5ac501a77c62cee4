"""Rich consoles that respect pipes, NO_COLOR, odd widths and terminals that are not UTF-8."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console
from rich.text import Text

from dummyprof.reports.encoding import encoding_safe
from dummyprof.reports.tables.escape import visible_lines

DEFAULT_WIDTH = 80  # a terminal whose size cannot be read
PIPED_WIDTH = DEFAULT_WIDTH  # a pipe or a file has no width: the 80 columns every report fits (COLUMNS widens it)
MIN_WIDTH = 20  # below this a COLUMNS value is nonsense (COLUMNS=0 printed nothing at all)
MAX_WIDTH = 10_000


def columns_from_env() -> int | None:
    """COLUMNS if it is a sensible width; None (unknown) for 0, negative, huge or not a number."""
    text = os.environ.get("COLUMNS", "").strip()
    try:
        value = int(text)
    except ValueError:
        return None
    return value if MIN_WIDTH <= value <= MAX_WIDTH else None


def terminal_width(stream: TextIO) -> int | None:
    """The width to render at: a sensible COLUMNS, else the terminal's, else 80 columns for a pipe or a file."""
    columns = columns_from_env()
    if columns is not None:
        return columns
    if not stream.isatty():
        return PIPED_WIDTH
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        return DEFAULT_WIDTH
    return width if MIN_WIDTH <= width <= MAX_WIDTH else DEFAULT_WIDTH


class DataConsole(Console):
    """A console for text that holds names from outside: no markup, no emoji codes, controls spelled out.

    Styles come only from ``style=`` and ``Text``; a ``[red]`` or ``[link=...]`` in a name prints as typed.
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **kwargs)  # type: ignore[arg-type]

    def render_str(self, text: str, **kwargs: object) -> Text:
        return super().render_str(visible_lines(text), **kwargs)  # type: ignore[arg-type]


def make_console(*, stderr: bool = False) -> Console:
    """Rich drops colour codes when the stream is not a terminal and honours NO_COLOR itself.

    The width is always given, so Rich never reads a nonsense COLUMNS itself.
    """
    stream = sys.stderr if stderr else sys.stdout
    encoding_safe(stream)
    return DataConsole(file=stream, soft_wrap=False, width=terminal_width(stream))
