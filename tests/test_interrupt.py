"""A real Ctrl-C (SIGINT) in the middle of a run: exit 130, one line, no traceback, no partial file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def test_sigint_mid_run_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    # Deep enough that the legacy rounds take many seconds: the signal lands mid-fill.
    args = ["compare", "--depth", "300", "--hidden", "32", "--repeat", "50", "--device", "cpu", "--json", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "dummyprof", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    time.sleep(4)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr.strip().splitlines()[-1] == "dummyprof: interrupted"
    assert "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []
