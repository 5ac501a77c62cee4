"""The runnable examples in docs/python-api.md and the README section run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def test_python_api_doc_example_runs_without_the_repository_on_sys_path() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    # -P: the working directory is not put on sys.path, as for a user whose script lives elsewhere;
    # so the example cannot lean on ``import tests`` (it did once).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-P", "-c", blocks[0]],
        cwd=DOC.parent.parent,
        env={**env, "NO_COLOR": "1", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
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
