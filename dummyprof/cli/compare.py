"""``dummyprof compare``: legacy vs per-layer vs unique fill on one model."""

from __future__ import annotations

from pathlib import Path

from dummyprof.cli.inputs import run_inputs
from dummyprof.cli.output import ForceOpt, HtmlOpt, JsonOpt, QuietOpt, check_outputs, emit, measuring, reporter
from dummyprof.cli.schema_command import with_options
from dummyprof.errors import UsageError
from dummyprof.files.outputs import Output
from dummyprof.scenarios.compare.options import CompareOptions
from dummyprof.scenarios.deployment.options import DEPLOYMENT_FIELDS, ONLINE_QUANT_FIELDS
from dummyprof.scenarios.options import LOADER_FIELDS, MODEL_FIELDS, TREE_FIELDS
from dummyprof.schema import Spec

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

The report leads with the answer (speedups, visits, the floor) and fits
one screen; --detail prints every table, --json and --html keep them all.

Example: dummyprof compare --depth 12 --repeat 5 --json results.json
  dummyprof compare --depth 12 --detail
  dummyprof compare --depth 12 --trace fill.json  (ui.perfetto.dev)

Any model, any loader (the synthetic-tree flags are then ignored):
  dummyprof compare --preset torch-transformer
  dummyprof compare --model ./my_model.py:build --model-arg layers=8
  dummyprof compare --preset dense-decoder -s per-layer \\
    --loader ./fill.py:fill

Per rank of a deployment (shards as vLLM builds them, on meta; exact counts,
fill time measured or projected per shard; docs/deployments.md):
  dummyprof compare --preset dense-decoder --tp 2 --device-memory 141GiB
  dummyprof compare --preset dense-decoder --online-quant fp8

Random values at memory speed (v0.33's rules and ranges, masked random
words on every core):
  dummyprof compare --preset dense-decoder --initializer fast
"""


# compare's groups, in the order --help lists their flags (outputs: --json, --export, --trace, --html, below)
FIELDS = (
    *TREE_FIELDS,  # tree
    *("strategies", "initializer"),  # fill: what fills (and the loaders below)
    *("repeat", "warmup", "device", "time_budget", "max_memory"),  # budget: rounds, where, time and memory
    *MODEL_FIELDS,  # model
    *LOADER_FIELDS,  # fill: the user's own
    *DEPLOYMENT_FIELDS,  # layout
    *ONLINE_QUANT_FIELDS,  # layout: how its ranks run
)
FLAGS = {
    "export": Spec(
        unit="pair",
        metavar="FORMAT PATH",
        help="Also write the results in another format, e.g. --export pytorch-benchmark startup.json "
        "(PyTorch OSS benchmark-database records, one per metric) or --export markdown summary.md.",
    ),
    "trace": Spec(
        unit="path",
        help="Write a Chrome trace (Perfetto, chrome://tracing) of one extra, untimed instrumented round per "
        "strategy: a span per module and per tensor fill. PATH ending in .speedscope.json: speedscope format.",
    ),
    "detail": Spec(
        unit="flag",
        help="Print every table: the scenario, the ten most revisited tensors with their depth, dtype and bytes, "
        "the projection check, the calibration and the recording cost. Without it the report leads with the "
        "answer and fits a 50-line screen; --json, --html and Markdown always carry the detail.",
    ),
}


@with_options(CompareOptions, FIELDS, flags=FLAGS)
def compare(
    options: CompareOptions,
    json_path: JsonOpt = None,
    export: tuple[str, Path] | None = None,
    trace: Path | None = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    detail: bool = False,
) -> int:
    options.trace = trace is not None
    if (options.deployed or options.online_quant) and trace is not None:
        # A trace is one model's fill, module by module; a deployment fills many shards (and --nproc ranks).
        raise UsageError("--trace", "traces one model's fill, not a deployment's; drop --tp/--ep/--pp/--online-quant")
    if export is not None:
        from dummyprof.reports.registry import get_reporter

        kind = "deployment" if options.deployed or options.online_quant else "compare"
        get_reporter(export[0], kind, flag="--export")  # an unknown format fails before measuring
    outputs = {"--json": json_path, "--export": export[1] if export else None, "--trace": trace, "--html": html}
    reports = check_outputs(
        outputs, force=force, inputs=run_inputs(model=options.model, loaders=options.loaders), command="compare"
    )
    if export is not None:
        reports.append((Output("--export", export[1]), reporter(export[0], flag="--export")))
    from dummyprof.scenarios.compare import run as scenario

    with measuring("compare", quiet=quiet, json_path=json_path) as progress:
        results = scenario.run(options, progress=progress)
    if trace is not None:
        from dummyprof.reports.trace_formats import trace_renderer

        reports.append((Output("--trace", trace), trace_renderer(trace)))
    return emit(
        results, json_path=json_path, quiet=quiet, force=force, reports=reports, detail=detail, command="compare"
    )
