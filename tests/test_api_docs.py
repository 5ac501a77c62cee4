"""The runnable example in docs/python-api.md runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def test_python_api_doc_example_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(DOC.parent.parent)
    exec(compile(blocks[0], str(DOC), "exec"), {})
    out = capsys.readouterr().out
    assert "audit found 1 problem(s): 1 repeated" in out
    assert "per-layer" in out and "visits" in out
