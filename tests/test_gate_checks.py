"""Each verdict, the exit code rule and fingerprints, on synthetic runs (nothing is measured here)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
import pytest

from dummyprof.gate.checks import evaluate
from dummyprof.gate.config import GateConfig, ScenarioConfig, load_config
from dummyprof.gate.fingerprint import make_fingerprint
from dummyprof.results.common import Contention, Environment, Estimate
from dummyprof.results.gate import (
    EXIT_INCOMPLETE,
    EXIT_PASS,
    EXIT_REGRESSION,
    IMPROVED,
    NOT_COMPARABLE,
    NOT_JUDGED,
    NOT_MEASURED,
    NOT_SIGNIFICANT,
    PASS,
    REGRESSED,
    CheckResult,
    Metric,
    ScenarioRun,
    gate_exit_code,
)

ENV = Environment(torch_version="2.13.0+cpu", device="cpu", cpu_model="AMD EPYC", torch_threads=2)
SLOW = [1.50, 1.52, 1.48, 1.51, 1.49, 1.505, 1.53]
BASE = [1.000, 1.011, 0.992, 1.023, 0.984, 1.005, 1.017]

CONFIG = """
[scenarios.tree]
command = "compare"
options = { depth = 3, hidden = 32, strategies = ["legacy", "per-layer"], repeat = 7 }
counters = ["per-layer.visits", "per-layer.bytes_written"]
limits = { "per-layer.max_visits" = 2 }
ratios = [{ numerator = "per-layer.time", denominator = "legacy.time", max = 0.6 }]
timings = ["per-layer.time"]
"""


@pytest.fixture
def gate_config(tmp_path: Path) -> GateConfig:
    path = tmp_path / "dummyprof.toml"
    path.write_text(CONFIG)
    return load_config(path)


def _time(value: float, samples: list[float], contended: list[str] | None = None) -> Metric:
    return Metric("time", "s", value, Estimate.measured(samples, contention=Contention(reasons=contended or [])))


def _busy(time: Estimate | None, codes: list[str]) -> Estimate:
    assert time is not None
    return msgspec.structs.replace(time, contention=Contention(reasons=codes))


def make_run(scenario: ScenarioConfig, env: Environment = ENV) -> ScenarioRun:
    metrics = {
        "per-layer.visits": Metric("counter", "visits", 20.0),
        "per-layer.bytes_written": Metric("counter", "bytes", 4096.0),
        "per-layer.max_visits": Metric("counter", "visits", 2.0),
        "per-layer.time": _time(1.005, list(BASE)),
        "legacy.time": _time(4.0, [4.0] * 7),
    }
    options = {f.name: getattr(scenario.options, f.name) for f in dataclasses.fields(scenario.options)}
    fingerprint = make_fingerprint(scenario.name, "compare", options, env, ignore=scenario.command.not_in_fingerprint)
    return ScenarioRun(scenario.name, "compare", fingerprint, metrics)


def verdicts(checks: list[CheckResult]) -> dict[str, str]:
    return {f"{c.kind} {c.name}": c.verdict for c in checks}


def run_checks(config: GateConfig, current: ScenarioRun, baseline: ScenarioRun | None) -> list[CheckResult]:
    base = {baseline.name: baseline} if baseline is not None else {}
    return evaluate(config, config.scenarios, {current.name: current}, base)


def test_unchanged_run_passes_every_check(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    checks = run_checks(gate_config, make_run(scenario), make_run(scenario))
    assert verdicts(checks) == {
        "counter per-layer.visits": PASS,
        "counter per-layer.bytes_written": PASS,
        "limit per-layer.max_visits": PASS,
        "ratio per-layer.time / legacy.time": PASS,
        "timing per-layer.time": PASS,
    }
    assert gate_exit_code(checks) == EXIT_PASS
    ratio = next(c for c in checks if c.kind == "ratio")
    assert ratio.current == pytest.approx(1.005 / 4.0)


def test_more_visits_is_a_regression_and_fewer_an_improvement(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    baseline = make_run(scenario)
    worse = make_run(scenario)
    worse.metrics["per-layer.visits"] = Metric("counter", "visits", 21.0)
    worse.metrics["per-layer.bytes_written"] = Metric("counter", "bytes", 4000.0)
    checks = run_checks(gate_config, worse, baseline)
    by_name = {c.name: c for c in checks}
    assert by_name["per-layer.visits"].verdict == REGRESSED
    assert by_name["per-layer.visits"].detail == "+1 visits over the baseline"
    assert by_name["per-layer.bytes_written"].verdict == IMPROVED
    assert gate_exit_code(checks) == EXIT_REGRESSION


def test_limit_and_ratio_fail_without_a_baseline_problem(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    trap = make_run(scenario)
    trap.metrics["per-layer.max_visits"] = Metric("counter", "visits", 4.0)
    trap.metrics["per-layer.time"] = _time(3.9, [3.9] * 7)
    checks = run_checks(gate_config, trap, make_run(scenario))
    got = verdicts(checks)
    assert got["limit per-layer.max_visits"] == REGRESSED
    assert got["ratio per-layer.time / legacy.time"] == REGRESSED


def test_significant_slowdown_is_a_regression_and_noise_is_not(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    slow = make_run(scenario)
    slow.metrics["per-layer.time"] = _time(1.505, list(SLOW))
    checks = run_checks(gate_config, slow, make_run(scenario))
    timing = next(c for c in checks if c.kind == "timing")
    assert timing.verdict == REGRESSED
    assert timing.p_value is not None and timing.p_value < 0.05

    noisy = make_run(scenario)
    noisy.metrics["per-layer.time"] = _time(1.2, [0.90, 1.30, 0.95, 1.25, 1.20, 0.97, 1.35])
    timing = next(c for c in run_checks(gate_config, noisy, make_run(scenario)) if c.kind == "timing")
    assert timing.verdict == NOT_SIGNIFICANT
    assert gate_exit_code([timing]) == EXIT_PASS


def test_other_cpu_makes_timings_not_comparable_but_keeps_counters(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    other = msgspec.structs.replace(ENV, cpu_model="Intel Xeon", torch_version="2.13.0+cu128")
    checks = run_checks(gate_config, make_run(scenario), make_run(scenario, env=other))
    by_name = {c.name: c for c in checks}
    assert by_name["per-layer.time"].verdict == NOT_COMPARABLE
    assert "cpu_model: 'AMD EPYC' (baseline: 'Intel Xeon')" in by_name["per-layer.time"].detail
    assert "torch_version: '2.13.0+cpu' (baseline: '2.13.0+cu128')" in by_name["per-layer.time"].detail
    # Counters do not depend on the machine or on torch's build tag.
    assert by_name["per-layer.visits"].verdict == PASS
    assert gate_exit_code(checks) == EXIT_INCOMPLETE


def test_other_flags_make_everything_against_the_baseline_not_comparable(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    baseline = make_run(scenario)
    baseline.fingerprint.options["depth"] = 4
    checks = run_checks(gate_config, make_run(scenario), baseline)
    got = verdicts(checks)
    assert got["counter per-layer.visits"] == NOT_COMPARABLE
    assert got["timing per-layer.time"] == NOT_COMPARABLE
    assert got["limit per-layer.max_visits"] == PASS  # needs no baseline
    assert got["ratio per-layer.time / legacy.time"] == PASS
    detail = next(c.detail for c in checks if c.kind == "counter")
    assert detail == "fingerprint differs: depth: 3 (baseline: 4)"


def test_an_option_added_later_at_its_default_stays_comparable(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    baseline = make_run(scenario)
    del baseline.fingerprint.options["initializer"]  # a baseline written before the option existed
    assert verdicts(run_checks(gate_config, make_run(scenario), baseline))["counter per-layer.visits"] == PASS


def test_missing_baseline_scenario_is_not_comparable(gate_config: GateConfig) -> None:
    checks = run_checks(gate_config, make_run(gate_config.scenarios[0]), None)
    counter = next(c for c in checks if c.kind == "counter")
    assert counter.verdict == NOT_COMPARABLE
    assert "the baseline has no scenario 'tree'" in counter.detail


def test_a_crash_is_could_not_measure_never_a_regression(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    crashed = ScenarioRun("tree", "compare", make_run(scenario).fingerprint, {}, error="RuntimeError: boom")
    checks = run_checks(gate_config, crashed, make_run(scenario))
    assert len(checks) == 5
    assert {c.verdict for c in checks} == {NOT_MEASURED}
    assert all(c.detail == "RuntimeError: boom" for c in checks)
    assert gate_exit_code(checks) == EXIT_INCOMPLETE


def test_a_regression_wins_over_an_incomplete_gate() -> None:
    checks = [CheckResult(verdict=REGRESSED), CheckResult(verdict=NOT_MEASURED), CheckResult(verdict=PASS)]
    assert gate_exit_code(checks) == EXIT_REGRESSION
    assert gate_exit_code([CheckResult(verdict=IMPROVED), CheckResult(verdict=NOT_SIGNIFICANT)]) == EXIT_PASS


def test_times_measured_under_contention_are_not_judged_and_counters_still_are(gate_config: GateConfig) -> None:
    scenario = gate_config.scenarios[0]
    current = make_run(scenario)
    current.metrics["per-layer.time"] = _time(1.505, list(SLOW), ["cpu-pressure"])  # slower, busy
    current.metrics["per-layer.visits"].value = 21.0  # a real regression of an exact counter
    current.contention = Contention(wall_s=2.0, cores=2, pressure=0.36, steal=0.0, reasons=["cpu-pressure"])
    checks = run_checks(gate_config, current, make_run(scenario))
    assert verdicts(checks) == {
        "counter per-layer.visits": REGRESSED,
        "counter per-layer.bytes_written": PASS,
        "limit per-layer.max_visits": PASS,
        "ratio per-layer.time / legacy.time": NOT_JUDGED,
        "timing per-layer.time": NOT_JUDGED,
    }
    timing = next(c for c in checks if c.kind == "timing")
    assert timing.detail == (  # why, with what the run read
        "timed on a busy machine (CPU pressure 36%, steal 0% over the rounds: cpu-pressure), so not judged: "
        "skipped (exit 0; --strict makes it exit 3); judged when the gate runs on a quiet machine"
    )
    assert timing.current == 1.505 and timing.baseline is None
    assert gate_exit_code(checks) == EXIT_REGRESSION  # the counter's regression still fails the gate
    assert gate_exit_code(checks, strict=True) == EXIT_REGRESSION
    current.metrics["per-layer.visits"].value = 20.0
    quiet_counters = run_checks(gate_config, current, make_run(scenario))
    assert gate_exit_code(quiet_counters) == EXIT_PASS  # skipped timings: a user's CI stays green
    assert gate_exit_code(quiet_counters, strict=True) == EXIT_INCOMPLETE  # --strict: never a pass


def test_a_ratio_of_interleaved_times_is_judged_under_steal_alone(gate_config: GateConfig) -> None:
    """Steal takes every vCPU's share at once, so both sides of a same-run ratio lose it alike; an absolute time
    (a timing against the baseline) is still not judged, and pressure still withholds the ratio too."""
    scenario = gate_config.scenarios[0]
    current = make_run(scenario)
    for name in ("per-layer.time", "legacy.time"):
        current.metrics[name].time = _busy(current.metrics[name].time, ["cpu-steal"])
    checks = {f"{c.kind} {c.name}": c for c in run_checks(gate_config, current, make_run(scenario))}
    ratio, timing = checks["ratio per-layer.time / legacy.time"], checks["timing per-layer.time"]
    assert ratio.verdict == PASS and ratio.current == pytest.approx(1.005 / 4.0)
    assert ratio.detail == (
        "same-run ratio of medians (judged under cpu-steal: both sides' interleaved rounds lose it alike)"
    )
    assert timing.verdict == NOT_JUDGED and ": cpu-steal)" in timing.detail
    current.metrics["per-layer.time"] = _time(3.0, [3.0] * 7, ["cpu-steal"])  # a real regression
    ratio = next(c for c in run_checks(gate_config, current, make_run(scenario)) if c.kind == "ratio")
    assert ratio.verdict == REGRESSED and ratio.detail.startswith("ratio 0.75 is over 0.6 (judged under cpu-steal")
    current.metrics["legacy.time"].time = _busy(current.metrics["legacy.time"].time, ["cpu-pressure", "cpu-steal"])
    ratio = next(c for c in run_checks(gate_config, current, make_run(scenario)) if c.kind == "ratio")
    assert ratio.verdict == NOT_JUDGED and ": cpu-pressure)" in ratio.detail


def test_a_runs_contention_reaches_its_time_metrics_and_not_its_counters() -> None:
    from dummyprof.gate.metrics import compare_metrics
    from dummyprof.results.common import Contention, Estimate
    from dummyprof.results.compare import CompareResult, StrategyResult
    from dummyprof.results.session import Results

    busy = Contention(wall_s=3.0, cores=2, pressure=0.6, reasons=["cpu-pressure"])
    section = CompareResult(strategies=[StrategyResult(name="a", time=Estimate.measured([1.0, 2.0, 3.0]))])
    section.strategies[0].time.contention = busy
    metrics = compare_metrics(Results(command="compare", compare=section))
    assert metrics["a.time"].contended == ["cpu-pressure"]
    assert metrics["a.visits"].contended == []
    section.strategies[0].time.contention = None  # no reading: nothing known, nothing withheld
    assert compare_metrics(Results(command="compare", compare=section))["a.time"].contended == []
