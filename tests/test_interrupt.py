"""A real Ctrl-C (SIGINT) in the middle of a run: exit 130, one line, no traceback, no partial file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sigint_mid_run_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    # Deep enough that the legacy rounds take many seconds: the signal lands mid-fill.
    args = ["compare", "--depth", "300", "--hidden", "32", "--repeat", "50", "--device", "cpu", "--json", str(out)]
    args += ["--time-budget", "1h"]  # measured, not projected: it must still be filling when the signal lands
    proc = subprocess.Popen(
        [sys.executable, "-m", "dummyprof", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    # Wait for CPU time the child has really spent (past interpreter start-up and imports, into the
    # fills), not for wall time: on a loaded machine a fixed sleep can fire while Python is still
    # starting, before it handles SIGINT at all.
    deadline = time.monotonic() + 120
    while cpu_seconds(proc.pid) < 5.0:
        assert proc.poll() is None, "the run finished before it could be interrupted"
        assert time.monotonic() < deadline, "the run never got going"
        time.sleep(0.1)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr.strip().splitlines()[-1] == "dummyprof: interrupted"
    assert "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []
