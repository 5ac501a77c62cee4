"""The HTML report's charts, as plotly figure JSON: a chart for each charted column of the command's table blocks
(:func:`table_charts`), the look every chart shares, and compare's module icicle (a picture no table holds).

A column charts when it declares a unit (``Column.unit``: a time or a byte count) and its cells carry the figure
behind their text (``Cell.value``): one bar per row, whiskers from the row's Estimate, the device the times were
taken on in the title. The tables under the charts hold every figure. Built with ``plotly.graph_objects``
(validated attribute names). plotly reads HTML tags in its text, so every string from the results is escaped
first. A strategy, loader or fill method has one colour on every page.
"""

from __future__ import annotations

import colorsys
import math
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dummyprof.reports.format import estimate_whisker
from dummyprof.reports.tables.escape import html_text as text
from dummyprof.reports.tables.model import BYTES, TIME, Block, Column, Table
from dummyprof.results.common import Estimate
from dummyprof.results.compare import CompareResult
from dummyprof.units import format_bytes

MAX_TREE_NODES = 3000  # icicle nodes; past this the tree shows modules only, to a depth that fits
TEMPLATE = "plotly_white"
FULL_HEIGHT = 520  # an icicle worth reading closely
COMPACT_HEIGHT = 280  # an icicle of one colour: every tensor filled at most twice
PALE_MAX_VISITS = 2
LABEL_PARTS = 3  # an icicle label keeps the last three parts of a dotted path
WHISKER = "#444444"

# Built-in strategies, the loader dummyprof names and Engram's fill methods, each its own colour.
# Any other name (a user's strategy or loader) gets one from its name's hash: the same on every page.
COLOURS = {
    "legacy": "#d62728",
    "per-layer": "#1f77b4",
    "unique": "#2ca02c",
    "hf-init": "#ff7f0e",
    "vllm": "#393b79",
    "sglang": "#637939",
    "random-convert": "#8c564b",
    "random-scratch": "#9467bd",
    "random-chunked": "#e377c2",
    "random-fast": "#17becf",
    "constant": "#bcbd22",
    "memset": "#2f4f4f",
}


def colour(name: str) -> str:
    """The colour of a strategy, loader or fill method on every chart of every page."""
    known = COLOURS.get(name)
    if known is not None:
        return known
    hue = zlib.crc32(name.encode("utf-8", "surrogatepass")) % 360 / 360
    red, green, blue = colorsys.hls_to_rgb(hue, 0.42, 0.6)
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


@dataclass
class Chart:
    figure: str  # Plotly figure JSON
    half: bool = False  # half the page width: two such charts side by side


@dataclass
class Section:
    title: str
    text: list[str] = field(default_factory=list)  # paragraphs (escaped by the page)
    figures: list[Chart] = field(default_factory=list)


def chart(fig: Any, *, half: bool = False) -> Chart:
    return Chart(str(fig.to_json()), half)


def plotly() -> Any:
    import plotly.graph_objects as go

    return go


def layout(
    fig: Any, title: str, height: int, subtitle: str = "", margin: dict[str, int] | None = None, **more: Any
) -> None:
    """The look every chart shares: the title (escaped here), legend under the plot, margins that fit the labels."""
    heading: dict[str, Any] = {"text": text(title), "x": 0.01}
    if subtitle:
        heading["subtitle"] = {"text": text(subtitle)}
    fig.update_layout(
        template=TEMPLATE,
        title=heading,
        height=height,
        legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
        margin={"t": 64, "l": 70, "r": 20, "b": 40, **(margin or {})},
        **more,
    )


def hover(texts: list[str]) -> dict[str, Any]:
    """Hovering shows these texts (escaped by the caller), not plotly's own."""
    return {"hovertext": texts, "hoverinfo": "text"}


def whiskers(figures: Sequence[Estimate | None], scale: float = 1.0, **look: Any) -> dict[str, Any] | None:
    """Error bars from each figure's range (``estimate_whisker``) in units of ``scale``; None where none has one."""
    ends = [estimate_whisker(f) for f in figures]
    if not any(below or above for below, above in ends):
        return None
    minus, plus = ([end[i] / scale for end in ends] for i in (0, 1))
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, **look}


def tail(path: str) -> str:
    """A dotted path's last parts (LABEL_PARTS), ``…`` for the rest: ``…mlp.down_proj.weight`` tells it apart."""
    pieces = path.split(".")
    return path if len(pieces) <= LABEL_PARTS else "…" + ".".join(pieces[-LABEL_PARTS:])


HALF_ROWS = 6  # a chart of this many bars or fewer takes half the page's width
DOWN = {"autorange": "reversed", "automargin": True}  # horizontal bars: the first on top, the names in the margin
LOG_SPAN = 10  # values spanning more than this factor go on a log axis, so the small ones are not flattened


def byte_unit(top: float) -> tuple[float, str]:
    """The binary unit a figure of ``top`` bytes reads in (the tables' units): its divisor and name."""
    for power, unit in enumerate(("B", "KiB", "MiB", "GiB")):
        if abs(top) < 1024 ** (power + 1):
            return 1024.0**power, unit
    return 1024.0**4, "TiB"


def tick_text(value: float, unit: str) -> str:
    """A tick's label with its unit: seconds as the tables write them (``100 ms``), anything else plainly."""
    size, name = (1.0, unit)
    if unit == "s":
        size, name = next(((size, name) for size, name in ((1.0, "s"), (1e-3, "ms")) if value >= size), (1e-6, "µs"))
    return (f"{value / size:,.6f}".rstrip("0").rstrip(".") + f" {name}").rstrip()  # never 2e+04


def log_ticks(low: float, high: float, unit: str) -> dict[str, Any]:
    """Ticks at 1, 2 and 5 of each decade from ``low`` to ``high`` (1 only past six decades), with the unit."""
    # 10.0**308 overflows a float: only a hand-edited file holds such a figure, and it still renders
    decades = range(math.floor(math.log10(low)), min(math.ceil(math.log10(high)), 307) + 1)
    steps = (1, 2, 5) if len(decades) <= 6 else (1,)
    values = [step * 10.0**k for k in decades for step in steps if low <= step * 10.0**k <= high]
    return {"tickvals": values, "ticktext": [tick_text(v, unit) for v in values]}


def value_axis(values: list[float], unit: str, title: str) -> dict[str, Any]:
    """An axis from 0, or a log axis where the values span more than LOG_SPAN; every tick carries the unit."""
    positive = [v for v in values if v > 0]
    axis: dict[str, Any] = {"title": text(title), "ticksuffix": f" {unit}", "exponentformat": "none"}
    if positive and max(positive) / min(positive) > LOG_SPAN:
        low, high = min(positive) / 1.6, min(max(positive) * 1.6, sys.float_info.max)
        axis.update(type="log", range=[math.log10(low), math.log10(high)], ticksuffix="", **log_ticks(low, high, unit))
    else:
        axis["range"] = [0, min(max(positive, default=1.0) * 1.3, sys.float_info.max)]
    return axis


# --- charts from table blocks ---------------------------------------------------------------------


def table_charts(blocks: Sequence[Block], device: str) -> list[Chart]:
    """A bar chart for each column of a table that declares a unit and whose cells carry their figures."""
    charts = [
        _column_chart(block, i, device)
        for block in blocks
        if isinstance(block, Table)
        for i, column in enumerate(block.columns)
        if column.unit
    ]
    return [chart for chart in charts if chart is not None]


def _row_names(table: Table) -> list[str]:
    """Each row's key cells joined (``0-7 · legacy``); a blank key is the row above's (a group named once)."""
    names, keys = [], [""] * min(table.keys, len(table.columns))
    for row in table.rows:
        keys = [row[i].text or above for i, above in enumerate(keys)]
        names.append(" · ".join(k for k in keys if k))
    return names


def _figures(table: Table, index: int) -> list[tuple[str, str, Estimate]]:
    """Each row's name, the text of its cell in column ``index`` and the figure behind it; rows without one left out."""
    rows = []
    for name, row in zip(_row_names(table), table.rows, strict=True):
        value = row[index].value
        figure = value if isinstance(value, Estimate) else Estimate(value)
        if figure.value is not None:
            rows.append((name, row[index].text, figure))
    return rows


def _column_chart(table: Table, index: int, device: str) -> Chart | None:
    """One bar per row with a figure in column ``index``: its text beside the row's name, hatched when projected,
    whiskers its range; a time's chart names the device it was taken on."""
    column, rows = table.columns[index], _figures(table, index)
    if not rows:
        return None
    scale, unit = byte_unit(max(f.value or 0.0 for _, _, f in rows)) if column.unit == BYTES else (1.0, TIME)
    values = [(f.value or 0.0) / scale for _, _, f in rows]
    ends = [end / scale for _, _, f in rows if f.span is not None for end in f.span]  # the whiskers' ends
    error = whiskers([f for _, _, f in rows], scale, color=WHISKER)
    hatched = ["/" if f.is_projected else "" for _, _, f in rows]
    bars = plotly().Bar(  # horizontal, the first row on top (DOWN), its figure as the table writes it beside its name
        y=[text(f"{name} · {cell}") for name, cell, _ in rows],
        x=values,
        orientation="h",
        marker={"color": [colour(name.rpartition(" · ")[2]) for name, _, _ in rows], "pattern": {"shape": hatched}},
        error_x=error,
        **hover([text(f"{name}: {cell}") for name, cell, _ in rows]),
        showlegend=False,
    )
    taken = next((f.device for _, _, f in rows if f.device), device)
    title, subtitle = _headings(table, column, taken, any(hatched), error is not None)
    fig = plotly().Figure(bars)
    height, margin = max(260, 46 * len(rows) + 150), {"t": 86, "l": 10, "r": 40, "b": 50}
    layout(fig, title, height, subtitle, margin, xaxis=value_axis(values + ends, unit, column.header), yaxis=DOWN)
    return chart(fig, half=len(rows) <= HALF_ROWS)


def _headings(table: Table, column: Column, device: str, projected: bool, ranged: bool) -> tuple[str, str]:
    """The column by the table's key columns, a time on the device it was taken on; the table's title under it."""
    keys = " and ".join(c.header for c in table.columns[: max(1, table.keys)])
    where = f" on {device}" if column.unit == TIME and device not in column.header else ""
    legend = "hatched: projected, whiskers its interval" if projected else "whiskers: fastest–slowest round"
    return f"{column.header} by {keys}{where}", table.title + (f"; {legend}" if ranged or projected else "")


# --- compare: the module icicle --------------------------------------------------------------------


def compare_sections(result: CompareResult) -> list[Section]:
    tree = Section(
        "Module tree: area = bytes, colour = visits per tensor",
        [
            "One icicle per strategy, root on top; a module's label is its path (the last parts) and its depth. "
            "A tensor's colour is how many times the strategy filled it; a module's is the byte-weighted mean over "
            f"its subtree. Strategies that filled no tensor more than {PALE_MAX_VISITS} times get a smaller "
            "picture. Hover for names and counts; click to zoom."
        ],
    )
    cmax = max((max(t.visits.values(), default=0) for t in result.tensors.values()), default=1)
    # The telling icicles first, full width; the pale ones after them, two to a row.
    ordered = sorted(result.strategies, key=lambda s: s.max_visits <= PALE_MAX_VISITS)
    for s in ordered:
        compact = s.max_visits <= PALE_MAX_VISITS
        fig, note = _icicle(result, s.name, cmax, COMPACT_HEIGHT if compact else FULL_HEIGHT)
        tree.figures.append(Chart(fig, compact))
        if note:
            tree.text.append(note)
    return [tree]


def _ancestors(path: str) -> list[str]:
    """A module's path and every path above it, the root ("") first."""
    parts = path.split(".") if path else []
    return [".".join(parts[:i]) for i in range(len(parts) + 1)]


Tensor = tuple[str, str, int, int]  # module path, tensor name, bytes, visits
Owned = dict[str, list[tuple[str, int, int]]]  # module path -> its own tensors' (qualified name, bytes, visits)


@dataclass
class _Module:
    tensors: list[tuple[str, int, int]] = field(default_factory=list)  # its own: (name in it, bytes, visits)
    children: dict[str, _Module] = field(default_factory=dict)

    def shape(self) -> tuple[object, ...]:
        """What makes two modules alike: their tensors, bytes and visits, all the way down."""
        return sorted(self.tensors), sorted((name, child.shape()) for name, child in self.children.items())

    def times(self, n: int) -> _Module:
        """``n`` alike modules as one: its tensors' bytes summed, visits as each had them."""
        children = {name: child.times(n) for name, child in self.children.items()}
        return _Module([(name, n * nbytes, visits) for name, nbytes, visits in self.tensors], children)


def collapse_repeats(tensors: list[Tensor]) -> tuple[Owned, dict[str, int]]:
    """Numbered modules alike (``layers.0`` to ``layers.60``: the same tensors, bytes and visits) as one block.

    Returns module path -> [(tensor name, bytes, visits)] with each run of alike siblings merged into
    ``layers.0-60``, and each merged path's count. Runs at every level of numbering (layers, then the experts
    inside them).
    """
    root = _Module()
    for module, name, nbytes, visits in tensors:
        node = root
        for part in module.split(".") if module else []:
            node = node.children.setdefault(part, _Module())
        node.tensors.append((name.rpartition(".")[2], nbytes, visits))
    own: Owned = {}
    repeats: dict[str, int] = {}
    _collapse(root, "", own, repeats)
    return own, repeats


def _collapse(node: _Module, path: str, own: Owned, repeats: dict[str, int]) -> None:
    """Merge each run of consecutive alike numbered children of ``node`` (its first's shape), then theirs."""
    numbered = sorted((int(name), name) for name in node.children if name.isdigit())
    shapes = {name: node.children[name].shape() for _, name in numbered}
    runs: list[list[tuple[int, str]]] = []
    for index, name in numbered:
        run = runs[-1] if runs else None
        if run and index == run[-1][0] + 1 and shapes[name] == shapes[run[0][1]]:
            run.append((index, name))
        else:
            runs.append([(index, name)])
    for run in (run for run in runs if len(run) > 1):
        merged = f"{run[0][0]}-{run[-1][0]}"
        node.children[merged] = node.children[run[0][1]].times(len(run))
        for _, name in run:
            del node.children[name]
        repeats[f"{path}.{merged}" if path else merged] = len(run)
    if node.tensors:
        own[path] = [(f"{path}.{name}" if path else name, nbytes, visits) for name, nbytes, visits in node.tensors]
    for name, child in node.children.items():
        _collapse(child, f"{path}.{name}" if path else name, own, repeats)


def _icicle(result: CompareResult, strategy: str, cmax: int, height: int) -> tuple[str, str]:
    """Nodes: modules (by path) and tensors (by qualified name); values are bytes, summed up the tree."""
    go = plotly()
    own, repeats = collapse_repeats(
        [(t.module, name, t.nbytes, t.visits.get(strategy, 0)) for name, t in result.tensors.items()]
    )
    modules: set[str] = {""}.union(*(_ancestors(path) for path in own))

    def depth(path: str) -> int:
        return path.count(".") + 1 if path else 0

    node_count = len(modules) + len(result.tensors)
    max_depth = max(map(depth, modules))
    note = ""
    show_tensors = node_count <= MAX_TREE_NODES
    if not show_tensors:
        while max_depth > 0 and sum(1 for m in modules if depth(m) <= max_depth) > MAX_TREE_NODES:
            max_depth -= 1
        note = (
            f"{node_count:,} nodes are too many to draw: modules down to depth {max_depth} are shown, "
            "each with its whole subtree's bytes; tensors are left out."
        )
    # Bytes and visit-weighted bytes of every module's subtree.
    total: dict[str, float] = dict.fromkeys(modules, 0.0)
    weighted: dict[str, float] = dict.fromkeys(modules, 0.0)
    for path, tensors in own.items():
        for _, nbytes, visits in tensors:
            for ancestor in _ancestors(path):
                total[ancestor] += nbytes
                weighted[ancestor] += nbytes * visits

    ids, labels, parents, values, colours, hovers = [], [], [], [], [], []
    for path in sorted(modules, key=lambda m: (depth(m), m)):
        if depth(path) > max_depth:
            continue
        ids.append(f"m:{path}")
        times = f" ×{repeats[path]}" if path in repeats else ""
        labels.append(text(f"{tail(path)}{times} · depth {depth(path)}") if path else "model")
        parents.append("" if not path else f"m:{path.rpartition('.')[0]}")
        values.append(total[path])
        mean = weighted[path] / total[path] if total[path] else 0.0
        colours.append(mean)
        alike = f"<br>{repeats[path]} alike modules, their bytes together" if path in repeats else ""
        hovers.append(
            f"module {text(path or 'model (root)')}<br>depth {depth(path)}<br>{format_bytes(total[path])}"
            f"<br>mean visits {mean:.2f}{alike}"
        )
    if show_tensors:
        for path, tensors in own.items():
            for name, nbytes, visits in tensors:
                ids.append(f"t:{name}")
                labels.append(text(tail(name)))
                parents.append(f"m:{path}")
                values.append(float(nbytes))
                colours.append(float(visits))
                hovers.append(f"{text(name)}<br>{format_bytes(nbytes)}<br>{text(strategy)}: {visits} visit(s)")
    compact = height < FULL_HEIGHT
    fig = go.Figure(
        go.Icicle(
            ids=ids,
            labels=labels,
            parents=parents,
            values=values,
            branchvalues="total",
            marker={"colors": colours, "colorscale": "Reds", "cmin": 0, "cmax": cmax, "showscale": not compact},
            **hover(hovers),
            tiling={"orientation": "v"},
            maxdepth=-1,
        )
    )
    layout(fig, strategy, height, margin={"t": 36, "l": 10, "r": 10, "b": 10})
    return str(fig.to_json()), note
