"""The engram scenario in the gate: its metric names, extraction, and an injected fall-back to a random fill."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dummyprof.gate.metrics import engram_metric_names, engram_metrics
from dummyprof.loaders import fp8_methods as fp8_fill
from dummyprof.results.common import Estimate
from dummyprof.results.engram import EngramLayout, EngramResult, MethodResult
from dummyprof.results.session import Results
from dummyprof.scenarios.engram.run import EngramOptions
from tests.conftest import CliResult

Cli = Callable[..., CliResult]

CONFIG = """
[scenarios.rank]
command = "engram"
options = { rows = 65536, dim = 256, tp = 2, rank = 1, methods = ["constant"], repeat = 2, device = "cpu" }
counters = "all"
"""


def test_metric_names_include_the_floor_every_run_measures() -> None:
    names = engram_metric_names(EngramOptions(methods=["constant"]))
    assert sorted(names) == sorted(
        ["table_bytes_per_rank", "reserved_bytes_per_rank"]
        + [
            f"{m}.{c}"
            for m in ("constant", "memset")
            for c in ("bytes_written", "peak_scratch_bytes", "needed_bytes", "measured_scratch_bytes", "time")
        ]
    )
    assert names["memset.time"].kind == "time" and names["table_bytes_per_rank"].kind == "counter"


def test_projected_methods_give_no_time_to_compare() -> None:
    section = EngramResult(
        layout=EngramLayout(table_bytes_per_rank=264, reserved_bytes_per_rank=512),
        methods=[
            MethodResult(
                name="constant",
                mode="measured",
                bytes_written=264,
                measured_scratch_bytes=0,
                time=Estimate.measured([0.002, 0.001, 0.003]),
            ),
            MethodResult(name="random-convert", mode="projected", bytes_written=256, peak_scratch_bytes=768),
        ],
    )
    metrics = engram_metrics(Results(command="engram", engram=section))
    assert metrics["table_bytes_per_rank"].value == 264 and metrics["reserved_bytes_per_rank"].value == 512
    assert metrics["constant.time"].value == 0.002 and metrics["constant.time"].samples == [0.002, 0.001, 0.003]
    assert metrics["constant.measured_scratch_bytes"].value == 0
    assert metrics["random-convert.peak_scratch_bytes"].value == 768
    assert "random-convert.time" not in metrics  # a projection is never compared as a measurement
    assert "random-convert.measured_scratch_bytes" not in metrics


@pytest.fixture
def restore_constant() -> Iterator[None]:
    original = fp8_fill.METHODS["constant"]
    try:
        yield
    finally:
        fp8_fill.METHODS["constant"] = original


def test_gate_catches_a_constant_fill_that_falls_back_to_random(
    cli: Cli, tmp_path: Path, restore_constant: None
) -> None:
    config = tmp_path / "dummyprof.toml"
    config.write_text(CONFIG)
    baseline = tmp_path / "baseline.json"
    assert cli("baseline", "--config", str(config), "--output", str(baseline), "-q").exit_code == 0
    metrics = json.loads(baseline.read_text())["gate"]["scenarios"][0]["metrics"]
    part_rows = 65536 // 2
    assert metrics["table_bytes_per_rank"]["value"] == part_rows * (256 + 256 // 32)
    assert metrics["constant.measured_scratch_bytes"]["value"] == 0

    # The regression: the tables lose their dummy_weight_value (as a state_dict() detach loses it), so vLLM 0.33's
    # initializer quietly draws random values through an fp16 scratch; the method's scratch declaration unchanged.
    fp8_fill.METHODS["constant"] = dataclasses.replace(
        fp8_fill.METHODS["constant"], fill=fp8_fill.fill_random_scratch, declared=False
    )
    gate_json = tmp_path / "gate.json"
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), "--json", str(gate_json), "-q")
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(gate_json.read_text())["gate"]["checks"]}
    scratch = checks["constant.measured_scratch_bytes"]
    assert scratch["verdict"] == "regressed"
    assert scratch["current"] == part_rows * 256 * 2  # an fp16 scratch of the whole weight
    assert checks["table_bytes_per_rank"]["verdict"] == "pass"


@pytest.mark.parametrize("nested", [False, True])
def test_the_old_layout_keys_are_unknown_options(tmp_path: Path, nested: bool) -> None:
    from dummyprof.gate.config import ConfigError, load_config

    config = tmp_path / "dummyprof.toml"
    if nested:  # a sweep's options nest the swept command's
        config.write_text(
            '[scenarios.s]\ncommand = "sweep"\n[scenarios.s.options]\nparameter = "rows"\nvalues = [4096, 8192]\n'
            '[scenarios.s.options.engram]\ndim = 64\ntp_size = 2\nmethods = ["constant"]\n'
        )
    else:
        config.write_text(CONFIG.replace("tp = 2", "tp_size = 2"))
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    where = "scenarios.s.options.engram" if nested else "scenarios.rank.options"
    assert caught.value.message.startswith(f"{config}: {where}.tp_size: unknown option for 'engram'; valid: ")


def test_a_baseline_of_an_older_schema_is_refused_naming_the_command_that_makes_it_again(
    cli: Cli, tmp_path: Path
) -> None:
    config = tmp_path / "dummyprof.toml"
    config.write_text(CONFIG)
    baseline = tmp_path / "baseline.json"
    assert cli("baseline", "--config", str(config), "--output", str(baseline), "-q").exit_code == 0
    text = baseline.read_text()
    assert text.count('"tp": 2,') == 1  # the fingerprint's options (dp, at its default, is left out)
    assert text.count('"schema_version": 6,') == 1
    baseline.write_text(text.replace('"schema_version": 6,', '"schema_version": 4,'))
    result = cli("gate", "--config", str(config), "--baseline", str(baseline), "-q")
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert result.stderr == (
        f"dummyprof: error: {baseline}: results schema 4, which this dummyprof no longer reads (it reads schema 6); "
        f"make it again: dummyprof baseline --config CONFIG --output {baseline}\n"
    )


@pytest.mark.parametrize(
    ("options", "key", "message"),
    [
        ('rows = 65536, tp = "x", device = "cpu"', "scenarios.e.options.tp", "Expected `int`, got `str`"),
        ('rows = 65536, tp = 0, device = "cpu"', "scenarios.e.options.tp", "must be at least 1, got 0"),
    ],
)
def test_a_bad_value_under_an_old_key_is_named_by_the_key_written(
    tmp_path: Path, options: str, key: str, message: str
) -> None:
    # before: the error named options.tp, a key the config does not have (and the old key's notice never came)
    from dummyprof.gate.config import ConfigError, load_config

    config = tmp_path / "dummyprof.toml"
    config.write_text(f'[scenarios.e]\ncommand = "engram"\noptions = {{ {options} }}\ncounters = "all"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert caught.value.message == f"{config}: {key}: {message}"


@pytest.mark.parametrize("name", ["tp", "dp"])
def test_a_bad_value_in_a_sweeps_engram_table_is_named_with_its_table(tmp_path: Path, name: str) -> None:
    # before: scenarios.s.options.tp, a key the sweep's own table does not have (it is in options.engram)
    from dummyprof.gate.config import ConfigError, load_config

    config = tmp_path / "dummyprof.toml"
    config.write_text(
        '[scenarios.s]\ncommand = "sweep"\n[scenarios.s.options]\nparameter = "rows"\nvalues = [4096, 8192]\n'
        f'[scenarios.s.options.engram]\ndim = 64\n{name} = 0\nmethods = ["constant"]\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert caught.value.message == f"{config}: scenarios.s.options.engram.{name}: must be at least 1, got 0"
