"""One table model for every command (issue #18 item 3): the terminal and Markdown carry the same tables.

Each kind's blocks are built once (its ``Kind`` in ``reports/kinds/``); the terminal and Markdown reporters only lay
them out. So every table title, header and note the terminal prints is in the Markdown too.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from dummyprof.reports.kinds import KINDS
from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.reports.tables.model import BAD, NAME, NUMBER, Cell, Line, Table
from dummyprof.reports.tables.to_markdown import markdown_blocks
from dummyprof.reports.tables.to_terminal import print_blocks
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from tests.fixtures.results import gate_results
from tests.test_multirank_units import _gathered

SAVED = Path(__file__).parent / "fixtures" / "results"


def _documents() -> dict[str, Results]:
    saved = {p.stem: load_results(p) for p in sorted(SAVED.glob("*.json"))}
    return {**saved, "gate-every-verdict": gate_results(), "ranks": _gathered()}


@pytest.mark.parametrize("name", sorted(_documents()))
def test_markdown_carries_every_table_and_header_the_terminal_shows(name: str) -> None:
    results = _documents()[name]
    kind = KINDS[results.command]
    blocks = kind.blocks(kind.section(results), True)
    tables = [b for b in blocks if isinstance(b, Table)]
    assert tables, name  # every kind is built as blocks, none is a format's own section
    markdown = " ".join(render(results, "markdown").replace("\\", "").split())
    terminal = " ".join(render(results, "terminal", RenderOptions(width=200, detail=True)).split())
    for table in tables:
        if table.title:
            assert table.title in terminal and f"**{table.title}**" in markdown, table.title
        for i in table.shown():
            if table.show_header and table.depths is None:
                assert table.columns[i].header in terminal and f"| {table.columns[i].header} |" in markdown
        for note in table.notes:
            assert note in markdown and note.split(";")[0] in terminal


def _tree() -> Table:
    table = Table.of("", [("module", NAME), ("type", "word"), ("bytes", NUMBER)], [], depths=[0, 1, 2, 1])
    table.add("<root>", "Model", "3 B")
    table.add("a", "Block", "2 B")
    table.add("b", "Linear", Cell("1 B", BAD))
    table.add("c", "Linear", "")
    return table


def test_a_tree_is_a_rich_tree_on_the_terminal_and_an_indented_table_in_markdown() -> None:
    buffer = io.StringIO()
    print_blocks(Console(file=buffer, width=80, no_color=True), [_tree()])
    assert buffer.getvalue().splitlines() == [
        "<root> Model · 3 B",
        "├── a Block · 2 B",
        "│   └── b Linear · 1 B",
        "└── c Linear",
    ]
    rows = markdown_blocks([_tree()])[2:]
    assert rows == [
        "| \\<root> | Model | 3 B |",
        "| \u00a0\u00a0a | Block | 2 B |",
        "| \u00a0\u00a0\u00a0\u00a0b | Linear | **1 B** |",
        "| \u00a0\u00a0c | Linear |  |",
    ]


def test_a_line_under_a_cell_and_a_rule_after_a_section() -> None:
    table = Table.of("checks", [("check", "text"), ("verdict", "text")], [])
    table.add(Cell("scenario", "strong"), "")
    table.add(Cell("x.visits", under="limit <= 2"), "pass")
    table.end_section()
    table.add(Cell("y.visits"), "pass")
    buffer = io.StringIO()
    print_blocks(Console(file=buffer, width=40, no_color=True), [table, Line("done")])
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    # the line under the check, then the section's end (a blank line in this edgeless box)
    assert lines[3:] == [" scenario", " x.visits    pass", " limit <= 2", "", " y.visits    pass", "done"]
    markdown = markdown_blocks([table])
    assert "| x.visits<br>_limit <= 2_ | pass |" in markdown
