"""The Markdown reporter (e.g. for a CI step summary): a heading, the summary, the command's blocks, a footer."""

from __future__ import annotations

from dummyprof.reports.kinds import KINDS, summary_line
from dummyprof.reports.notices import environment_line, notices
from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.reports.tables.escape import markdown_text
from dummyprof.reports.tables.to_markdown import markdown_blocks
from dummyprof.results.session import Results


def render_markdown(results: Results, options: RenderOptions | None = None) -> str:
    kind = KINDS[results.command]
    blocks = markdown_blocks(kind.blocks(kind.section(results), True))
    lines = [f"## dummyprof {results.command}", "", f"**{markdown_text(summary_line(results))}**", "", *blocks]
    lines += ["", f"<sub>{markdown_text(f'{environment_line(results)}, {results.created_at}')}</sub>"]
    for notice in notices(results):
        lines.append(f"> notice: {markdown_text(notice)}")
    return "\n".join(lines).rstrip() + "\n"


REPORTER = Reporter(
    "markdown",
    ".md",
    frozenset(KINDS),
    render_markdown,
    "tables for a CI step summary or a pull request",  # reads compare's tensor rows: it ranks the most revisited
)
