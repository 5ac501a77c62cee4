"""``dummyprof sweep``: one scenario at many sizes, and how each strategy's cost grows."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from dummyprof.cli.html_option import HtmlOpt, html_reports
from dummyprof.cli.model_options import ModelOpt, PresetOpt
from dummyprof.cli.output import (
    EXIT_NOT_WRITTEN,
    check_outputs,
    emit,
    json_to_stdout,
    progress_bar,
    user_stdout_to_stderr,
)
from dummyprof.cli.output_options import ForceOpt, JsonOpt, QuietOpt
from dummyprof.errors import UsageError
from dummyprof.files.inputs import run_inputs
from dummyprof.units import parse_bytes, parse_count, parse_float, parse_int

HELP = """\
Run compare (or engram) at every value of one parameter and fit how each
strategy's visits, time and bytes grow, on a log-log scale.

Give a range to exactly one flag: START:STOP (inclusive), START:STOP:STEP, or a
list A,B,C. Every point is a whole compare run (interleaved rounds, median time,
exact visit counts, peak RSS); the sweep adds a growth exponent per series with
its R² and 95% interval. On a chain, legacy's visits grow as depth squared and
per-layer's linearly.

Examples:
  dummyprof sweep --depth 1:16 --json sweep.json
  dummyprof sweep --depth 1,2,4,8,16 --hidden 256 -s legacy -s per-layer
  dummyprof sweep --depth 4 --width 1:4     (a tree: width^depth blocks)
  dummyprof sweep --preset dense-decoder --model-arg layers=1:8
  dummyprof sweep --rows 1M,2M,4M,8M --method constant  (engram tables)
"""


def register(app: typer.Typer) -> None:
    app.command("sweep", help=HELP)(sweep)


def sweep(
    depth: Annotated[str, typer.Option(metavar="RANGE", help="Levels of nested blocks, or a range: 1:16.")] = "12",
    width: Annotated[str, typer.Option(metavar="RANGE", help="Child blocks per block, or a range.")] = "1",
    hidden: Annotated[str, typer.Option(metavar="RANGE", help="Size of each weight (multiple of 32), or a range.")] = (
        "512"
    ),
    rows: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="RANGE", help="Sweep engram table rows instead of compare, e.g. 1M,2M,4M,8M."),
    ] = None,
    dtype: Annotated[str, typer.Option(help="Float dtype of the tree: float32, bfloat16 or float16.")] = "float32",
    strategy: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--strategy", "-s", help="Strategy to run (repeatable). Default: legacy, per-layer, unique."),
    ] = None,
    initializer: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Use this initializer for every strategy: v0.33 or v0.29. Default: each strategy's own."),
    ] = None,
    model: ModelOpt = None,
    preset: PresetOpt = None,
    model_arg: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--model-arg",
            metavar="KEY=VALUE",
            help="Keyword argument for --model/--preset (repeatable); one may be a range to sweep: layers=1:8.",
        ),
    ] = None,
    dim: Annotated[str, typer.Option(metavar="INT", help="With --rows: row width (fp8 elements).")] = "256",
    method: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--method", "-m", help="With --rows: fill method (repeatable). Default: all."),
    ] = None,
    time_budget: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            metavar="SECONDS",
            help="Time for measuring at each point (default: compare's 60 s; with --rows, 10 s). A compare point "
            "predicted to take longer is an error, never projected.",
        ),
    ] = None,
    repeat: Annotated[str, typer.Option(metavar="INT", help="Measured rounds per strategy at each point.")] = "3",
    warmup: Annotated[str, typer.Option(metavar="INT", help="Warm-up rounds per point, discarded.")] = "1",
    fit_from: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="VALUE", help="Smallest value the growth fits use. Default: the middle value."),
    ] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N or auto (CUDA when present).")] = "auto",
    max_memory: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SIZE", help="Memory each point may use, e.g. 4GiB. Default: 80% of available."),
    ] = None,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    from dummyprof.cli.ranges import is_sweep, parse_values

    axes: list[tuple[str, str, list[int]]] = []  # (parameter, flag, values)
    for flag, text in (("--depth", depth), ("--width", width), ("--hidden", hidden)):
        if is_sweep(text):
            axes.append((flag.lstrip("-"), flag, parse_values(flag, text)))
    if rows is not None:
        axes.append(("rows", "--rows", parse_values("--rows", rows, example="1M,2M,4M")))
    fixed_args: list[str] = []
    for item in model_arg or []:
        key, sep, value = item.partition("=")
        if sep and is_sweep(value):
            axes.append((f"model-arg:{key.strip()}", "--model-arg", parse_values("--model-arg", value)))
        else:
            fixed_args.append(item)
    if not axes:
        raise UsageError(
            "--depth", "nothing to sweep: give a range to one flag, e.g. --depth 1:16 (or --model-arg layers=1:8)"
        )
    if len(axes) > 1:
        flags = ", ".join(flag for _, flag, _ in axes)
        raise UsageError(axes[1][1], f"sweep one parameter at a time; got ranges for {flags}")
    parameter, flag, values = axes[0]
    from dummyprof.cli.model_options import parse_args_flag
    from dummyprof.scenarios.compare.options import DEFAULT_STRATEGIES, CompareOptions
    from dummyprof.scenarios.sweep.options import SweepOptions

    def single(name: str, text: str, example: str) -> int:
        return parse_int(f"--{name}", text, minimum=1, example=example) if parameter != name else 1

    compare = CompareOptions(
        depth=single("depth", depth, "12"),
        width=single("width", width, "1"),
        hidden=single("hidden", hidden, "512"),
        dtype=dtype,
        strategies=list(strategy) if strategy else list(DEFAULT_STRATEGIES),
        repeat=parse_int("--repeat", repeat, minimum=1, example="3"),
        warmup=parse_int("--warmup", warmup, minimum=0, example="1"),
        device=device,
        initializer=initializer,
        max_memory=parse_bytes("--max-memory", max_memory) if max_memory is not None else None,
        model=model,
        preset=preset,
        model_args=parse_args_flag(fixed_args, "--model-arg"),
    )
    if time_budget is not None and parameter != "rows":
        compare.time_budget = parse_float("--time-budget", time_budget, example="60")
    options = SweepOptions(
        parameter=parameter,
        values=values,
        fit_from=parse_count("--fit-from", fit_from) if fit_from is not None else None,
        compare=compare,
    )
    if parameter == "rows":
        from dummyprof.scenarios.engram.options import EngramOptions

        options.engram = EngramOptions(
            dim=parse_int("--dim", dim, minimum=1, example="256"),
            device=device,
            methods=list(method) if method else list(EngramOptions().methods),
            repeat=compare.repeat,
            max_memory=compare.max_memory,
            time_budget_s=parse_float("--time-budget", time_budget, example="10") if time_budget else 10.0,
        )
    check_outputs({"--json": json_path, "--html": html}, force=force, inputs=run_inputs(model=model))
    reports = html_reports(html)
    from dummyprof.scenarios.sweep import run as scenario

    scenario.validate(options)
    failure = None
    with progress_bar(not quiet, "sweep") as progress, user_stdout_to_stderr(json_to_stdout(json_path)):
        try:
            results = scenario.run(options, progress=progress)
        except scenario.SweepStopped as stopped:  # the points measured are shown and saved, then the failure
            results, failure = stopped.results, stopped.error
    not_written = emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports)
    if failure is not None:
        raise failure
    return EXIT_NOT_WRITTEN if not_written else 0
