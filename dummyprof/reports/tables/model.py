"""What a report is made of: tables (columns, cells with emphasis, notes under them) and lines.

The model holds words and figures, never markup: a backend escapes every string it is given
(names from a model or a file are data) and turns emphasis into its own syntax.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dummyprof.results.common import Estimate

# Column kinds. NAME: a row's name, bold, kept whole; WORD: a short word kept whole; NUMBER: a
# right-aligned figure that never wraps; TEXT: words that wrap; PATH: a dotted tensor name that a
# narrow terminal shortens by eliding its middle (``model.….mlp.down_proj.weight``).
NAME, WORD, NUMBER, TEXT, PATH = "name", "word", "number", "text", "path"

# Emphasis: what a figure means to the reader, not how it looks; each backend picks the look.
# CODE: an identifier a reader may copy (a Markdown code span); GOOD: a verdict that passed.
PLAIN, BAD, WARN, STRONG, DIM, CODE, GOOD = "", "bad", "warn", "strong", "dim", "code", "good"

# A column's unit, where its cells carry the figure behind their text (``Cell.value``): the HTML page draws
# such a column as a chart, a bar per row (``reports/html_figures.table_charts``). TIME: seconds, BYTES: bytes.
TIME, BYTES = "s", "B"


@dataclass(frozen=True)
class Cell:
    text: str
    emphasis: str = PLAIN
    under: str = ""  # a dim second line under the text (a gate check's rule), kept out of the cell's width
    value: Estimate | float | None = None  # the figure the text writes, in its column's unit (a chart reads it)


@dataclass(frozen=True)
class Column:
    header: str
    kind: str = TEXT
    tight: int | None = None  # TEXT only: the width its words wrap to first where a terminal is short of room
    unit: str = ""  # TIME or BYTES: the cells carry their figures and the HTML page charts the column
    legend: str = ""  # what the column holds: said under every table that shows the column, before its notes


ColumnSpec = tuple[str, str] | Column  # ``(header, kind)``, or a Column with more said
Field = tuple[ColumnSpec, Callable[[Any], "str | Cell"]]  # a column and the cell it makes of a row's item


@dataclass
class Table:
    """A titled table. ``keys`` leading columns are repeated in each part when a terminal splits it to fit."""

    title: str
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the headers and marks mean, under the table
    show_header: bool = True
    keys: int = 1
    section_ends: set[int] = field(default_factory=set)  # rows a rule follows (the last check of a scenario)
    depths: list[int] | None = None  # a tree: each row's depth; the terminal draws the rows as a tree

    @classmethod
    def of(
        cls,
        title: str,
        columns: Sequence[ColumnSpec],
        rows: Sequence[Sequence[str | Cell]],
        **kwargs: object,
    ) -> Table:
        """A table of ``(header, kind)`` columns (or Columns) and its rows at once."""
        shaped = [c if isinstance(c, Column) else Column(*c) for c in columns]
        table = cls(title, shaped, **kwargs)  # type: ignore[arg-type]
        for row in rows:
            table.add(*row)
        return table

    @classmethod
    def over(cls, title: str, fields: Sequence[Field], items: Iterable[Any], **kwargs: object) -> Table:
        """A row per item, a column per field: the column beside the cell it makes, so the two never drift."""
        return cls.of(title, [c for c, _ in fields], [[cell(item) for _, cell in fields] for item in items], **kwargs)

    def add(self, *cells: str | Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns in {self.title!r}")
        self.rows.append([c if isinstance(c, Cell) else Cell(c) for c in cells])

    def end_section(self) -> None:
        """A rule under the last row added (terminal only: the other formats group by the cells)."""
        if self.rows:
            self.section_ends.add(len(self.rows) - 1)

    def explained(self) -> list[str]:
        """The lines under the table: the legends of the columns it shows (``header: legend``), then its notes."""
        shown = self.shown()
        return [f"{c.header}: {c.legend}" for i, c in enumerate(self.columns) if c.legend and i in shown] + self.notes

    def shown(self) -> list[int]:
        """The columns with a cell in some row (a column empty everywhere says nothing)."""
        if not self.rows:
            return list(range(len(self.columns)))
        return [i for i in range(len(self.columns)) if any(row[i].text for row in self.rows)]


@dataclass(frozen=True)
class Line:
    """A sentence between tables: ``WARN`` for a warning, ``STRONG`` for the answer, ``DIM`` for detail."""

    text: str
    emphasis: str = PLAIN


Block = Table | Line
