"""``dummyprof report``: render a saved results file (no torch needed)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from dummyprof.cli.schema_command import with_options
from dummyprof.errors import UsageError
from dummyprof.schema import Spec

HELP = """\
Render a saved results file (from --json) with any reporter. Needs no torch.

Formats: terminal (default), json, markdown, html (one self-contained page with
charts; needs the html extra); gate results also junit and benchmark-json; compare
results also pytorch-benchmark. --format with an unknown name lists every registered one.

The terminal report of compare results fits one screen; --detail prints
every table (the Markdown and HTML reports always carry them).

Example: dummyprof report results.json --format markdown --output summary.md
  dummyprof report results.json --detail
"""


FLAGS = {
    "format": Spec(short="-f", help="terminal, json, markdown, html, junit, benchmark-json or pytorch-benchmark."),
    "output": Spec(unit="path", short="-o", help="Write to PATH instead of stdout ('-': stdout; not for terminal)."),
    "force": Spec(
        unit="flag",
        help="Overwrite --output if it exists (a report it made earlier from the same kind: no need).",
    ),
    "quiet": Spec(unit="flag", short="-q", help="Terminal: only the summary line."),
    "detail": Spec(unit="flag", help="Terminal: every table (the other formats always carry them)."),
}


@with_options(None, flags=FLAGS)
def report(
    path: Annotated[
        Path, typer.Argument(metavar="RESULTS.json", help="A file written by --json ('-': standard input).")
    ],
    format: str = "terminal",
    output: Path | None = None,
    force: bool = False,
    quiet: bool = False,
    detail: bool = False,
) -> int:
    from dummyprof.cli.inputs import run_inputs
    from dummyprof.cli.output import FILE_FLAGS, check_outputs, emit, output_for, print_terminal
    from dummyprof.reports.registry import RenderOptions, get_reporter, render
    from dummyprof.results.store import load_results

    chosen = get_reporter(format)  # an unknown name fails before anything is read or probed
    if detail and format != "terminal":
        raise UsageError("--detail", f"the {format} format always carries every table; drop --detail")
    if output is not None and str(output) == "-":
        output = None  # standard output, as without --output
    fmt = FILE_FLAGS.get(f"--{format}", (None, "", ""))[1] or ""  # pytorch-benchmark's files tell no command
    if output is not None:
        if format == "terminal":
            raise UsageError("--output", "terminal output goes to stdout; use --format markdown or json with --output")
        inputs = run_inputs(files={"RESULTS.json": path})
        command = _results_command(path)
        check_outputs({"--output": output}, force=force, inputs=inputs, command=command, formats={"--output": fmt})
    # Per-tensor rows are most of a large compare file: a format that shows none (-q, markdown) skips them.
    rows = chosen.reads_tensor_rows(RenderOptions(quiet=quiet and format == "terminal"))
    results = load_results(path, tensor_rows=rows)
    if format == "terminal":
        get_reporter(format, results.command)
        print_terminal(results, quiet=quiet, detail=detail)
        return 0
    text = render(results, format)  # a format that cannot render this kind fails here, before anything is written
    if output is None:
        sys.stdout.write(text)
        return 0
    written = [(output_for("--output", output, command=results.command, fmt=fmt), lambda _: text)]
    confirm = {"--output": f"{chosen.name} report written to {{path}}"}
    return emit(results, json_path=None, quiet=quiet, force=force, reports=written, confirm=confirm, terminal=False)


def _results_command(path: Path) -> str | None:
    """The command a saved results file records, from its first bytes, before it is loaded: what makes an earlier
    report of the same kind this report's own. None for standard input or a pipe (a peek would consume it)."""
    import os
    import stat

    from dummyprof.files.outputs import own_kind

    if str(path) == "-":
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:
        return None  # a missing file is refused by the load, naming it
    kind = own_kind(path) or ""
    return kind.removeprefix("json:") if kind.startswith("json:") else None
