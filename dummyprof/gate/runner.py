"""Run the configured scenarios and turn them into a baseline or a gate verdict."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dummyprof.errors import DoesNotFitError, ResultsFileError, UsageError, flag_text
from dummyprof.files.reading import BASELINE
from dummyprof.gate.checks import evaluate
from dummyprof.gate.config import GateConfig, ScenarioConfig
from dummyprof.gate.fingerprint import make_fingerprint
from dummyprof.gate.metrics import FIT
from dummyprof.results.common import Contention, Environment
from dummyprof.results.gate import EXIT_INCOMPLETE, GateResult, Metric, ScenarioRun, gate_exit_code
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from dummyprof.units import INT64_MAX

Progress = Callable[[int, int, str], None]


def _crash_report(exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {Path(where.filename).name}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {exc}{at}"


def measure_scenario(
    config: GateConfig, scenario: ScenarioConfig, progress: Progress | None = None
) -> tuple[ScenarioRun, Environment | None]:
    """Run one scenario. Bad options are a config error (exit 2); any other failure is recorded, not raised."""
    run = ScenarioRun(name=scenario.name, command=scenario.command.name)
    try:
        results = scenario.command.run(scenario.options, progress=progress)
        run.metrics = scenario.command.extract(results)
        run.contention = _contention(results)
    except DoesNotFitError as exc:  # valid options that this machine cannot hold: a measurement problem
        run.error = f"does not fit on this machine: {flag_text(exc)}"
    except UsageError as exc:
        key = f"scenarios.{scenario.name}.options"
        where = f"{key}.{exc.field}: {exc.message}" if exc.field else f"{key}: {exc}"
        raise UsageError.for_field("config", f"{config.path}: {where}") from None
    except Exception as exc:  # a crash inside a scenario is "could not measure", never a regression
        run.error = _crash_report(exc)
    environment = None if run.error is not None else results.environment
    run.fingerprint = make_fingerprint(
        scenario.name,
        scenario.command.name,
        scenario.options,
        environment or Environment(),
        ignore=scenario.command.not_in_fingerprint,
    )
    return run, environment


def _contention(results: Results) -> Contention | None:
    """How busy the machine was while the scenario timed: its contended reading where it has one (a sweep's point,
    an engram rank), else the first."""
    sections = [getattr(results, name, None) for name in ("compare", "engram", "sweep", "deployment")]
    sections += [record.engram for record in results.ranks]
    found = [c for s in sections if s is not None and (c := getattr(s, "contention", None)) is not None]
    return next((c for c in found if c.contended), found[0] if found else None)


def _for_scenario(progress: Progress | None, name: str) -> Progress | None:
    """The progress of one scenario, its label led by the scenario's name."""
    if progress is None:
        return None
    return lambda done, total, label: progress(done, total, f"{name}: {label}")


def measure_all(
    config: GateConfig, scenarios: list[ScenarioConfig], progress: Progress | None = None
) -> tuple[list[ScenarioRun], Environment]:
    runs: list[ScenarioRun] = []
    environment: Environment | None = None
    for scenario in scenarios:
        run, env = measure_scenario(config, scenario, _for_scenario(progress, scenario.name))
        runs.append(run)
        environment = environment or env
    return runs, environment or Environment()


def _results(
    command: str, config: GateConfig, runs: list[ScenarioRun], environment: Environment, **gate: Any
) -> Results:
    section = GateResult(config_path=str(config.path), factor=config.factor, alpha=config.alpha, scenarios=runs, **gate)
    return Results(command=command, environment=environment, gate=section)


def make_baseline(config: GateConfig, scenarios: list[ScenarioConfig], progress: Progress | None = None) -> Results:
    """Every scenario measured; exit code 3 (and nothing to save) if any could not be."""
    runs, environment = measure_all(config, scenarios, progress)
    code = EXIT_INCOMPLETE if any(r.error is not None for r in runs) else 0
    return _results("baseline", config, runs, environment, exit_code=code)


def contended_timings(scenarios: list[ScenarioConfig], results: Results) -> list[tuple[ScenarioRun, list[str]]]:
    """Each scenario whose timing checks' times (what ``gate`` judges against the baseline) were measured on a
    contended machine, with those times' names: a baseline keeps none of them unless asked to."""
    assert results.gate is not None
    runs = {run.name: run for run in results.gate.scenarios}
    found = []
    for scenario in scenarios:
        run = runs[scenario.name]
        names = [name for name in scenario.timings if name in run.metrics and run.metrics[name].contended]
        if names:
            found.append((run, names))
    return found


def load_baseline(path: Path) -> dict[str, ScenarioRun]:
    """The baseline's scenarios by name; anything but a baseline file is a clear error (exit 2)."""
    results = load_results(path, kind=BASELINE)  # a key dummyprof does not know is refused, as in every file
    if results.command != "baseline" or results.gate is None:
        made_by = f"'dummyprof {results.command}'" if results.command else "an unknown command"
        raise ResultsFileError(
            f"{path}: not a baseline file (written by {made_by}); create one with "
            "dummyprof baseline --config dummyprof.toml --output PATH"
        )
    first: dict[str, int] = {}
    for i, run in enumerate(results.gate.scenarios):
        if run.name in first:  # which of the two is the baseline cannot be known: an edited first one would hide
            raise ResultsFileError(
                f"{path}: $.gate.scenarios[{i}]: scenario {run.name!r} is also $.gate.scenarios[{first[run.name]}]; "
                "a baseline holds each scenario once: re-create it with dummyprof baseline"
            )
        first[run.name] = i
        for name, metric in run.metrics.items():
            problem = metric_problem(metric)
            if problem:
                where = f"$.gate.scenarios[{i}] ({run.name!r}).metrics.{name}"
                raise ResultsFileError(f"{path}: {where}: {problem}; re-create the baseline with dummyprof baseline")
    return {run.name: run for run in results.gate.scenarios}


def metric_problem(metric: Metric) -> str | None:
    """Why a baseline metric cannot be compared with (NaN and infinities are refused on load)."""
    if metric.kind not in ("counter", "time", FIT):
        return f"kind {metric.kind!r} is none of 'counter', 'time' and 'fit'"
    if metric.kind == "counter" and (
        metric.value < 0 or not float(metric.value).is_integer() or metric.value > INT64_MAX
    ):
        return f"value {metric.value!r}: a counter is a whole number from 0 to {INT64_MAX} (int64)"
    if metric.kind == "time":
        if not metric.samples:
            return "no samples: a timing keeps every measured round"
        bad = [s for s in [metric.value, *metric.samples] if s <= 0]
        if bad:
            return f"{bad[0]!r} s: a time must be above 0"
    return None


def run_gate(
    config: GateConfig,
    scenarios: list[ScenarioConfig],
    baseline: dict[str, ScenarioRun],
    baseline_path: Path,
    progress: Progress | None = None,
    *,
    strict: bool = False,
) -> Results:
    runs, env = measure_all(config, scenarios, progress)
    checks = evaluate(config, scenarios, {r.name: r for r in runs}, baseline)
    code = gate_exit_code(checks, strict=strict)
    return _results(
        "gate", config, runs, env, baseline_path=str(baseline_path), checks=checks, exit_code=code, strict=strict
    )


def not_recorded(results: Results, failures: list[str]) -> None:
    """A report or baseline that could not be written: exit 3 ("could not record"), never 1, never a false PASS."""
    section = results.gate
    assert section is not None
    section.exit_code = EXIT_INCOMPLETE
    section.unrecorded = list(failures)  # the reporters say so in the summary line and a notice
