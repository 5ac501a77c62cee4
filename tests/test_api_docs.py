"""The runnable examples in docs/python-api.md and the README section run."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def test_python_api_doc_example_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(DOC.parent.parent)
    exec(compile(blocks[0], str(DOC), "exec"), {})
    out = capsys.readouterr().out
    assert "audit found 1 problem(s): 1 repeated" in out
    assert "per-layer" in out and "visits" in out


def test_readme_commands_run(cli: Callable[..., CliResult]) -> None:
    readme = (DOC.parent.parent / "README.md").read_text()
    section = readme[readme.index("## Your model, your loader") :]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block is not None
    commands = [line.split("#")[0].split() for line in block.group(1).splitlines() if line.startswith("dummyprof ")]
    assert len(commands) == 4
    for argv in commands:
        fast = ["--repeat", "1", "--warmup", "0", "--device", "cpu"] if argv[1] == "compare" else []
        result = cli(*argv[1:], *fast)
        assert result.exit_code == 0, (argv, result.stderr)
