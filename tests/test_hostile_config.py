"""#17.1/#17.3 (wave 2): a gate config's nested sweep options, and TOML that nests deep, end as promised."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dummyprof.gate.config import load_config
from tests.conftest import CliResult

Cli = Callable[..., CliResult]

SWEEP = """
[scenarios.grow]
command = "sweep"
counters = "all"
[scenarios.grow.options]
parameter = "model-arg:depth"
values = [1, 2]
[scenarios.grow.options.compare]
model = "m.py:build"
model_args = { hidden = 32 }
repeat = 1
"""


def _config(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "ci"
    folder.mkdir()
    (folder / "m.py").write_text("from tests.fixtures.models import build\n")
    config = folder / "dummyprof.toml"
    config.write_text(SWEEP)
    return folder, config


def test_a_sweeps_nested_model_is_found_next_to_the_config(tmp_path: Path) -> None:
    folder, config = _config(tmp_path)
    (scenario,) = load_config(config).scenarios
    assert scenario.options.compare.model == f"{folder / 'm.py'}:build"
    assert scenario.options.compare.model_args == {"hidden": 32}


def test_a_sweeps_nested_model_is_never_an_output(tmp_path: Path, cli: Cli) -> None:
    folder, config = _config(tmp_path)
    before = (folder / "m.py").read_bytes()
    result = cli("baseline", "--config", str(config), "--output", str(folder / "m.py"), "--force", "-q")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "--output" in result.stderr and "m.py" in result.stderr
    assert (folder / "m.py").read_bytes() == before


def test_toml_nested_deeper_than_the_parser_recurses_is_one_line(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "deep.toml"
    config.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    result = cli("baseline", "--config", str(config), "--output", str(tmp_path / "b.json"))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "--config" in result.stderr and "Traceback" not in result.stderr
    inline = tmp_path / "inline.toml"
    inline.write_text("x = " + "{a = " * 50_000 + "1" + "}" * 50_000 + "\n")
    result = cli("baseline", "--config", str(inline), "--output", str(tmp_path / "b.json"))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "--config" in result.stderr


def test_a_hugging_face_config_nested_deeper_than_json_recurses_is_one_line(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = cli("inspect", "--model", f"hf:{config}")
    assert result.exit_code == 2, result.stderr
    assert (
        result.stderr
        == f"dummyprof: error: --model: {str(config)!r} is nested too deep to be a Hugging Face config.json\n"
    )
