"""``dummyprof baseline`` and ``dummyprof gate``: a CI performance gate against a committed baseline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dummyprof.cli.inputs import run_inputs
from dummyprof.cli.output import (
    ForceOpt,
    HtmlOpt,
    JsonOpt,
    QuietOpt,
    check_outputs,
    emit,
    measuring,
    output_for,
    reporter,
)
from dummyprof.cli.schema_command import with_options
from dummyprof.errors import DummyprofError, UsageError
from dummyprof.files.outputs import is_step_summary
from dummyprof.schema import Spec
from dummyprof.units import parse_float

if TYPE_CHECKING:
    from dummyprof.results.gate import ScenarioRun

BASELINE_HELP = """\
Measure every scenario of the gate config and save the metrics as a baseline.

Review the file and commit it; dummyprof gate compares later runs with it.
Counters (visits, redundant visits, max visits per tensor, bytes written,
peak scratch) are exact; timings keep every measured round for the rank test.
Each scenario carries a fingerprint (flags, torch version, device, CPU model,
threads). Nothing is written if a scenario cannot be measured (exit 3).

Example: dummyprof baseline --config dummyprof.toml --output perf/baseline.json

Timings that a timing check judges later runs against are refused when the
machine was busy while they ran (exit 2, naming what was read); run again on a
quiet machine, or give --allow-contended. Output folders are created; a baseline
this command wrote before is replaced, any other file needs --force.

Exit codes: 0 the baseline was written, 2 usage or config error (or timings
from a busy machine), 3 could not measure (a scenario crashed; nothing is
written) or could not record (the baseline could not be written).
"""

GATE_HELP = """\
Run the gate config's scenarios and check them against a baseline.

Checks (per scenario, in the config): counters, exact against the baseline
(default: all); limits, absolute upper bounds; ratios inside this run (e.g.
per-layer.time / legacy.time <= 0.6, which cancels machine speed); timings
against the baseline, a regression only if slower than --factor AND
significant (one-sided Mann-Whitney U, p < --alpha) over the interleaved
rounds, otherwise "not significant". A baseline with another fingerprint is
"not comparable": reported, never silently compared.

Verdicts: pass, regressed, improved, not significant, not comparable, could
not measure, not judged (a timing measured on a busy machine: skipped, JUnit
<skipped>; exit 0 unless --strict). Counters are judged always.

Config (dummyprof.toml; full reference in docs/gate.md):
  [scenarios.deep-chain]
  command = "compare"
  options = { depth = 12, hidden = 128, initializer = "v0.33" }
  counters = "all"
  ratios = [{ numerator = "per-layer.time", denominator = "legacy.time",
             max = 0.6 }]

Example (GitHub Actions):
  dummyprof gate --config dummyprof.toml --baseline perf/baseline.json \\
      --markdown "$GITHUB_STEP_SUMMARY" --junit perf/junit.xml

Exit codes: 0 every check passed (improved, not significant and skipped count
as passing), 1 a regression, 2 usage, config or baseline-file error, 3 could not
measure (a scenario crashed), not comparable (baseline from another
fingerprint), could not record (a report or the baseline could not be
written), or with --strict a timing not judged. A regression wins over a
crash; a crash is never reported as a regression; a result that could not be
recorded is never 0 or 1.
"""


FLAGS = {
    "baseline": Spec(unit="path", short="-b", help="Baseline written by dummyprof baseline."),
    "config": Spec(
        unit="path",
        short="-c",
        help="TOML config with a table per scenario (scenarios.NAME). "
        "Default: ./dummyprof.toml, else the tool.dummyprof table of pyproject.toml.",
    ),
    "scenario": Spec(
        unit="list", metavar="NAME", help="Run only this scenario of the config (repeatable). Default: all."
    ),
    "output": Spec(unit="path", short="-o", help="Baseline file to write, e.g. perf/baseline.json."),
    "markdown": Spec(
        unit="path",
        help="Write a Markdown report to PATH. Appended when PATH is $GITHUB_STEP_SUMMARY (the CI step summary); "
        "any other existing file is refused without --force.",
    ),
    "junit": Spec(unit="path", help="Write JUnit XML, one test case per check. Refuses to overwrite without --force."),
    "benchmark_json": Spec(
        unit="path",
        help="Write metrics for github-action-benchmark (tool: customSmallerIsBetter). "
        "Refuses to overwrite without --force.",
    ),
    "allow_contended": Spec(
        unit="flag",
        help="Record the timings even when the machine was busy while they ran (refused otherwise: gate judges "
        "later runs against them).",
    ),
    "strict": Spec(
        unit="flag",
        help="Exit 3 when a timing check could not be judged because the machine was busy; without it such "
        "checks are reported as skipped and the exit code stays 0.",
    ),
    "factor": Spec(metavar="FLOAT", help="Timing change that can count as a regression. Default: config, else 1.10."),
    "alpha": Spec(metavar="FLOAT", help="Significance level of the rank test. Default: config, else 0.05."),
}


@with_options(None, flags=FLAGS)
def baseline(
    config: Path | None = None,
    output: Path | None = None,
    scenario: list[str] | None = None,
    allow_contended: bool = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    if output is None:
        raise UsageError("--output", "give the file to write, e.g. --output perf/baseline.json")
    if str(output) == "-":
        raise UsageError("--output", "a baseline is a file to commit; give a path such as perf/baseline.json")
    from dummyprof.gate.config import load_config
    from dummyprof.gate.runner import contended_timings, make_baseline, not_recorded

    cfg = load_config(config)
    json_output = {"--output": "json"}
    check_outputs({"--output": output}, force=force, inputs=run_inputs(gate=cfg), command=BASELINE, formats=json_output)
    scenarios = cfg.select(scenario)
    with measuring("baseline", quiet=quiet, json_path=None) as update:
        results = make_baseline(cfg, scenarios, update)
    assert results.gate is not None
    busy = contended_timings(scenarios, results)
    if busy and not allow_contended:
        raise ContendedBaseline(_contended_text(busy))
    # Nothing is saved when a scenario could not be measured (exit 3).
    written = output_for("--output", output, command=BASELINE, fmt="json")
    reports = [(written, reporter("json", flag="--output"))] if results.gate.exit_code == 0 else []
    confirm = {"--output": "baseline written to {path}; review it and commit it"}
    emit(
        results,
        json_path=None,
        quiet=quiet,
        force=force,
        reports=reports,
        on_failure=not_recorded,
        confirm=confirm,
        command=BASELINE,
    )
    return results.gate.exit_code


BASELINE = "baseline"


class ContendedBaseline(DummyprofError):
    """A baseline's timing checks were measured on a busy machine: not recorded without --allow-contended."""


def _contended_text(busy: list[tuple[ScenarioRun, list[str]]]) -> str:
    from dummyprof.gate.checks import reading

    where = "; ".join(f"{run.name}: {', '.join(names)} ({reading(run.contention)})" for run, names in busy)
    codes = sorted({code for run, _ in busy for code in (run.contention.reasons if run.contention else [])})
    return (
        f"baseline not written: timings that gate judges against it were measured on a busy machine ({where}"
        f"{'; ' + ', '.join(codes) if codes else ''}); run dummyprof baseline again when nothing else runs (a "
        "dedicated runner), or pass --allow-contended to record them anyway"
    )


@with_options(None, flags=FLAGS)
def gate(
    baseline: Path | None = None,
    config: Path | None = None,
    scenario: list[str] | None = None,
    json_path: JsonOpt = None,
    markdown: Path | None = None,
    junit: Path | None = None,
    benchmark_json: Path | None = None,
    factor: str | None = None,
    alpha: str | None = None,
    html: HtmlOpt = None,
    strict: bool = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    if baseline is None:
        raise UsageError("--baseline", "give the baseline to compare with, e.g. --baseline perf/baseline.json")
    factor_value = parse_float("--factor", factor, minimum=1.0, example="1.10") if factor is not None else None
    alpha_value = parse_float("--alpha", alpha, minimum=0.0, example="0.05") if alpha is not None else None
    if alpha_value is not None and alpha_value >= 1:
        raise UsageError("--alpha", f"must be below 1, got {alpha}; try --alpha 0.05")
    from dummyprof.gate.config import load_config
    from dummyprof.gate.runner import load_baseline, not_recorded, run_gate

    cfg = load_config(config)
    reports = check_outputs(  # each file flag is rendered by the registered reporter of its name
        {
            "--json": json_path,
            "--markdown": markdown,
            "--junit": junit,
            "--benchmark-json": benchmark_json,
            "--html": html,
        },
        force=force,
        inputs=run_inputs(files={"--baseline": baseline}, gate=cfg),
        append=["--markdown"] if markdown is not None and is_step_summary(markdown) else [],  # the CI step summary
        command="gate",
    )
    if factor_value is not None:
        cfg.factor = factor_value
    if alpha_value is not None:
        cfg.alpha = alpha_value
    scenarios = cfg.select(scenario)
    base = load_baseline(baseline)  # a bad baseline fails here, before anything is measured
    with measuring("gate", quiet=quiet, json_path=json_path) as update:
        results = run_gate(cfg, scenarios, base, baseline, update, strict=strict)
    assert results.gate is not None
    emit(
        results, json_path=json_path, quiet=quiet, force=force, reports=reports, on_failure=not_recorded, command="gate"
    )
    return results.gate.exit_code
