"""``dummyprof compare``: legacy vs per-layer vs unique fill on one model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from dummyprof.cli.html_option import HtmlOpt, html_reports
from dummyprof.cli.model_options import (
    LoaderArgOpt,
    LoaderOpt,
    ModelArgOpt,
    ModelOpt,
    PresetOpt,
    TrustRemoteCodeOpt,
    parse_args_flag,
    tree_fields,
)
from dummyprof.cli.output import (
    EXIT_NOT_WRITTEN,
    check_outputs,
    emit,
    json_to_stdout,
    progress_bar,
    reporter,
    user_stdout_to_stderr,
)
from dummyprof.cli.output_options import ForceOpt, JsonOpt, QuietOpt
from dummyprof.files.inputs import run_inputs
from dummyprof.files.outputs import Output

if TYPE_CHECKING:
    from dummyprof.results.session import Results
from dummyprof.units import parse_bytes, parse_int, parse_seconds

HELP = """\
Fill one model with several strategies, side by side, and show the cost of each.

Strategies (--strategy, repeatable; default all three):
  legacy     vLLM <= 0.29: every module x its recursive state_dict();
             a tensor k levels deep is filled k+1 times (v0.29 initializer).
  per-layer  vLLM >= 0.30: every module, its own parameters and
             persistent buffers.
  unique     per-layer, but each storage once (tied and aliased too).

Rounds are interleaved (A, B, C, A, B, C, ...) on freshly built models; one
warm-up round is discarded. Speedup is a ratio of medians.

Example: dummyprof compare --depth 12 --repeat 5 --json results.json
  dummyprof compare --depth 12 --trace fill.json  (ui.perfetto.dev)

Any model, any loader (the synthetic-tree flags are then ignored):
  dummyprof compare --preset torch-transformer
  dummyprof compare --model ./my_model.py:build --model-arg layers=8
  dummyprof compare --preset dense-decoder -s per-layer \\
    --loader ./fill.py:fill

Random values at memory speed (v0.33's rules and ranges, masked random
words on every core):
  dummyprof compare --preset dense-decoder --initializer fast
"""


def register(app: typer.Typer) -> None:
    app.command("compare", help=HELP, no_args_is_help=False)(compare)


def compare(
    depth: Annotated[str, typer.Option(metavar="INT", help="Levels of nested blocks below the root.")] = "12",
    width: Annotated[
        str, typer.Option(metavar="INT", help="Child blocks per block (blocks grow as width^depth).")
    ] = "1",
    hidden: Annotated[
        str, typer.Option(metavar="INT", help="Size of each weight (hidden x hidden); multiple of 32.")
    ] = "512",
    dtype: Annotated[str, typer.Option(help="Float dtype of the tree: float32, bfloat16 or float16.")] = "float32",
    meta: Annotated[bool, typer.Option("--meta", help="Add a tensor left on the meta device (never filled).")] = False,
    engram_rows: Annotated[
        str, typer.Option(metavar="INT", help="Add a small Engram-style fp8 table with this many rows (0: none).")
    ] = "0",
    strategy: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional here on Python 3.10
        typer.Option("--strategy", "-s", help="Strategy to run (repeatable). Default: legacy, per-layer, unique."),
    ] = None,
    initializer: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="Use this initializer for every strategy: v0.33, v0.29, or fast (v0.33's rules, random values "
            "from masked random words on every core). Default: each strategy's own."
        ),
    ] = None,
    repeat: Annotated[
        str,
        typer.Option(
            metavar="INT|auto",
            help="Measured rounds per strategy, or auto: at least 3, then until every speedup's 95% interval is "
            "within 5% of it, or one more round would overrun --time-budget (at most 50).",
        ),
    ] = "5",
    warmup: Annotated[str, typer.Option(metavar="INT", help="Warm-up rounds run first and discarded.")] = "1",
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N or auto (CUDA when present).")] = "auto",
    time_budget: Annotated[
        str,
        typer.Option(
            metavar="DURATION",
            help="Seconds the measured rounds may take (e.g. 60, 5m). When the rounds are predicted to take "
            "longer, fewer are measured (at least 3, said in the report); when even 3 do not fit, or the model "
            "does not fit --max-memory, it is projected from calibration fills instead.",
        ),
    ] = "60s",
    max_memory: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SIZE", help="Memory the run may use, e.g. 8GiB. Default: 80% of available."),
    ] = None,
    model: ModelOpt = None,
    preset: PresetOpt = None,
    model_arg: ModelArgOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    loader: LoaderOpt = None,
    loader_arg: LoaderArgOpt = None,
    json_path: JsonOpt = None,
    export: Annotated[
        Optional[tuple[str, Path]],  # noqa: UP045
        typer.Option(
            "--export",
            metavar="FORMAT PATH",
            help="Also write the results in another format, e.g. --export pytorch-benchmark startup.json "
            "(PyTorch OSS benchmark-database records, one per metric) or --export markdown summary.md.",
        ),
    ] = None,
    trace: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--trace",
            metavar="PATH",
            help="Write a Chrome trace (Perfetto, chrome://tracing) of one extra, untimed instrumented round per "
            "strategy: a span per module and per tensor fill. PATH ending in .speedscope.json: speedscope format.",
        ),
    ] = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    from dummyprof.scenarios.compare.options import DEFAULT_STRATEGIES, CompareOptions

    options = CompareOptions(
        **tree_fields(depth, width, hidden, dtype, examples=(12, 1, 512), engram_rows=engram_rows, meta=meta),
        strategies=list(strategy) if strategy else list(DEFAULT_STRATEGIES),
        repeat=5 if repeat.strip().lower() == "auto" else parse_int("--repeat", repeat, minimum=1, example="5"),
        repeat_auto=repeat.strip().lower() == "auto",
        warmup=parse_int("--warmup", warmup, minimum=0, example="1"),
        device=device,
        initializer=initializer,
        max_memory=parse_bytes("--max-memory", max_memory) if max_memory is not None else None,
        model=model,
        preset=preset,
        model_args=parse_args_flag(model_arg, "--model-arg"),
        trust_remote_code=trust_remote_code,
        loaders=list(loader or []),
        time_budget=parse_seconds("--time-budget", time_budget),
        loader_args=parse_args_flag(loader_arg, "--loader-arg"),
        trace=trace is not None,
    )
    reports: list[tuple[Output, Callable[[Results], str]]] = html_reports(html)  # no plotly: exit 2 now
    if export is not None:
        from dummyprof.reports.registry import get_reporter

        export_format, export_path = export
        get_reporter(export_format, "compare", flag="--export")  # an unknown format fails before measuring
        reports.append((Output("--export", export_path), reporter(export_format, flag="--export")))
    outputs = {
        "--json": json_path,
        "--export": export[1] if export is not None else None,
        "--trace": trace,
        "--html": html,
    }
    check_outputs(outputs, force=force, inputs=run_inputs(model=model, loaders=loader))
    from dummyprof.scenarios.compare import run as scenario

    with progress_bar(not quiet, "compare") as progress, user_stdout_to_stderr(json_to_stdout(json_path)):
        results = scenario.run(options, progress=progress)
    if trace is not None:
        from dummyprof.reports.trace_formats import trace_renderer

        reports.append((Output("--trace", trace), trace_renderer(trace)))
    failures = emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports)
    return EXIT_NOT_WRITTEN if failures else 0
