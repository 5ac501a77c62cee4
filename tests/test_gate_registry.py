"""The per-command registry: a scenario plugs in with one ``register_command``.

A fake scenario with scripted timings drives the whole CLI through every timing
verdict deterministically (a "slowed copy" without any real clock).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dummyprof.gate.commands import COMMANDS, CommandSpec, register_command
from dummyprof.gate.metrics import MetricSpec
from dummyprof.results.common import Environment, Estimate
from dummyprof.results.gate import Metric
from dummyprof.results.session import Results
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
BASE = [1.000, 1.011, 0.992, 1.023, 0.984, 1.005, 1.017]


@dataclass
class FakeOptions:
    copies: int = 1
    slowdown: float = 1.0  # multiplies every scripted round
    jitter: list[float] = field(default_factory=list)  # replaces the scripted rounds when given
    crash: bool = False


def run(options: FakeOptions, *, progress: Any = None) -> Results:
    if options.crash:
        raise MemoryError("simulated out-of-memory inside the scenario")
    results = Results(command="fake", environment=Environment(torch_version="2.13.0", cpu_model="fake"))
    samples = options.jitter or [s * options.slowdown for s in BASE]
    results.notices = [json.dumps({"visits": 10 * options.copies, "samples": samples})]
    return results


def extract(results: Results) -> dict[str, Metric]:
    data = json.loads(results.notices[0])
    samples = data["samples"]
    return {
        "copy.visits": Metric("counter", "visits", float(data["visits"])),
        "copy.time": Metric("time", "s", statistics.median(samples), Estimate.measured(samples)),
    }


def names(options: Any) -> dict[str, MetricSpec]:
    return {"copy.visits": MetricSpec("counter", "visits"), "copy.time": MetricSpec("time", "s")}


@pytest.fixture(autouse=True)
def fake_command() -> Iterator[None]:
    register_command(
        CommandSpec("fake", __name__, "FakeOptions", extract, names, frozenset({"slowdown", "jitter", "crash"}))
    )
    register_command(CommandSpec("missing", "dummyprof.no_such_scenario", "Options", extract, names))
    try:
        yield
    finally:
        COMMANDS.pop("fake", None)
        COMMANDS.pop("missing", None)


def write_config(path: Path, options: str, extra: str = "") -> Path:
    path.write_text(f'[scenarios.copy]\ncommand = "fake"\noptions = {{ {options} }}\ntimings = "all"\n{extra}')
    return path


def gate(cli: Cli, tmp_path: Path, options: str) -> tuple[int, dict[str, Any]]:
    config = write_config(tmp_path / "now.toml", options)
    out = tmp_path / "gate.json"
    out.unlink(missing_ok=True)
    result = cli("gate", "--config", str(config), "--baseline", str(tmp_path / "base.json"), "--json", str(out))
    checks = {c["kind"] + " " + c["name"]: c for c in json.loads(out.read_text())["gate"]["checks"]}
    return result.exit_code, checks


@pytest.fixture
def baseline(cli: Cli, tmp_path: Path) -> Path:
    config = write_config(tmp_path / "base.toml", "copies = 1")
    result = cli("baseline", "--config", str(config), "--output", str(tmp_path / "base.json"), "-q")
    assert result.exit_code == 0, result.stderr
    return tmp_path / "base.json"


def test_unchanged_fake_scenario_passes(cli: Cli, tmp_path: Path, baseline: Path) -> None:
    code, checks = gate(cli, tmp_path, "copies = 1")
    assert code == 0
    assert checks["counter copy.visits"]["verdict"] == "pass"
    assert checks["timing copy.time"]["verdict"] == "pass"


def test_a_slowed_copy_is_a_significant_regression(cli: Cli, tmp_path: Path, baseline: Path) -> None:
    code, checks = gate(cli, tmp_path, "slowdown = 1.5")
    assert code == 1
    timing = checks["timing copy.time"]
    assert timing["verdict"] == "regressed"
    assert timing["change"] == pytest.approx(1.5)
    assert timing["p_value"] < 0.001


def test_noise_is_not_significant_and_exits_0(cli: Cli, tmp_path: Path, baseline: Path) -> None:
    code, checks = gate(cli, tmp_path, "jitter = [0.90, 1.30, 0.95, 1.25, 1.20, 0.97, 1.35]")
    assert code == 0
    assert checks["timing copy.time"]["verdict"] == "not significant"


def test_too_few_rounds_are_not_significant(cli: Cli, tmp_path: Path, baseline: Path) -> None:
    code, checks = gate(cli, tmp_path, "jitter = [3.0]")  # one round against seven: p never goes below 1/8
    assert code == 0
    assert checks["timing copy.time"]["verdict"] == "not significant"
    assert "too few samples (1 now, 7 in the baseline)" in checks["timing copy.time"]["detail"]


def test_faster_is_improved(cli: Cli, tmp_path: Path, baseline: Path) -> None:
    code, checks = gate(cli, tmp_path, "slowdown = 0.5")
    assert code == 0
    assert checks["timing copy.time"]["verdict"] == "improved"


def test_more_copies_is_a_counter_regression_and_other_flags_not_comparable(
    cli: Cli, tmp_path: Path, baseline: Path
) -> None:
    code, checks = gate(cli, tmp_path, "copies = 2")
    assert code == 3  # copies is part of the fingerprint: this is another scenario, not a regression
    assert checks["counter copy.visits"]["verdict"] == "not comparable"
    assert checks["counter copy.visits"]["detail"] == "fingerprint differs: copies: 2 (baseline: 1)"


def test_a_crash_is_exit_3(cli: Cli, tmp_path: Path, baseline: Path) -> None:
    code, checks = gate(cli, tmp_path, "crash = true")
    assert code == 3
    assert {c["verdict"] for c in checks.values()} == {"could not measure"}
    assert checks["counter copy.visits"]["detail"].startswith(
        "MemoryError: simulated out-of-memory inside the scenario (at test_gate_registry.py:"
    )


def test_a_command_whose_module_is_missing_is_a_config_error(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[scenarios.x]\ncommand = "missing"\n')
    result = cli("baseline", "--config", str(config), "--output", str(tmp_path / "b.json"))
    assert result.exit_code == 2
    assert f"--config: {config}: scenarios.x.options: the 'missing' scenario is not available here" in result.stderr
