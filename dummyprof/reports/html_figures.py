"""Plotly figures (as plain JSON dicts) and HTML tables for each kind of results: the content of the HTML report.

Figures are built with ``plotly.graph_objects`` (validated attribute names) and
handed to the page as JSON; the page draws them with plotly.js. Torch-free.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dummyprof.reports.audit_text import finding_subject, finding_text
from dummyprof.reports.engram_words import reason_text
from dummyprof.reports.format import format_bytes, format_seconds
from dummyprof.results.compare import CompareResult
from dummyprof.results.session import Results
from dummyprof.results.sweep import SweepResult

MAX_TREE_NODES = 3000  # icicle nodes; past this the tree shows modules only, to a depth that fits
TEMPLATE = "plotly_white"


@dataclass
class Section:
    title: str
    text: list[str] = field(default_factory=list)  # paragraphs (escaped here)
    figures: list[str] = field(default_factory=list)  # Plotly figure JSON
    tables: list[str] = field(default_factory=list)  # ready HTML


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, classes: Sequence[str] = ()) -> str:
    """An HTML table; ``classes`` gives each row a CSS class (e.g. a gate verdict)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{html.escape(classes[i])}"' if i < len(classes) and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure_json(fig: Any) -> str:
    text: str = fig.to_json()
    return text


def _go() -> Any:
    import plotly.graph_objects as go

    return go


# --- compare --------------------------------------------------------------------------------------


def compare_sections(results: Results) -> list[Section]:
    result = results.compare
    assert result is not None
    go = _go()
    names = [s.name for s in result.strategies]
    medians = [s.timing.median or 0.0 for s in result.strategies]
    time_fig = go.Figure(
        go.Bar(
            x=names,
            y=medians,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [(s.timing.max or 0) - (s.timing.median or 0) for s in result.strategies],
                "arrayminus": [(s.timing.median or 0) - (s.timing.min or 0) for s in result.strategies],
            },
            text=[format_seconds(m) for m in medians],
            textposition="outside",
            hovertemplate="%{x}: median %{y:.4g} s<extra></extra>",
        )
    )
    time_fig.update_layout(
        template=TEMPLATE,
        title=f"Fill time per strategy: median of {result.repeat} interleaved rounds (bars: min–max)",
        yaxis_title="seconds",
        height=380,
    )
    visits_fig = go.Figure(
        [
            go.Bar(name="first visit of a storage", x=names, y=[s.distinct_tensors for s in result.strategies]),
            go.Bar(name="redundant visits", x=names, y=[s.redundant_visits for s in result.strategies]),
        ]
    )
    visits_fig.update_layout(
        template=TEMPLATE, barmode="stack", title="Visits per strategy", yaxis_title="visits", height=380
    )
    rows = [
        [
            s.name,
            s.initializer,
            format_seconds(s.timing.median),
            f"{result.speedup(s.name):.2f}x" if result.speedup(s.name) else "n/a",
            f"{s.visits:,}",
            f"{s.redundant_visits:,}",
            s.max_visits,
            format_bytes(s.bytes_written),
            format_bytes(s.memory.rss_peak_bytes),
        ]
        for s in result.strategies
    ]
    overview = Section(
        "Strategies",
        [f"{result.model.description}: {result.model.tensors:,} tensors, {format_bytes(result.model.bytes)}."],
        [_figure_json(time_fig), _figure_json(visits_fig)],
        [
            table(
                [
                    "strategy",
                    "initializer",
                    "time median",
                    f"speedup vs {result.baseline_strategy}",
                    "visits",
                    "redundant",
                    "max visits/tensor",
                    "bytes written",
                    "peak RSS",
                ],
                rows,
            )
        ],
    )
    tree = Section(
        "Module tree: area = bytes, colour = visits per tensor",
        [
            "One icicle per strategy, root on top. A tensor's colour is how many times the strategy filled it; "
            "a module's is the byte-weighted mean over its subtree. Hover for names and counts; click to zoom."
        ],
    )
    cmax = max((max(t.visits.values(), default=0) for t in result.tensors.values()), default=1)
    for name in names:
        fig, note = _icicle(result, name, cmax)
        tree.figures.append(fig)
        if note:
            tree.text.append(note)
    return [overview, tree]


def _icicle(result: CompareResult, strategy: str, cmax: int) -> tuple[str, str]:
    """Nodes: modules (by path) and tensors (by qualified name); values are bytes, summed up the tree."""
    go = _go()
    own: dict[str, list[tuple[str, int, int]]] = {}  # module path -> [(tensor name, bytes, visits)]
    for name, t in result.tensors.items():
        own.setdefault(t.module, []).append((name, t.nbytes, t.visits.get(strategy, 0)))
    modules: set[str] = {""}
    for path in list(own):
        parts = path.split(".") if path else []
        for i in range(len(parts) + 1):
            modules.add(".".join(parts[:i]))
    node_count = len(modules) + len(result.tensors)
    max_depth = max((m.count(".") + 1 for m in modules if m), default=0)
    note = ""
    show_tensors = node_count <= MAX_TREE_NODES
    if not show_tensors:
        while max_depth > 0 and sum(1 for m in modules if not m or m.count(".") < max_depth) > MAX_TREE_NODES:
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
            parts = path.split(".") if path else []
            for i in range(len(parts) + 1):
                ancestor = ".".join(parts[:i])
                total[ancestor] += nbytes
                weighted[ancestor] += nbytes * visits

    def depth(path: str) -> int:
        return path.count(".") + 1 if path else 0

    ids, labels, parents, values, colours, hover = [], [], [], [], [], []
    for path in sorted(modules, key=lambda m: (depth(m), m)):
        if depth(path) > max_depth:
            continue
        ids.append(f"m:{path}")
        labels.append(path.rpartition(".")[2] if path else "<root>")
        parents.append("" if not path else f"m:{path.rpartition('.')[0]}")
        values.append(total[path])
        mean = weighted[path] / total[path] if total[path] else 0.0
        colours.append(mean)
        hover.append(f"module {path or '<root>'}<br>{format_bytes(total[path])}<br>mean visits {mean:.2f}")
    if show_tensors:
        for path, tensors in own.items():
            for name, nbytes, visits in tensors:
                ids.append(f"t:{name}")
                labels.append(name.rpartition(".")[2])
                parents.append(f"m:{path}")
                values.append(float(nbytes))
                colours.append(float(visits))
                hover.append(f"{name}<br>{format_bytes(nbytes)}<br>{strategy}: {visits} visit(s)")
    fig = go.Figure(
        go.Icicle(
            ids=ids,
            labels=labels,
            parents=parents,
            values=values,
            branchvalues="total",
            marker={"colors": colours, "colorscale": "Reds", "cmin": 0, "cmax": cmax, "showscale": True},
            hovertext=hover,
            hoverinfo="text",
            tiling={"orientation": "v"},
            maxdepth=-1,
        )
    )
    fig.update_layout(template=TEMPLATE, title=f"{strategy}", height=520, margin={"t": 40, "l": 10, "r": 10, "b": 10})
    return _figure_json(fig), note


# --- sweep ----------------------------------------------------------------------------------------

SWEEP_METRICS = (("visits", "visits"), ("time", "median time (s)"), ("bytes", "bytes written"))


def sweep_sections(results: Results) -> list[Section]:
    result = results.sweep
    assert result is not None
    go = _go()
    label = result.parameter.replace("model-arg:", "model argument ")
    section = Section(
        f"Growth over {label}",
        [
            f"{result.scenario} at {', '.join(f'{v:,}' for v in result.values)}; log-log axes, so a power law is a "
            f"straight line whose slope is its exponent. Dashed: least-squares fit over {label} "
            f"{result.fit_from:,}–{result.values[-1]:,}, with its 95% interval and R² in the legend."
        ],
    )
    for metric, axis in SWEEP_METRICS:
        traces = []
        for i, series in enumerate(result.series):
            ys = result.column(series, metric)
            if all(y is None for y in ys):
                continue
            colour = _COLOURS[i % len(_COLOURS)]
            error = None
            if metric == "time":
                error = _time_errors(result, series)
            traces.append(
                go.Scatter(
                    x=result.values,
                    y=ys,
                    mode="lines+markers",
                    name=series,
                    line={"color": colour},
                    error_y=error,
                    hovertemplate=f"{series}<br>{label} %{{x}}<br>{axis} %{{y:.4g}}<extra></extra>",
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
                        name=f"{series} fit: exponent {fit.exponent:.2f}{interval}{r2}",
                        line={"color": colour, "dash": "dash"},
                    )
                )
        if not traces:
            continue
        fig = go.Figure(traces)
        fig.update_layout(
            template=TEMPLATE,
            title=f"{axis} vs {label}",
            xaxis={"type": "log", "title": label},
            yaxis={"type": "log", "title": axis},
            height=460,
        )
        section.figures.append(_figure_json(fig))
    rows = []
    for series in result.series:
        for metric, axis in SWEEP_METRICS:
            fit = result.fit(series, metric)
            if fit is None:
                continue
            rows.append(
                [
                    series,
                    axis,
                    f"{fit.exponent:.3f}",
                    f"[{fit.ci_low:.3f}, {fit.ci_high:.3f}]" if fit.ci_low is not None else "n/a",
                    f"{fit.r_squared:.4f}" if fit.r_squared is not None else "n/a",
                    f"{fit.points} ({fit.x_from:g}–{fit.x_to:g})",
                ]
            )
    section.tables.append(table(["series", "metric", "exponent", "95% interval", "R²", "points"], rows))
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
    return {"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1}


_COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")


# --- engram ---------------------------------------------------------------------------------------


def engram_sections(results: Results) -> list[Section]:
    result = results.engram
    assert result is not None
    go = _go()
    phases = {p.name: p for p in result.phases}
    methods = [m for m in result.methods if m.mode != "planned"]
    names = [f"{m.name} (projected)" if m.seconds.projected else m.name for m in methods]
    traces = []
    for phase_name in ("allocate", "first touch"):
        phase = phases.get(phase_name)
        if phase is None or phase.seconds.value is None:
            continue
        label = f"{phase_name}{' (projected)' if phase.seconds.projected else ''}"
        traces.append(go.Bar(name=label, x=names, y=[phase.seconds.value] * len(methods)))
    traces.append(
        go.Bar(
            name="fill",
            x=names,
            y=[m.seconds.value for m in methods],
            marker_pattern_shape=["/" if m.seconds.projected else "" for m in methods],
        )
    )
    startup = go.Figure(traces)
    startup.update_layout(
        template=TEMPLATE,
        barmode="stack",
        title="Start-up per fill method: allocation + first touch + fill (hatched: projected)",
        yaxis_title="seconds",
        height=420,
    )
    if result.budget.deadline_s:
        startup.add_hline(y=result.budget.deadline_s, line_dash="dot", annotation_text="deadline")
    section = Section(
        "Engram start-up",
        [
            f"{result.layout.tables} table(s) x {result.layout.rows:,} rows x dim {result.layout.dim}; "
            f"{format_bytes(result.layout.table_bytes_per_rank)} per rank."
        ],
        [_figure_json(startup)],
    )
    for m in result.methods:
        if m.time_fit is None or not m.samples:
            continue
        fit = m.time_fit
        # The fits are in bytes written (the sizes' rows times bytes per row), as the projection is.
        xs = [s.bytes_written for s in m.samples]
        full_size = m.bytes_written
        line_x = [0, full_size]
        readings = [(s.bytes_written, r) for s in m.samples for r in (s.readings_s or [s.seconds])]
        projection = m.projection
        full_error = None
        interval_text = ""
        if projection is not None and m.seconds.value is not None:
            full_error = {
                "type": "data",
                "symmetric": False,
                "array": [max(0.0, projection.high_s - m.seconds.value)],
                "arrayminus": [max(0.0, m.seconds.value - projection.low_s)],
            }
            interval_text = f", 95% interval {projection.low_s:.3g}–{projection.high_s:.3g} s ({projection.interval})"
        fig = go.Figure(
            [
                go.Scatter(
                    x=[x for x, _ in readings],
                    y=[y for _, y in readings],
                    mode="markers",
                    name="measured rounds at sample sizes",
                    marker={"size": 6, "opacity": 0.6},
                ),
                go.Scatter(
                    x=xs,
                    y=[s.seconds for s in m.samples],
                    mode="markers",
                    name="sample medians",
                    marker={"size": 10, "symbol": "diamond"},
                ),
                go.Scatter(
                    x=line_x,
                    y=[fit.predict(x) for x in line_x],
                    mode="lines",
                    name=f"fit {fit.model}, R² {fit.r_squared:.3f}",
                    line={"dash": "dash"},
                ),
                go.Scatter(
                    x=[full_size],
                    y=[m.seconds.value],
                    mode="markers",
                    marker={"symbol": "x", "size": 12},
                    error_y=full_error,
                    name=("projected at full size" if m.seconds.projected else "measured at full size") + interval_text,
                ),
            ]
        )
        fig.update_layout(
            template=TEMPLATE,
            title=f"{m.name}: {m.mode}{' (' + reason_text(m) + ')' if reason_text(m) else ''}",
            xaxis_title="bytes written on this rank",
            yaxis_title="seconds",
            height=380,
        )
        section.figures.append(_figure_json(fig))
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
    "not comparable": "#ff7f0e",
    "could not measure": "#7f7f7f",
}


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
        fig = go.Figure(
            [
                go.Bar(
                    name="baseline",
                    y=[c.check_id for c in compared],
                    x=[1.0] * len(compared),
                    orientation="h",
                    marker_color="#bbbbbb",
                    customdata=[[c.baseline] for c in compared],
                    hovertemplate="baseline %{customdata[0]:.4g}<extra></extra>",
                ),
                go.Bar(
                    name="now",
                    y=[c.check_id for c in compared],
                    x=[(c.current or 0) / c.baseline if c.baseline else 0 for c in compared],
                    orientation="h",
                    marker_color=[VERDICT_COLOURS.get(c.verdict, "#333") for c in compared],
                    customdata=[[c.current, c.verdict] for c in compared],
                    hovertemplate="now %{customdata[0]:.4g} (%{customdata[1]})<extra></extra>",
                ),
            ]
        )
        fig.update_layout(
            template=TEMPLATE,
            barmode="group",
            title="Now vs baseline (baseline = 1; colour = verdict)",
            xaxis_title="now / baseline",
            height=max(300, 40 * len(compared) + 120),
            margin={"l": 380},
        )
        out.figures.append(_figure_json(fig))
    rows = [
        [
            c.scenario,
            c.name,
            c.kind,
            "n/a" if c.baseline is None else f"{c.baseline:.6g}",
            "n/a" if c.current is None else f"{c.current:.6g}",
            c.threshold,
            c.verdict,
            c.detail,
        ]
        for c in checks
    ]
    if rows:
        out.tables.append(
            table(
                ["scenario", "check", "kind", "baseline", "now", "rule", "verdict", "detail"],
                rows,
                classes=[f"verdict-{c.verdict.replace(' ', '-')}" for c in checks],
            )
        )
    metric_rows = [
        [run.name, name, m.kind, f"{m.value:.6g}", m.unit]
        for run in section.scenarios
        for name, m in run.metrics.items()
    ]
    out.tables.append(table(["scenario", "metric", "kind", "value", "unit"], metric_rows))
    return [out]


# --- audit ----------------------------------------------------------------------------------------


def audit_sections(results: Results) -> list[Section]:
    result = results.audit
    assert result is not None
    go = _go()
    names = [f.name for f in result.fillers]
    fig = go.Figure(
        [
            go.Bar(name="tensors written", x=names, y=[f.tensors_written for f in result.fillers]),
            go.Bar(name="writes", x=names, y=[f.writes for f in result.fillers]),
            go.Bar(name="tensors written more than once", x=names, y=[f.repeated_tensors for f in result.fillers]),
        ]
    )
    fig.update_layout(template=TEMPLATE, barmode="group", title="Writes per filler", height=380)
    findings = [
        [f.kind, finding_subject(f), ", ".join(f.fillers), finding_text(f), "ignored" if f.ignored else ""]
        for f in result.findings
    ]
    section = Section(
        "Audit",
        [f"{len(result.failing)} failing finding(s), {len(result.findings)} in all."],
        [_figure_json(fig)],
        [table(["kind", "tensor", "fillers", "message", ""], findings)],
    )
    return [section]


SECTIONS = {
    "compare": compare_sections,
    "sweep": sweep_sections,
    "engram": engram_sections,
    "gate": gate_sections,
    "baseline": gate_sections,
    "audit": audit_sections,
}


def figures_json(figures: dict[str, str]) -> str:
    """One JSON object id -> figure, safe inside a <script> element."""
    body = ",".join(f"{json.dumps(key)}:{value}" for key, value in figures.items())
    return ("{" + body + "}").replace("</", "<\\/")
