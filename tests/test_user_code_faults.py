"""Issue #17.4: a factory or loader raising any BaseException, and a sparse parameter, end in one line (exit 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]

CODE = """
import torch
from torch import nn


class Custom(BaseException):
    pass


def raises_base() -> nn.Module:
    raise Custom("not an Exception")


def sparse() -> nn.Module:
    model = nn.Linear(4, 4)
    model.table = nn.Parameter(torch.zeros(4, 4, device="cpu").to_sparse(), requires_grad=False)
    return model


def loader_raises_base(model: nn.Module) -> None:
    raise GeneratorExit("a loader's own BaseException")


def small() -> nn.Module:
    return nn.Linear(4, 4)
"""


@pytest.fixture
def code(tmp_path: Path) -> Path:
    path = tmp_path / "faults.py"
    path.write_text(CODE)
    return path


def _one_line(result: CliResult) -> str:
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_factory_raising_a_base_exception_is_one_line(cli: Cli, code: Path) -> None:
    line = _one_line(cli("inspect", "-q", "--model", f"{code}:raises_base"))
    assert line.startswith(f"dummyprof: error: --model: {code}:raises_base raised Custom: not an Exception")


def test_a_loader_raising_a_base_exception_is_one_line(cli: Cli, code: Path) -> None:
    args = ("--model", f"{code}:small", "--loader", f"{code}:loader_raises_base", "--repeat", "1", "--warmup", "0")
    line = _one_line(cli("compare", "-q", *args))
    assert line.startswith("dummyprof: error: --loader: ")
    assert "raised GeneratorExit: a loader's own BaseException" in line


@pytest.mark.parametrize("command", ["inspect", "compare", "audit"])
def test_a_sparse_parameter_is_refused_naming_it(cli: Cli, code: Path, command: str) -> None:
    line = _one_line(cli(command, "-q", "--model", f"{code}:sparse"))
    assert line == (
        f"dummyprof: error: --model: {code}:sparse: parameter 'table' is a sparse_coo tensor; dummyprof fills "
        "dense (strided) tensors only: register it dense, or leave it out of the model it profiles"
    )
