"""The Typer application and the process entry point.

Commands live in sibling modules; each parses and validates its flags, calls a
scenario from the library, and hands the Results to a reporter. Torch is only
imported inside a command, so ``dummyprof --help`` stays fast.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from dummyprof.cli import audit, compare, engram, gate, inspect, report, sweep
from dummyprof.cli.output import report_error, third_party_warnings
from dummyprof.cli.signals import EXIT_TERMINATED, TERMINATED_MESSAGE, sigterm_interrupts
from dummyprof.cli.stdout import ReaderGone, StandardOutputError, flush_at_end, guarded_stdout, silence_stdout
from dummyprof.errors import DummyprofError, flag_text
from dummyprof.reports.encoding import encoding_safe

try:  # typer >= 0.20 vendors click; older releases use the click package
    from typer._click import exceptions as click_exceptions  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exceptions  # type: ignore[no-redef,import-not-found,unused-ignore]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

HELP = """\
Start-up profiler for PyTorch "dummy" weight loading.

Builds a model (synthetic, or your own), fills every weight the way inference
engines do in dummy load mode, and measures each fill strategy: time, visits
per tensor, bytes written, host/pinned/GPU memory.

Exit codes: 0 success, 1 findings or a regression (audit, gate), 2 bad input
or an output file that could not be written, 3 could not measure, not
comparable or could not record (gate), 130 interrupted. See docs/promises.md.
"""

app = typer.Typer(
    name="dummyprof",
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: "[part_rows, dim]" is text, not markup (see cli/helptext.py)
    context_settings={"help_option_names": ["-h", "--help"]},
)


COMMANDS = (  # name, function, help; --help lists them in this order
    ("audit", audit.audit, audit.HELP),
    ("compare", compare.compare, compare.HELP),
    ("engram", engram.engram, engram.HELP),
    ("baseline", gate.baseline, gate.BASELINE_HELP),
    ("gate", gate.gate, gate.GATE_HELP),
    ("inspect", inspect.inspect, inspect.HELP),
    ("report", report.report, report.HELP),
    ("sweep", sweep.sweep, sweep.HELP),
)
for name, command, text in COMMANDS:
    app.command(name, help=text)(command)


@functools.cache
def _click_command() -> Any:
    """Typer's click command, built once per process (building reads every command's type hints)."""
    from dummyprof.cli.helptext import tidy

    return tidy(typer.main.get_command(app))


def _version(value: bool) -> None:
    if value:
        from dummyprof._version import __version__

        sys.stdout.write(f"dummyprof {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_version, help="Print dummyprof's version and exit."),
    ] = False,
) -> None:
    pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns (and with ``sys.exit`` exits with) the exit code."""
    command = _click_command()
    for stream in (sys.stdout, sys.stderr):
        encoding_safe(stream)  # PYTHONIOENCODING=ascii: µ becomes u, never a UnicodeEncodeError
    try:
        # stdout guarded: a write that fails is one line and exit 2 (cli/stdout.py); warnings kept off the report
        with guarded_stdout() as stdout, sigterm_interrupts() as sigterm, third_party_warnings():
            rv = command.main(
                args=list(argv) if argv is not None else None, prog_name="dummyprof", standalone_mode=False
            )
            flush_at_end(stdout)
    except StandardOutputError as exc:
        silence_stdout()  # what is left in its buffer is not flushed again at exit
        report_error(str(exc))
        return exc.exit_code
    except DummyprofError as exc:
        report_error(flag_text(exc))
        return exc.exit_code
    except click_exceptions.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "dummyprof"
        report_error(f"{exc.format_message()} (see '{where} --help')")
        return EXIT_USAGE
    except click_exceptions.ClickException as exc:
        report_error(exc.format_message())
        return exc.exit_code
    except (KeyboardInterrupt, typer.Abort):
        rv = EXIT_INTERRUPTED
    except FileNotFoundError:  # os.path.realpath('rel.md') and the like, from a removed working folder
        gone = working_folder_gone()
        if gone is None:
            raise
        report_error(gone)
        return EXIT_USAGE
    except (ReaderGone, BrokenPipeError):  # the reader went away (| head): not an error of ours
        silence_stdout()
        return EXIT_OK
    code = rv if isinstance(rv, int) else EXIT_OK
    if code == EXIT_INTERRUPTED and sigterm.received:
        report_error(TERMINATED_MESSAGE)
        return EXIT_TERMINATED
    if code == EXIT_INTERRUPTED:
        sys.stderr.write("dummyprof: interrupted\n")
    return code


def working_folder_gone() -> str | None:
    """Why a relative path cannot be used: the working folder was removed (``os.getcwd()`` fails); None if it is
    there. Absolute paths still work from a removed folder, so this is asked only once something failed."""
    try:
        os.getcwd()
    except FileNotFoundError:
        was = os.environ.get("PWD", "")
        named = f" ({was})" if was else ""
        return (
            f"the working folder{named} no longer exists, so a relative path names nothing; "
            "cd to a folder that exists, or give absolute paths"
        )
    return None


def run() -> None:
    sys.exit(main())
