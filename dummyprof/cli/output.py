"""Shared output plumbing for commands: the output flags, reporters, JSON files, progress."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stdout, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from dummyprof.cli.stdout import ReaderGone, StandardOutputError, silence_stdout
from dummyprof.files.inputs import RunInput
from dummyprof.files.outputs import Output, path_of, write_outputs
from dummyprof.files.outputs import check_outputs as check_outputs_of
from dummyprof.schema import Spec

if TYPE_CHECKING:  # results (and what reading them needs) load when a command runs, not for --help
    from dummyprof.results.session import Results

# --json, --html, --force, --quiet: declared once, the same in every command.
JsonOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional on Python 3.10
    typer.Option(
        "--json",
        metavar="PATH",
        parser=lambda text: path_of("--json", text),
        help="Write every figure as JSON to PATH ('-' for stdout). Refuses to overwrite without --force.",
    ),
]
HtmlOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--html",
        metavar="PATH",
        parser=lambda text: path_of("--html", text),
        help="Also write a self-contained HTML report with charts (one file, no network; needs the html extra).",
    ),
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite output files that already exist.")]
# --detail, on every command whose terminal report leaves detail out (a deployment's, engram's; compare states its own)
DETAIL = Spec(
    unit="flag",
    help="Print every table, fit, sample and interval. Without it the report leads with the answer and fits one "
    "screen; --json, --html and Markdown always carry the detail.",
)
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary line.")]

EXIT_NOT_WRITTEN = 2  # results shown, but a file could not be written (the gate uses 3, "could not record")

Render = Callable[["Results"], str]
Update = Callable[[int, int, str], None]  # a progress update: done, total, label


def reporter(name: str, *, flag: str, append: bool = False) -> Render:
    """The registered reporter ``name`` as a ``Render`` for a file flag; an appended report ends in a blank line."""

    def render_file(results: Results) -> str:
        from dummyprof.reports.registry import render

        text = render(results, name, flag=flag)
        return text + "\n" if append else text

    return render_file


# Third-party warnings (transformers' deprecations, a user's model's warnings.warn, any library's logging at
# WARNING and above) heard while a command runs: kept out of the report and off stderr, each shown once as a
# notice of the terminal report under --detail. Filled by ``third_party_warnings`` around the command.
HEARD: dict[str, None] = {}


class _Heard(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        HEARD.setdefault(f"{record.name.split('.')[0]}: {record.getMessage().strip()}")


@contextmanager
def third_party_warnings() -> Iterator[None]:
    """Hear every warning and log record of WARNING and above while a command runs, instead of stderr."""

    def heard(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
        HEARD.setdefault(f"{category.__name__}: {str(message).strip()}")

    HEARD.clear()
    root = logging.getLogger()
    handler = _Heard(logging.WARNING)
    root.addHandler(handler)  # with a handler on the root, logging's last resort (stderr) stays unused
    try:
        with warnings.catch_warnings():
            warnings.showwarning = heard
            yield
    finally:
        root.removeHandler(handler)


def heard_notices(results: Results) -> Results:
    """The results with what ``third_party_warnings`` heard as notices, each once (the terminal's --detail)."""
    if not HEARD:
        return results
    import msgspec

    lines = [f"third-party warning, {text}" for text in HEARD]
    return msgspec.structs.replace(results, notices=[*results.notices, *lines])


def print_terminal(results: Results, *, quiet: bool, stderr: bool = False, detail: bool = False) -> None:
    """The terminal report, laid out for the stream it goes to (width, colour, NO_COLOR); ``detail``: every table."""
    from dummyprof.reports.console import make_console
    from dummyprof.reports.registry import render
    from dummyprof.reports.terminal import options_for

    console = make_console(stderr=stderr)
    console.file.write(render(results, "terminal", options_for(console, quiet=quiet, detail=detail)))
    console.file.flush()


# Each output flag: the reporter that renders its file (None: the command gives it), the kind of file it writes
# (files/outputs.own_kind; None: no one kind), and what the line confirming it calls it ("HTML report written to
# r.html"). An output replaces, without --force, a file of its kind that its command wrote before; compare, inspect
# and audit with a layout write a deployment.
FILE_FLAGS: dict[str, tuple[str | None, str | None, str]] = {
    "--json": ("json", "json", "results"),
    "--html": ("html", "html", "HTML report"),
    "--markdown": ("markdown", "markdown", "Markdown report"),
    "--junit": ("junit", "junit", "JUnit XML"),
    "--benchmark-json": ("benchmark-json", "benchmark", "benchmark JSON"),
    "--trace": (None, None, "trace"),
    "--export": (None, None, "export"),
    "--output": (None, None, "output"),
}
WRITES = {command: (command, "deployment") for command in ("compare", "inspect", "audit")}


def output_for(
    flag: str, path: Path, *, append: bool = False, command: str | None = None, fmt: str | None = None
) -> Output:
    """The output of ``flag``; ``command`` (and ``fmt`` for a flag of no one format): what it may replace. Only
    --json documents '-' as standard output; for any other flag '-' is refused (files/outputs.py)."""
    fmt = fmt or FILE_FLAGS.get(flag, (None, None, ""))[1]
    own = frozenset(f"{fmt}:{kind}" for kind in WRITES.get(command, (command,))) if fmt and command else frozenset()
    return Output(flag, path, append=append, stdout=flag == "--json", own=own)


def check_outputs(
    paths: Mapping[str, Path | None],
    *,
    force: bool,
    inputs: Iterable[RunInput] = (),
    append: Collection[str] = (),
    command: str | None = None,
    formats: Mapping[str, str] | None = None,
) -> list[tuple[Output, Render]]:
    """Probe every output path before measuring, so a long run never ends in a write error (see files/outputs.py).

    ``inputs``: what the run reads (``files.inputs.run_inputs``), never an output. ``append``: the flags whose file
    is appended to (the CI step summary). ``command``: the command that writes them, whose own earlier files are
    replaced without --force (``formats``: a flag's report where the flag has no one format, baseline's
    ``--output``). Returns the reports ``emit`` writes, but --json's (``emit`` writes it) and those the command
    renders itself (``--export``, ``--trace``); checks before anything is measured that an HTML report can be made
    (no plotly is exit 2 now, not after measuring).
    """
    formats = formats or {}
    outputs = [
        output_for(
            flag, path, append=flag in append, command=None if flag in append else command, fmt=formats.get(flag)
        )
        for flag, path in paths.items()
        if path is not None
    ]
    check_outputs_of(outputs, force=force, inputs=inputs)
    found = [(o, FILE_FLAGS[o.flag][0]) for o in outputs if o.flag != "--json" and o.flag in FILE_FLAGS]
    if any(name == "html" for _, name in found):
        from dummyprof.reports.html import require_plotly

        require_plotly()
    return [(o, reporter(name, flag=o.flag, append=o.append)) for o, name in found if name is not None]


def report_error(message: str) -> None:
    from dummyprof.reports.tables.escape import visible

    with suppress(OSError, AttributeError, ValueError):  # no stderr left (closed, full): nothing more can be said
        sys.stderr.write(f"dummyprof: error: {visible(message)}\n")  # a user's exception text is data: one line, inert
        sys.stderr.flush()


def emit(
    results: Results,
    *,
    json_path: Path | None,
    quiet: bool,
    force: bool = False,
    reports: Sequence[tuple[Output, Render]] = (),
    on_failure: Callable[[Results, list[str]], None] | None = None,
    detail: bool = False,
    confirm: Mapping[str, str] | None = None,
    command: str | None = None,
    terminal: bool = True,
) -> int:
    """Write every output file, then show the results, a line per file written, one per file that could not be.

    Returns the exit code: ``EXIT_NOT_WRITTEN`` when a file was not written (never 1; the gate's
    ``on_failure`` makes its own 3), else 0.
    ``reports`` pairs an output with the reporter that renders it (see :func:`reporter`). ``confirm``
    replaces the line confirming a flag's file (``{path}`` is its path). ``detail``: the terminal's every table.
    ``command``: the command writing them, as given to :func:`check_outputs` (its own earlier files are replaced).
    ``terminal``: False for ``report --output``, whose file is the report.
    """
    from dummyprof.reports.console import make_console
    from dummyprof.results.whole import Refused

    to_stdout = json_to_stdout(json_path)
    files = list(reports)
    if json_path is not None and not to_stdout:
        files.insert(0, (output_for("--json", json_path, command=command), reporter("json", flag="--json")))
    failures: list[str] = []
    written: list[Output] = []
    stdout_failed: StandardOutputError | None = None
    for output, render_file in files:
        try:
            text = render_file(results)
        except Refused as exc:  # what the results reader would refuse is never written (results/store.py)
            failures.append(f"{output.flag}: {output.path} not written: it would not read back: {exc}")
            continue
        failed = write_outputs([(output, text)], force=force)
        failures += failed
        if not failed:
            written.append(output)
    if failures and on_failure is not None:
        on_failure(results, failures)  # e.g. the gate's verdict becomes "could not record" before it is shown
    try:
        if to_stdout:
            sys.stdout.write(reporter("json", flag="--json")(results))
            sys.stdout.flush()
        shown = heard_notices(results) if detail else results  # the files written carry none of them
        if terminal:
            print_terminal(shown, quiet=quiet, stderr=to_stdout, detail=detail)
        if not quiet:
            console = make_console(stderr=to_stdout)  # stdout carries the JSON: the lines go to stderr
            for output in written:  # "HTML report written to r.html" ("appended to" for the CI step summary)
                verb = "appended to" if output.append else "written to"
                called = FILE_FLAGS.get(output.flag, (None, None, output.flag))[2]
                line = (confirm or {}).get(output.flag, f"{called} {verb} {{path}}")
                console.print(line.format(path=output.path), style="dim", markup=False)
    except ReaderGone:  # | head: the reader has seen enough; the files are written, the exit code stands
        silence_stdout()
    except StandardOutputError as exc:  # e.g. > /dev/full: the files are written; said last, exit 2 (main)
        silence_stdout()
        stdout_failed = exc
    for message in failures:
        report_error(message)
    if stdout_failed is not None:
        raise stdout_failed
    return EXIT_NOT_WRITTEN if failures else 0


@contextmanager
def user_stdout_to_stderr(enabled: bool) -> Iterator[None]:
    """While user code (a model factory, a loader) runs, send its prints to stderr: stdout carries ``--json -``.

    Redirected at the file-descriptor level too, so C extensions and subprocesses cannot write into the JSON.
    """
    if not enabled:
        yield
        return
    sys.stdout.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no usable descriptor 1: the Python-level redirection still holds
        saved = None
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            with suppress(OSError):
                sys.stderr.flush()
                os.dup2(saved, 1)
            os.close(saved)


def json_to_stdout(json_path: Path | None) -> bool:
    return json_path is not None and str(json_path) == "-"


@contextmanager
def measuring(description: str | None, *, quiet: bool, json_path: Path | None) -> Iterator[Update | None]:
    """While a scenario runs: its progress bar (none for ``description`` None), user code kept off ``--json -``."""
    enabled = description is not None and not quiet
    with progress_bar(enabled, description or "") as update, user_stdout_to_stderr(json_to_stdout(json_path)):
        yield update


@contextmanager
def progress_bar(enabled: bool, description: str) -> Iterator[Update | None]:
    """A transient Rich progress bar on the terminal (stderr); nothing when piped or quiet."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dummyprof.reports.console import make_console

    with Progress(
        TextColumn("{task.description}", markup=False),  # a model's or loader's name is shown as typed
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
