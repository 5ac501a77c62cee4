"""The terminal reporter (Rich): dispatch on the kind of Results, print to a console or render to a string."""

from __future__ import annotations

import io

from rich.console import Console

from dummyprof.reports.console import DataConsole
from dummyprof.reports.kinds import KINDS, summary_line
from dummyprof.reports.notices import environment_line, notices
from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.reports.tables.to_terminal import print_blocks, styled
from dummyprof.results.session import Results


def render(results: Results, console: Console, *, quiet: bool = False, detail: bool = False) -> None:
    """Full tables, or with ``quiet`` only the summary line (first, for a kind whose answer leads)."""
    summary = summary_line(results)
    kind = KINDS[results.command]
    first = kind.headline_first
    if not quiet:
        if first and summary:
            console.print(styled(summary, "strong"))
        print_blocks(console, kind.blocks(kind.section(results), detail))
        for notice in notices(results):
            console.print(styled(f"notice: {notice}", "warn"))
        console.print(styled(environment_line(results), "dim"))
        if first:
            return
    if summary:
        # -q is one line for scripts, whatever the width: a line too long for the terminal is the terminal's to wrap.
        console.print(styled(summary, "strong" if not quiet else ""), soft_wrap=quiet)


def render_text(results: Results, options: RenderOptions) -> str:
    """The terminal report as a string ``options.width`` columns wide, with ANSI styles if ``options.color``.

    Colour still honours NO_COLOR (Rich reads it), as printing to a terminal does.
    """
    buffer = io.StringIO()
    console = DataConsole(
        file=buffer,
        width=options.width,
        force_terminal=options.color,
        color_system="auto" if options.color else None,
        soft_wrap=False,
    )
    render(results, console, quiet=options.quiet, detail=options.detail)
    return buffer.getvalue()


def options_for(console: Console, *, quiet: bool = False, detail: bool = False) -> RenderOptions:
    """Options that make :func:`render_text` write what printing to ``console`` would."""
    return RenderOptions(width=console.width, color=console.color_system is not None, quiet=quiet, detail=detail)


REPORTER = Reporter(
    "terminal",
    ".txt",
    frozenset(KINDS),
    render_text,
    "Rich tables for a person at a terminal",
    lambda options: not options.quiet,  # the compare tables rank the most revisited tensors; -q reads no row
)
