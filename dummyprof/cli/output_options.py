"""``--json``, ``--html``, ``--force``, ``--quiet``, ``--detail``: declared once, the same in every command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from dummyprof.cli.output import FORCE_HELP, JSON_HELP, QUIET_HELP, reporter
from dummyprof.files.outputs import Output
from dummyprof.results.session import Results

JsonOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional on Python 3.10
    typer.Option("--json", metavar="PATH", help=JSON_HELP),
]
HtmlOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--html",
        metavar="PATH",
        help="Also write a self-contained HTML report with charts (one file, no network; needs the html extra).",
    ),
]
ForceOpt = Annotated[bool, typer.Option("--force", help=FORCE_HELP)]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)]
DETAIL_HELP = (
    "Print every table: the scenario, the ten most revisited tensors with their depth, dtype and bytes, "
    "the projection check, the calibration and the recording cost. Without it the report leads with the "
    "answer and fits a 50-line screen; --json, --html and Markdown always carry the detail."
)
DetailOpt = Annotated[bool, typer.Option("--detail", help=DETAIL_HELP)]


def html_reports(path: Path | None) -> list[tuple[Output, Callable[[Results], str]]]:
    """The HTML output for ``emit``; checks before anything is measured that the report can be made."""
    if path is None:
        return []
    from dummyprof.reports.html import require_plotly

    require_plotly()
    return [(Output("--html", path), reporter("html", flag="--html"))]
