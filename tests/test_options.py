"""One options dataclass and one ``validate`` per scenario, shared by the CLI, the gate and the Python API."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.errors import UsageError
from dummyprof.gate.config import load_config
from dummyprof.gate.fingerprint import make_fingerprint, option_defaults
from dummyprof.results.common import Environment
from dummyprof.scenarios.audit.options import AuditOptions
from dummyprof.scenarios.audit.options import validate as validate_audit
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.compare.options import validate as validate_compare
from dummyprof.scenarios.engram.options import EngramOptions, methods_to_run
from dummyprof.scenarios.inspect.options import InspectOptions
from dummyprof.scenarios.inspect.options import validate as validate_inspect
from tests.conftest import CliResult
from tests.fixtures.gate_configs import gate_refusal

Cli = Callable[..., CliResult]
ROOT = Path(__file__).resolve().parent.parent
# compare's options before they were composed of shared groups: the gate's TOML keys and fingerprints.
COMPARE_FIELDS = {
    # the deployment fields (issue #19), shared with inspect and audit
    **{"tp": 1, "ep": 1, "pp": 1, "dp": 1, "ranks_per_node": None, "device_memory": None, "host_memory": None},
    **{"online_quant": None, "online_quant_scale": "tensor", "nproc": None},
    "depth": 12,
    "width": 1,
    "hidden": 512,
    "dtype": "float32",
    "meta": False,
    "engram_rows": 0,
    "strategies": ["legacy", "per-layer", "unique"],
    "repeat": 5,
    "repeat_auto": False,
    "warmup": 1,
    "device": "auto",
    "initializer": None,
    "max_memory": None,
    "time_budget": 60.0,
    "project": True,
    "model": None,
    "preset": None,
    "model_args": {},
    "trust_remote_code": False,
    "quantization": "auto",
    "loaders": [],
    "loader_args": {},
    "trace": False,
}


def test_compare_options_keep_their_flat_fields_and_defaults() -> None:
    assert option_defaults(CompareOptions) == COMPARE_FIELDS
    assert next(f.name for f in dataclasses.fields(CompareOptions)) == "depth"  # the config error lists depth first


def test_the_committed_baseline_fingerprints_use_exactly_these_options() -> None:
    baseline = json.loads((ROOT / "perf" / "baseline.json").read_text())
    for scenario in baseline["gate"]["scenarios"]:
        if scenario["command"] == "compare":
            assert set(scenario["fingerprint"]["options"]) <= set(COMPARE_FIELDS)


def test_dtype_auto_builds_the_tree_in_float32_and_is_fingerprinted_as_what_it_builds() -> None:
    """The default is auto (so an hf: model's explicit --dtype is told apart); the tree builds float32 for it, and
    a fingerprint says float32, as the committed baseline's do; an hf: model's auto is the config's, left as auto."""
    assert CompareOptions().dtype == "auto" and CompareOptions().tree_spec().dtype == "float32"

    def fingerprinted(options: CompareOptions) -> object:
        return make_fingerprint("t", "compare", options, Environment()).options["dtype"]

    assert fingerprinted(CompareOptions()) == fingerprinted(CompareOptions(dtype="float32")) == "float32"
    assert fingerprinted(CompareOptions(dtype="bfloat16")) == "bfloat16"
    assert fingerprinted(CompareOptions(model="hf:config.json")) == "auto"


def test_audit_and_inspect_share_the_tree_and_model_fields() -> None:
    audit, inspect = AuditOptions(), InspectOptions()
    for name in ("depth", "width", "hidden", "dtype", "meta", "engram_rows", "model", "preset", "model_args"):
        assert getattr(audit, name) == getattr(inspect, name)
    assert (audit.depth, audit.hidden) == (3, 64)
    assert InspectOptions(depth=2, hidden=32).tree_spec() == AuditOptions(depth=2, hidden=32).tree_spec()


@pytest.mark.parametrize(
    ("check", "options", "field", "message"),
    [
        (validate_compare, CompareOptions(strategies=["per-layer", "per-layer"]), "strategies", "listed twice"),
        (validate_compare, CompareOptions(strategies=[]), "strategies", "give at least one strategy"),
        (validate_compare, CompareOptions(initializer="v9"), "initializer", "unknown initializer 'v9'"),
        (validate_compare, CompareOptions(hidden=33), "hidden", "multiple of 32"),
        (validate_compare, CompareOptions(engram_rows=-1), "engram_rows", "must be 0 or more"),
        (validate_inspect, InspectOptions(max_depth=-1), "max_depth", "must be 0 or more"),
        (validate_inspect, InspectOptions(strategies=["nope"]), "strategies", "unknown strategy 'nope'"),
        (validate_audit, AuditOptions(ignore=["typo"]), "ignore", "unknown finding kind 'typo'"),
        (validate_audit, AuditOptions(loader_initializer="v9"), "loader_initializer", "unknown initializer"),
        (validate_audit, AuditOptions(strategies=[]), "strategies", "give at least one --strategy or --loader"),
    ],
)
def test_validate_names_the_field(check: Callable[..., object], options: object, field: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        check(options)
    assert info.value.field == field and message in info.value.message
    assert str(info.value).startswith(f"{field}: ")  # the Python API speaks in fields


def test_a_model_or_preset_skips_the_tree_check() -> None:
    assert validate_compare(CompareOptions(hidden=33, preset="torch-transformer")) == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["compare", "--hidden", "33"], "--hidden: must be a positive multiple of 32"),
        (["compare", "--dtype", "int4"], "--dtype: unknown dtype 'int4'"),
        (["compare", "-s", "legacy", "-s", "legacy"], "--strategy: 'legacy' is listed twice"),
        (["inspect", "--max-depth", "2", "-s", "nope"], "--strategy: unknown strategy 'nope'"),
        (["audit", "--ignore", "typo"], "--ignore: unknown finding kind 'typo'"),
        (["audit", "--loader-initializer", "v9"], "--loader-initializer: unknown initializer 'v9'"),
    ],
)
def test_the_cli_names_the_flag_of_a_field(cli: Cli, args: list[str], line: str) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dummyprof: error: {line}") and result.stderr.count("\n") == 1


def test_the_gate_names_the_config_key_of_a_field(tmp_path: Path, cli: Cli) -> None:
    assert (
        gate_refusal(cli, tmp_path, "engram_rows = -1")
        == "scenarios.t.options.engram_rows: must be 0 or more, got -1\n"
    )


def test_the_gate_learns_a_loaders_name_without_importing_it(tmp_path: Path) -> None:
    loader = tmp_path / "loud_loader.py"
    loader.write_text("raise RuntimeError('imported while reading the config')\n\ndef fill(model):\n    pass\n")
    path = tmp_path / "dummyprof.toml"
    path.write_text(f'[scenarios.t]\ncommand = "compare"\noptions = {{ loaders = ["{loader}:fill"] }}\n')
    (scenario,) = load_config(path).scenarios
    assert "fill.visits" in scenario.counters
    assert not any("loud_loader" in name for name in sys.modules)


def test_a_loader_named_like_a_strategy_is_refused_before_import(tmp_path: Path) -> None:
    loader = tmp_path / "fills.py"
    loader.write_text("raise RuntimeError('never imported')\n")
    with pytest.raises(UsageError) as info:
        validate_compare(CompareOptions(strategies=["unique"], loaders=[f"{loader}:unique"]))
    assert info.value.field == "loaders" and "clashes with a --strategy name" in info.value.message


def test_engram_always_runs_its_floor_once() -> None:
    assert methods_to_run(["constant"]) == ["constant", "memset"]
    assert methods_to_run(["memset", "constant"]) == ["memset", "constant"]
    assert EngramOptions().methods[-1] == "memset"


OPTION_CLASSES = [CompareOptions, AuditOptions, InspectOptions, EngramOptions]


@pytest.mark.parametrize("cls", OPTION_CLASSES, ids=lambda c: c.__name__)
def test_the_default_the_help_shows_is_the_default_the_options_hold(cls: type) -> None:
    from dummyprof.schema import parse, specs

    defaults = cls()
    for name, (_, spec) in specs(cls).items():
        if spec.shown or (spec.shown is None and spec.unit in ("int", "count", "bytes", "seconds")):
            shown = spec.shown or str(getattr(defaults, name))
            if getattr(defaults, name) is not None:
                assert parse(name, spec, shown) == getattr(defaults, name), name


def test_options_are_declared_once_and_typer_reads_them() -> None:
    from dummyprof.cli.app import _click_command
    from dummyprof.errors import flag_for
    from dummyprof.schema import specs

    commands = _click_command().commands
    for command, cls in (("compare", CompareOptions), ("audit", AuditOptions), ("inspect", InspectOptions)):
        flags = {opt for param in commands[command].params for opt in param.opts}
        for name in specs(cls):
            if name not in ("meta", "engram_rows") or command == "compare":
                assert flag_for(name) in flags, (command, name)
        help_of = {opt: param.help for param in commands[command].params for opt in param.opts}
        assert help_of["--depth"] == specs(cls)["depth"][1].help


def test_the_library_raises_with_field_names_not_flags() -> None:
    import ast

    allowed = {ROOT / "dummyprof" / "scenarios" / "engram" / "ranks.py"}  # the multi-rank work converts it
    found = []
    for path in sorted((ROOT / "dummyprof").rglob("*.py")):
        if "cli" in path.relative_to(ROOT / "dummyprof").parts or path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "UsageError",
                "DoesNotFitError",
            ):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("--"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_a_flag_other_than_the_field_with_dashes_is_declared_at_the_field() -> None:
    import dummyprof.errors as errors
    from dummyprof.schema import specs

    assert not hasattr(errors, "FIELD_FLAGS")  # no hand-kept map of fields to flags
    assert errors.flag_for("strategies", CompareOptions) == specs(CompareOptions)["strategies"][1].flag == "--strategy"
    assert errors.flag_for("time_budget_s", EngramOptions) == "--time-budget"
    assert errors.flag_for("time_budget", CompareOptions) == "--time-budget"
    assert errors.flag_for("repeat_auto", CompareOptions) == errors.flag_for("repeat_auto") == "--repeat"
    assert errors.flag_for("max_depth", InspectOptions) == errors.flag_for("max_depth") == "--max-depth"
    with pytest.raises(TypeError, match="two flags"):
        errors.declare_flag("strategies", "--strategies")


def test_a_field_error_reads_as_its_flag_at_the_cli_and_as_its_field_in_python() -> None:
    from dummyprof.errors import flag_text

    exc = UsageError.for_field("time_budget_s", "must be a positive number of seconds, got 0")
    assert (exc.flag, str(exc)) == ("--time-budget", "time_budget_s: must be a positive number of seconds, got 0")
    assert flag_text(exc) == "--time-budget: must be a positive number of seconds, got 0"


@pytest.mark.parametrize("command", ["compare", "audit"])
def test_loader_args_without_a_loader_are_refused(cli: Cli, command: str) -> None:
    # before: taken and never used (compare ran the strategies, exit 0), where --model-arg without a model is refused
    result = cli(command, "--depth", "2", "--loader-arg", "scale=2")
    assert result.exit_code == 2
    assert result.stderr == (
        "dummyprof: error: --loader-arg: needs --loader: its arguments go to every --loader's function; "
        "add one or drop it\n"
    )
