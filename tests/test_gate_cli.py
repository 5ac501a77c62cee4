"""``dummyprof baseline`` and ``dummyprof gate`` end to end: exit codes, files, and injected regressions.

Scenarios here are tiny trees and every asserted check is a counter (or a
ratio of counters), so no assertion depends on timing noise.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dummyprof.cli.app import main
from dummyprof.loaders.strategies import STRATEGIES, Strategy, register_strategy
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
EditedGate = Callable[[str, str], tuple[Path, CliResult, Path]]
REPO = Path(__file__).resolve().parent.parent

CONFIG = """
[scenarios.small]
command = "compare"
counters = "all"
limits = { "per-layer.max_visits" = 2, "unique.max_visits" = 1 }
ratios = [{ numerator = "per-layer.visits", denominator = "legacy.visits", max = 0.6 }]

[scenarios.small.options]
depth = 4
hidden = 32
strategies = ["legacy", "per-layer", "unique"]
initializer = "v0.33"
repeat = 2
warmup = 0
device = "cpu"
"""


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gate") / "dummyprof.toml"
    path.write_text(CONFIG)
    return path


@pytest.fixture(scope="module")
def baseline(config: Path) -> Path:
    """Measured once for the module; tests that write treat it as read-only and copy it."""
    path = config.parent / "baseline.json"
    assert main(["baseline", "--config", str(config), "--output", str(path), "--quiet"]) == 0
    path.chmod(0o444)
    return path


@pytest.fixture
def crashing_strategy() -> Iterator[str]:
    def explode(model: object) -> Iterator[tuple[str, object]]:
        raise RuntimeError("simulated crash inside the scenario")
        yield  # pragma: no cover

    register_strategy(Strategy("test-crash", "raises", explode))  # type: ignore[arg-type]
    try:
        yield "test-crash"
    finally:
        STRATEGIES.pop("test-crash", None)


@pytest.fixture
def edited_gate(cli: Cli, tmp_path: Path, baseline: Path) -> EditedGate:
    """The gate on CONFIG with one text replaced, against the module's baseline: the config, the result, its --json."""

    def run(old: str, new: str) -> tuple[Path, CliResult, Path]:
        assert old in CONFIG
        config = tmp_path / "edited.toml"
        config.write_text(CONFIG.replace(old, new))
        gate_json = tmp_path / "gate.json"
        result = cli("gate", "--config", str(config), "--baseline", str(baseline), "--json", str(gate_json))
        return config, result, gate_json

    return run


def check_verdicts(json_path: Path) -> dict[str, str]:
    data = json.loads(json_path.read_text())
    return {f"{c['kind']} {c['name']}": c["verdict"] for c in data["gate"]["checks"]}


def test_baseline_records_exact_counters_and_every_round(baseline: Path) -> None:
    data = json.loads(baseline.read_text())
    assert data["command"] == "baseline"
    (scenario,) = data["gate"]["scenarios"]
    metrics = scenario["metrics"]
    assert metrics["legacy.max_visits"]["value"] == 5  # depth 4: the deepest tensor once per ancestor and itself
    assert metrics["per-layer.max_visits"]["value"] == 2  # the tied weight, once per owner
    assert metrics["unique.max_visits"]["value"] == 1
    assert metrics["unique.redundant_visits"]["value"] == 0
    assert metrics["per-layer.visits"]["value"] == metrics["unique.visits"]["value"] + 1
    assert len(metrics["legacy.time"]["time"]["samples"]) == 2
    fingerprint = scenario["fingerprint"]
    assert fingerprint["options"]["depth"] == 4 and "repeat" not in fingerprint["options"]
    assert fingerprint["torch_version"] and fingerprint["cpu_model"] and fingerprint["torch_threads"] >= 1


def test_baseline_never_overwrites_without_force(cli: Cli, config: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text("{}")
    before = baseline.read_text()
    result = cli("baseline", "--config", str(config), "--output", str(baseline))
    assert result.exit_code == 2
    assert result.stderr == (
        f"dummyprof: error: --output: {baseline} already exists; pass --force to overwrite it or choose another name\n"
    )
    assert baseline.read_text() == before
    result = cli("baseline", "--config", str(config), "--output", str(baseline), "--force", "--quiet")
    assert result.exit_code == 0
    assert json.loads(baseline.read_text())["command"] == "baseline"


def test_gate_passes_on_an_unchanged_tree_and_writes_every_report(
    cli: Cli, config: Path, baseline: Path, tmp_path: Path
) -> None:
    out = {name: tmp_path / name for name in ("gate.json", "junit.xml", "summary.md", "bench.json")}
    result = cli(
        "gate",
        "--config",
        str(config),
        "--baseline",
        str(baseline),
        "--json",
        str(out["gate.json"]),
        "--junit",
        str(out["junit.xml"]),
        "--markdown",
        str(out["summary.md"]),
        "--benchmark-json",
        str(out["bench.json"]),
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "gate PASS (21 checks: 21 pass); exit 0" in result.stdout
    verdicts = check_verdicts(out["gate.json"])
    assert len(verdicts) == 18 + 2 + 1 and set(verdicts.values()) == {"pass"}
    suites = ET.parse(out["junit.xml"]).getroot()
    assert suites.tag == "testsuites" and suites.get("tests") == "21" and suites.get("failures") == "0"
    assert len(suites.findall("./testsuite/testcase")) == 21
    summary = out["summary.md"].read_text()  # the terminal's table: a row per scenario, then its checks
    assert "| check | baseline | current | change | verdict |" in summary and "| **small** |" in summary
    bench = json.loads(out["bench.json"].read_text())
    assert {"dummyprof": "gate", "name": "small: per-layer.max_visits", "unit": "visits", "value": 2.0} in bench
    assert all(set(e) >= {"name", "unit", "value"} for e in bench)


def test_gate_catches_an_injected_revisiting_strategy(
    cli: Cli, config: Path, baseline: Path, tmp_path: Path, revisiting_per_layer: None
) -> None:
    junit = tmp_path / "junit.xml"
    gate_json = tmp_path / "gate.json"
    result = cli(
        "gate", "--config", str(config), "--baseline", str(baseline), "--junit", str(junit), "--json", str(gate_json)
    )
    assert result.exit_code == 1
    assert "gate FAIL: regression" in result.stdout
    verdicts = check_verdicts(gate_json)
    for name in ("visits", "redundant_visits", "max_visits", "bytes_written", "redundant_bytes_written"):
        assert verdicts[f"counter per-layer.{name}"] == "regressed"
    assert verdicts["limit per-layer.max_visits"] == "regressed"
    assert verdicts["ratio per-layer.visits / legacy.visits"] == "regressed"
    assert verdicts["counter legacy.visits"] == "pass" and verdicts["counter unique.visits"] == "pass"
    failures = ET.parse(junit).getroot().findall(".//failure")
    assert len(failures) == 7
    assert any((f.get("message") or "").startswith("regressed: current 5; baseline 2 (+3)") for f in failures)


def test_a_crash_inside_a_scenario_is_exit_3_never_a_regression(
    cli: Cli, tmp_path: Path, edited_gate: EditedGate, crashing_strategy: str
) -> None:
    config, result, gate_json = edited_gate('"unique"]', f'"unique", "{crashing_strategy}"]')
    assert result.exit_code == 3
    verdicts = check_verdicts(gate_json)
    assert set(verdicts.values()) == {"could not measure"}
    assert "RuntimeError: simulated crash inside the scenario" in result.stdout
    # and no baseline is written from a crashed run
    target = tmp_path / "never.json"
    result = cli("baseline", "--config", str(config), "--output", str(target))
    assert result.exit_code == 3
    assert not target.exists()
    assert "baseline NOT written: could not measure small" in result.stdout


def test_a_baseline_from_other_flags_is_not_comparable(edited_gate: EditedGate) -> None:
    _, result, gate_json = edited_gate("depth = 4", "depth = 5")
    assert result.exit_code == 3
    verdicts = check_verdicts(gate_json)
    assert verdicts["counter per-layer.visits"] == "not comparable"
    assert verdicts["limit per-layer.max_visits"] == "pass"  # needs no baseline
    checks = json.loads(gate_json.read_text())["gate"]["checks"]
    assert checks[0]["detail"] == "fingerprint differs: depth: 5 (baseline: 4)"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"command": "baseline", "schema_ver', "not valid JSON (truncated or corrupt?)"),
        ("\x00\x01garbage", "not valid JSON"),
        ("[1, 2]", "not a dummyprof results file (no schema_version)"),
        ('{"schema_version": 99, "command": "baseline"}', "written by a newer dummyprof (schema 99"),
        (
            '{"schema_version": 6, "command": "compare"}',
            "$.compare: a 'compare' results file needs its 'compare' section",
        ),
        (
            '{"schema_version": 6, "command": "baseline", "gate": {"scenarios": [{"metrics": 5}]}}',
            "$.gate.scenarios[0].metrics: Expected `object`, got `int`",
        ),
    ],
)
def test_bad_baselines_exit_2_before_measuring(
    cli: Cli, config: Path, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = cli("gate", "--config", str(config), "--baseline", str(path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"dummyprof: error: {path}: ")
    assert message in result.stderr and result.stderr.count("\n") == 1


def test_missing_baseline_flag_and_file(cli: Cli, config: Path, tmp_path: Path) -> None:
    result = cli("gate", "--config", str(config))
    assert (result.exit_code, result.stderr) == (
        2,
        "dummyprof: error: --baseline: give the baseline to compare with, e.g. --baseline perf/baseline.json\n",
    )
    result = cli("gate", "--config", str(config), "--baseline", str(tmp_path / "none.json"))
    assert (result.exit_code, result.stderr) == (2, f"dummyprof: error: {tmp_path / 'none.json'}: no such file\n")


def test_reports_are_refused_before_measuring_and_markdown_appends(
    cli: Cli, config: Path, baseline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text("keep me")
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), "--junit", str(junit))
    assert result.exit_code == 2 and "--junit:" in result.stderr and "already exists" in result.stderr
    assert junit.read_text() == "keep me"
    summary = tmp_path / "step_summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))  # appended to: the CI step summary
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), "--markdown", str(summary), "-q")
    assert result.exit_code == 0
    text = summary.read_text()
    assert text.startswith("# earlier step\n## dummyprof gate\n")
    assert result.stdout == "gate PASS (21 checks: 21 pass); exit 0\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--factor", "0.9"), "--factor: must be greater than 1"),
        (("--alpha", "1.5"), "--alpha: must be below 1"),
        (("--alpha", "x"), "--alpha: expected a number, got 'x'"),
    ],
)
def test_bad_flags_exit_2(cli: Cli, config: Path, baseline: Path, args: tuple[str, ...], message: str) -> None:
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_help_documents_exit_codes(cli: Cli) -> None:
    texts = {}
    for command in ("gate", "baseline"):
        result = cli(command, "--help")
        assert result.exit_code == 0
        texts[command] = " ".join(result.stdout.split())
    assert "Exit codes: 0 every check passed" in texts["gate"]
    assert "1 a regression, 2 usage, config or baseline-file error, 3 could not measure" in texts["gate"]
    # baseline never compares, so it has no regression to report (issue #20)
    assert "Exit codes: 0 the baseline was written, 2 usage or config error (or timings from a busy machine), " \
        "3 could not measure" in texts["baseline"]  # fmt: skip


def test_committed_gate_passes_on_this_tree(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's own gate (.ci/run): committed config and baseline, unchanged code."""
    monkeypatch.chdir(REPO)
    result = cli("gate", "--config", "dummyprof.toml", "--baseline", "perf/baseline.json", "--quiet")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.startswith("gate PASS")


def test_committed_gate_fails_when_the_refill_comes_back(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, revisiting_per_layer: None, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    gate_json = tmp_path / "gate.json"
    result = cli(
        "gate",
        "--config",
        "dummyprof.toml",
        "--baseline",
        "perf/baseline.json",
        "--quiet",
        "--scenario",
        "deep-chain",
        "--json",
        str(gate_json),
    )
    assert result.exit_code == 1
    verdicts = check_verdicts(gate_json)
    assert verdicts["counter per-layer.visits"] == "regressed"
    assert verdicts["limit per-layer.max_visits"] == "regressed"


def test_a_scenario_too_big_for_this_machine_is_exit_3(edited_gate: EditedGate) -> None:
    _, result, gate_json = edited_gate('device = "cpu"', 'device = "cpu"\nmax_memory = 4096')
    assert result.exit_code == 3
    checks = json.loads(gate_json.read_text())["gate"]["checks"]
    assert {c["verdict"] for c in checks} == {"could not measure"}
    assert checks[0]["detail"].startswith("does not fit on this machine: --max-memory: synthetic tree: depth")


def test_a_bad_option_value_found_while_running_is_a_config_error(cli: Cli, tmp_path: Path, baseline: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(CONFIG.replace("repeat = 2", "repeat = 0"))
    result = cli("gate", "--config", str(config), "--baseline", str(baseline))
    assert result.exit_code == 2
    assert result.stderr == (
        f"dummyprof: error: --config: {config}: scenarios.small.options.repeat: must be at least 1, got 0\n"
    )
