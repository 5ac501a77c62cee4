"""Blocks as HTML fragments for the page (``reports/html.py``): a table is one ``<table class="dp-table">``,
every string escaped, its notes in a ``<tfoot>``; :data:`TABLE_CSS` styles its classes."""

from __future__ import annotations

from collections.abc import Sequence

from dummyprof.reports.tables.escape import html_text as escape
from dummyprof.reports.tables.model import NAME, NUMBER, Block, Line, Table

TABLE_CSS = (
    ".dp-table{border-collapse:collapse;margin:1em 0}"
    ".dp-table caption{text-align:left;font-weight:bold}"
    ".dp-table th,.dp-table td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}"
    ".dp-table .num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    ".dp-table .name,.strong{font-weight:bold}.bad{color:#b00}.warn{color:#a60}.dim{color:#666}.good{color:#070}"
    ".dp-table tfoot td{color:#666;font-size:90%;border:0}"
    # Notes wrap within the columns' width: a long note never stretches the table across the page.
    ".dp-table .notes{contain:inline-size}"
)


def _classes(*names: str) -> str:
    joined = " ".join(n for n in names if n)
    return f' class="{joined}"' if joined else ""


def html_table(table: Table) -> str:
    shown = table.shown()
    kinds = {NUMBER: "num", NAME: "name"}
    out = ['<table class="dp-table">']
    if table.title:
        out.append(f"<caption>{escape(table.title)}</caption>")
    if table.show_header:
        heads = "".join(
            f"<th{_classes(kinds.get(table.columns[i].kind, ''))}>{escape(table.columns[i].header)}</th>" for i in shown
        )
        out.append(f"<thead><tr>{heads}</tr></thead>")
    out.append("<tbody>")
    for row in table.rows:
        cells = "".join(
            f"<td{_classes(kinds.get(table.columns[i].kind, ''), row[i].emphasis)}>{escape(row[i].text)}</td>"
            for i in shown
        )
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody>")
    if explained := table.explained():
        notes = escape("; ".join(explained))
        out.append(f'<tfoot><tr><td colspan="{len(shown)}"><div class="notes">{notes}</div></td></tr></tfoot>')
    out.append("</table>")
    return "\n".join(out)


def html_blocks(blocks: Sequence[Block]) -> str:
    return "\n".join(
        f"<p{_classes(block.emphasis)}>{escape(block.text)}</p>" if isinstance(block, Line) else html_table(block)
        for block in blocks
    )
