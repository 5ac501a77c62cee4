"""Blocks to a Rich console, at any width from 80 columns.

No outer edge and no vertical rules: a table costs two spaces a column and nothing else. Names stay
whole: a table too wide for the console is split into parts that each repeat its key columns, a dotted
tensor name is shortened by eliding its middle segments, and figures never wrap; words fold or wrap,
nothing is cut with '…', and long sentences go under the table, not into cells.
Every string is escaped first (control characters spelled out) and printed as ``Text``, never as markup.
"""

from __future__ import annotations

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text
from rich.tree import Tree

from dummyprof.reports.tables import model
from dummyprof.reports.tables.escape import visible
from dummyprof.reports.tables.model import NAME, NUMBER, PATH, TEXT, WORD, Block, Cell, Line, Table

STYLES = {model.BAD: "red", model.WARN: "yellow", model.STRONG: "bold", model.DIM: "dim", model.GOOD: "green"}
STYLES[model.CODE] = "cyan"  # a type name, as Rich draws one
ELLIPSIS = "…"
PATH_FLOOR = 24  # a tensor name is never shortened below this; the table is split instead


def styled(text: str, emphasis: str = "") -> Text:
    """``text`` as literal Rich text (no markup), control characters spelled out."""
    return Text(visible(text), style=STYLES.get(emphasis, ""))


def elide_path(name: str, width: int) -> str:
    """``name`` in at most ``width`` cells, eliding middle segments of a dotted path; the last parts stay.

    ``model.layers.0.mlp.down_proj.weight`` at 28 -> ``model.….mlp.down_proj.weight``. A last segment
    longer than ``width`` is returned whole (the column folds it rather than lose its end).
    """
    if cell_len(name) <= width:
        return name
    parts = name.split(".")
    if len(parts) < 3:
        return name

    def kept(head: list[str]) -> list[str]:
        """As many last segments as fit after ``head`` and the ellipsis."""
        tail: list[str] = []
        for part in reversed(parts[len(head) :]):
            if cell_len(".".join([*head, ELLIPSIS, part, *tail])) > width:
                break
            tail.insert(0, part)
        return tail

    with_head, alone = kept(parts[:1]), kept([])
    if with_head and len(with_head) >= len(alone):  # the end tells tensors apart; the head only if it costs none
        return ".".join([parts[0], ELLIPSIS, *with_head])
    return ".".join([ELLIPSIS, *alone]) if alone else name


def _two_segments(name: str) -> int:
    """The width of ``name`` shortened to its last two dotted parts: the least a tensor name is shown with."""
    parts = name.split(".")
    return cell_len(name) if len(parts) <= 3 else cell_len(".".join([ELLIPSIS, *parts[-2:]]))


def _least(table: Table, i: int, texts: list[list[str]]) -> int:
    """The narrowest column ``i`` can be: its longest word for words that wrap, else its longest cell."""
    cells = [text[i] for text in texts]
    if table.show_header:
        cells.append(visible(table.columns[i].header))
    if table.columns[i].kind == TEXT:
        cells = [word for cell in cells for word in cell.split()]
    return max((cell_len(cell) for cell in cells), default=0)


def _natural(columns: list[int], table: Table, texts: list[list[str]]) -> int:
    """The least width the table takes (two columns a column: its padding), words wrapped, figures whole."""
    return sum(_least(table, i, texts) + 2 for i in columns)


def _rich(table: Table, columns: list[int], texts: list[list[str]], title: str | None, tight: bool) -> RichTable:
    rich = RichTable(
        title=Text(visible(title)) if title else None,
        title_justify="left",
        box=box.SIMPLE_HEAD,  # a rule under the header, no edge: about two columns a column
        show_edge=False,
        collapse_padding=True,
        caption_justify="left",
        show_header=table.show_header,
    )
    for i in columns:
        kind = table.columns[i].kind
        header = visible(table.columns[i].header)
        if kind == NAME:
            rich.add_column(header, style="bold", no_wrap=True)
        elif kind == NUMBER:
            rich.add_column(header, justify="right", no_wrap=True)
        elif kind in (WORD, PATH):
            rich.add_column(header, no_wrap=kind == WORD, overflow="fold")
        else:
            rich.add_column(header, overflow="fold", max_width=table.columns[i].tight if tight else None)
    for n, (row, text) in enumerate(zip(table.rows, texts, strict=True)):
        rich.add_row(*(_text(row[i], text[i]) for i in columns), end_section=n in table.section_ends)
    return rich


def _text(cell: Cell, text: str) -> Text:
    """A cell's (escaped) text in its style, and the dim line under it if it has one."""
    shown = Text(text, style=STYLES.get(cell.emphasis, ""))
    return Text.assemble(shown, "\n", styled(cell.under, model.DIM)) if cell.under else shown


def rich_tree(table: Table) -> Tree:
    """A table whose rows carry depths, as a tree: a row's name (bold) and kind, then its other cells (`` · ``)."""
    assert table.depths is not None
    shown = table.shown()
    labels = []
    for row in table.rows:
        cells = [
            styled(row[i].text, model.STRONG if n == 0 else row[i].emphasis) for n, i in enumerate(shown) if row[i].text
        ]
        labels.append(Text(" · ").join([Text(" ").join(cells[:2]), *cells[2:]]))
    root = Tree(labels[0])  # the inspect report draws a tree only for a model with modules
    parents = [root]
    for label, depth in zip(labels[1:], table.depths[1:], strict=True):
        del parents[max(depth, 1) :]
        parents.append(parents[-1].add(label))
    return root


def column_groups(width: int, key_width: int, widths: list[int]) -> list[list[int]]:
    """Split value columns (their text widths) into as few groups as fit ``width`` beside the key column.

    A table costs two columns a column (padding and the space between) and two at its ends. The groups
    are as even as the widths allow (no lone last column); a column wider than the line gets its own.
    """

    def fits(group: list[int]) -> bool:
        return key_width + 2 + sum(widths[i] + 2 for i in group) <= width

    greedy: list[list[int]] = []
    for i in range(len(widths)):
        if greedy and fits([*greedy[-1], i]):
            greedy[-1].append(i)
        else:
            greedy.append([i])
    count = len(greedy)
    if count <= 1:
        return greedy
    size = -(-len(widths) // count)  # as even as the count allows, if that still fits
    even = [list(range(start, min(start + size, len(widths)))) for start in range(0, len(widths), size)]
    return even if len(even) == count and all(fits(g) for g in even) else greedy


def rich_tables(table: Table, width: int) -> list[RichTable]:
    """``table`` as one Rich table if it fits ``width``, else as parts that each repeat the key columns."""
    shown = table.shown()
    texts = [[visible(cell.text) for cell in row] for row in table.rows]
    paths = [i for i in shown if table.columns[i].kind == PATH]
    for i in paths:  # shorten the names only as far as the rest of the table needs
        others = _natural([j for j in shown if j != i], table, texts)
        keep = max((_two_segments(text[i]) for text in texts), default=0)  # else split the table instead
        room = max(width - others - 2, PATH_FLOOR, keep)
        for text in texts:
            text[i] = elide_path(text[i], room)
    keys = [i for i in shown if i < table.keys]
    values = [i for i in shown if i >= table.keys]
    # Short of room for every cell on one line: the columns with a ``tight`` width wrap to it first.
    longest = [max((cell_len(visible(row[i].under or row[i].text)) for row in table.rows), default=0) for i in shown]
    tight = sum(longest) + 2 * len(shown) > width
    if _natural(shown, table, texts) <= width or len(values) < 2:
        return [_rich(table, shown, texts, table.title or None, tight)]
    widths = [_least(table, i, texts) for i in values]
    groups = column_groups(width, _natural(keys, table, texts) - 2, widths)
    parts = []
    for n, group in enumerate(groups, start=1):
        title = f"{table.title} ({n}/{len(groups)})" if table.title else None
        parts.append(_rich(table, keys + [values[j] for j in group], texts, title, tight))
    return parts


def print_blocks(console: Console, blocks: list[Block]) -> None:
    for block in blocks:
        if isinstance(block, Line):
            console.print(styled(block.text, block.emphasis))
            continue
        for part in [rich_tree(block)] if block.depths is not None else rich_tables(block, console.width):
            console.print(part)
        if explained := block.explained():
            console.print(styled("; ".join(explained), model.DIM))
