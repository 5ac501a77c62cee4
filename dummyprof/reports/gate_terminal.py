"""Terminal (Rich) rendering of ``baseline`` and ``gate`` results."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dummyprof.reports.gate_format import change_text, metric_text, value_text
from dummyprof.results.gate import (
    IMPROVED,
    NOT_COMPARABLE,
    NOT_MEASURED,
    NOT_SIGNIFICANT,
    PASS,
    REGRESSED,
    GateResult,
)
from dummyprof.results.session import Results

STYLES = {
    PASS: "green",
    REGRESSED: "bold red",
    IMPROVED: "cyan",
    NOT_SIGNIFICANT: "yellow",
    NOT_COMPARABLE: "magenta",
    NOT_MEASURED: "bold magenta",
}


def checks_table(section: GateResult) -> Table:
    table = Table(title=f"Gate checks (baseline {section.baseline_path})", title_justify="left")
    table.add_column("scenario", style="bold")
    table.add_column("check", no_wrap=True, min_width=24)
    table.add_column("kind")
    table.add_column("baseline", justify="right")
    table.add_column("current", justify="right")
    table.add_column("change", justify="right")
    table.add_column("rule")
    table.add_column("verdict")
    table.add_column("detail")
    for c in section.checks:
        style = STYLES.get(c.verdict, "")
        table.add_row(
            c.scenario,
            c.name,
            c.kind,
            value_text(c.baseline, c.unit),
            value_text(c.current, c.unit),
            change_text(c),
            c.threshold,
            f"[{style}]{c.verdict}[/]" if style else c.verdict,
            c.detail,
        )
    return table


def metrics_table(section: GateResult) -> Table:
    table = Table(title="Baseline metrics", title_justify="left")
    table.add_column("scenario", style="bold")
    table.add_column("metric")
    table.add_column("kind")
    table.add_column("value", justify="right")
    for run in section.scenarios:
        if run.error is not None:
            table.add_row(run.name, "", "", f"[bold magenta]could not measure: {run.error}[/]")
            continue
        for name, metric in run.metrics.items():
            table.add_row(run.name, name, metric.kind, metric_text(metric))
    return table


def render_gate(results: Results, console: Console) -> None:
    section = results.gate
    assert section is not None
    console.print(checks_table(section))


def render_baseline(results: Results, console: Console) -> None:
    section = results.gate
    assert section is not None
    console.print(metrics_table(section))
