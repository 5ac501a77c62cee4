"""`dummyprof compare` and `dummyprof report` end to end: output, files, bad input, exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.results.session import SCHEMA_VERSION
from dummyprof.scenarios.compare import run as compare_scenario
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
SMALL = ("--depth", "3", "--hidden", "32", "--repeat", "1", "--warmup", "0", "--device", "cpu")


def test_compare_prints_tables_and_summary(cli: Cli) -> None:
    result = cli("compare", *SMALL)
    assert result.exit_code == 0, result.stderr
    for title in ("model: ", "Strategies", "Most revisited tensors", "Memory"):
        assert title in result.stdout
    # the answer first, the fastest strategy first ("fill" where it fits); the words: tests/test_terminal_widths.py
    assert re.search(r"^median (fill )?on cpu[:,] ", result.stdout, re.M)
    assert "unavailable: no CUDA" in result.stdout  # pinned memory on a CPU-only torch
    assert "\x1b[" not in result.stdout  # no colour codes when not a terminal


def test_quiet_prints_only_the_summary(cli: Cli) -> None:
    result = cli("compare", *SMALL, "--quiet")
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and re.match(r"median (fill )?on cpu[:,] ", lines[0])


def test_json_file_has_schema_and_per_tensor_visits(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    result = cli("compare", *SMALL, "--quiet", "--json", str(path))
    assert result.exit_code == 0, result.stderr
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION and data["command"] == "compare"
    assert "summary" not in data  # words are the reporters': the summary line is written from the data
    tensors = data["compare"]["tensors"]
    assert tensors["child0.child0.child0.qweight"]["visits"] == {"legacy": 4, "per-layer": 1, "unique": 1}
    assert tensors["embed_tokens.weight"]["visits"] == {"legacy": 4, "per-layer": 2, "unique": 1}
    assert tensors["embed_tokens.weight"]["names"] == ["embed_tokens.weight", "lm_head.weight"]
    strategies = {s["name"]: s for s in data["compare"]["strategies"]}
    assert strategies["legacy"]["max_visits"] == 4
    assert len(strategies["legacy"]["time"]["samples"]) == 1
    assert data["environment"]["torch_version"]


def test_json_to_stdout(cli: Cli) -> None:
    result = cli("compare", *SMALL, "--json", "-")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["command"] == "compare"
    assert "Strategies" in result.stderr  # tables move to stderr so stdout stays machine-readable


def test_existing_json_is_not_overwritten_without_force(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("precious")
    result = cli("compare", *SMALL, "--json", str(path))
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"dummyprof: error: --json: {path} already exists; pass --force to overwrite it or choose another name\n"
    )
    assert path.read_text() == "precious"
    assert cli("compare", *SMALL, "--quiet", "--json", str(path), "--force").exit_code == 0
    assert json.loads(path.read_text())["command"] == "compare"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--depth", "abc"), "--depth: expected a whole number, got 'abc'; try --depth 12"),
        (("--depth", "0"), "--depth: must be at least 1, got 0; try --depth 12"),
        (("--depth", "-3"), "--depth: must be at least 1, got -3; try --depth 12"),
        (("--depth", "5000"), "--depth: 5000 levels is deeper than torch's modules() and state_dict() can recurse"),
        (("--width", "0"), "--width: must be at least 1, got 0"),
        (("--hidden", "33"), "--hidden: must be a positive multiple of 32"),
        (("--hidden", "1e3"), "--hidden: expected a whole number, got '1e3'"),
        (("--repeat", "0"), "--repeat: must be at least 1, got 0"),
        (("--dtype", "float64"), "--dtype: unknown dtype 'float64'; choose one of: float32, bfloat16, float16"),
        (("--device", "tpu"), "--device: unknown device 'tpu'; choose cpu, cuda, cuda:N or auto"),
        (("--device", "cuda"), "--device: 'cuda' asked for CUDA but this torch"),
        (("--strategy", "fast"), "--strategy: unknown strategy 'fast'; choose from: legacy, per-layer, unique"),
        (("--strategy", "legacy", "--strategy", "legacy"), "--strategy: 'legacy' is listed twice"),
        (("--initializer", "v9"), "--initializer: unknown initializer 'v9'; choose one of: fast, v0.29, v0.33"),
        (("--max-memory", "lots"), "--max-memory: expected a size such as 16GiB"),
        (("--width", "9", "--depth", "9"), "--width: --depth 9 --width 9 makes 435,848,049 blocks"),
        (("--bogus",), "No such option: --bogus"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli: Cli, args: tuple[str, ...], message: str, tmp_path: Path) -> None:
    if "cuda" in args and __import__("torch").cuda.is_available():
        pytest.skip("CUDA present")
    result = cli("compare", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_too_large_says_what_would_fit(cli: Cli) -> None:
    """audit must fill the real model, so it refuses; compare projects instead (tests/test_compare_sizing.py)."""
    result = cli("audit", "--depth", "12", "--hidden", "8192", "--max-memory", "1GiB")
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: --max-memory: ")  # the user's own limit is in the way
    assert "only 1.00 GiB can be used here; raise --max-memory to 5.21 GiB or --hidden 2048 fits" in result.stderr


def test_ctrl_c_exits_130_without_partial_file(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(compare_scenario, "run", interrupted)
    path = tmp_path / "out.json"
    result = cli("compare", *SMALL, "--json", str(path))
    assert result.exit_code == 130
    assert result.stderr == "dummyprof: interrupted\n"
    assert list(tmp_path.iterdir()) == []


def test_report_renders_a_saved_file_in_every_format(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    assert cli("compare", *SMALL, "--quiet", "--json", str(path)).exit_code == 0
    terminal = cli("report", str(path))
    assert terminal.exit_code == 0 and "Strategies" in terminal.stdout
    markdown = cli("report", str(path), "--format", "markdown")
    assert markdown.exit_code == 0
    assert "| strategy | median | CV |" in markdown.stdout and "| legacy |" in markdown.stdout
    as_json = cli("report", str(path), "--format", "json")
    assert json.loads(as_json.stdout) == json.loads(path.read_text())
    md_path = tmp_path / "summary.md"
    assert cli("report", str(path), "-f", "markdown", "-o", str(md_path)).exit_code == 0
    again = cli("report", str(path), "-f", "markdown", "-o", str(md_path))  # its own earlier report: replaced
    assert again.exit_code == 0 and "| legacy |" in md_path.read_text()
    mine = tmp_path / "notes.md"
    mine.write_text("a user's notes\n")
    refused = cli("report", str(path), "-f", "markdown", "-o", str(mine))  # not dummyprof's: never replaced
    assert refused.exit_code == 2 and "--output" in refused.stderr and mine.read_text() == "a user's notes\n"


def test_report_bad_inputs(cli: Cli, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": 6, "command": "comp')
    result = cli("report", str(broken))
    assert result.exit_code == 2 and "not valid JSON (truncated or corrupt?)" in result.stderr
    assert cli("report", str(tmp_path / "missing.json")).exit_code == 2
    assert "--format: unknown format 'pdf'" in cli("report", str(broken), "--format", "pdf").stderr


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_help_does_not_import_torch() -> None:
    proc = run_python(
        "import sys\nfrom dummyprof.cli.app import main\n"
        "assert main(['--help']) == 0\nassert main(['compare', '--help']) == 0\n"
        "assert 'torch' not in sys.modules, 'torch imported by --help'\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "compare" in proc.stdout and "--depth" in proc.stdout


def test_saved_results_render_without_torch(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    assert cli("compare", *SMALL, "--quiet", "--json", str(path)).exit_code == 0
    proc = run_python(
        "import sys\nsys.modules['torch'] = None  # any import of torch now fails\n"
        "from dummyprof.cli.app import main\n"
        f"raise SystemExit(main(['report', {str(path)!r}, '--format', 'markdown']))\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert "| legacy |" in proc.stdout


def test_python_dash_m_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dummyprof", "compare", "--help"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and "--depth" in proc.stdout
