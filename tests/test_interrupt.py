"""A real Ctrl-C (SIGINT) in the middle of a run: exit 130, one line, no traceback, no partial file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _as_in_a_terminal() -> None:
    """Ctrl-C's default action in the child, as a terminal's foreground job has it: a CI runner or a shell that
    starts its jobs in the background hands SIGINT down ignored, and a program started so keeps ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_mid_run_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out" / "out.json"
    out.parent.mkdir()
    site = tmp_path / "site"
    site.mkdir()
    working = tmp_path / "working"
    # The run's first traversal (the exact count on meta, then the fills) says so with a file: the signal is sent
    # once the run is at work (past interpreter start-up and imports), as soon as it is, not after a fixed amount
    # of CPU time. Deep enough that the count and the legacy rounds take many seconds: the signal lands mid-run.
    (site / "sitecustomize.py").write_text(
        "from dummyprof.loaders import strategies\n"
        "_run_strategy = strategies.run_strategy\n"
        "def run_strategy(*args, **kwargs):\n"
        f"    open({str(working)!r}, 'w').close()\n"
        "    return _run_strategy(*args, **kwargs)\n"
        "strategies.run_strategy = run_strategy\n"
    )
    args = ["compare", "--depth", "300", "--hidden", "32", "--repeat", "50", "--device", "cpu", "--json", str(out)]
    args += ["--time-budget", "1h"]  # measured, not projected: it must still be filling when the signal lands
    proc = subprocess.Popen(
        [sys.executable, "-m", "dummyprof", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "NO_COLOR": "1",
            "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        },
        preexec_fn=_as_in_a_terminal,
    )
    deadline = time.monotonic() + 120
    while not working.exists():
        assert proc.poll() is None, "the run finished before it could be interrupted"
        assert time.monotonic() < deadline, "the run never got going"
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr.strip().splitlines()[-1] == "dummyprof: interrupted"
    assert "Traceback" not in stderr
    assert list(out.parent.iterdir()) == []


@pytest.mark.multirank
@pytest.mark.parametrize(("signum", "code", "line"), [
    (signal.SIGINT, 130, "dummyprof: interrupted"),
    (signal.SIGTERM, 143, "dummyprof: error: terminated (SIGTERM): every rank was stopped"),
])  # fmt: skip
def test_a_signal_during_a_two_rank_run_stops_every_rank_with_one_line(
    tmp_path: Path, signum: int, code: int, line: str
) -> None:
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) or SIGTERM (to dummyprof alone)."""
    import psutil

    site = tmp_path / "site"
    site.mkdir()
    # Every rank stops in allocate (after joining, mid-run): it says so with a file, then waits to be stopped.
    (site / "sitecustomize.py").write_text(
        "import os, time\n"
        "from dummyprof.scenarios.engram.runner import Runner\n"
        "def allocate(self, part_rows):\n"
        f"    open(os.path.join({str(tmp_path)!r}, 'rank' + os.environ['RANK']), 'w').close()\n"
        "    time.sleep(600)\n"
        "Runner.allocate = allocate\n"
    )
    args = ["engram", "--nproc", "2", "--tp", "2", "--rows", "4096", "--dim", "64", "--offload"]
    args += ["--backing", "pageable", "--method", "memset", "--time-budget", "5"]
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dummyprof", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
        preexec_fn=_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not ((tmp_path / "rank0").exists() and (tmp_path / "rank1").exists()):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the ranks never got going"
            time.sleep(0.1)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 2  # the two ranks (and multiprocessing's resource tracker)
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code
    assert stderr.splitlines() == [line]
    _, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []  # no rank (nor anything else it started) outlives it
