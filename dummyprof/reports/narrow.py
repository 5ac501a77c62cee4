"""Rich tables for 80 and 120 columns, shared by the terminal reporters (issue #13).

No outer edge and no vertical rules: a table costs two spaces a column and nothing else.
Text columns fold or wrap on words; nothing is cut with '…'. Long sentences go under the
table as captions or lines, not into cells.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.table import Table
from rich.text import Text

from dummyprof.reports.format import unavailable_text
from dummyprof.results.common import Figure
from dummyprof.units import format_seconds

# A projected figure (from smaller samples, not measured at full size) is shown as ``~1.23 s``.
PROJECTED_MARK = "~"
PROJECTED_NOTE = "~: projected from smaller samples, not measured"


def narrow_table(title: str | Text | None = None, **kwargs: object) -> Table:
    """A table with a left-aligned title, a rule under the header and no edge (about 2 columns a column)."""
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        collapse_padding=True,
        caption_justify="left",
        **kwargs,  # type: ignore[arg-type]
    )


def projected(text: str, figure: Figure) -> str:
    """``~text`` for a projected figure, ``text`` for a measured one."""
    return f"{PROJECTED_MARK}{text}" if figure.projected else text


def projected_seconds(figure: Figure) -> str:
    """A time as a cell: ``~1.23 s`` when projected, ``n/a`` when unavailable."""
    return projected(format_seconds(figure.value), figure) if figure.value is not None else "n/a"


def any_projected(figures: Iterable[Figure]) -> bool:
    return any(f.projected and f.value is not None for f in figures)


def same_unavailable(figures: list[Figure]) -> str | None:
    """The shared reason when a figure is unavailable for every row, else None."""
    reasons = {f.unavailable for f in figures}
    if figures and all(f.value is None for f in figures) and len(reasons) == 1:
        return unavailable_text(next(iter(reasons)) or "unavailable")
    return None


def rank_ranges(ranks: list[int]) -> str:
    """``0-3,6`` for ranks 0, 1, 2, 3 and 6: short, and one word (it never wraps)."""
    parts: list[str] = []
    start = prev = None
    for r in sorted(ranks):
        if prev is not None and r == prev + 1:
            prev = r
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = r
    if start is not None:
        parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


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
