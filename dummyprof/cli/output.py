"""Shared output plumbing for commands: reporters, JSON files, progress."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dummyprof.results.session import Results
from dummyprof.results.store import check_writable, results_to_json, save_results

JSON_HELP = "Write every figure as JSON to PATH ('-' for stdout). Refuses to overwrite without --force."
FORCE_HELP = "Overwrite output files that already exist."
QUIET_HELP = "Print only the summary line."


def check_outputs(paths: dict[str, Path | None], *, force: bool) -> None:
    """Validate every output path before measuring, so a long run never ends in a write error."""
    for flag, path in paths.items():
        if path is not None:
            check_writable(path, force=force, flag=flag)


def emit(results: Results, *, json_path: Path | None, quiet: bool) -> None:
    from dummyprof.reports.console import make_console
    from dummyprof.reports.terminal import render

    to_stdout = json_path is not None and str(json_path) == "-"
    if to_stdout:
        sys.stdout.write(results_to_json(results))
    elif json_path is not None:
        save_results(results, json_path)
    console = make_console(stderr=to_stdout)
    render(results, console, quiet=quiet)
    if json_path is not None and not to_stdout and not quiet:
        console.print(f"results written to {json_path}", style="dim")


@contextmanager
def progress_bar(enabled: bool, description: str) -> Iterator[Callable[[int, int, str], None] | None]:
    """A transient Rich progress bar on the terminal (stderr); nothing when piped or quiet."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dummyprof.reports.console import make_console

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=make_console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{description}: {label}")

        yield update
