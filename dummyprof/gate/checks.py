"""Each configured check of each scenario as one CheckResult: a crashed scenario's "could not measure", never
"regressed"; against a baseline whose fingerprint differs "not comparable", never silently compared."""

from __future__ import annotations

from dummyprof.gate.config import GateConfig, RatioCheck, ScenarioConfig
from dummyprof.gate.fingerprint import COUNTER_FIELDS, TIMING_FIELDS, differences
from dummyprof.gate.stats import compare_timings
from dummyprof.results.common import CPU_STEAL, Contention
from dummyprof.results.gate import (
    IMPROVED,
    NOT_COMPARABLE,
    NOT_JUDGED,
    NOT_MEASURED,
    REGRESSED,
    CheckResult,
    Metric,
    ScenarioRun,
)


def _baseline_problem(
    scenario: ScenarioConfig, current: ScenarioRun, baseline: ScenarioRun | None, metric: str, fields: tuple[str, ...]
) -> str | None:
    if baseline is None:
        return f"the baseline has no scenario {scenario.name!r}; regenerate it with dummyprof baseline"
    diffs = differences(current.fingerprint, baseline.fingerprint, fields, defaults=scenario.defaults)
    if diffs:
        return "fingerprint differs: " + "; ".join(diffs)
    if metric not in baseline.metrics:
        return f"the baseline has no metric {metric!r}; regenerate it with dummyprof baseline"
    return None


def _counter(scenario: ScenarioConfig, run: ScenarioRun, base: ScenarioRun | None, name: str) -> CheckResult:
    metric = run.metrics[name]
    check = CheckResult(scenario.name, name, "counter", metric.unit, current=metric.value, threshold="== baseline")
    problem = _baseline_problem(scenario, run, base, name, COUNTER_FIELDS)
    if problem is not None:
        check.verdict, check.detail = NOT_COMPARABLE, problem
        return check
    assert base is not None
    check.baseline = base.metrics[name].value
    check.change = metric.value / check.baseline if check.baseline else None
    growth = metric.value - check.baseline
    if growth > 0:
        check.verdict, check.detail = REGRESSED, f"+{growth:,.0f} {metric.unit} over the baseline"
    elif growth < 0:
        check.verdict, check.detail = IMPROVED, f"{-growth:,.0f} {metric.unit} fewer; update the baseline to lock it in"
    return check


def _limit(
    scenario: ScenarioConfig, run: ScenarioRun, base: ScenarioRun | None, name: str, bound: float
) -> CheckResult:
    metric = run.metrics[name]
    check = CheckResult(scenario.name, name, "limit", metric.unit, current=metric.value, threshold=f"<= {bound:g}")
    fields = TIMING_FIELDS if metric.kind == "time" else COUNTER_FIELDS
    if _baseline_problem(scenario, run, base, name, fields) is None and base is not None:
        check.baseline = base.metrics[name].value
        check.change = metric.value / check.baseline if check.baseline else None
    if metric.value > bound:
        check.verdict, check.detail = REGRESSED, f"{metric.value:g} is over the limit {bound:g}"
    return check


def _ratio_value(metrics: dict[str, Metric], numerator: str, denominator: str) -> float | None:
    if numerator not in metrics or denominator not in metrics or metrics[denominator].value == 0:
        return None
    return metrics[numerator].value / metrics[denominator].value


def _ratio(scenario: ScenarioConfig, run: ScenarioRun, base: ScenarioRun | None, ratio: RatioCheck) -> CheckResult:
    numerator, denominator, bound = ratio.numerator, ratio.denominator, ratio.max
    check = CheckResult(scenario.name, ratio.name, "ratio", "x", threshold=f"<= {bound:g}")
    check.current = _ratio_value(run.metrics, numerator, denominator)
    if check.current is None:
        check.verdict, check.detail = NOT_MEASURED, f"{denominator} is 0 or missing: the ratio is undefined"
        return check
    # The baseline's ratio is shown for context only: the bound alone decides, so machine speed cancels.
    if _baseline_problem(scenario, run, base, numerator, COUNTER_FIELDS) is None and base is not None:
        check.baseline = _ratio_value(base.metrics, numerator, denominator)
        check.change = check.current / check.baseline if check.baseline else None
    if check.current > bound:
        check.verdict, check.detail = REGRESSED, f"ratio {check.current:.3g} is over {bound:g}"
    else:
        timed = any(run.metrics[m].kind == "time" for m in (numerator, denominator))
        check.detail = "same-run ratio of medians" if timed else "same-run ratio"
    if any(CPU_STEAL in run.metrics[m].contended for m in (numerator, denominator)):
        check.detail += f" (judged under {CPU_STEAL}: both sides' interleaved rounds lose it alike)"
    return check


def _timing(
    config: GateConfig, scenario: ScenarioConfig, run: ScenarioRun, base: ScenarioRun | None, name: str
) -> CheckResult:
    metric = run.metrics[name]
    threshold = f"> x{config.factor:g} and p < {config.alpha:g}"
    check = CheckResult(scenario.name, name, "timing", metric.unit, current=metric.value, threshold=threshold)
    problem = _baseline_problem(scenario, run, base, name, TIMING_FIELDS)
    if problem is not None:
        check.verdict, check.detail = NOT_COMPARABLE, problem
        return check
    assert base is not None
    then = base.metrics[name]
    check.baseline = then.value
    outcome = compare_timings(metric.samples, then.samples, factor=config.factor, alpha=config.alpha)
    check.change, check.p_value = outcome.change, outcome.p_value
    check.verdict, check.detail = outcome.verdict, outcome.detail
    if then.contended:  # recorded with baseline --allow-contended: judged, and said
        busy = ", ".join(then.contended)
        check.detail = f"{check.detail}; the baseline's rounds were timed on a busy machine ({busy})".lstrip("; ")
    return check


def reading(found: Contention | None) -> str:
    """The contention figures a run read over its timed rounds: ``CPU pressure 36%, steal 0%``."""
    if found is None:
        return "no reading"
    parts = []
    if found.pressure is not None:
        parts.append(f"CPU pressure {found.pressure:.0%}")
    elif found.load_per_core is not None:
        parts.append(f"load {found.load_per_core:.2f} per core")
    if found.steal is not None:
        parts.append(f"steal {found.steal:.0%}")
    return ", ".join(parts) or "no reading"


def _contended(run: ScenarioRun, names: list[str]) -> str | None:
    """Why the times among ``names`` cannot be judged: measured on a contended machine. A ratio of two times is
    judged under steal alone, which both sides' interleaved rounds lose alike (docs/gate.md); pressure comes in
    bursts that can land on one side's rounds."""
    codes = [c for n in names if run.metrics[n].kind == "time" for c in run.metrics[n].contended]
    if len(names) == 2 and all(run.metrics[n].kind == "time" for n in names):
        codes = [c for c in codes if c != CPU_STEAL]
    if not codes:
        return None
    return (
        f"timed on a busy machine ({reading(run.contention)} over the rounds: {', '.join(dict.fromkeys(codes))}), "
        "so not judged: skipped (exit 0; --strict makes it exit 3); judged when the gate runs on a quiet machine"
    )


def planned_checks(scenario: ScenarioConfig) -> list[tuple[str, str]]:
    plan = [("counter", name) for name in scenario.counters]
    plan += [("limit", name) for name in scenario.limits]
    plan += [("ratio", r.name) for r in scenario.ratios]
    plan += [("timing", name) for name in scenario.timings]
    return plan


def evaluate(
    config: GateConfig, scenarios: list[ScenarioConfig], runs: dict[str, ScenarioRun], baseline: dict[str, ScenarioRun]
) -> list[CheckResult]:
    checks: list[CheckResult] = []
    for scenario in scenarios:
        run = runs[scenario.name]
        base = baseline.get(scenario.name)
        ratios = {r.name: r for r in scenario.ratios}
        for kind, name in planned_checks(scenario):
            ratio = ratios[name] if kind == "ratio" else None
            needs = [ratio.numerator, ratio.denominator] if ratio is not None else [name]
            missing = [m for m in needs if m not in run.metrics]
            if run.error is not None or missing:
                why = run.error or f"this run did not measure {', '.join(missing)} (projected or skipped; see notices)"
                checks.append(CheckResult(scenario.name, name, kind, verdict=NOT_MEASURED, detail=why))
            elif (busy := _contended(run, needs)) is not None:  # exact counters are still judged
                value = run.metrics[name].value if name in run.metrics else None
                checks.append(CheckResult(scenario.name, name, kind, current=value, verdict=NOT_JUDGED, detail=busy))
            elif kind == "counter":
                checks.append(_counter(scenario, run, base, name))
            elif kind == "limit":
                checks.append(_limit(scenario, run, base, name, scenario.limits[name]))
            elif ratio is not None:
                checks.append(_ratio(scenario, run, base, ratio))
            else:
                checks.append(_timing(config, scenario, run, base, name))
    return checks
