"""Config errors name the file and the key, exit 2, and happen before anything is measured."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.gate.config import load_config
from tests.conftest import CliResult

Cli = Callable[..., CliResult]

GOOD = """
[gate]
factor = 1.2
alpha = 0.01

[scenarios.tree]
command = "compare"
options = { depth = 3, hidden = 32, strategies = ["legacy", "per-layer"], initializer = "v0.33" }
limits = { "per-layer.max_visits" = 2 }
ratios = [{ numerator = "per-layer.time", denominator = "legacy.time", max = 0.6 }]
timings = "all"
"""
NO_CHECKS = """
[scenarios.tree]
command = "compare"
counters = []
"""


def write(tmp_path: Path, text: str, name: str = "dummyprof.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_config_is_read_into_options_and_checks(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD))
    assert (config.factor, config.alpha) == (1.2, 0.01)
    (scenario,) = config.scenarios
    assert scenario.options.depth == 3 and scenario.options.strategies == ["legacy", "per-layer"]
    assert scenario.options.width == 1  # unset options keep the command's defaults
    assert len(scenario.counters) == 12  # "all" by default: 6 counters x 2 strategies
    assert "per-layer.redundant_visits" in scenario.counters
    assert scenario.timings == ["legacy.time", "per-layer.time"]
    assert scenario.limits == {"per-layer.max_visits": 2.0}
    assert [r.name for r in scenario.ratios] == ["per-layer.time / legacy.time"]


def test_pyproject_tool_table_is_read(tmp_path: Path) -> None:
    text = GOOD.replace("[gate]", "[tool.dummyprof.gate]").replace("[scenarios.", "[tool.dummyprof.scenarios.")
    config = load_config(write(tmp_path, '[project]\nname = "x"\n' + text, "pyproject.toml"))
    assert [s.name for s in config.scenarios] == ["tree"]


def test_default_is_dummyprof_toml_in_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, GOOD)
    monkeypatch.chdir(tmp_path)
    assert load_config().path == Path("dummyprof.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            GOOD.replace("depth = 3", "depthh = 3"),
            "scenarios.tree.options.depthh: unknown option for 'compare'; valid: depth,",
        ),
        (GOOD.replace("depth = 3", 'depth = "three"'), "scenarios.tree.options.depth: Expected `int`, got `str`"),
        (GOOD.replace('"compare"', '"compar"'), "scenarios.tree.command: got 'compar'; choose one of: \"compare\""),
        (GOOD.replace('"legacy", "per-layer"]', '"legacy", "per-layr"]'), "unknown strategy 'per-layr'"),
        (GOOD.replace("per-layer.max_visits", "per-layer.max_vists"), "unknown metric 'per-layer.max_vists'"),
        (
            GOOD.replace('timings = "all"', 'timings = ["per-layer.visits"]'),
            "'per-layer.visits' is a counter, not a time",
        ),
        (
            GOOD.replace("max = 0.6", "maximum = 0.6"),
            "scenarios.tree.ratios[0]: Object contains unknown field `maximum`",
        ),
        (GOOD.replace("factor = 1.2", "factor = 0.9"), "gate.factor: Expected `float` > 1.0"),
        (GOOD.replace("alpha = 0.01", "alpha = 5"), "gate.alpha: Expected `float` < 1.0"),
        (GOOD + "\n[extra]\n", "Object contains unknown field `extra`"),
        ("[gate]\n", "scenarios: no scenarios"),
        ("[scenarios.tree\n", "not valid TOML"),
        (NO_CHECKS, "scenarios.tree: has no checks"),
    ],
)
def test_config_mistakes_exit_2_naming_the_key(tmp_path: Path, cli: Cli, text: str, message: str) -> None:
    path = write(tmp_path, text)
    result = cli("gate", "--config", str(path), "--baseline", str(tmp_path / "unused.json"))
    assert result.exit_code == 2
    assert result.stdout == ""
    err = result.stderr
    assert err.startswith(f"dummyprof: error: --config: {path}: ")
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_missing_config_file_and_no_default(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    result = cli("baseline", "--config", str(tmp_path / "nope.toml"), "--output", str(tmp_path / "b.json"))
    assert result.exit_code == 2
    assert f"--config: {tmp_path / 'nope.toml'}: no such file" in result.stderr
    monkeypatch.chdir(tmp_path)
    result = cli("baseline", "--output", "b.json")
    assert result.exit_code == 2
    assert "no dummyprof.toml here and no [tool.dummyprof] in pyproject.toml" in result.stderr
    assert not (tmp_path / "b.json").exists()


def test_unknown_scenario_selection(tmp_path: Path, cli: Cli) -> None:
    path = write(tmp_path, GOOD)
    result = cli("baseline", "--config", str(path), "--output", str(tmp_path / "b.json"), "--scenario", "nope")
    assert result.exit_code == 2
    assert "--scenario: no scenario 'nope'" in result.stderr
    assert "choose from: tree" in result.stderr


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_user_models_and_loaders_are_plain_options(tmp_path: Path) -> None:
    text = f"""
[scenarios.mine]
command = "compare"
options = {{ model = "{FIXTURES / "models.py"}:tied", loaders = ["{FIXTURES / "loaders.py"}:fill_once"] }}
"""
    (scenario,) = load_config(write(tmp_path, text)).scenarios
    assert scenario.options.model.endswith("models.py:tied")
    assert "fill_once.visits" in scenario.counters and "per-layer.visits" in scenario.counters


def test_a_loader_that_cannot_be_loaded_names_the_config_key(tmp_path: Path, cli: Cli) -> None:
    path = write(tmp_path, '[scenarios.mine]\ncommand = "compare"\noptions = { loaders = ["nowhere.py:fill"] }\n')
    result = cli("gate", "--config", str(path), "--baseline", str(tmp_path / "b.json"))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dummyprof: error: --config: {path}: scenarios.mine.options.loader: ")


def test_model_and_loader_files_are_found_next_to_the_config_not_in_the_cwd(tmp_path: Path, cli: Cli) -> None:
    folder = tmp_path / "ci"
    folder.mkdir()
    (folder / "m.py").write_text("from tests.fixtures.models import build\n")
    (folder / "fill.py").write_text("from tests.fixtures.loaders import fill_once as fill\n")
    text = """
[scenarios.mine]
command = "compare"
counters = "all"
options = { model = "m.py:build", loaders = ["./fill.py:fill", "tests.fixtures.loaders:fill_once"], repeat = 1 }
"""
    config = write(folder, text)
    (scenario,) = load_config(config).scenarios
    assert scenario.options.model == f"{folder / 'm.py'}:build"
    assert scenario.options.loaders == [f"{folder / 'fill.py'}:fill", "tests.fixtures.loaders:fill_once"]
    result = cli("baseline", "--config", str(config), "--output", str(tmp_path / "b.json"), "-q")
    assert result.exit_code == 0, result.stderr


def _tiny_llama(folder: Path, layers: int) -> None:
    import json

    data = json.loads(Path("tests/data/Llama-3.1-8B.json").read_text())
    data |= {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2}
    data |= {"head_dim": 16, "vocab_size": 256, "num_hidden_layers": layers}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(data))


HF_SCENARIO = """
[scenarios.hf]
command = "compare"
counters = "all"
options = {{ model = "{model}", repeat = 1 }}
"""


@pytest.mark.parametrize("model", ["hf:llama/config.json", "hf:./llama", "hf:llama"])
def test_an_hf_model_is_found_next_to_the_config_never_in_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """The cwd holds a model of the same name with another layer count: the config's own is measured."""
    pytest.importorskip("transformers")
    folder = tmp_path / "ci"
    _tiny_llama(folder / "llama", layers=2)
    _tiny_llama(tmp_path / "llama", layers=5)  # what a cwd-relative read would silently measure
    monkeypatch.chdir(tmp_path)
    (scenario,) = load_config(write(folder, HF_SCENARIO.format(model=model))).scenarios
    target = model.removeprefix("hf:").removeprefix("./")
    assert scenario.options.model == f"hf:{folder / target}"


def test_a_missing_hf_path_is_named_next_to_the_config_and_a_hub_id_stays_one(tmp_path: Path) -> None:
    folder = tmp_path / "ci"
    folder.mkdir()
    (scenario,) = load_config(write(folder, HF_SCENARIO.format(model="hf:meta-llama/Llama-3.1-8B"))).scenarios
    assert scenario.options.model == "hf:meta-llama/Llama-3.1-8B"  # a hub id, not a path
    absolute = f"hf:{tmp_path / 'x' / 'config.json'}"
    (scenario,) = load_config(write(folder, HF_SCENARIO.format(model=absolute))).scenarios
    assert scenario.options.model == absolute


def test_an_mmap_backing_is_made_next_to_the_config(tmp_path: Path) -> None:
    folder = tmp_path / "ci"
    folder.mkdir()
    text = """
[scenarios.e]
command = "engram"
options = { rows = 4096, dim = 64, offload = true, backing = "mmap:tables.bin", methods = ["constant"] }
"""
    (scenario,) = load_config(write(folder, text)).scenarios
    assert scenario.options.backing == f"mmap:{folder / 'tables.bin'}"


def test_the_config_reader_spells_the_prefixes_as_their_sources_do() -> None:
    from dummyprof.allocation.backings import MMAP_PREFIX
    from dummyprof.gate import config
    from dummyprof.models.huggingface import PREFIX

    assert (config.HF, config.MMAP) == (PREFIX, MMAP_PREFIX)
