"""``dummyprof sweep``: one scenario at many sizes, and how each strategy's cost grows."""

from __future__ import annotations

from typing import Any

from dummyprof.cli.inputs import run_inputs
from dummyprof.cli.output import ForceOpt, HtmlOpt, JsonOpt, QuietOpt, check_outputs, emit, measuring
from dummyprof.cli.schema_command import field_spec, options_from, with_options
from dummyprof.errors import UsageError
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.sweep.options import MODEL_ARG_PREFIX, TREE_PARAMETERS, SweepOptions
from dummyprof.schema import Spec, parse
from dummyprof.units import parse_count, parse_seconds

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


FIELDS = (
    *("depth", "width", "hidden", "rows", "dtype", "strategies", "initializer", "model", "preset", "model_args"),
    *("dim", "method", "time_budget", "repeat", "warmup", "fit_from", "device", "max_memory"),
)
# The sweep's own flags: an engram sweep's, and where the fits start
FLAGS = {
    "rows": Spec(metavar="RANGE", help="Sweep engram table rows instead of compare, e.g. 1M,2M,4M,8M."),
    "dim": field_spec(EngramOptions, "dim", "sweep"),  # engram's fields, as the sweep states them
    "method": field_spec(EngramOptions, "methods", "sweep"),
    "fit_from": Spec(metavar="VALUE", help="Smallest value the growth fits use. Default: the middle value."),
}


@with_options(CompareOptions, FIELDS, FLAGS)
def sweep(
    raw: dict[str, Any],
    rows: str | None = None,
    dim: str = str(EngramOptions.dim),
    method: list[str] | None = None,
    fit_from: str | None = None,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    from dummyprof.cli.ranges import is_sweep, parse_values

    axes: list[tuple[str, str, list[int]]] = []  # (parameter, flag, values)
    for name in TREE_PARAMETERS:
        if is_sweep(raw[name]):
            axes.append((name, f"--{name}", parse_values(f"--{name}", raw[name])))
    if rows is not None:
        axes.append(("rows", "--rows", parse_values("--rows", rows, example="1M,2M,4M")))
    fixed_args: list[str] = []
    for item in raw["model_arg"] or []:
        key, sep, value = item.partition("=")
        if sep and is_sweep(value):
            axes.append((f"{MODEL_ARG_PREFIX}{key.strip()}", "--model-arg", parse_values("--model-arg", value)))
        else:
            fixed_args.append(item)
    if not axes:
        raise UsageError(
            "--depth", "nothing to sweep: give a range to one flag, e.g. --depth 1:16 (or --model-arg layers=1:8)"
        )
    if len(axes) > 1:
        flags = ", ".join(flag for _, flag, _ in axes)
        raise UsageError(axes[1][1], f"sweep one parameter at a time; got ranges for {flags}")
    parameter, _, values = axes[0]
    engram_only = (("--dim", dim != str(EngramOptions.dim)), ("--method", bool(method)))
    for flag, given in engram_only if parameter != "rows" else ():  # else taken and never used
        if given:
            raise UsageError(flag, "only applies to an engram sweep (--rows RANGE); drop it")
    time_budget = raw["time_budget"]
    fixed = {**raw, "model_arg": fixed_args, **({parameter: "1"} if parameter in TREE_PARAMETERS else {})}
    compare, _ = options_from(CompareOptions, [f for f in FIELDS if f != "time_budget"], fixed, "sweep")
    if time_budget is not None and parameter != "rows":
        compare.time_budget = parse_seconds("--time-budget", time_budget, example="60")
    options = SweepOptions(
        parameter=parameter,
        values=values,
        fit_from=parse_count("--fit-from", fit_from) if fit_from is not None else None,
        compare=compare,
    )
    if parameter == "rows":
        options.engram = EngramOptions(
            dim=parse("dim", FLAGS["dim"], dim),
            device=compare.device,
            methods=parse("methods", FLAGS["method"], method) if method else list(EngramOptions().methods),
            repeat=compare.repeat,
            max_memory=compare.max_memory,
            time_budget_s=parse_seconds("--time-budget", time_budget, example="10") if time_budget else 10.0,
        )
    paths = {"--json": json_path, "--html": html}
    reports = check_outputs(paths, force=force, inputs=run_inputs(model=compare.model), command="sweep")
    from dummyprof.scenarios.sweep import run as scenario

    failure = None
    with measuring("sweep", quiet=quiet, json_path=json_path) as progress:
        try:
            results = scenario.run(options, progress=progress)
        except scenario.SweepStopped as stopped:  # the points measured are shown and saved, then the failure
            results, failure = stopped.results, stopped.error
    code = emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports, command="sweep")
    if failure is not None:
        raise failure
    return code
