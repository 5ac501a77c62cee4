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
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.Popen(
        [sys.executable, "-m", "dummyprof", *args],
        env=full_env,
        **streams,  # type: ignore[call-overload]
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


FULL_STDOUT = [
    ("report", "{saved}", "-f", "json"),
    ("report", "{saved}"),
    ("report", "{saved}", "-q"),
    ("inspect", "--depth", "2", "--json", "-"),
    ("compare", "--depth", "2", "--hidden", "32", "--repeat", "1", "--warmup", "0", "-q"),
    ("--help",),
    ("--version",),
]
STDOUT_LINE = "dummyprof: error: standard output: could not write: "


def _one_line(err: bytes) -> str:
    text = err.decode()
    assert "Traceback" not in text, text
    assert len(text.splitlines()) == 1, text
    return text


@pytest.mark.parametrize("args", FULL_STDOUT, ids=lambda a: " ".join(a))
def test_a_full_standard_output_is_one_line_and_exit_2(saved: Path, args: tuple[str, ...]) -> None:
    """``> /dev/full``: every writer to stdout (the terminal report, --json -, --help) fails in one line."""
    argv = [a.format(saved=saved) for a in args]
    with open("/dev/full", "w") as full:
        proc = _dummyprof(*argv, stdout=full)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert _one_line(err).startswith(STDOUT_LINE + "No space left on device")


@pytest.mark.parametrize("unbuffered", [True, False], ids=["python -u", "buffered"])
def test_a_full_pipe_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, unbuffered: bool) -> None:
    """A non-blocking pipe nobody reads, already full: the write fails with EAGAIN, not a traceback; unbuffered
    too, where Python's own text layer would drop the bytes silently."""
    if unbuffered:
        monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    else:
        monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        with pytest.raises(BlockingIOError):
            while True:
                os.write(write_end, b"x" * 65536)
        proc = _dummyprof("inspect", "--depth", "2", stdout=write_end)
        _, err = proc.communicate(timeout=120)
    finally:
        os.close(write_end)
        os.close(read_end)
    assert proc.returncode == 2
    assert _one_line(err).startswith(STDOUT_LINE)


@pytest.mark.parametrize("args", [("inspect", "--depth", "2", "-q"), ("report", "{saved}", "-f", "markdown")])
def test_a_closed_standard_output_is_one_line_and_exit_2(saved: Path, args: tuple[str, ...]) -> None:
    argv = [sys.executable, "-m", "dummyprof", *[a.format(saved=saved) for a in args]]
    proc = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *argv],
        capture_output=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert proc.returncode == 2
    assert _one_line(proc.stderr) == STDOUT_LINE + "it is closed; send it to a file or /dev/null\n"


def test_a_closed_standard_output_leaves_the_files_written(tmp_path: Path) -> None:
    """The --json file is written before the summary line, which then cannot be: exit 2, the file kept."""
    out = tmp_path / "r.json"
    argv = [sys.executable, "-m", "dummyprof", "inspect", "--depth", "2", "-q", "--json", str(out)]
    proc = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *argv], capture_output=True, timeout=120)
    assert proc.returncode == 2 and out.is_file()  # the file is written; the summary line could not be
