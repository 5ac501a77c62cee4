"""``--html PATH``: the self-contained HTML report, for every command that has one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from dummyprof.files.outputs import Output
from dummyprof.results.session import Results

HtmlOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional on Python 3.10
    typer.Option(
        "--html",
        metavar="PATH",
        help="Also write a self-contained HTML report with charts (one file, no network; needs the html extra).",
    ),
]


def html_reports(path: Path | None) -> list[tuple[Output, Callable[[Results], str]]]:
    """The HTML output for ``emit``; checks before anything is measured that the report can be made."""
    if path is None:
        return []
    from dummyprof.cli.output import reporter
    from dummyprof.reports.html import require_plotly

    require_plotly()
    return [(Output("--html", path), reporter("html", flag="--html"))]
