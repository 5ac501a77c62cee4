"""The gate in a user's CI: baselines only from a quiet machine, timings skipped (not failed) on a busy one unless
``--strict``, output folders created, a file dummyprof wrote in an earlier run replaced, and docs/gate.md's setup
run as written, twice in a fresh folder."""

from __future__ import annotations

import json
import shlex
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import docs_examples
from tests.conftest import CliResult
from tests.fixtures.gate_configs import tiny_config

Cli = Callable[..., CliResult]

TIMED = tiny_config('timings = ["per-layer.time"]\nratios = [{ numerator = "per-layer.time", denominator = '
                    '"unique.time", max = 50.0 }]', repeat=3)  # fmt: skip


@pytest.fixture
def busy_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every timed window reads CPU pressure 100% (PSI's counter outruns the clock): a contended machine."""
    from dummyprof.measure import contention

    monkeypatch.setattr(contention, "_pressure_us", lambda proc: int(time.monotonic() * 2e6))


def _config(folder: Path, text: str = TIMED) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "dummyprof.toml"
    path.write_text(text)
    return path


@pytest.mark.usefixtures("busy_machine")
def test_baseline_refuses_timings_from_a_busy_machine_naming_the_reading(cli: Cli, tmp_path: Path) -> None:
    config = _config(tmp_path)
    out = tmp_path / "perf" / "baseline.json"
    result = cli("baseline", "--config", str(config), "--output", str(out), "-q")
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr == (
        "dummyprof: error: baseline not written: timings that gate judges against it were measured on a busy "
        "machine (tiny: per-layer.time (CPU pressure 100%); cpu-pressure); run dummyprof baseline again "
        "when nothing else runs (a dedicated runner), or pass --allow-contended to record them anyway\n"
    )
    result = cli("baseline", "--config", str(config), "--output", str(out), "-q", "--allow-contended")
    assert result.exit_code == 0, result.stderr
    metric = json.loads(out.read_text())["gate"]["scenarios"][0]["metrics"]["per-layer.time"]
    assert metric["time"]["contention"]["reasons"] == ["cpu-pressure"]  # recorded as asked, and marked


@pytest.mark.usefixtures("busy_machine")
def test_a_baseline_without_timing_checks_is_recorded_on_a_busy_machine(cli: Cli, tmp_path: Path) -> None:
    """Counters and in-run ratios are never judged against the baseline's times: nothing to refuse."""
    config = _config(tmp_path, tiny_config(repeat=2))
    out = tmp_path / "baseline.json"
    assert cli("baseline", "--config", str(config), "--output", str(out), "-q").exit_code == 0


@pytest.fixture
def quiet_baseline(cli: Cli, tmp_path: Path) -> tuple[Path, Path]:
    config = _config(tmp_path)
    out = tmp_path / "baseline.json"
    assert cli("baseline", "--config", str(config), "--output", str(out), "-q").exit_code == 0
    return config, out


def test_on_a_busy_machine_timings_are_skipped_exit_0_and_strict_exits_3(
    cli: Cli, tmp_path: Path, quiet_baseline: tuple[Path, Path], busy_machine: None
) -> None:
    config, base = quiet_baseline
    junit, summary = tmp_path / "out" / "junit.xml", tmp_path / "out" / "summary.md"
    args = ("gate", "--config", str(config), "--baseline", str(base), "--junit", str(junit), "--markdown", str(summary))
    result = cli(*args, "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("gate PASS, timings skipped (") and "2 not judged" in result.stdout
    suite = ET.parse(junit).getroot()
    assert (suite.get("skipped"), suite.get("errors"), suite.get("failures")) == ("2", "0", "0")
    skipped = [case for case in suite.iter("testcase") if case.find("skipped") is not None]
    assert sorted(case.get("name") for case in skipped) == [
        "ratio per-layer.time / unique.time",
        "timing per-layer.time",
    ]
    why = skipped[0].find("skipped")
    assert why is not None and "timed on a busy machine (CPU pressure 100%" in (why.get("message") or "")
    text = summary.read_text()
    assert "gate PASS, timings skipped" in text and "timed on a busy machine (CPU pressure 100%" in text
    result = cli(*args, "-q", "--strict")  # the files of the first run are its own: replaced without --force
    assert result.exit_code == 3, result.stderr
    assert result.stdout.startswith("gate INCOMPLETE: times not judged (--strict)")
    assert ET.parse(junit).getroot().get("errors") == "2"


def test_output_folders_are_created_and_own_files_replaced_but_no_other(
    cli: Cli, tmp_path: Path, quiet_baseline: tuple[Path, Path]
) -> None:
    config, base = quiet_baseline
    out = tmp_path / "deep" / "er"
    files = {"--junit": out / "junit.xml", "--markdown": out / "summary.md", "--json": out / "gate.json"}
    files["--benchmark-json"] = out / "bench.json"
    args = ["gate", "--config", str(config), "--baseline", str(base), "-q"]
    args += [word for flag, path in files.items() for word in (flag, str(path))]
    for _ in range(2):  # the second run replaces what the first wrote
        result = cli(*args)
        assert result.exit_code == 0, result.stderr
    assert json.loads(files["--json"].read_text())["command"] == "gate"
    files["--junit"].write_text("<testsuites name='mine'/>")  # the user's file now: not replaced without --force
    result = cli(*args)
    assert result.exit_code == 2 and f"--junit: {files['--junit']} already exists; pass --force" in result.stderr
    assert files["--junit"].read_text() == "<testsuites name='mine'/>"
    files["--junit"].unlink()
    files["--benchmark-json"].write_text("[]\n")  # a benchmark file with no owner in it: not replaced either
    result = cli(*args)
    assert result.exit_code == 2 and f"--benchmark-json: {files['--benchmark-json']} already exists" in result.stderr
    # Another command's file of the same format is not its own either: a baseline is never a gate's --json.
    result = cli("gate", "--config", str(config), "--baseline", str(base), "--json", str(out / "other.json"), "-q")
    assert result.exit_code == 0
    result = cli("baseline", "--config", str(config), "--output", str(out / "other.json"), "-q")
    assert result.exit_code == 2 and "already exists" in result.stderr


def _setup_commands() -> list[list[str]]:
    """docs/gate.md's setup block, as written: the baseline line, then the gate line."""
    page = docs_examples.ROOT / "docs" / "gate.md"
    examples = list(docs_examples.examples_in(page))
    block = list({e.line: e for e in examples if e.block == examples[0].block}.values())  # run twice: listed twice
    assert [e.command.split()[1] for e in block] == ["baseline", "gate"]
    env = {"GITHUB_STEP_SUMMARY": ""}  # a laptop: the Markdown goes to the file the line names instead
    return [[docs_examples.expand(word, env) for word in shlex.split(e.command)[1:]] for e in block]


def test_the_documented_setup_runs_twice_in_a_fresh_folder_and_catches_a_real_regression(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Exit 0 both times (the second run replaces its own files); a recursive refill brought back is exit 1. The
    config is a small one under the name the docs use (CI runs the docs' own config: tests/docs_examples.py)."""
    _config(tmp_path, tiny_config(repeat=2))
    monkeypatch.chdir(tmp_path)
    commands = _setup_commands()
    for _ in range(2):
        for argv in commands:
            result = cli(*argv, "-q")
            assert result.exit_code == 0, (argv, result.stderr)
    assert (tmp_path / "out" / "junit.xml").is_file() and (tmp_path / "perf" / "baseline.json").is_file()
    request.getfixturevalue("revisiting_per_layer")
    result = cli(*commands[1], "-q")
    assert result.exit_code == 1 and result.stdout.startswith("gate FAIL: regression")
