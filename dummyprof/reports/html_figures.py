"""Plotly figures (as plain JSON dicts) for each kind of results, the charts of the HTML report.

The figures a chart shows are in the page's tables too: the command's blocks (``tables/kinds.py``).

Figures are built with ``plotly.graph_objects`` (validated attribute names) and
handed to the page as JSON; the page draws them with plotly.js. Every string from the
results is escaped before it goes into a figure or a table (``tables/escape.py``):
plotly reads HTML tags in its text. Each strategy, loader or fill method has one colour,
the same on every chart of every page (:func:`colour`). Torch-free.
"""

from __future__ import annotations

import colorsys
import zlib
from dataclasses import dataclass, field
from typing import Any

from dummyprof.reports.tables.engram import reason_text
from dummyprof.reports.tables.escape import html_text as text
from dummyprof.reports.tables.gate import value_text
from dummyprof.reports.tables.sweep import parameter_label
from dummyprof.results.compare import CompareResult, StrategyResult
from dummyprof.results.gate import CheckResult
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


def _chart(fig: Any, *, half: bool = False) -> Chart:
    return Chart(str(fig.to_json()), half)


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def _layout(fig: Any, title: str, height: int, subtitle: str = "", **more: Any) -> None:
    """The look every chart shares: the title (escaped here), legend under the plot, margins that fit the labels."""
    heading: dict[str, Any] = {"text": text(title), "x": 0.01}
    if subtitle:
        heading["subtitle"] = {"text": text(subtitle)}
    fig.update_layout(
        template=TEMPLATE,
        title=heading,
        height=height,
        legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
        margin={"t": 64, "l": 70, "r": 20, "b": 40},
        **more,
    )


def _whiskers(plus: list[float], minus: list[float], **look: Any) -> dict[str, Any]:
    """Error bars from each point up by ``plus`` and down by ``minus``."""
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, **look}


def tail(path: str, parts: int = LABEL_PARTS) -> str:
    """A dotted path's last ``parts`` parts, ``…`` for the rest: ``…mlp.down_proj.weight`` keeps what tells it apart."""
    pieces = path.split(".")
    return path if len(pieces) <= parts else "…" + ".".join(pieces[-parts:])


# --- compare --------------------------------------------------------------------------------------


def _time_label(s: StrategyResult) -> str:
    if s.timing.samples_s:
        return format_seconds(s.timing.median)
    return f"~{format_seconds(s.seconds)} projected" if s.seconds is not None else "n/a"


def _time_range(s: StrategyResult) -> tuple[float, float] | None:
    """The whisker: min–max of the measured rounds, or a projection's interval."""
    if len(s.timing.samples_s) >= 2 and s.timing.min is not None and s.timing.max is not None:
        return s.timing.min, s.timing.max
    if not s.timing.samples_s and s.projection is not None:
        return s.projection.low_s, s.projection.high_s
    return None


def compare_sections(results: Results) -> list[Section]:
    result = results.compare
    assert result is not None
    go = _go()
    strategies = result.strategies
    names = [text(s.name) for s in strategies]
    seconds = [s.seconds or 0.0 for s in strategies]
    ranges = [_time_range(s) or (y, y) for s, y in zip(strategies, seconds, strict=True)]
    projected = any(not s.timing.samples_s and s.projection is not None for s in strategies)
    time_fig = go.Figure(
        [
            go.Bar(
                x=names,
                y=seconds,
                marker={
                    "color": [colour(s.name) for s in strategies],
                    "pattern": {"shape": ["" if s.timing.samples_s else "/" for s in strategies]},
                },
                error_y=_whiskers(
                    [high - y for (_, high), y in zip(ranges, seconds, strict=True)],
                    [y - low for (low, _), y in zip(ranges, seconds, strict=True)],
                    color=WHISKER,
                ),
                hovertext=[f"{n}: {text(_time_label(s))}" for n, s in zip(names, strategies, strict=True)],
                hoverinfo="text",
                showlegend=False,
            ),
            # The value sits above the whisker's top, so the bar's range never covers it.
            go.Scatter(
                x=names,
                y=[high for _, high in ranges],
                mode="text",
                text=[text(_time_label(s)) for s in strategies],
                textposition="top center",
                hoverinfo="skip",
                showlegend=False,
            ),
        ]
    )
    top = max((high for _, high in ranges), default=0.0)
    whiskers = "hatched: projected, whiskers its interval" if projected else "whiskers: min–max"
    _layout(
        time_fig,
        f"Fill time per strategy on {result.model.device}",
        400,
        subtitle=f"median of {result.repeat} interleaved rounds; {whiskers}",
        yaxis={"title": "seconds", "range": [0, top * 1.18 or 1]},
    )
    visits_fig = go.Figure(
        [
            go.Bar(
                name="first visit of a storage",
                x=names,
                y=[s.distinct_tensors for s in strategies],
                marker={"color": [colour(s.name) for s in strategies]},
            ),
            go.Bar(
                name="redundant visits (hatched)",
                x=names,
                y=[s.redundant_visits for s in strategies],
                marker={
                    "color": [colour(s.name) for s in strategies],
                    "opacity": 0.55,
                    "pattern": {"shape": "/", "fgcolor": "#ffffff"},
                },
            ),
        ]
    )
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


def _ancestors(path: str) -> list[str]:
    """A module's path and every path above it, the root ("") first."""
    parts = path.split(".") if path else []
    return [".".join(parts[:i]) for i in range(len(parts) + 1)]


def _icicle(result: CompareResult, strategy: str, cmax: int, height: int) -> tuple[str, str]:
    """Nodes: modules (by path) and tensors (by qualified name); values are bytes, summed up the tree."""
    go = _go()
    own: dict[str, list[tuple[str, int, int]]] = {}  # module path -> [(tensor name, bytes, visits)]
    for name, t in result.tensors.items():
        own.setdefault(t.module, []).append((name, t.nbytes, t.visits.get(strategy, 0)))
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
        labels.append(text(f"{tail(path)} · depth {depth(path)}") if path else "model")
        parents.append("" if not path else f"m:{path.rpartition('.')[0]}")
        values.append(total[path])
        mean = weighted[path] / total[path] if total[path] else 0.0
        colours.append(mean)
        hover.append(
            f"module {text(path or 'model (root)')}<br>depth {depth(path)}<br>{format_bytes(total[path])}"
            f"<br>mean visits {mean:.2f}"
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
            hovertext=hover,
            hoverinfo="text",
            tiling={"orientation": "v"},
            maxdepth=-1,
        )
    )
    _layout(fig, strategy, height)
    fig.update_layout(margin={"t": 36, "l": 10, "r": 10, "b": 10})
    return str(fig.to_json()), note


# --- sweep ----------------------------------------------------------------------------------------

SWEEP_METRICS = (("visits", "visits"), ("time", "median time (s)"), ("bytes", "bytes written"))
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
        for series in result.series:
            ys = result.column(series, metric)
            if all(y is None for y in ys):
                continue
            name = text(series)
            traces.append(
                go.Scatter(
                    x=result.values,
                    y=ys,
                    mode="lines+markers",
                    name=name,
                    line={"color": colour(series)},
                    error_y=_time_errors(result, series) if metric == "time" else None,
                    hovertext=[
                        f"{name}<br>{text(label)} {x:,}<br>{axis} " + ("n/a" if y is None else f"{y:.4g}")
                        for x, y in zip(result.values, ys, strict=True)
                    ],
                    hoverinfo="text",
                )
            )
            fit = result.fit(series, metric)
            if fit is not None:
                xs = [x for x in result.values if fit.x_from <= x <= fit.x_to]
                interval = f" [{fit.ci_low:.2f}, {fit.ci_high:.2f}]" if fit.ci_low is not None else ""
                r2 = f", R² {fit.r_squared:.4f}" if fit.r_squared is not None else ""
                traces.append(
                    go.Scatter(
                        x=xs,
                        y=[fit.predict(x) for x in xs],
                        mode="lines",
                        name=f"{name} fit: exponent {fit.exponent:.2f}{interval}{r2}",
                        line={"color": colour(series), "dash": "dash"},
                        hoverinfo="name",
                    )
                )
        if not traces:
            continue
        fig = go.Figure(traces)
        _layout(fig, f"{axis} vs {label}", 480, xaxis=xaxis, yaxis={"type": "log", "title": axis})
        section.figures.append(_chart(fig))
    return [section]


def _time_errors(result: SweepResult, series: str) -> dict[str, Any] | None:
    plus, minus = [], []
    for point in result.points:
        entry = point.series.get(series)
        if entry is None or entry.seconds is None or len(entry.samples_s) < 2:
            plus.append(0.0)
            minus.append(0.0)
        else:
            plus.append(max(entry.samples_s) - entry.seconds)
            minus.append(entry.seconds - min(entry.samples_s))
    if not any(plus) and not any(minus):
        return None
    return _whiskers(plus, minus, thickness=1)


# --- engram ---------------------------------------------------------------------------------------

PHASE_COLOURS = {"allocate": "#dcdcdc", "first touch": "#b5b5b5"}


def engram_sections(results: Results) -> list[Section]:
    result = results.engram
    assert result is not None
    go = _go()
    phases = {p.name: p for p in result.phases}
    methods = [m for m in result.methods if m.mode != "planned"]
    names = [text(f"{m.name} (projected)" if m.seconds.projected else m.name) for m in methods]
    traces = []
    for phase_name in ("allocate", "first touch"):
        phase = phases.get(phase_name)
        if phase is None or phase.seconds.value is None:
            continue
        label = f"{phase_name}{' (projected)' if phase.seconds.projected else ''}"
        traces.append(
            go.Bar(name=label, x=names, y=[phase.seconds.value] * len(methods), marker_color=PHASE_COLOURS[phase_name])
        )
    traces.append(
        go.Bar(
            name="fill (colour: method; hatched: projected)",
            x=names,
            y=[m.seconds.value for m in methods],
            marker={
                "color": [colour(m.name) for m in methods],
                "pattern": {"shape": ["/" if m.seconds.projected else "" for m in methods]},
            },
        )
    )
    startup = go.Figure(traces)
    _layout(
        startup,
        f"Start-up per fill method on {results.environment.device}: allocation + first touch + fill "
        "(hatched: projected)",
        440,
        barmode="stack",
        yaxis_title="seconds",
    )
    if result.budget.deadline_s:
        startup.add_hline(y=result.budget.deadline_s, line_dash="dot", annotation_text="deadline")
    section = Section(
        "Engram start-up",
        [
            f"{result.layout.tables} table(s) x {result.layout.rows:,} rows x dim {result.layout.dim}; "
            f"{format_bytes(result.layout.table_bytes_per_rank)} per rank."
        ],
        [_chart(startup)],
    )
    for m in result.methods:
        if m.time_fit is None or not m.samples:
            continue
        fit = m.time_fit
        method_colour = colour(m.name)
        # The fits are in bytes written (the sizes' rows times bytes per row), as the projection is.
        xs = [s.bytes_written for s in m.samples]
        full_size = m.bytes_written
        line_x = [0, full_size]
        readings = [(s.bytes_written, r) for s in m.samples for r in (s.readings_s or [s.seconds])]
        projection = m.projection
        full_error = None
        interval_text = ""
        if projection is not None and m.seconds.value is not None:
            full_error = _whiskers(
                [max(0.0, projection.high_s - m.seconds.value)], [max(0.0, m.seconds.value - projection.low_s)]
            )
            interval_text = f", 95% interval {projection.low_s:.3g}–{projection.high_s:.3g} s ({projection.interval})"
        fig = go.Figure(
            [
                go.Scatter(
                    x=[x for x, _ in readings],
                    y=[y for _, y in readings],
                    mode="markers",
                    name="measured rounds at sample sizes",
                    marker={"size": 6, "opacity": 0.5, "color": method_colour},
                ),
                go.Scatter(
                    x=xs,
                    y=[s.seconds for s in m.samples],
                    mode="markers",
                    name="sample medians",
                    marker={"size": 10, "symbol": "diamond", "color": method_colour},
                ),
                go.Scatter(
                    x=line_x,
                    y=[fit.predict(x) for x in line_x],
                    mode="lines",
                    name=f"fit {text(fit.model)}, R² {fit.r_squared:.3f}",
                    line={"dash": "dash", "color": method_colour},
                ),
                go.Scatter(
                    x=[full_size],
                    y=[m.seconds.value],
                    mode="markers",
                    marker={"symbol": "x", "size": 12, "color": WHISKER},
                    error_y=full_error,
                    name=("projected at full size" if m.seconds.projected else "measured at full size")
                    + text(interval_text),
                ),
            ]
        )
        _layout(
            fig,
            f"{m.name}: {m.mode}{' (' + reason_text(m) + ')' if reason_text(m) else ''}",
            420,
            xaxis_title="bytes written on this rank",
            yaxis_title="seconds",
        )
        section.figures.append(_chart(fig, half=True))
        spread = [s.seconds for s in m.samples]
        fallback = f"; the line was not used ({projection.fallback})" if projection and projection.fallback else ""
        bound = f"; raised to this run's {projection.ceiling_name} bound" if projection and projection.bounded else ""
        section.text.append(
            f"{m.name}: {len(m.samples)} sample sizes up to {format_bytes(max(xs))} "
            f"({min(spread):.3g}–{max(spread):.3g} s); "
            f"fit R² {fit.r_squared:.3f}, reaching {full_size / max(xs):.1f}x past the largest sample"
            f"{interval_text}{fallback}{bound}."
        )
    return [section]


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


def gate_sections(results: Results) -> list[Section]:
    section = results.gate
    assert section is not None
    go = _go()
    checks = section.checks
    out = Section(
        "Gate verdicts" if results.command == "gate" else "Baseline",
        [f"config {section.config_path}; baseline {section.baseline_path or 'none'}; exit code {section.exit_code}."],
    )
    compared = [c for c in checks if c.baseline is not None and c.current is not None]
    if compared:
        ids = [text(c.check_id) for c in compared]
        ratios = [_ratio(c) for c in compared]
        now_text = [
            f"{text(value_text(c.current, c.unit))} ({text(c.verdict)})"
            + ("" if r is not None else f"; baseline {text(value_text(c.baseline, c.unit))}")
            for c, r in zip(compared, ratios, strict=True)
        ]
        fig = go.Figure(
            [
                go.Bar(
                    name="baseline",
                    y=ids,
                    x=[1.0] * len(compared),
                    orientation="h",
                    marker_color="#d0d0d0",
                    hovertext=[f"baseline {text(value_text(c.baseline, c.unit))}" for c in compared],
                    hoverinfo="text",
                ),
                go.Bar(
                    name="now",
                    y=ids,
                    x=[r or 0.0 for r in ratios],
                    orientation="h",
                    marker_color=[VERDICT_COLOURS.get(c.verdict, "#333333") for c in compared],
                    hovertext=now_text,
                    hoverinfo="text",
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
                        "line": {"width": 3, "color": [VERDICT_COLOURS.get(c.verdict, "#333333") for c in compared]},
                    },
                    text=now_text,
                    textposition="middle right",
                    hoverinfo="text",
                    hovertext=now_text,
                ),
            ]
        )
        widest = max([r for r in ratios if r is not None] + [1.0])
        _layout(
            fig,
            "Now vs baseline (baseline = 1; colour = verdict; a mark at each check's ratio)",
            max(300, 34 * len(compared) + 140),
            barmode="group",
            xaxis={"title": "now / baseline", "range": [0, widest * 1.6]},
            yaxis={"automargin": True, "autorange": "reversed"},
        )
        out.figures.append(_chart(fig))
    return [out]


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
    "sweep": sweep_sections,
    "engram": engram_sections,
    "gate": gate_sections,
    "baseline": gate_sections,
    "audit": audit_sections,
}
