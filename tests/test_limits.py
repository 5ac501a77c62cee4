"""Numbers and code at the edge: every count and size bounded at parse time, the depth limit that
the message states really works, user code that prints C++ stacks or calls sys.exit, and errors
that name the flag that is really in the way."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from dummyprof.errors import UsageError
from dummyprof.models import loading
from dummyprof.models.synthetic import TreeSpec, build_tree, max_depth, validate_spec
from dummyprof.units import INT64_MAX, parse_bytes, parse_count, parse_int
from dummyprof.usercode import parse_call_args as parse_model_args
from tests.conftest import CliResult
from tests.fixtures.gate_configs import gate_refusal

Cli = Callable[..., CliResult]
MODELS = "tests/fixtures/models.py"


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        *[(p, t) for p in (parse_count, parse_bytes) for t in ("1e308", "1e30", "1e9999999999")],
        *[(p, t) for p in (parse_count, parse_bytes, parse_int) for t in ("9223372036854775808", "9" * 23)],
    ],
)
def test_every_parser_refuses_what_int64_cannot_hold(parse: Callable[..., int], text: str) -> None:
    with pytest.raises(UsageError, match=r"must be at most 9,223,372,036,854,775,807 \(int64\)") as info:
        parse("--x", text)
    assert info.value.flag == "--x"
    assert parse("--x", str(INT64_MAX)) == INT64_MAX


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--rows", "1e308"), "--rows: must be at most 9,223,372,036,854,775,807 (int64)"),
        (("--rows", "1e30"), "--rows: must be at most"),
        (("--rows", "1e18"), "--rows: 1e+18 rows x 1 tables of 264 bytes a row is 2.64e+20 bytes, beyond"),
        (("--max-memory", "1e40"), "--max-memory: must be at most"),
        (("--chunk-elements", "1"), "--chunk-elements: must be at least 1Mi (1,048,576), got 1: each chunk"),
        (("--repeat", "99999999999999999999999"), "--repeat: must be at most"),
    ],
)
def test_engram_refuses_sizes_beyond_what_it_can_represent(cli: Cli, args: tuple[str, ...], needle: str) -> None:
    result = cli("engram", *args, "--dry-run", "-q")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"dummyprof: error: {needle}"), result.stderr
    assert result.stderr.count("\n") == 1


# -- --depth: the limit the message states is a depth that works ---------------------------------------------


def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def _cli_stack_depth(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> int:
    """How deep in the stack the commands call torch's recursive walks (measured, under pytest)."""
    deepest = [0]
    for name in ("state_dict", "modules", "named_modules", "named_parameters", "to_empty"):
        original = getattr(nn.Module, name)

        def recording(
            self: nn.Module, *args: object, _original: Callable[..., object] = original, **kw: object
        ) -> object:
            deepest[0] = max(deepest[0], _stack_depth())
            return _original(self, *args, **kw)

        monkeypatch.setattr(nn.Module, name, recording)
    small = ("--depth", "1", "--hidden", "32", "-q")
    assert cli("inspect", *small).exit_code == 0
    assert cli("compare", *small, "--repeat", "1", "--warmup", "0").exit_code == 0
    assert cli("audit", *small).exit_code in (0, 1)
    monkeypatch.undo()
    return deepest[0]


def _at_depth(frames: int, work: Callable[[], None]) -> None:
    if _stack_depth() < frames:
        _at_depth(frames, work)
    else:
        work()


def test_the_depth_the_message_offers_works_from_the_commands_stack(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    caller = _cli_stack_depth(cli, monkeypatch)
    deepest = max_depth()
    with pytest.raises(UsageError, match=f"use --depth {deepest} or less"):
        validate_spec(TreeSpec(depth=deepest + 1, hidden=32))
    model = build_tree(TreeSpec(depth=deepest, hidden=32), "meta")  # built with a loop: construction never limits

    def every_recursive_walk() -> None:
        assert len(list(model.modules())) == deepest + 3  # root, embed_tokens, lm_head and one block per level
        assert len(dict(model.named_modules())) == deepest + 3
        assert len(model.state_dict()) > deepest
        assert len(list(model.named_parameters())) > deepest
        model.to_empty(device="meta")

    _at_depth(caller, every_recursive_walk)


def test_a_deep_tree_builds_in_pre_order_as_before() -> None:
    model = build_tree(TreeSpec(depth=2, width=2, hidden=32), "meta")
    names = [name for name, _ in model.named_modules() if name.count("child")]
    assert names == ["child0", "child0.child0", "child0.child1", "child1", "child1.child0", "child1.child1"]
    assert list(dict(model.named_children())) == ["embed_tokens", "child0", "child1", "lm_head"]


# -- --model-arg and user code ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("hidden=12345678901234567890123", "hidden: 1.23e+22 is beyond int64"),
        ("dims=[1, 99999999999999999999999]", "dims: 1e+23 is beyond int64"),
        ("x=[1,2", "x='[1,2' is not a Python literal (an unclosed bracket or quote?)"),
        ("name='x", "is not a Python literal"),
        ("eps=1e999", "eps: inf is not a finite number"),
    ],
)
def test_model_args_that_are_not_what_they_seem_are_refused(item: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_model_args([item])
    assert parse_model_args(["dtype=bfloat16", "device=cuda:0", "x=[1, 2]"]) == {
        "dtype": "bfloat16",
        "device": "cuda:0",
        "x": [1, 2],
    }


def test_a_huge_model_arg_is_one_line_not_a_cpp_stack(cli: Cli) -> None:
    result = cli("compare", "--model", f"{MODELS}:build", "--model-arg", "hidden=12345678901234567890123")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "dummyprof: error: --model-arg: hidden: 1.23e+22 is beyond int64; no model size can be that large\n"
    )


def test_torch_errors_from_a_factory_are_cut_to_one_line() -> None:
    def factory() -> nn.Module:
        raise RuntimeError(
            "Trying to create tensor with negative dimension -1\nException raised from ... (C++)\n#0 ..."
        )

    with pytest.raises(UsageError) as info:
        loading.call_model_builder(factory, {}, spec="m.py:factory")
    assert (
        str(info.value)
        == "--model: m.py:factory raised RuntimeError: Trying to create tensor with negative dimension -1"
    )


@pytest.mark.parametrize("command", ["compare", "inspect", "audit"])
def test_a_factory_that_calls_sys_exit_is_an_error_naming_model(cli: Cli, command: str) -> None:
    result = cli(command, "--model", f"{MODELS}:exits", "-q")
    assert result.exit_code == 2
    assert result.stderr == f"dummyprof: error: --model: {MODELS}:exits called sys.exit(0) instead of returning\n"
    assert result.stdout == ""


def test_a_loader_that_calls_sys_exit_is_an_error_naming_loader(cli: Cli, tmp_path: object) -> None:
    from pathlib import Path

    loader = Path(str(tmp_path)) / "bye.py"
    loader.write_text("import sys\n\ndef fill(model):\n    sys.exit(3)\n")
    result = cli("compare", "--depth", "1", "--hidden", "32", "-s", "per-layer", "--loader", f"{loader}:fill", "-q")
    assert result.exit_code == 2
    assert result.stderr == f"dummyprof: error: --loader: {loader}:fill called sys.exit(3) instead of returning\n"


# -- --max-memory: the error names the flag that is in the way ---------------------------------------------


def test_a_max_memory_too_small_is_reported_under_max_memory(cli: Cli) -> None:
    # audit fills the real model, so it refuses; compare projects instead (tests/test_compare_sizing.py)
    result = cli("audit", "--max-memory", "1B", "--depth", "2", "--hidden", "32", "--device", "cpu")
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: --max-memory: synthetic tree")
    assert "raise --max-memory to" in result.stderr


def test_a_max_memory_beyond_the_machine_never_says_raise_it(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    from dummyprof.measure import budget

    monkeypatch.setattr(budget, "available_memory_bytes", lambda: 1 << 20)  # a 1 MiB machine
    result = cli("audit", "--max-memory", "1TiB", "--depth", "2", "--hidden", "256", "--device", "cpu")
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: --hidden: ")
    assert "--max-memory 1.00 TiB cannot help, only 1.00 MiB is free here" in result.stderr
    assert "raise --max-memory" not in result.stderr


def test_meta_device_sizing_is_untouched() -> None:
    assert torch.empty(2, device="meta").is_meta


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "--hidden", "2147483648"),
        ("audit", "--hidden", "2147483648"),
        ("inspect", "--hidden", "2147483648"),
        ("sweep", "--depth", "1:2", "--hidden", "2147483648"),
    ],
)
def test_a_weight_too_big_to_count_is_refused_at_parse_time_on_every_command(cli: Cli, args: tuple[str, ...]) -> None:
    result = cli(*args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith("dummyprof: error: --hidden: must be at most 1,048,576, got '2147483648'")
    assert result.stderr.count("\n") == 1


def test_the_python_api_and_the_gate_meet_the_same_bound(tmp_path: Path, cli: Cli) -> None:
    from dummyprof.scenarios.compare.options import CompareOptions, validate

    with pytest.raises(UsageError) as info:
        validate(CompareOptions(hidden=2**31))
    assert str(info.value) == "hidden: must be at most 1,048,576, got 2,147,483,648"
    assert gate_refusal(cli, tmp_path, "hidden = 2147483648") == (
        "scenarios.t.options.hidden: must be at most 1,048,576, got 2,147,483,648\n"
    )


@pytest.mark.parametrize("command", [("compare", "--depth", "1", "--hidden", "32"), ("engram", "--rows", "4M")])
def test_durations_read_the_same_on_every_command(cli: Cli, command: tuple[str, ...]) -> None:
    from dummyprof.cli.schema_command import options_from
    from dummyprof.scenarios.compare.options import CompareOptions
    from dummyprof.scenarios.engram.options import EngramOptions

    assert options_from(CompareOptions, ["time_budget"], {"time_budget": "5m"})[0].time_budget == 300.0
    assert options_from(EngramOptions, ["time_budget_s"], {"time_budget": "5m"})[0].time_budget_s == 300.0
    assert options_from(EngramOptions, ["deadline_s"], {"deadline": "10m"})[0].deadline_s == 600.0
    bad = cli(*command, "--time-budget", "5 fortnights")
    assert bad.exit_code == 2 and bad.stderr.startswith("dummyprof: error: --time-budget: expected a duration")


def test_engram_takes_minutes_as_compare_does(cli: Cli) -> None:
    result = cli("engram", "--rows", "4M", "--dim", "64", "--time-budget", "5m", "--dry-run", "-q")
    assert result.exit_code == 0, result.stderr


def test_a_missing_attribute_says_how_many_names_it_left_out(tmp_path: Path) -> None:
    from dummyprof.usercode import resolve_callable

    module = tmp_path / "many.py"
    module.write_text("".join(f"def f{i:02d}():\n    pass\n" for i in range(21)))
    with pytest.raises(UsageError) as info:
        resolve_callable(f"{module}:nada", flag="--model")
    assert info.value.message.endswith(
        "it defines: f00, f01, f02, f03, f04, f05, f06, f07, f08, f09, f10, f11 and 9 more"
    )
