from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from dummyprof.cli.app import main


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run the CLI in-process, as ``dummyprof ARGS...``, and capture its output."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    assert "dummyprof" in sys.modules
    return run


@pytest.fixture
def two_kernel_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Projected Engram plans size their samples to fit --max-memory with the fill's scratch, which
    depends on the worker count and on whether the C kernel is built: pin both so exact projected
    figures hold on any machine."""
    from dummyprof.loaders import random_fast

    monkeypatch.setattr(random_fast, "default_workers", lambda: 2)
    monkeypatch.setattr(random_fast, "default_engine", lambda: random_fast.KERNEL)
