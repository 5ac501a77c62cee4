"""`dummyprof sweep`: values on the command line, exact counts per point, growth fits, results and the gate."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.cli.ranges import parse_values
from dummyprof.errors import UsageError
from dummyprof.reports.kinds import summary_line
from dummyprof.results.store import load_results
from dummyprof.scenarios.compare.run import CompareOptions
from dummyprof.scenarios.sweep.fit import fit_growth
from dummyprof.scenarios.sweep.run import SweepOptions, run, validate
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
TINY = ("--hidden", "32", "--repeat", "1", "--warmup", "0", "--device", "cpu")


def legacy_chain_visits(depth: int) -> int:
    """9 visited storages per block, a block k levels down visited k + 1 times, 4 visits at the root."""
    return 9 * sum(k + 1 for k in range(1, depth + 1)) + 4


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1:5", [1, 2, 3, 4, 5]),
        ("1:24:8", [1, 9, 17]),
        ("1,2,4,8,16", [1, 2, 4, 8, 16]),
        ("1M,2M", [1_000_000, 2_000_000]),
        ("12", [12]),
    ],
)
def test_ranges_steps_and_lists(text: str, values: list[int]) -> None:
    assert parse_values("--depth", text) == values


@pytest.mark.parametrize(("text", "message"), [("5:3", "is empty"), ("1:2:3:4", "cannot read"), ("a:3", "whole")])
def test_bad_ranges_name_the_flag(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_values("--depth", text)
    assert info.value.flag == "--depth"


def test_fit_recovers_an_exact_power_law() -> None:
    xs = [2, 4, 8, 16, 32]
    fit = fit_growth("s", "visits", xs, [3.0 * x**2 for x in xs])
    assert fit is not None
    assert fit.exponent == pytest.approx(2.0)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.ci_low == pytest.approx(2.0) and fit.ci_high == pytest.approx(2.0)
    assert fit.predict(64) == pytest.approx(3.0 * 64**2)


@pytest.mark.parametrize("ys", [[1.0, 1.3, 0.8, 1.2, 2.9], [2.0, 2.0, 2.0, 2.0, 2.0], [1.0, 4.1, 15.8, 64.5, 250.0]])
def test_fit_is_scipy_linregress_on_log_log(ys: list[float]) -> None:
    """Least squares written out (no scipy.stats import at run time), checked against scipy's."""
    import math

    from scipy import stats

    xs = [1, 2, 4, 8, 16]
    fit = fit_growth("s", "time", xs, ys)
    ref = stats.linregress([math.log(x) for x in xs], [math.log(y) for y in ys])
    assert fit is not None and fit.ci_low is not None and fit.ci_high is not None
    assert fit.exponent == pytest.approx(ref.slope, abs=1e-12) and fit.intercept == pytest.approx(ref.intercept)
    assert fit.r_squared == pytest.approx(ref.rvalue**2 if math.isfinite(ref.rvalue) else 1.0, abs=1e-12)
    half = stats.t.ppf(0.975, 3) * ref.stderr if math.isfinite(ref.stderr) else 0.0  # flat: scipy says nan, no spread
    assert (fit.ci_low, fit.ci_high) == pytest.approx((ref.slope - half, ref.slope + half), abs=1e-9)


def test_fit_interval_widens_with_noise_and_needs_three_points() -> None:
    xs = [1, 2, 4, 8]
    noisy = fit_growth("s", "time", xs, [x * f for x, f in zip(xs, [1.0, 1.3, 0.8, 1.2], strict=True)])
    assert noisy is not None and noisy.ci_low is not None and noisy.ci_high is not None
    assert noisy.ci_low < noisy.exponent < noisy.ci_high and noisy.r_squared is not None and noisy.r_squared < 1
    two = fit_growth("s", "time", [1, 2], [1.0, 2.0])
    assert two is not None and two.exponent == pytest.approx(1.0) and two.r_squared is None and two.ci_low is None
    assert fit_growth("s", "time", [1, 2, 4], [1.0, None, 0.0]) is None  # one usable point: no fit


def test_fit_uses_only_points_from_x_from() -> None:
    xs = [1, 2, 4, 8]
    fit = fit_growth("s", "visits", xs, [100.0, 1.0, 2.0, 4.0], x_from=2)
    assert fit is not None and fit.points == 3 and fit.exponent == pytest.approx(1.0) and fit.x_from == 2


def test_a_chain_sweep_has_exact_visits_and_quadratic_vs_linear_growth() -> None:
    values = [2, 4, 8, 12]
    results = run(
        SweepOptions(
            values=values,
            fit_from=4,
            compare=CompareOptions(hidden=32, repeat=1, warmup=0, device="cpu", strategies=["legacy", "per-layer"]),
        )
    )
    sweep = results.sweep
    assert sweep is not None and results.command == "sweep"
    assert [p.value for p in sweep.points] == values
    assert [p.series["legacy"].visits for p in sweep.points] == [legacy_chain_visits(d) for d in values]
    assert [p.series["per-layer"].visits for p in sweep.points] == [9 * d + 2 for d in values]
    assert all(p.series["legacy"].seconds is not None and p.series["legacy"].peak_rss_bytes for p in sweep.points)
    legacy, per_layer = sweep.fit("legacy", "visits"), sweep.fit("per-layer", "visits")
    assert legacy is not None and per_layer is not None
    # The exact exponent of 4.5d² + 13.5d + 4 over d = 4, 8, 12, by hand:
    lx = [math.log(d) for d in (4, 8, 12)]
    ly = [math.log(legacy_chain_visits(d)) for d in (4, 8, 12)]
    mx, my = sum(lx) / 3, sum(ly) / 3
    slope = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)
    assert legacy.exponent == pytest.approx(slope) and 1.6 < legacy.exponent < 2.0
    assert 0.9 < per_layer.exponent < 1.0 and per_layer.points == 3
    assert summary_line(results).startswith("visit exponents over depth 4–12: legacy 1.")


def test_cli_sweep_writes_json_that_report_renders(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    result = cli("sweep", "--depth", "1:4", *TINY, "-s", "per-layer", "--json", str(path))
    assert result.exit_code == 0, result.stderr
    assert "Growth" in result.stdout and "per-layer" in result.stdout and "log-log least squares" in result.stdout
    data = json.loads(path.read_text())
    assert data["command"] == "sweep" and data["sweep"]["values"] == [1, 2, 3, 4]
    assert data["sweep"]["base_options"]["hidden"] == 32 and "depth" not in data["sweep"]["base_options"]
    loaded = load_results(path)
    assert loaded.sweep is not None and loaded.sweep.fit("per-layer", "visits") is not None
    md = cli("report", str(path), "--format", "markdown")
    assert md.exit_code == 0 and "| per-layer | visits |" in md.stdout


def test_cli_sweeps_a_model_argument(cli: Cli) -> None:
    result = cli(
        "sweep", "--model", "tests/fixtures/models.py:build", "--model-arg", "hidden=16:48:16", *TINY[2:], "--quiet"
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("visit exponents over model-arg:hidden 32–48: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--depth", "4"), "--depth: nothing to sweep"),
        (("--depth", "1:4", "--width", "1:2"), "--width: sweep one parameter at a time"),
        (("--depth", "4:1"), "--depth: the range '4:1' is empty"),
        (("--depth", "1:4", "--fit-from", "4"), "--fit-from: leaves fewer than two"),
        (("--preset", "dense-decoder", "--depth", "1:4"), "--depth: sizes the synthetic tree"),
        (("--depth", "1,1,2"), "--depth: values repeat"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli: Cli, args: tuple[str, ...], message: str) -> None:
    result = cli("sweep", *args, *TINY)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_validate_refuses_unknown_parameters() -> None:
    with pytest.raises(UsageError, match="cannot sweep 'colour'"):
        validate(SweepOptions(parameter="colour", values=[1, 2]))


def test_gate_runs_a_sweep_scenario_and_bounds_exponents(tmp_path: Path) -> None:
    from dummyprof.gate.config import load_config
    from dummyprof.gate.runner import run_gate
    from dummyprof.results.gate import REGRESSED

    config_path = tmp_path / "dummyprof.toml"
    config_path.write_text(
        "[scenarios.growth]\n"
        'command = "sweep"\n'
        'options = { parameter = "depth", values = [2, 4, 8], fit_from = 2, compare = { hidden = 32, repeat = 1, '
        'warmup = 0, device = "cpu", strategies = ["legacy", "per-layer"] } }\n'
        "counters = []\n"
        'limits = { "per-layer.visits.exponent" = 1.1, "legacy.visits.exponent" = 1.5 }\n'
        'ratios = [{ numerator = "per-layer.visits.exponent", denominator = "legacy.visits.exponent", max = 0.7 }]\n'
    )
    config = load_config(config_path)
    assert set(config.scenarios[0].metrics) >= {"legacy.visits.exponent", "per-layer.visits", "legacy.time.exponent"}
    results = run_gate(config, config.scenarios, {}, tmp_path / "none.json")
    assert results.gate is not None
    verdicts = {c.name: c.verdict for c in results.gate.checks}
    assert verdicts["legacy.visits.exponent"] == REGRESSED  # about 1.6 > 1.5: the bound is on the quadratic side
    assert verdicts["per-layer.visits.exponent"] == "pass"
    assert verdicts["per-layer.visits.exponent / legacy.visits.exponent"] == "pass"


def test_a_baseline_of_a_sweep_scenario_is_accepted_by_the_gate(tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """baseline writes the sweep's growth exponents as kind 'fit'; the gate used to refuse that file (exit 2)."""
    config_path = tmp_path / "dummyprof.toml"
    config_path.write_text(
        "[scenarios.growth]\n"
        'command = "sweep"\n'
        'options = { parameter = "depth", values = [2, 4], fit_from = 2, compare = { hidden = 32, repeat = 1, '
        'warmup = 0, device = "cpu", strategies = ["per-layer"] } }\n'
        'counters = ["per-layer.visits"]\n'
        'limits = { "per-layer.visits.exponent" = 1.1 }\n'
    )
    baseline = tmp_path / "baseline.json"
    made = cli("baseline", "--config", str(config_path), "--output", str(baseline), "-q")
    assert made.exit_code == 0, made.stderr
    kinds = {m["kind"] for s in json.loads(baseline.read_text())["gate"]["scenarios"] for m in s["metrics"].values()}
    assert "fit" in kinds
    gated = cli("gate", "--config", str(config_path), "--baseline", str(baseline), "-q")
    assert gated.exit_code == 0, gated.stderr + gated.stdout


FAILS_AT_THREE = """
import torch
from torch import nn


def make(n: int = 1) -> nn.Module:
    if n >= 3 and torch.empty(0).device.type != "meta":  # sized on meta fine; fails only when really built
        raise RuntimeError(f"cannot build {n} here")
    return nn.Linear(8 * n, 8)
"""


def test_cli_a_sweep_failing_at_its_third_point_keeps_shows_and_saves_the_two_measured(
    cli: Cli, tmp_path: Path
) -> None:
    """#17.4: the points measured before a failure are shown and saved (--json); the exit is the failure's."""
    model = tmp_path / "fails.py"
    model.write_text(FAILS_AT_THREE)
    out = tmp_path / "sweep.json"
    args = ("--model-arg", "n=1:4", "--repeat", "1", "--warmup", "0", "--json", str(out))
    result = cli("sweep", "--model", f"{model}:make", *args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith("dummyprof: error: --model: ")
    assert "cannot build 3 here" in result.stderr and "Traceback" not in result.stderr
    assert "STOPPED at model argument n 3: 2 of 4 points measured and kept" in result.stdout
    saved = load_results(out).sweep
    assert saved is not None
    assert [p.value for p in saved.points] == [1, 2] and saved.failed_at == 3
    assert "RuntimeError: cannot build 3 here" in saved.failure
    assert all(len(s.time.samples) == 1 for p in saved.points for s in p.series.values())


def test_a_sweep_whose_largest_point_overruns_the_budget_is_refused_before_the_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#17.4: `sweep --depth 4 --width 1:4` failed after 70 s at width 4; the plan is checked first."""
    from dummyprof.errors import DoesNotFitError
    from dummyprof.scenarios.compare import measure as compare_measure
    from dummyprof.scenarios.compare import run as compare_run
    from dummyprof.scenarios.compare import sizing

    real = sizing.decide
    ran: list[int] = []

    def decide(source, meta, device, *, rounds, time_budget_s, **kwargs):  # type: ignore[no-untyped-def]
        decision, projections = real(source, meta, device, rounds=rounds, time_budget_s=time_budget_s, **kwargs)
        width = source.options["width"]
        decision.predicted_s = 30.0 * width  # width 4: 120 s, over the 60 s each point may take
        over = decision.predicted_s > time_budget_s
        decision.mode, decision.reason = ("projected", "time") if over else ("measured", "fits")
        return decision, projections

    monkeypatch.setattr(compare_measure, "decide", decide)
    monkeypatch.setattr(compare_run, "run", lambda *a, **k: ran.append(1))
    options = SweepOptions(
        parameter="width", values=[1, 2, 3, 4], compare=CompareOptions(depth=2, hidden=32, repeat=1, time_budget=60)
    )
    with pytest.raises(DoesNotFitError) as caught:
        run(options)
    assert ran == []  # refused before the first point
    assert caught.value.flag == "--time-budget"
    assert "the sweep's largest point (width=4) is predicted at 120" in caught.value.message
    assert "end the range before 4" in caught.value.message


@pytest.mark.parametrize(("flag", "value"), [("--dim", "64"), ("--method", "constant")])
def test_an_engram_flag_on_a_tree_sweep_is_refused(cli: Cli, flag: str, value: str) -> None:
    # before: taken and never used (the tree sweep ran, exit 0)
    result = cli("sweep", "--depth", "1:3", flag, value)
    assert result.exit_code == 2
    assert result.stderr == f"dummyprof: error: {flag}: only applies to an engram sweep (--rows RANGE); drop it\n"


def test_an_engram_sweeps_dim_off_the_block_names_only_flags_sweep_has(cli: Cli) -> None:
    # before: "try --block-size", a flag sweep does not have
    result = cli("sweep", "--rows", "1e6,2e6", "--dim", "33")
    assert result.exit_code == 2
    assert result.stderr == (
        "dummyprof: error: --dim: 33 is not a multiple of the scale block (32 elements, one scale byte each); "
        "try --dim 32\n"
    )
