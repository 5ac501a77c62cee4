"""The Markdown reporter (e.g. for a CI step summary): a heading, the summary, the command's blocks, a footer."""

from __future__ import annotations

from dummyprof.reports.notices import environment_line, notices
from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.reports.summary import summary_line
from dummyprof.reports.tables.escape import markdown_text
from dummyprof.reports.tables.kinds import BLOCKS
from dummyprof.reports.tables.to_markdown import markdown_blocks, md_table
from dummyprof.results.session import Results

__all__ = ["REPORTER", "md_table", "render_markdown"]


def render_markdown(results: Results) -> str:
    lines = [f"## dummyprof {results.command}", ""]
    blocks = BLOCKS.get(results.command)
    if blocks is not None:  # the answer first
        lines += [f"**{markdown_text(summary_line(results))}**", "", *markdown_blocks(blocks(results, True))]
    else:
        lines += [f"_no Markdown renderer for {markdown_text(results.command)!r}_"]
    lines += ["", f"<sub>{markdown_text(f'{environment_line(results)}, {results.created_at}')}</sub>"]
    for notice in notices(results):
        lines.append(f"> notice: {markdown_text(notice)}")
    return "\n".join(lines).rstrip() + "\n"


def render(results: Results, options: RenderOptions) -> str:
    return render_markdown(results)


def reads_tensor_rows(options: RenderOptions) -> bool:
    """compare's section ranks the most revisited tensors, as the terminal's does."""
    return True


REPORTER = Reporter(
    "markdown",
    ".md",
    frozenset(BLOCKS),
    render,
    "tables for a CI step summary or a pull request",
    reads_tensor_rows,
)
