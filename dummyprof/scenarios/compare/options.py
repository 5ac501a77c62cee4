"""What ``compare`` takes, and the one check of it that the CLI, the gate and the Python API share."""

from __future__ import annotations

from dataclasses import dataclass

from dummyprof.errors import UsageError
from dummyprof.scenarios.deployment.options import (
    LAYOUT_FIELDS,
    ONLINE_QUANT_FORMATS,
    ONLINE_QUANT_SCALES,
    CompareDeploymentChoice,
    DeploymentChoice,
)
from dummyprof.scenarios.options import (
    INITIALIZER_NAMES,
    LoaderChoice,
    ModelChoice,
    TreeOptions,
    check_common,
    check_fillers,
    max_memory_option,
    strategies_option,
)
from dummyprof.schema import duration, integer, option

SWEEP_REPEAT = 3  # a sweep's rounds per point (its form of --repeat below)


@dataclass
class CompareOptions(CompareDeploymentChoice, DeploymentChoice, LoaderChoice, ModelChoice, TreeOptions):
    """Flat fields: the synthetic tree's, the model's, the loaders', then compare's own (bases in reverse)."""

    strategies: list[str] = strategies_option("run")
    repeat: int = integer(
        5,
        "Measured rounds per strategy, or auto: at least 3, then until every speedup's 95% interval is "
        "within 5% of it, or one more round would overrun --time-budget (at most 50).",
        metavar="INT|auto",
        auto="repeat_auto",
        forms={
            "sweep": {
                "metavar": "INT",
                "auto": None,
                "example": str(SWEEP_REPEAT),
                "shown": str(SWEEP_REPEAT),
                "help": "Measured rounds per strategy at each point.",
            }
        },
    )
    repeat_auto: bool = option(False, flag="--repeat")
    warmup: int = integer(
        1,
        "Warm-up rounds run first and discarded.",
        minimum=0,
        forms={"sweep": {"help": "Warm-up rounds per point, discarded."}},
    )
    device: str = option("auto", help="cpu, cuda, cuda:N or auto (CUDA when present).")
    initializer: str | None = option(
        None,
        help=f"Use this initializer for every strategy: {', '.join(INITIALIZER_NAMES[:-1])}, or "
        f"{INITIALIZER_NAMES[-1]} (v0.33's rules, random values from masked random words on every core). "
        "Default: each strategy's own.",
    )
    max_memory: int | None = max_memory_option()
    time_budget: float = duration(
        60.0,
        "Seconds the measured rounds may take (e.g. 60, 5m). When the rounds are predicted to take "
        "longer, fewer are measured (at least 3, said in the report); when even 3 do not fit, or the model "
        "does not fit --max-memory, it is projected from calibration fills instead.",
        shown="60s",
        forms={
            "sweep": {  # parsed by the sweep: its default depends on the scenario swept
                "metavar": "DURATION",
                "shown": "",
                "help": "Time for measuring at each point (default: compare's 60 s; with --rows, 10 s). A compare "
                "point predicted to take longer is an error, never projected.",
            }
        },
    )
    project: bool = True  # False: refuse (DoesNotFitError) instead of projecting, as the perf gate needs
    # One instrumented round per strategy, after the timed rounds and apart from them (compare --trace).
    trace: bool = False


def validate(options: CompareOptions) -> list[str]:
    """Check what is to be measured, before anything is built or imported; returns the loaders' names.

    Where to measure (``device``) and whether the model fits are checked by the run, on the
    machine that measures.
    """
    names = check_fillers(options, require_one=bool(options.strategies) or not options.loaders)
    if options.repeat_auto and not options.project:
        raise UsageError.for_field("repeat_auto", "the perf gate keeps fixed repeats; set repeat = N")
    check_common(options)
    _check_deployment(options)
    if (options.deployed or options.online_quant) and not options.project:
        name = "online_quant" if options.online_quant else next(f for f in LAYOUT_FIELDS if getattr(options, f) > 1)
        raise UsageError.for_field(name, "the perf gate measures one process on the whole model; drop it here")
    return names


def _check_deployment(options: CompareOptions) -> None:
    """A known format and scale; ``--nproc`` equals the layout's ranks (its world, after ``--ep`` set dp)."""
    known = (
        ("online_quant", "format", ONLINE_QUANT_FORMATS, ", "),
        ("online_quant_scale", "scale", ONLINE_QUANT_SCALES, " or "),
    )
    for name, what, choices, joiner in known:
        value = getattr(options, name)
        if value is not None and value not in choices:
            raise UsageError.for_field(name, f"unknown {what} {value!r}; choose {joiner.join(choices)}")
    if options.nproc is not None and options.nproc != (world := options.layout.world):
        if world == 1:  # no --nproc value passes: the layout is what is missing
            raise UsageError.for_field(
                "nproc",
                "runs each rank of a layout as a process, and this layout has 1 rank; give a layout of "
                f"{options.nproc} ranks first (--tp or --dp, e.g. --dp {options.nproc})",
            )
        raise UsageError.for_field(
            "nproc", f"{options.nproc} processes for a layout of {world} ranks; give --nproc {world} (tp x dp x pp)"
        )
