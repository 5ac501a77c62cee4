"""The gate and baseline kinds: a row per check (or metric), grouped under its scenario; summaries, notices, words."""

from __future__ import annotations

from dummyprof.reports.kind import Kind
from dummyprof.reports.messages import known, say
from dummyprof.reports.summary import ALWAYS, Clause, fit
from dummyprof.reports.tables.model import (
    BAD,
    DIM,
    GOOD,
    NUMBER,
    STRONG,
    TEXT,
    WARN,
    WORD,
    Block,
    Cell,
    Column,
    Line,
    Table,
)
from dummyprof.results import gate as verdicts
from dummyprof.results.gate import CheckResult, GateResult
from dummyprof.units import format_seconds

VERDICTS = {
    verdicts.PASS: GOOD,
    verdicts.IMPROVED: GOOD,
    verdicts.REGRESSED: BAD,
    verdicts.NOT_MEASURED: BAD,
    verdicts.NOT_SIGNIFICANT: WARN,
    verdicts.NOT_COMPARABLE: WARN,
    verdicts.NOT_JUDGED: WARN,
}
GATE_NOTE = "a check without a rule line is a counter, exact against the baseline"


def value_text(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "s":
        return format_seconds(value)
    if unit == "bytes":
        return f"{value:,.0f} B"  # exact: a counter check compares to the byte
    if unit == "x":
        return f"{value:.3f}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


def change_text(check: CheckResult) -> str:
    if check.baseline is None or check.current is None:
        return ""
    if check.kind in ("counter", "limit") and check.unit != "s":
        delta = check.current - check.baseline
        return "=" if delta == 0 else f"{delta:+,.0f}"
    return f"x{check.change:.2f}" if check.change is not None else ""


def _rule_line(c: CheckResult) -> str:
    """The line under a check: its kind and rule (a counter's is always '== baseline'), then the detail."""
    parts = [] if c.kind == "counter" else [f"{c.kind} {c.threshold}".strip()]
    if c.detail:
        parts.append(c.detail)
    return "; ".join(parts)


def checks_table(section: GateResult) -> Table:
    """A row per check under a row naming its scenario; the rule and the detail on a dim line under the check."""
    columns: list[tuple[str, str] | Column] = [("check", TEXT), ("baseline", NUMBER), ("current", NUMBER)]
    columns += [("change", NUMBER), Column("verdict", TEXT, tight=11)]
    table = Table.of(f"Gate checks (baseline {section.baseline_path})", columns, [], notes=[GATE_NOTE])
    scenarios: dict[str, list[CheckResult]] = {}
    for c in section.checks:
        scenarios.setdefault(c.scenario, []).append(c)
    for scenario, checks in scenarios.items():
        table.add(Cell(scenario, STRONG), "", "", "", "")
        for c in checks:
            table.add(
                Cell(c.name, under=_rule_line(c)),
                value_text(c.baseline, c.unit),
                value_text(c.current, c.unit),
                change_text(c),
                Cell(c.verdict, VERDICTS.get(c.verdict, "")),
            )
        table.end_section()
    return table


def metrics_table(section: GateResult) -> Table:
    """Every metric of every scenario, grouped under its scenario; a timing's rounds in their own column."""
    value = Column("value", NUMBER, legend="a timing's median over its rounds")
    table = Table.of("Baseline metrics", [("metric", TEXT), ("kind", WORD), value, ("rounds", NUMBER)], [])
    for run in section.scenarios:
        table.add(Cell(run.name, STRONG), "", "", "")
        if run.error is not None:
            table.add(Cell(f"could not measure: {run.error}", BAD), "", "", "")
        for name, metric in run.metrics.items():
            rounds = str(len(metric.samples)) if metric.kind == "time" else ""
            table.add(name, metric.kind, value_text(metric.value, metric.unit), rounds)
        table.end_section()
    return table


def gate_blocks(section: GateResult) -> list[Block]:
    """The checks, then the config, the timing rule and how many checks equal their baselines."""
    rule = f"slower than x{section.factor:g} and Mann-Whitney U p < {section.alpha:g}"
    compared = [c for c in section.checks if c.baseline is not None and c.current is not None]
    equal = sum(c.verdict == verdicts.PASS and c.current == c.baseline for c in compared)
    said = (
        f"config: {section.config_path}; timing rule: {rule}; {equal} of {len(compared)} checks equal their baselines"
    )
    return [checks_table(section), Line(said, DIM)]


def baseline_summary(section: GateResult) -> str:
    failed = [r.name for r in section.scenarios if r.error is not None]
    if failed:
        return f"baseline NOT written: could not measure {', '.join(failed)}"
    if section.unrecorded:
        return f"baseline NOT written: {'; '.join(section.unrecorded)}; exit {verdicts.EXIT_INCOMPLETE}"
    counters = sum(1 for r in section.scenarios for m in r.metrics.values() if m.kind == "counter")
    times = sum(1 for r in section.scenarios for m in r.metrics.values() if m.kind == "time")
    return f"baseline: {len(section.scenarios)} scenarios, {counters} counters, {times} timings"


# The verdicts that make the gate's exit code not 0.
FAILING = (verdicts.REGRESSED, verdicts.NOT_COMPARABLE, verdicts.NOT_MEASURED, verdicts.NOT_JUDGED)


def gate_summary(section: GateResult) -> str:
    """The outcome and its exit code, the checks' verdicts: those that did not pass kept, the others given way."""
    counts = section.counts()
    code = section.exit_code
    label = say(f"gate.{code}") if known(f"gate.{code}") else str(code)
    if counts.get(verdicts.NOT_JUDGED):  # measured on a busy machine; the reason is each check's detail
        only = not counts.get(verdicts.NOT_MEASURED) and not counts.get(verdicts.NOT_COMPARABLE)
        incomplete = code == verdicts.EXIT_INCOMPLETE
        label = say("gate.not-judged") if incomplete and only else say("gate.skipped") if code == 0 else label
    if section.unrecorded:
        verdict = "regressions found" if any(c.verdict == verdicts.REGRESSED for c in section.checks) else "measured"
        label = say("gate.unrecorded", verdict=verdict)
    outcome, _, why = label.partition(":")
    failing = [f"{n} {verdict}" for verdict, n in counts.items() if n and verdict in FAILING]
    passing = [f"{n} {verdict}" for verdict, n in counts.items() if n and verdict not in FAILING]
    said: list[Clause | str] = [
        Clause(text if i == 0 else f", {text}", ALWAYS if i < len(failing) else 2)
        for i, text in enumerate(failing + passing)
    ]
    why_kept = ALWAYS if section.unrecorded else 3
    head: list[Clause | str] = [
        f"gate {outcome}",
        Clause(f":{why}" if why else "", why_kept),
        f" ({len(section.checks)} checks: ",
    ]
    return fit([*head, *(said or ["none"]), f"); exit {code}"])


def unrecorded_notices(section: GateResult) -> list[str]:
    return [say("notice.not-recorded", what="; ".join(section.unrecorded))] if section.unrecorded else []


def gate_notices(section: GateResult) -> list[str]:
    lines = [say("notice.not-measured", name=r.name, error=r.error) for r in section.scenarios if r.error]
    return lines + unrecorded_notices(section)


GATE = Kind("gate", lambda section, detail: gate_blocks(section), gate_summary, notices=gate_notices)
BASELINE = Kind(
    "baseline",
    lambda section, detail: [metrics_table(section), Line(f"config: {section.config_path}", DIM)],
    baseline_summary,
    notices=unrecorded_notices,
)
