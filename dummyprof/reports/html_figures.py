"""The HTML report's charts per kind of results, as plotly figure JSON (the page's tables hold the same figures).

Built with ``plotly.graph_objects`` (validated attribute names). plotly reads HTML tags in its text, so every
string from the results is escaped first. A strategy, loader or fill method has one colour on every page.
"""

from __future__ import annotations

import colorsys
import math
import sys
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dummyprof.reports.format import estimate_cell, estimate_range, estimate_whisker
from dummyprof.reports.tables.deployment import fill_text, rank_groups
from dummyprof.reports.tables.deployment import ranks_text as rank_text
from dummyprof.reports.tables.engram import dominant_text, reason_text, recommended
from dummyprof.reports.tables.escape import html_text as text
from dummyprof.reports.tables.gate import value_text
from dummyprof.reports.tables.sweep import parameter_label
from dummyprof.results.common import Estimate
from dummyprof.results.compare import CompareResult
from dummyprof.results.deployment import DeploymentResult, RankEntry, layout_text
from dummyprof.results.engram import EngramResult, MethodResult
from dummyprof.results.gate import PASS, CheckResult, GateResult
from dummyprof.results.session import Results
from dummyprof.results.sweep import SweepResult
from dummyprof.units import format_bytes, format_seconds

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
    after_tables: bool = False  # statistics behind the answer: at the end of the page, after the tables


def _chart(fig: Any, *, half: bool = False) -> Chart:
    return Chart(str(fig.to_json()), half)


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _layout(
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


def _hover(texts: list[str]) -> dict[str, Any]:
    """Hovering shows these texts (escaped by the caller), not plotly's own."""
    return {"hovertext": texts, "hoverinfo": "text"}


def _hbar(names: list[str], values: list[float], **more: Any) -> Any:
    """Horizontal bars: a value per name, the first name on top (with ``yaxis=DOWN``)."""
    return _go().Bar(y=names, x=values, orientation="h", **more)


def _labels(texts: list[str], position: str, **at: Any) -> Any:
    """Texts drawn at points (``x``, ``y``), beside the bars they name: no hover, no legend."""
    return _go().Scatter(mode="text", text=texts, textposition=position, hoverinfo="skip", showlegend=False, **at)


def _fit_line(xs: Sequence[float], ys: Sequence[float | None], name: str, paint: str, **more: Any) -> Any:
    """A fitted line, dashed in the colour of the points it was fitted to."""
    return _go().Scatter(x=xs, y=ys, mode="lines", name=name, line={"color": paint, "dash": "dash"}, **more)


def _whiskers(plus: list[float], minus: list[float], **look: Any) -> dict[str, Any]:
    """Error bars from each point up by ``plus`` and down by ``minus``."""
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, **look}


def tail(path: str, parts: int = LABEL_PARTS) -> str:
    """A dotted path's last ``parts`` parts, ``…`` for the rest: ``…mlp.down_proj.weight`` keeps what tells it apart."""
    pieces = path.split(".")
    return path if len(pieces) <= parts else "…" + ".".join(pieces[-parts:])


# --- compare --------------------------------------------------------------------------------------


def compare_sections(results: Results) -> list[Section]:
    result = results.compare
    assert result is not None
    go = _go()
    strategies = result.strategies
    names = [text(s.name) for s in strategies]
    seconds = [s.seconds or 0.0 for s in strategies]
    below, above = zip(*(estimate_whisker(s.time) for s in strategies), strict=True) if strategies else ((), ())
    tops = [s.time.span[1] if s.time.span else y for s, y in zip(strategies, seconds, strict=True)]
    projected = any(s.time.is_projected for s in strategies)
    time_fig = go.Figure(
        [
            go.Bar(
                x=names,
                y=seconds,
                marker={
                    "color": [colour(s.name) for s in strategies],
                    "pattern": {"shape": ["/" if s.time.is_projected else "" for s in strategies]},
                },
                error_y=_whiskers(list(above), list(below), color=WHISKER),
                **_hover([f"{n}: {text(estimate_cell(s.time))}" for n, s in zip(names, strategies, strict=True)]),
                showlegend=False,
            ),
            # The value sits above the whisker's top, so the bar's range never covers it.
            _labels([text(estimate_cell(s.time)) for s in strategies], "top center", x=names, y=tops),
        ]
    )
    top = max(tops, default=0.0)
    whiskers = "hatched: projected, whiskers its interval" if projected else "whiskers: min–max"
    _layout(
        time_fig,
        f"Fill time per strategy on {result.model.device}",
        400,
        subtitle=f"median of {result.repeat} interleaved rounds; {whiskers}",
        yaxis={"title": "seconds", "range": [0, top * 1.18 or 1]},
    )
    paints = [colour(s.name) for s in strategies]
    first = [s.distinct_tensors for s in strategies]
    visits_fig = go.Figure(_visit_bars({"x": names}, first, [s.redundant_visits for s in strategies], paints))
    _layout(visits_fig, "Visits per strategy", 400, barmode="stack", yaxis_title="visits")
    overview = Section(
        "Strategies",
        [f"{result.model.description}: {result.model.tensors:,} tensors, {format_bytes(result.model.bytes)}."],
        [_chart(time_fig, half=True), _chart(visits_fig, half=True)],
    )
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
    ordered = sorted(strategies, key=lambda s: s.max_visits <= PALE_MAX_VISITS)
    for s in ordered:
        compact = s.max_visits <= PALE_MAX_VISITS
        fig, note = _icicle(result, s.name, cmax, COMPACT_HEIGHT if compact else FULL_HEIGHT)
        tree.figures.append(Chart(fig, compact))
        if note:
            tree.text.append(note)
    return [overview, tree]


def _visit_bars(
    at: dict[str, Any], first: list[int], redundant: list[int], paints: list[str], **more: Any
) -> list[Any]:
    """Each bar's first visits, and its redundant ones hatched on top; ``at``: where the bars stand (``x`` or ``y``)."""
    go, value = _go(), "x" if "y" in at else "y"
    hatched = {"color": paints, "opacity": 0.55, "pattern": {"shape": "/", "fgcolor": "#ffffff"}}
    return [
        go.Bar(name="first visit of a storage", marker={"color": paints}, **at, **{value: first}),
        go.Bar(name="redundant visits (hatched)", marker=hatched, **at, **{value: redundant}, **more),
    ]


def _ancestors(path: str) -> list[str]:
    """A module's path and every path above it, the root ("") first."""
    parts = path.split(".") if path else []
    return [".".join(parts[:i]) for i in range(len(parts) + 1)]


Tensor = tuple[str, str, int, int]  # module path, tensor name, bytes, visits
Item = tuple[tuple[str, ...], str, int, int, int]  # module parts, tensor's own name, bytes, visits, parts looked at


def collapse_repeats(tensors: list[Tensor]) -> tuple[dict[str, list[tuple[str, int, int]]], dict[str, int]]:
    """Numbered modules alike (``layers.0`` to ``layers.60``: the same tensors, bytes and visits) as one block.

    Returns module path -> [(tensor name, bytes, visits)] with each run of alike siblings merged into
    ``layers.0-60`` (its tensors' bytes summed, visits as each had them), and each merged path's count.
    Runs at every level of numbering (layers, then the experts inside them).
    """
    items = [
        (tuple(module.split(".")) if module else (), name.rpartition(".")[2], nbytes, visits, 0)
        for module, name, nbytes, visits in tensors
    ]
    repeats: dict[str, int] = {}
    for _ in range(4):  # layers, experts inside them, ...: a few levels of numbered modules
        at: dict[int, int] = {}  # item -> the position of its next numbered part
        for i, (parts, _, _, _, done) in enumerate(items):
            k = next((k for k in range(done, len(parts)) if parts[k].isdigit()), None)
            if k is not None:
                at[i] = k
        if not at:
            break
        siblings: dict[tuple[str, ...], dict[int, list[int]]] = {}
        for i, k in at.items():
            siblings.setdefault(items[i][0][:k], {}).setdefault(int(items[i][0][k]), []).append(i)
        renamed: dict[int, str] = {}
        for prefix, by_index in siblings.items():
            k = len(prefix)

            signature = {
                index: sorted((items[i][0][k + 1 :], items[i][1], items[i][2], items[i][3]) for i in members)
                for index, members in by_index.items()
            }
            run: list[int] = []
            for index in sorted(by_index):
                if run and index == run[-1] + 1 and signature[index] == signature[run[0]]:
                    run.append(index)
                    continue
                _name_run(run, by_index, renamed, repeats, prefix)
                run = [index]
            _name_run(run, by_index, renamed, repeats, prefix)
        merged: dict[tuple[tuple[str, ...], str], Item] = {}
        for i, (parts, leaf, nbytes, visits, done) in enumerate(items):
            if i in at:
                k = at[i]
                parts, done = (*parts[:k], renamed.get(i, parts[k]), *parts[k + 1 :]), k + 1
            before = merged.get((parts, leaf))
            merged[parts, leaf] = (parts, leaf, nbytes + (before[2] if before else 0), visits, done)
        items = list(merged.values())
    own: dict[str, list[tuple[str, int, int]]] = {}
    for parts, leaf, nbytes, visits, _ in items:
        module = ".".join(parts)
        own.setdefault(module, []).append((f"{module}.{leaf}" if module else leaf, nbytes, visits))
    return own, repeats


def _name_run(
    run: list[int],
    by_index: dict[int, list[int]],
    renamed: dict[int, str],
    repeats: dict[str, int],
    prefix: tuple[str, ...],
) -> None:
    """Name a run of alike numbered siblings ``first-last`` (two or more), and count it."""
    if len(run) < 2:
        return
    name = f"{run[0]}-{run[-1]}"
    repeats[".".join((*prefix, name))] = len(run)
    for index in run:
        for i in by_index[index]:
            renamed[i] = name


def _icicle(result: CompareResult, strategy: str, cmax: int, height: int) -> tuple[str, str]:
    """Nodes: modules (by path) and tensors (by qualified name); values are bytes, summed up the tree."""
    go = _go()
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

    ids, labels, parents, values, colours, hover = [], [], [], [], [], []
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
        hover.append(
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
                hover.append(f"{text(name)}<br>{format_bytes(nbytes)}<br>{text(strategy)}: {visits} visit(s)")
    compact = height < FULL_HEIGHT
    fig = go.Figure(
        go.Icicle(
            ids=ids,
            labels=labels,
            parents=parents,
            values=values,
            branchvalues="total",
            marker={"colors": colours, "colorscale": "Reds", "cmin": 0, "cmax": cmax, "showscale": not compact},
            **_hover(hover),
            tiling={"orientation": "v"},
            maxdepth=-1,
        )
    )
    _layout(fig, strategy, height, margin={"t": 36, "l": 10, "r": 10, "b": 10})
    return str(fig.to_json()), note


# --- sweep ----------------------------------------------------------------------------------------

SWEEP_METRICS = (("visits", "visits"), ("time", "median time"), ("bytes", "bytes written"))
SWEEP_UNITS = {"visits": "", "time": "s"}  # bytes: the binary unit that fits the largest
MAX_TICKS = 20  # up to this many swept values, each is a tick of the log x axis


def sweep_sections(results: Results) -> list[Section]:
    result = results.sweep
    assert result is not None
    go = _go()
    label = parameter_label(result)
    section = Section(
        f"Growth over {label}",
        [
            f"{result.scenario} at {', '.join(f'{v:,}' for v in result.values)}; log-log axes, so a power law is a "
            f"straight line whose slope is its exponent. Dashed: least-squares fit over {label} "
            f"{result.fit_from:,}–{result.values[-1] if result.values else 0:,}, with its 95% interval and R² "
            "in the legend."
        ],
    )
    xaxis: dict[str, Any] = {"type": "log", "title": text(label)}
    if 0 < len(result.values) <= MAX_TICKS:
        xaxis.update(tickvals=result.values, ticktext=[f"{v:,}" for v in result.values])
    for metric, axis in SWEEP_METRICS:
        traces = []
        every = [y for series in result.series for y in result.column(series, metric) if y]
        scale, unit = byte_unit(max(every, default=1.0)) if metric == "bytes" else (1.0, SWEEP_UNITS[metric])
        for series in result.series:
            traces.extend(_sweep_series_traces(result, series, metric, axis, scale, unit))
        if not traces:
            continue
        fig = go.Figure(traces)
        low, high = min(every) / scale / 1.3, max(every) / scale * 1.3
        yaxis = {
            "type": "log",
            "title": f"{axis} ({unit})" if metric == "bytes" else axis,
            **log_ticks(low, high, unit),
        }
        _layout(fig, f"{axis} vs {label}", 480, xaxis=xaxis, yaxis=yaxis, font={"size": 13})
        section.figures.append(_chart(fig))
    return [section]


def _sweep_series_traces(
    result: SweepResult, series: str, metric: str, axis: str, scale: float, unit: str
) -> list[Any]:
    """One series' line on a sweep's metric chart, with its fitted power law when it has one; none when the series
    has no value for the metric."""
    go = _go()
    label = parameter_label(result)
    ys = [y / scale if y is not None else None for y in result.column(series, metric)]
    if all(y is None for y in ys):
        return []
    name = text(series)
    hover = [
        f"{name}<br>{text(label)} {x:,}<br>{axis} " + ("n/a" if y is None else tick_text(y, unit))
        for x, y in zip(result.values, ys, strict=True)
    ]
    traces = [
        go.Scatter(
            x=result.values,
            y=ys,
            mode="lines+markers",
            name=name,
            line={"color": colour(series)},
            error_y=_time_errors(result, series) if metric == "time" else None,
            **_hover(hover),
        )
    ]
    fit = result.fit(series, metric)
    if fit is not None:
        xs = [x for x in result.values if fit.x_from <= x <= fit.x_to]
        interval = f" [{fit.ci_low:.2f}, {fit.ci_high:.2f}]" if fit.ci_low is not None else ""
        r2 = f", R² {fit.r_squared:.4f}" if fit.r_squared is not None else ""
        fit_ys = [fit.predict(x) / scale for x in xs]
        fitted = f"{name} fit: exponent {fit.exponent:.2f}{interval}{r2}"
        traces.append(_fit_line(xs, fit_ys, fitted, colour(series), hoverinfo="name"))
    return traces


def _time_errors(result: SweepResult, series: str) -> dict[str, Any] | None:
    plus, minus = [], []
    for point in result.points:
        entry = point.series.get(series)
        below, above = estimate_whisker(entry.time if entry is not None else None)
        plus.append(above)
        minus.append(below)
    if not any(plus) and not any(minus):
        return None
    return _whiskers(plus, minus, thickness=1)


# --- axes and bars shared by engram, deployment ------------------------------------------------------

LINE_COLOUR = "#d62728"  # a deadline or a memory line: the limit a bar is held to
DASHED = {"color": LINE_COLOUR, "dash": "dash", "width": 2}
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


def _mark(fig: Any, at: float, label: str, x: float | None = None, line: dict[str, Any] = DASHED, **note: Any) -> None:
    """A dashed line across the plot at ``at`` (a limit, the baseline), its label above the plot at ``x``."""
    fig.add_shape(type="line", x0=at, x1=at, y0=0, y1=1, yref="paper", line=line)
    fig.add_annotation(
        x=at if x is None else x, y=1, yref="paper", text=label, showarrow=False, yanchor="bottom", **note
    )


def _on(axis: dict[str, Any], value: float) -> float:
    """Where ``value`` sits for a shape or an annotation: plotly places those in log10 units on a log axis."""
    return math.log10(value) if axis.get("type") == "log" else value


@dataclass
class Bar:
    """One horizontal bar: a value in its unit, its colour, the label drawn after it and its hover text."""

    name: str  # escaped by the chart
    value: float
    colour: str
    label: str = ""
    hover: str = ""
    time: Estimate | None = None  # the figure drawn: hatched when projected, its whisker its range


def bar_chart(
    title: str, subtitle: str, bars: list[Bar], unit: str, axis_title: str, line: tuple[float, str] | None = None
) -> Chart:
    """Horizontal bars, top to bottom in the given order, on value_axis, with a dashed line at ``line``'s value."""
    go = _go()
    minus, plus = zip(*(estimate_whisker(b.time) for b in bars), strict=True) if bars else ((), ())
    values = [b.value + up for b, up in zip(bars, plus, strict=True)] + ([line[0]] if line else [])
    values += [b.value - down for b, down in zip(bars, minus, strict=True)]
    axis = value_axis(values, unit, axis_title)
    names = [text(f"{b.name} · {b.label}" if b.label else b.name) for b in bars]  # the value beside its name
    spans = any(b.time is not None and b.time.span is not None for b in bars)
    whiskers = _whiskers(list(plus), list(minus), color=WHISKER) if spans else None
    hatched = ["/" if b.time is not None and b.time.is_projected else "" for b in bars]
    marker = {"color": [b.colour for b in bars], "pattern": {"shape": hatched}}
    hover = _hover([text(b.hover or b.label) for b in bars])
    fig = go.Figure(_hbar(names, [b.value for b in bars], marker=marker, error_x=whiskers, **hover, showlegend=False))
    height = max(260, 46 * len(bars) + 150)
    margin = {"t": 86, "l": 10, "r": 40, "b": 50}
    _layout(fig, title, height, subtitle=subtitle, margin=margin, xaxis=axis, yaxis=DOWN)
    if line is not None:  # the label at the line's log10 on a log axis (plotly's rule for annotations)
        _mark(fig, line[0], text(line[1]), _on(axis, line[0]), font={"color": LINE_COLOUR})
    return _chart(fig)


# --- engram ---------------------------------------------------------------------------------------

PHASE_COLOURS = {"allocate": "#dcdcdc", "first touch": "#9e9e9e"}


def engram_sections(results: Results) -> list[Section]:
    result = results.engram
    assert result is not None
    best = recommended(result)
    section = Section(
        "Engram start-up",
        [
            f"{result.layout.tables} table(s) x {result.layout.rows:,} rows x dim {result.layout.dim}; "
            f"{format_bytes(result.layout.table_bytes_per_rank)} per rank."
        ],
    )
    timed = [m for m in result.methods if m.startup.value is not None]
    if timed:
        bars = []
        for m in timed:
            share = dominant_text(m)
            tags = [estimate_cell(m.startup), *([share] if share else [])]
            tags += ["recommended"] if m is best else ["floor"] if m.name == result.floor_method else []
            bars.append(
                Bar(
                    m.name,
                    m.startup.value or 0.0,
                    colour(m.name),
                    " · ".join(tags),
                    f"{m.name}: start-up {' · '.join(tags)}; fill {estimate_cell(m.time)}",
                    m.startup,
                )
            )
        deadline = result.budget.deadline_s
        line = (deadline, f"deadline {format_seconds(deadline)}") if deadline is not None else None
        section.figures.append(
            bar_chart(
                "Start-up per rank: allocation + first touch + fill",
                "hatched: projected, whiskers its interval; label: start-up and its largest term",
                bars,
                "s",
                "seconds",
                line,
            )
        )
        section.figures.append(_terms_chart(result, timed))
    else:  # a dry run: what each method needs against the memory budget
        scale, unit = byte_unit(max([m.needed_bytes for m in result.methods] + [result.budget.memory_bytes]))
        bars = [
            Bar(
                m.name,
                m.needed_bytes / scale,
                colour(m.name),
                format_bytes(m.needed_bytes) + ("" if m.fits_in_memory else " · does not fit"),
            )
            for m in result.methods
        ]
        budget = (result.budget.memory_bytes / scale, f"memory budget {format_bytes(result.budget.memory_bytes)}")
        section.figures.append(
            bar_chart("Memory each method needs per rank", "tables + scratch", bars, unit, unit, budget)
        )
    return [section, *_projection_sections(result)]


def _terms_chart(result: EngramResult, methods: list[MethodResult]) -> Chart:
    """Each method's start-up as shares of its three terms: which one to work on."""
    go = _go()
    phases = {p.name: p.time for p in result.phases}
    names = [text(m.name) for m in methods]
    terms = [
        (name, [phases[name]] * len(methods), [PHASE_COLOURS[name]] * len(methods))
        for name in PHASE_COLOURS
        if name in phases
    ]
    terms.append(("fill", [m.time for m in methods], [colour(m.name) for m in methods]))
    totals = [m.startup.value or 1.0 for m in methods]
    traces = [
        _hbar(
            names,
            [100 * (f.value or 0.0) / total for f, total in zip(figures, totals, strict=True)],
            name=term,
            marker_color=colours,
            **_hover([f"{n}: {term} {text(estimate_cell(f))}" for n, f in zip(names, figures, strict=True)]),
        )
        for term, figures, colours in terms
    ]
    fig = go.Figure(traces)
    _layout(
        fig,
        "Where the start-up goes",
        max(240, 36 * len(methods) + 150),
        subtitle="share of each start-up: allocation (light grey), first touch (grey), fill (the method's colour)",
        barmode="stack",
        xaxis={"title": "share of start-up", "ticksuffix": " %", "range": [0, 100]},
        yaxis=DOWN,
        showlegend=False,
    )
    return _chart(fig)


def _projection_sections(result: EngramResult) -> list[Section]:
    """How each projection was made: samples, the fitted line and the full-size point on log axes; the statistics."""
    section = Section("How each projection was made", after_tables=True)
    for m in result.methods:
        if m.time_fit is None or not m.samples:
            continue
        interval_text = _projection_interval_text(m)
        section.figures.append(_projection_chart(m, interval_text))
        section.text.append(_projection_note(m, interval_text))
    return [section] if section.figures else []


def _projection_interval_text(m: MethodResult) -> str:
    """The full-size point's 95% interval as the chart's legend and the note append it; empty without one."""
    if m.projection is None or m.time.value is None:
        return ""
    return f", 95% interval {estimate_range(m.projection.time)}"


def _projection_chart(m: MethodResult, interval_text: str) -> Chart:
    """A method's measured rounds, sample medians, fitted line and full-size point on log axes."""
    go = _go()
    fit = m.time_fit
    assert fit is not None
    method_colour = colour(m.name)
    scale, unit = byte_unit(m.bytes_written)
    xs = [s.bytes_written for s in m.samples]
    readings = [(s.bytes_written, r) for s in m.samples for r in s.time.samples]
    line_x = [min(xs) * (m.bytes_written / min(xs)) ** (i / 40) for i in range(41)]
    line = [(x, fit.predict(x)) for x in line_x]
    line = [(x, y) for x, y in line if y > 0]
    projection = m.projection
    full_error = None
    if projection is not None and m.time.value is not None:
        below, above = estimate_whisker(projection.time)
        full_error = _whiskers([above], [below])
    full = m.time.value
    fitted = f"fit {text(fit.model)}, R² {fit.r_squared:.3f}"
    fig = go.Figure(
        [
            go.Scatter(
                x=[x / scale for x, _ in readings],
                y=[y for _, y in readings],
                mode="markers",
                name="measured rounds at sample sizes",
                marker={"size": 6, "opacity": 0.5, "color": method_colour},
            ),
            go.Scatter(
                x=[x / scale for x in xs],
                y=[s.time.value for s in m.samples],
                mode="markers",
                name="sample medians",
                marker={"size": 10, "symbol": "diamond", "color": method_colour},
            ),
            _fit_line([x / scale for x, _ in line], [y for _, y in line], fitted, method_colour),
            go.Scatter(
                x=[m.bytes_written / scale],
                y=[full],
                mode="markers",
                marker={"symbol": "x", "size": 12, "color": WHISKER},
                error_y=full_error,
                name=("projected at full size" if m.time.is_projected else "measured at full size")
                + text(interval_text),
            ),
        ]
    )
    ys = [y for _, y in readings] + [y for _, y in line] + ([full] if full else [])
    ys += [projection.time.high] if projection is not None and projection.time.high is not None else []
    _layout(
        fig,
        f"{m.name}: {m.mode}{' (' + reason_text(m) + ')' if reason_text(m) else ''}",
        420,
        xaxis=value_axis([x / scale for x in [*xs, m.bytes_written]], unit, "written on this rank"),
        yaxis=value_axis(ys, "s", "seconds"),
    )
    return _chart(fig, half=True)


def _projection_note(m: MethodResult, interval_text: str) -> str:
    """The statistics under a method's projection chart: its sample sizes and spread, the fit, how far it reaches."""
    fit = m.time_fit
    assert fit is not None
    projection = m.projection
    xs = [s.bytes_written for s in m.samples]
    spread = Estimate.measured([s.time.value or 0.0 for s in m.samples])
    fallback = f"; the line was not used ({projection.fallback})" if projection and projection.fallback else ""
    bound = f"; raised to this run's {projection.ceiling_name} bound" if projection and projection.bounded else ""
    return (
        f"{m.name}: {len(m.samples)} sample sizes up to {format_bytes(max(xs))} "
        f"({format_seconds(spread.low)}–{format_seconds(spread.high)}); "
        f"fit R² {fit.r_squared:.3f}, reaching {m.bytes_written / max(xs):,.1f}x past the largest sample"
        f"{interval_text}{fallback}{bound}."
    )


# --- deployment -----------------------------------------------------------------------------------

# What a rank's device bytes are, one entry a kind (label, colour, bytes of a rank), stacked in this order; what
# is left of its device bytes is drawn as SHARDED. A kind the Results gain is one entry. A quantized shard's
# weights are split by vLLM 0.33's fill rule (``fill_kinds``), a plain one's by replication and padding.
QUANTIZED_KINDS: tuple[tuple[str, str, Callable[[RankEntry], int]], ...] = (
    ("fp8 weights", "#4c78a8", lambda r: r.fill_kinds.get("fp8", 0)),
    ("scales", "#f58518", lambda r: r.fill_kinds.get("scale", 0)),
    ("int8/uint8 (packed)", "#72b7b2", lambda r: r.fill_kinds.get("integer", 0)),
    ("int32/int64 (left as allocated)", "#b279a2", lambda r: r.fill_kinds.get("skipped", 0)),
    ("unquantized weights", "#9ecae9", lambda r: r.fill_kinds.get("float", 0)),
    ("declared values", "#bab0ac", lambda r: r.fill_kinds.get("declared", 0)),
)
PLAIN_KINDS: tuple[tuple[str, str, Callable[[RankEntry], int]], ...] = (
    ("replicated (whole on every rank)", "#ff9896", lambda r: r.replicated_bytes),
    ("vocabulary padding", "#c7c7c7", lambda r: r.padding_bytes),
)
ENGINE_KIND = ("load buffers: not weights (rotary cache, expert map, kv scales)", "#e45756", lambda r: r.engine_bytes)
SHARDED = ("sharded weights", "#4c78a8")
HOST = ("host: CPU-offloaded (hatched)", "#8c8c8c")


def deployment_sections(results: Results) -> list[Section]:
    result = results.deployment
    assert result is not None
    groups = rank_groups(result)
    labels = [text(("ranks " if len(g) > 1 or g[0].copies > 1 else "rank ") + rank_text(g, result.tp)) for g in groups]
    section = Section(
        "Ranks", [f"{result.description}: {layout_text(result)} = {result.world} ranks; ranks alike share a bar."]
    )
    section.figures.append(_held_chart(result, groups, labels))
    section.figures.append(_rank_visits_chart(groups, labels))
    timed = [
        (label, s) for g, label in zip(groups, labels, strict=True) for s in g[0].strategies if s.seconds is not None
    ]
    if timed:
        bars = [
            Bar(
                f"{label} · {s.strategy}",
                s.seconds or 0.0,
                colour(s.strategy),
                fill_text(s),
                time=s.time,
            )
            for label, s in timed
        ]
        projected = any(b.time is not None and b.time.is_projected for b in bars)
        whiskers = "hatched: projected, whiskers its interval" if projected else "whiskers: min–max"
        title = f"Fill time per rank and strategy on {result.device}"  # a CPU time is never read as a GPU one
        section.figures.append(bar_chart(title, whiskers, bars, "s", "seconds"))
    return [section]


def _held_chart(result: DeploymentResult, groups: list[list[RankEntry]], labels: list[str]) -> Chart:
    """Bytes each rank holds on its device, stacked by kind, against the device memory; host-offloaded bytes apart."""
    go = _go()
    ranks = [g[0] for g in groups]
    offloaded = any(r.offloaded_bytes for r in ranks)
    device_memory = result.device_memory_bytes
    scale, unit = byte_unit(max([r.held_bytes for r in ranks] + [device_memory or 0]))
    rows = labels + ([f"{label} · host" for label in labels] if offloaded else [])
    traces = [
        _hbar(
            rows,
            [b / scale for b in values] + [0.0] * (len(rows) - len(ranks)),
            name=text(name),
            marker_color=paint,
            **_hover([f"{label}: {text(name)} {format_bytes(b)}" for label, b in zip(labels, values, strict=True)]),
        )
        for name, paint, values in _held_kinds(ranks)
        if any(values)
    ]
    if offloaded:
        host = [f"{label}: host {format_bytes(r.offloaded_bytes)}" for label, r in zip(labels, ranks, strict=True)]
        x = [0.0] * len(ranks) + [r.offloaded_bytes / scale for r in ranks]
        look = {"color": HOST[1], "pattern": {"shape": "/"}}
        traces.append(_hbar(rows, x, name=HOST[0], marker=look, **_hover([""] * len(ranks) + host)))
    totals = [r.device_bytes for r in ranks] + ([r.offloaded_bytes for r in ranks] if offloaded else [])
    totals_x = [t / scale for t in totals]
    fig = go.Figure([*traces, _labels([format_bytes(t) for t in totals], "middle right", y=rows, x=totals_x)])
    top = max([*totals, device_memory or 0]) / scale
    _layout(
        fig,
        f"Bytes each rank holds: {_held_verdict(result)}",
        max(280, 50 * len(rows) + 170),
        subtitle="device bytes stacked by kind"
        + (f" against the device memory ({format_bytes(device_memory)})" if device_memory else "")
        + ("; CPU-offloaded tables on the host, apart" if offloaded else ""),
        barmode="stack",
        xaxis={"ticksuffix": f" {unit}", "range": [0, top * 1.25]},  # no title: the legend sits there
        yaxis=DOWN,
    )
    if device_memory is not None:
        _mark(fig, device_memory / scale, f"device memory {format_bytes(device_memory)}", font={"color": LINE_COLOUR})
    return _chart(fig)


def _held_kinds(ranks: list[RankEntry]) -> list[tuple[str, str, list[int]]]:
    """The kinds a rank's device bytes stack by, in order: each one's label, colour and bytes per rank."""
    quantized = any(r.fill_kinds for r in ranks)
    chosen = (*(QUANTIZED_KINDS if quantized else PLAIN_KINDS), ENGINE_KIND)
    kinds = [(name, paint, [get(r) for r in ranks]) for name, paint, get in chosen]
    # The rest of the device bytes: sharded weights (for a quantized shard, any weight no fill rule counted)
    sharded = [r.device_bytes - sum(k[2][i] for k in kinds) for i, r in enumerate(ranks)]
    rest = ("other weights" if quantized else SHARDED[0], SHARDED[1], sharded)
    return [*kinds[:-1], rest, kinds[-1]] if quantized else [rest, *kinds]


def _held_verdict(result: DeploymentResult) -> str:
    """Whether the ranks fit in the device memory, as the held chart's title says it."""
    if result.device_memory_bytes is None:
        return "no --device-memory given: the fit is not checked"
    short = sum(r.copies for r in result.ranks if r.device_fits is False)
    return f"{short} of {result.world} ranks over device memory" if short else f"all {result.world} ranks fit"


def _rank_visits_chart(groups: list[list[RankEntry]], labels: list[str]) -> Chart:
    """Visits per rank and strategy: first visits, and the redundant ones hatched on top (as on compare's page)."""
    go = _go()
    rows = [(label, s) for g, label in zip(groups, labels, strict=True) for s in g[0].strategies]
    names = [f"{label} · {text(s.strategy)}" for label, s in rows]
    paints = [colour(s.strategy) for _, s in rows]
    first, redundant = [s.visits - s.redundant_visits for _, s in rows], [s.redundant_visits for _, s in rows]
    totals = [f"{s.visits:,} ({s.redundant_visits:,} redundant)" for _, s in rows]
    outside = {"text": totals, "textposition": "outside", "cliponaxis": False}
    fig = go.Figure(_visit_bars({"y": names, "orientation": "h"}, first, redundant, paints, **outside))
    _layout(
        fig,
        "Visits per rank and strategy",
        max(260, 40 * len(rows) + 170),
        barmode="stack",
        xaxis={"title": "visits", "range": [0, max((s.visits for _, s in rows), default=1) * 1.35]},
        yaxis=DOWN,
    )
    return _chart(fig)


# --- gate -----------------------------------------------------------------------------------------

VERDICT_COLOURS = {
    "pass": "#2ca02c",
    "improved": "#1f77b4",
    "regressed": "#d62728",
    "not significant": "#8fbc8f",
    "not comparable": "#ff7f0e",
    "could not measure": "#7f7f7f",
    "not judged": "#bcbd22",
}


def _ratio(check: CheckResult) -> float | None:
    """Now over baseline; 1 when both are 0 (a counter that stayed at 0), None when only the baseline is 0."""
    if check.baseline is None or check.current is None:
        return None
    if check.baseline == 0:
        return 1.0 if check.current == 0 else None
    return check.current / check.baseline


MOVED_SHOWN = 20  # checks drawn at most: those closest to failing


def gate_sections(results: Results) -> list[Section]:
    """What differs: the checks whose value moved from the baseline (or did not pass), closest to failing first."""
    section = results.gate
    assert section is not None
    out = Section(
        "Gate verdicts" if results.command == "gate" else "Baseline",
        [f"config {section.config_path}; baseline {section.baseline_path or 'none'}; exit code {section.exit_code}."],
    )
    compared = [c for c in section.checks if c.baseline is not None and c.current is not None]
    moved = [c for c in compared if c.verdict != PASS or _ratio(c) != 1.0]
    # Failing first, then the highest now / baseline (a time or a count grown is nearest its bound).
    moved.sort(key=lambda c: (c.verdict == PASS, -(_ratio(c) or math.inf)))
    shown = moved[:MOVED_SHOWN]
    if compared and not moved:
        out.text.append(f"All {len(compared)} checks equal their baselines: nothing to draw (the table lists them).")
    if shown:
        out.figures.append(_moved_chart(section, shown, moved, len(compared)))
    return [out]


def _moved_chart(section: GateResult, shown: list[CheckResult], moved: list[CheckResult], compared: int) -> Chart:
    """The checks shown, as now / baseline bars coloured by verdict, against the baseline and the gate's factor."""
    go = _go()
    ids = [text(c.check_id) for c in shown]
    ratios = [_ratio(c) for c in shown]
    now_text = [
        f"{text(value_text(c.current, c.unit))} ({text(c.verdict)}); baseline {text(value_text(c.baseline, c.unit))}"
        for c in shown
    ]
    paints = [VERDICT_COLOURS.get(c.verdict, "#333333") for c in shown]
    fig = go.Figure(
        [
            _hbar(
                ids,
                [r or 0.0 for r in ratios],
                name="now / baseline",
                marker_color=paints,
                **_hover(now_text),
                showlegend=False,
            ),
            # A mark at every check's ratio, so a check at 0 (or one with no ratio) still shows where it is.
            go.Scatter(
                name="now (value)",
                y=ids,
                x=[r if r is not None else 0.0 for r in ratios],
                mode="markers+text",
                marker={
                    "symbol": ["line-ns" if r is not None else "x-thin" for r in ratios],
                    "size": 16,
                    "line": {"width": 3, "color": paints},
                },
                text=now_text,
                textposition="middle right",
                **_hover(now_text),
                showlegend=False,
            ),
        ]
    )
    widest = max([r for r in ratios if r is not None] + [section.factor])
    of = f"the {len(shown)} closest to failing of {len(moved)}" if len(moved) > len(shown) else f"{len(moved)}"
    _layout(
        fig,
        f"Checks that moved from the baseline ({of}; {compared - len(moved)} equal it)",
        max(300, 34 * len(shown) + 140),
        subtitle="now / baseline, colour = verdict; failing first, then the highest ratio",
        xaxis={"title": "now / baseline", "range": [0, widest * 2.2]},
        yaxis={"automargin": True, "autorange": "reversed"},
        margin={"t": 96},
    )
    for at, label in (
        (1.0, "baseline"),
        (section.factor, f"x{section.factor:.2f}: a time past it (and significant) regresses"),
    ):
        grey = at == 1.0
        look = {"color": "#999999" if grey else LINE_COLOUR, "dash": "dash"}
        _mark(fig, at, text(label), line=look, xanchor="right" if grey else "left")
    return _chart(fig)


# --- audit ----------------------------------------------------------------------------------------

AUDIT_COUNTS = ("tensors written", "writes", "tensors written more than once")


def audit_sections(results: Results) -> list[Section]:
    result = results.audit
    assert result is not None
    go = _go()
    fig = go.Figure(
        [
            go.Bar(
                name=text(f.name),
                x=list(AUDIT_COUNTS),
                y=[f.tensors_written, f.writes, f.repeated_tensors],
                marker_color=colour(f.name),
            )
            for f in result.fillers
        ]
    )
    _layout(fig, "Writes per filler (colour: filler)", 400, barmode="group")
    summary = f"{len(result.failing)} failing finding(s), {len(result.findings)} in all."
    return [Section("Audit", [summary], [_chart(fig)])]


SECTIONS = {
    "compare": compare_sections,
    "deployment": deployment_sections,
    "sweep": sweep_sections,
    "engram": engram_sections,
    "gate": gate_sections,
    "baseline": gate_sections,
    "audit": audit_sections,
}
