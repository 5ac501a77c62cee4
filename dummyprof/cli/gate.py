"""``dummyprof baseline`` and ``dummyprof gate``: a CI performance gate against a committed baseline."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Optional

import typer

from dummyprof.cli.output import (
    check_outputs,
    emit,
    json_to_stdout,
    progress_bar,
    reporter,
    user_stdout_to_stderr,
)
from dummyprof.cli.output_options import ForceOpt, HtmlOpt, JsonOpt, QuietOpt, html_reports
from dummyprof.errors import UsageError
from dummyprof.files.inputs import run_inputs
from dummyprof.files.outputs import Output, is_step_summary
from dummyprof.results.session import Results
from dummyprof.units import parse_float

CONFIG_HELP = (
    "TOML config with a table per scenario (scenarios.NAME). "
    "Default: ./dummyprof.toml, else the tool.dummyprof table of pyproject.toml."
)
SCENARIO_HELP = "Run only this scenario of the config (repeatable). Default: all."

EXIT_CODES = """\
Exit codes: 0 every check passed (improved and not significant count as
passing), 1 a regression, 2 usage, config or baseline-file error, 3 could not
measure (a scenario crashed), not comparable (baseline from another
fingerprint) or could not record (a report or the baseline could not be
written). A regression wins over a crash; a crash is never reported as a
regression; a result that could not be recorded is never 0 or 1.
"""

BASELINE_HELP = """\
Measure every scenario of the gate config and save the metrics as a baseline.

Review the file and commit it; dummyprof gate compares later runs with it.
Counters (visits, redundant visits, max visits per tensor, bytes written,
peak scratch) are exact; timings keep every measured round for the rank test.
Each scenario carries a fingerprint (flags, torch version, device, CPU model,
threads). Nothing is written if a scenario cannot be measured (exit 3).

Example: dummyprof baseline --config dummyprof.toml --output perf/baseline.json

Exit codes: 0 the baseline was written, 2 usage or config error, 3 could not
measure (a scenario crashed; nothing is written) or could not record (the
baseline could not be written).
"""

GATE_HELP = f"""\
Run the gate config's scenarios and check them against a baseline.

Checks (per scenario, in the config): counters, exact against the baseline
(default: all); limits, absolute upper bounds; ratios inside this run (e.g.
per-layer.time / legacy.time <= 0.6, which cancels machine speed); timings
against the baseline, a regression only if slower than --factor AND
significant (one-sided Mann-Whitney U, p < --alpha) over the interleaved
rounds, otherwise "not significant". A baseline with another fingerprint is
"not comparable": reported, never silently compared.

Verdicts: pass, regressed, improved, not significant, not comparable, could not measure.

Config (dummyprof.toml; full reference in docs/gate.md):
  [scenarios.deep-chain]
  command = "compare"
  options = {{ depth = 12, hidden = 128, initializer = "v0.33" }}
  counters = "all"
  ratios = [{{ numerator = "per-layer.time", denominator = "legacy.time",
             max = 0.6 }}]

Example (GitHub Actions):
  dummyprof gate --config dummyprof.toml --baseline perf/baseline.json \\
      --markdown "$GITHUB_STEP_SUMMARY" --junit perf/junit.xml

{EXIT_CODES}"""


def register(app: typer.Typer) -> None:
    app.command("baseline", help=BASELINE_HELP, no_args_is_help=False)(baseline)
    app.command("gate", help=GATE_HELP, no_args_is_help=False)(gate)


def _per_scenario(update: Callable[[int, int, str], None] | None) -> Callable[[str], Callable[..., None] | None]:
    def for_scenario(name: str) -> Callable[..., None] | None:
        if update is None:
            return None

        def progress(done: int, total: int, label: str) -> None:
            update(done, total, f"{name}: {label}")

        return progress

    return for_scenario


ConfigOption = Annotated[Optional[Path], typer.Option("--config", "-c", metavar="PATH", help=CONFIG_HELP)]  # noqa: UP045
ScenarioOption = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer needs Optional here on Python 3.10
    typer.Option("--scenario", metavar="NAME", help=SCENARIO_HELP),
]


def baseline(
    config: ConfigOption = None,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--output", "-o", metavar="PATH", help="Baseline file to write, e.g. perf/baseline.json."),
    ] = None,
    scenario: ScenarioOption = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    if output is None:
        raise UsageError("--output", "give the file to write, e.g. --output perf/baseline.json")
    if str(output) == "-":
        raise UsageError("--output", "a baseline is a file to commit; give a path such as perf/baseline.json")
    from dummyprof.gate.config import load_config
    from dummyprof.gate.runner import make_baseline, not_recorded

    cfg = load_config(config)
    check_outputs({"--output": output}, force=force, inputs=run_inputs(gate=cfg))
    scenarios = cfg.select(scenario)
    with progress_bar(not quiet, "baseline") as update:
        results = make_baseline(cfg, scenarios, _per_scenario(update))
    assert results.gate is not None
    # Nothing is saved when a scenario could not be measured (exit 3).
    reports = [(Output("--output", output), reporter("json", flag="--output"))] if results.gate.exit_code == 0 else []
    failures = emit(results, json_path=None, quiet=quiet, force=force, reports=reports, on_failure=not_recorded)
    if results.gate.exit_code == 0 and not failures and not quiet:
        from dummyprof.reports.console import make_console

        make_console().print(f"baseline written to {output}; review it and commit it", style="dim", markup=False)
    return results.gate.exit_code


def gate(
    baseline_path: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--baseline", "-b", metavar="PATH", help="Baseline written by dummyprof baseline."),
    ] = None,
    config: ConfigOption = None,
    scenario: ScenarioOption = None,
    json_path: JsonOpt = None,
    markdown: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            metavar="PATH",
            help="Write a Markdown report to PATH. Appended when PATH is $GITHUB_STEP_SUMMARY (the CI step summary); "
            "any other existing file is refused without --force.",
        ),
    ] = None,
    junit: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            metavar="PATH", help="Write JUnit XML, one test case per check. Refuses to overwrite without --force."
        ),
    ] = None,
    benchmark_json: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            metavar="PATH",
            help="Write metrics for github-action-benchmark (tool: customSmallerIsBetter). "
            "Refuses to overwrite without --force.",
        ),
    ] = None,
    factor: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="FLOAT", help="Timing change that can count as a regression. Default: config, else 1.10."),
    ] = None,
    alpha: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="FLOAT", help="Significance level of the rank test. Default: config, else 0.05."),
    ] = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    if baseline_path is None:
        raise UsageError("--baseline", "give the baseline to compare with, e.g. --baseline perf/baseline.json")
    factor_value = parse_float("--factor", factor, minimum=1.0, example="1.10") if factor is not None else None
    alpha_value = parse_float("--alpha", alpha, minimum=0.0, example="0.05") if alpha is not None else None
    if alpha_value is not None and alpha_value >= 1:
        raise UsageError("--alpha", f"must be below 1, got {alpha}; try --alpha 0.05")
    from dummyprof.gate.config import load_config
    from dummyprof.gate.runner import load_baseline, not_recorded, run_gate

    cfg = load_config(config)
    append = markdown is not None and is_step_summary(markdown)  # appended only to the CI step summary
    check_outputs(
        {"--json": json_path, "--junit": junit, "--benchmark-json": benchmark_json, "--html": html}
        | ({} if append else {"--markdown": markdown}),
        force=force,
        inputs=run_inputs(files={"--baseline": baseline_path}, gate=cfg),
        append={"--markdown": markdown} if append else None,
    )
    html_files = html_reports(html)  # no plotly: exit 2 now, not after measuring

    if factor_value is not None:
        cfg.factor = factor_value
    if alpha_value is not None:
        cfg.alpha = alpha_value
    scenarios = cfg.select(scenario)
    base = load_baseline(baseline_path)  # a bad baseline fails here, before anything is measured
    with progress_bar(not quiet, "gate") as update, user_stdout_to_stderr(json_to_stdout(json_path)):
        results = run_gate(cfg, scenarios, base, baseline_path, _per_scenario(update))
    assert results.gate is not None
    emit(
        results,
        json_path=json_path,
        quiet=quiet,
        force=force,
        reports=_reports(markdown=markdown, append=append, junit=junit, benchmark_json=benchmark_json) + html_files,
        on_failure=not_recorded,
    )
    return results.gate.exit_code


def _reports(
    *, markdown: Path | None, append: bool, junit: Path | None, benchmark_json: Path | None
) -> list[tuple[Output, Callable[[Results], str]]]:
    reports: list[tuple[Output, Callable[[Results], str]]] = []
    if markdown is not None:
        reports.append(
            (Output("--markdown", markdown, append=append), reporter("markdown", flag="--markdown", append=append))
        )
    if junit is not None:
        reports.append((Output("--junit", junit), reporter("junit", flag="--junit")))
    if benchmark_json is not None:
        reports.append(
            (Output("--benchmark-json", benchmark_json), reporter("benchmark-json", flag="--benchmark-json"))
        )
    return reports
