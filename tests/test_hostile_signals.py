"""#17.4 (wave 2): SIGTERM to a single-process command ends as Ctrl-C does: one line, exit 143, nothing left."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]

CODE = """
import os
import signal

from torch import nn


def build(hidden: int = 32) -> nn.Module:
    os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, inside the user's code
    return nn.Linear(hidden, hidden)


def swallowing(hidden: int = 32) -> nn.Module:
    try:
        return build(hidden)
    except Exception:  # a factory that swallows errors must not swallow the signal
        return nn.Linear(hidden, hidden)
"""


@pytest.mark.parametrize("factory", ["build", "swallowing"])
@pytest.mark.parametrize("command", ["inspect", "compare", "audit"])
def test_sigterm_is_one_line_and_exit_143(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str,
                                          factory: str) -> None:  # fmt: skip
    (tmp_path / "term.py").write_text(CODE)
    monkeypatch.chdir(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    out = tmp_path / "out.json"
    result = cli(command, "--model", f"./term.py:{factory}", "--json", str(out))
    assert (result.exit_code, result.stderr) == (143, "dummyprof: error: terminated (SIGTERM)\n")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["term.py"]
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is the CLI's only while it runs
