"""Blocks as Markdown (a CI step summary), every cell escaped: a name with ``|`` or a newline stays one cell."""

from __future__ import annotations

from collections.abc import Sequence

from dummyprof.reports.tables.escape import markdown_code, markdown_text
from dummyprof.reports.tables.model import BAD, CODE, NUMBER, STRONG, WARN, Block, Cell, Line, Table


def _cell(cell: Cell) -> str:
    if cell.emphasis == CODE and cell.text:
        return markdown_code(cell.text)
    text = markdown_text(cell.text)
    text = f"**{text}**" if cell.emphasis in (BAD, STRONG) and text else text
    return f"{text}<br>_{markdown_text(cell.under)}_" if cell.under else text


def table_lines(table: Table) -> list[str]:
    shown = table.shown()
    lines = [f"**{markdown_text(table.title)}**", ""] if table.title else []
    header = [Cell(table.columns[i].header if table.show_header else "") for i in shown]
    rows = [[row[i] for i in shown] for row in table.rows]
    for row, depth in zip(rows, table.depths or [], strict=False):  # a tree: the first cell indented
        row[0] = Cell("\u00a0\u00a0" * depth + row[0].text, row[0].emphasis)
    rule = "| " + " | ".join("---:" if table.columns[i].kind == NUMBER else "---" for i in shown) + " |"
    body = ["| " + " | ".join(_cell(c) for c in row) + " |" for row in [header, *rows]]
    lines += [body[0], rule, *body[1:]]
    if explained := table.explained():
        lines += ["", f"_{markdown_text('; '.join(explained))}_"]
    return lines


def line_text(line: Line) -> str:
    text = markdown_text(line.text)
    if line.emphasis == WARN:
        return f"> {text}"
    if line.emphasis == STRONG:
        return f"**{text}**"
    return text


def markdown_blocks(blocks: Sequence[Block]) -> list[str]:
    """Each block a paragraph of its own (a blank line between), so lines never run together."""
    lines: list[str] = []
    for block in blocks:
        if lines:
            lines.append("")
        lines += [line_text(block)] if isinstance(block, Line) else table_lines(block)
    return lines
