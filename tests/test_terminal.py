"""Terminals that are not a wide UTF-8 tty, a reader that goes away, --version and ``report -``."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dummyprof.cli.app import main
from tests.conftest import CliResult

Cli = Callable[..., CliResult]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compare results file whose report has µ, – and ·, and whose JSON is larger than a pipe's buffer."""
    path = tmp_path_factory.mktemp("saved") / "compare.json"
    args = ["compare", "--depth", "40", "--hidden", "32", "--repeat", "1", "--warmup", "0", "--device", "cpu"]
    assert main([*args, "-q", "--json", str(path)]) == 0
    assert path.stat().st_size > 1 << 17
    return path


def _dummyprof(*args: str, env: dict[str, str] | None = None, **kwargs: object) -> subprocess.Popen[bytes]:
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "dummyprof", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        **kwargs,  # type: ignore[call-overload]
    )


@pytest.mark.parametrize("fmt", ["terminal", "markdown"])
def test_an_ascii_terminal_gets_ascii_spellings_never_a_crash(saved: Path, fmt: str) -> None:
    proc = _dummyprof("report", str(saved), "-f", fmt, env={"PYTHONIOENCODING": "ascii", "COLUMNS": "120"})
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (0, b""), err.decode()
    text = out.decode("ascii")  # would raise if anything beyond ASCII got through
    assert "child0x" in text  # the × of "child0×40" spelled in ASCII
    assert "?" not in text.replace("?)", "")  # known characters are spelled, not replaced


ENGRAM_SAVED = Path(__file__).resolve().parent.parent / "docs" / "img" / "engram-html.json"


@pytest.mark.parametrize(("columns", "width"), [(None, 80), ("120", 120)])
def test_piped_output_fits_80_columns_unless_columns_says_otherwise(columns: str | None, width: int) -> None:
    """Through a real pipe (not a terminal): 80 columns, as docs/gate.md promises a CI log, or COLUMNS's."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | ({"COLUMNS": columns} if columns else {})
    proc = subprocess.run(
        [sys.executable, "-m", "dummyprof", "report", str(ENGRAM_SAVED)], capture_output=True, env=env, timeout=120
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
    lines = proc.stdout.decode().splitlines()
    assert len(lines) > 10 and max(len(line) for line in lines) == width  # long notes wrap at it, and use it


@pytest.mark.parametrize("columns", ["0", "-5", "abc", "99999999"])
def test_a_nonsense_width_is_treated_as_unknown(
    cli: Cli, saved: Path, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    result = cli("report", str(saved))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) > 5 and re.match(r"median (fill )?on cpu[:,] ", result.stdout)
    assert max(len(line) for line in lines) <= 80  # rendered at the piped default, not at 0 or at 10^8


@pytest.mark.parametrize("args", [("report", "-f", "json"), ("report",), ("report", "-f", "markdown")])
def test_a_reader_that_goes_away_ends_the_output_quietly_with_exit_0(saved: Path, args: tuple[str, ...]) -> None:
    proc = _dummyprof(*args[:1], str(saved), *args[1:])
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # as `| head -1` does, then goes away
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0
    assert err == b""


def test_version(cli: Cli) -> None:
    from dummyprof import __version__

    result = cli("--version")
    assert (result.exit_code, result.stdout) == (0, f"dummyprof {__version__}\n")


def test_report_reads_standard_input(cli: Cli, saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(saved.read_bytes())))
    result = cli("report", "-", "-q")
    assert result.exit_code == 0 and re.match(r"median (fill )?on cpu[:,] ", result.stdout)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"not json")))
    result = cli("report", "-")
    assert (result.exit_code, result.stderr.split(":")[:3]) == (2, ["dummyprof", " error", " <stdin>"])
