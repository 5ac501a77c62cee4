"""Rich consoles that respect pipes and NO_COLOR."""

from __future__ import annotations

import os
import sys

from rich.console import Console

PIPED_WIDTH = 160  # wide enough that tables written to files or CI logs do not wrap


def make_console(*, stderr: bool = False) -> Console:
    """Rich drops colour codes when the stream is not a terminal and honours NO_COLOR itself."""
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() or os.environ.get("COLUMNS") else PIPED_WIDTH
    return Console(file=stream, highlight=False, soft_wrap=False, width=width)
