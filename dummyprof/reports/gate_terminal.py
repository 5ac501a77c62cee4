"""Terminal (Rich) rendering of ``baseline`` and ``gate`` results, sized for 80 columns (issue #13)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dummyprof.reports.gate_format import change_text, value_text
from dummyprof.reports.narrow import narrow_table, number_columns, text_column
from dummyprof.reports.tables.escape import visible
from dummyprof.reports.tables.to_terminal import styled
from dummyprof.results.gate import (
    IMPROVED,
    NOT_COMPARABLE,
    NOT_MEASURED,
    NOT_SIGNIFICANT,
    PASS,
    REGRESSED,
    CheckResult,
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


def _terminal_value(value: float | None, unit: str) -> str:
    """As the other reports write it, but a byte count without its ' B' (the check's name says bytes)."""
    text = value_text(value, unit)
    return text.removesuffix(" B") if unit == "bytes" else text


def _rule_line(c: CheckResult) -> str:
    """The second line of a check: its kind and rule (a counter's is always '== baseline'), then the detail."""
    parts = [] if c.kind == "counter" else [f"{c.kind} {c.threshold}".strip()]
    if c.detail:
        parts.append(c.detail)
    return "; ".join(parts)


def checks_table(section: GateResult, width: int = 120) -> Table:
    """A row per check, grouped under its scenario; the rule and the detail on a dim line under the check.

    Under 100 columns a two-word verdict ("not significant") takes two lines, so the names stay whole.
    """
    table = narrow_table(f"Gate checks (baseline {section.baseline_path})")
    # As wide as the longest metric name (a ratio's name wraps at its ' / '), so names stay whole.
    words = [len(word) for c in section.checks for word in c.name.split()]
    text_column(table, "check", min_width=min(max(words, default=5), 40))
    number_columns(table, "baseline", "current", "change")
    text_column(table, "verdict", max_width=11 if width < 100 else None)
    scenarios: dict[str, list[CheckResult]] = {}
    for c in section.checks:
        scenarios.setdefault(c.scenario, []).append(c)
    for scenario, checks in scenarios.items():
        table.add_row(styled(scenario, "strong"))
        for i, c in enumerate(checks):
            style = STYLES.get(c.verdict, "")
            rule = _rule_line(c)
            table.add_row(
                Text.assemble(styled(c.name), *((Text("\n"), styled(rule, "dim")) if rule else ())),
                _terminal_value(c.baseline, c.unit),
                _terminal_value(c.current, c.unit),
                change_text(c),
                Text(visible(c.verdict), style=style),
                end_section=i == len(checks) - 1,
            )
    return table


GATE_NOTE = "a check without a rule line is a counter, exact against the baseline (bytes in bytes)"


def metrics_table(section: GateResult) -> Table:
    """Every metric of every scenario, grouped under its scenario; a timing's rounds in their own column."""
    timed = any(m.kind == "time" for run in section.scenarios for m in run.metrics.values())
    table = narrow_table("Baseline metrics")
    text_column(table, "metric")
    table.add_column("kind", no_wrap=True)
    number_columns(table, "value", *(["rounds"] if timed else []))
    for run in section.scenarios:
        table.add_row(styled(run.name, "strong"), end_section=run.error is not None or not run.metrics)
        if run.error is not None:
            table.add_row(Text(visible(f"could not measure: {run.error}"), style="bold magenta"), end_section=True)
            continue
        names = list(run.metrics)
        for i, name in enumerate(names):
            metric = run.metrics[name]
            cells: list[str | Text] = [styled(name), metric.kind, _terminal_value(metric.value, metric.unit)]
            if timed:
                cells.append(str(len(metric.samples)) if metric.kind == "time" else "")
            table.add_row(*cells, end_section=i == len(names) - 1)
    return table


BASELINE_NOTE = "value: a timing's median over its rounds; byte counts in bytes"


def render_gate(results: Results, console: Console) -> None:
    section = results.gate
    assert section is not None
    console.print(checks_table(section, console.width))
    console.print(GATE_NOTE, style="dim")


def render_baseline(results: Results, console: Console) -> None:
    section = results.gate
    assert section is not None
    console.print(metrics_table(section))
    console.print(BASELINE_NOTE, style="dim")
