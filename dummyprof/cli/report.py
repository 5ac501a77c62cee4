"""``dummyprof report``: render a saved results file (no torch needed)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from dummyprof.errors import UsageError

FORMATS = ("terminal", "json", "markdown")


def register(app: typer.Typer) -> None:
    app.command(
        "report",
        help="Render a saved results file (from --json) to the terminal, JSON or Markdown. Needs no torch.",
    )(report)


def report(
    path: Annotated[Path, typer.Argument(metavar="RESULTS.json", help="A file written by --json.")],
    format: Annotated[str, typer.Option("--format", "-f", help="terminal, json or markdown.")] = "terminal",
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--output", "-o", metavar="PATH", help="Write to PATH instead of stdout (not for terminal)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Terminal: only the summary line.")] = False,
) -> int:
    from dummyprof.cli.output import EXIT_NOT_WRITTEN, check_outputs, report_error
    from dummyprof.results.outputs import Output, write_outputs
    from dummyprof.results.store import load_results, results_to_json

    if format not in FORMATS:
        raise UsageError("--format", f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}")
    if output is not None:
        if format == "terminal":
            raise UsageError("--output", "terminal output goes to stdout; use --format markdown or json with --output")
        check_outputs({"--output": output}, force=force, inputs={"RESULTS.json": path})
    results = load_results(path)
    if format == "terminal":
        from dummyprof.reports.console import make_console
        from dummyprof.reports.terminal import render

        render(results, make_console(), quiet=quiet)
        return 0
    if format == "json":
        text = results_to_json(results)
    else:
        from dummyprof.reports.markdown import render_markdown

        text = render_markdown(results)
    if output is None:
        sys.stdout.write(text)
        return 0
    failures = write_outputs([(Output("--output", output), text)], force=force)
    for message in failures:
        report_error(message)
    return EXIT_NOT_WRITTEN if failures else 0
