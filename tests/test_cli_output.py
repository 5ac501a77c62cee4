"""What the CLI says about its output: --detail, a line for every file written, literal progress text."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
TINY = ("compare", "--depth", "3", "--hidden", "32", "--repeat", "2", "--warmup", "0", "--device", "cpu")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dummyprof.cli.app import main

    path = tmp_path_factory.mktemp("saved") / "r.json"
    assert main([*TINY, "-q", "--json", str(path)]) == 0
    return path


def test_compare_confirms_every_file_it_wrote_one_line_each(cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    paths = {name: tmp_path / name for name in ("r.json", "r.html", "fill.json", "summary.md")}
    result = cli(
        *TINY,
        *("--json", str(paths["r.json"]), "--html", str(paths["r.html"]), "--trace", str(paths["fill.json"])),
        *("--export", "markdown", str(paths["summary.md"])),
    )
    assert result.exit_code == 0, result.stderr
    tail = result.stdout.rstrip("\n").splitlines()[-4:]
    assert tail == [
        f"results written to {paths['r.json']}",
        f"HTML report written to {paths['r.html']}",
        f"export written to {paths['summary.md']}",
        f"trace written to {paths['fill.json']}",
    ]
    assert all(path.stat().st_size > 0 for path in paths.values())


def test_with_json_on_stdout_the_other_files_are_confirmed_on_stderr(cli: Cli, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    result = cli(*TINY, "--json", "-", "--export", "markdown", str(summary))
    assert result.exit_code == 0
    assert result.stderr.rstrip("\n").splitlines()[-1] == f"export written to {summary}"
    assert "written to" not in result.stdout


def test_quiet_prints_the_summary_alone(cli: Cli, tmp_path: Path) -> None:
    result = cli(*TINY, "-q", "--json", str(tmp_path / "r.json"), "--export", "markdown", str(tmp_path / "s.md"))
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 1 and "written to" not in result.stdout


def test_detail_adds_the_scenario_and_every_revisited_tensor_the_default_leads_with_the_answer(
    cli: Cli, saved: Path
) -> None:
    short = cli("report", str(saved))
    full = cli("report", str(saved), "--detail")
    assert short.exit_code == full.exit_code == 0
    assert all(re.match(r"median (fill )?on cpu[:,] ", out.stdout) for out in (short, full))
    assert "Scenario" not in short.stdout and "Scenario" in full.stdout
    assert "Most revisited tensors (top 5;" in short.stdout and "Most revisited tensors (top 10;" in full.stdout
    assert len(short.stdout.splitlines()) <= 50 < len(full.stdout.splitlines())


def test_detail_is_for_the_terminal_only(cli: Cli, saved: Path) -> None:
    result = cli("report", str(saved), "--format", "markdown", "--detail")
    assert result.exit_code == 2
    assert result.stderr == (
        "dummyprof: error: --detail: the markdown format always carries every table; drop --detail\n"
    )


def test_report_confirms_the_file_it_wrote(cli: Cli, saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "summary.md"
    result = cli("report", str(saved), "--format", "markdown", "--output", str(out))
    assert result.exit_code == 0 and result.stdout == f"markdown report written to {out}\n"
    assert cli("report", str(saved), "--format", "markdown", "-o", str(tmp_path / "q.md"), "-q").stdout == ""


def test_compare_help_teaches_detail(cli: Cli) -> None:
    result = cli("compare", "--help")
    assert "--detail" in result.stdout and "dummyprof compare --depth 12 --detail" in result.stdout


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_a_label_as_typed_never_as_markup(monkeypatch: pytest.MonkeyPatch) -> None:
    from dummyprof.cli.output import progress_bar

    stream = _Tty()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setenv("NO_COLOR", "1")
    with progress_bar(True, "compare") as update:
        assert update is not None
        update(1, 2, "[red]legacy[/red] [link=https://x.example]y[/link]")
    shown = stream.getvalue()
    assert "compare: [red]legacy[/red] [link=https://x.example]y[/link]" in shown
