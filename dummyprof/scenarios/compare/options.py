"""What ``compare`` takes, and the one check of it that the CLI, the gate and the Python API share."""

from __future__ import annotations

from dataclasses import dataclass, field

from dummyprof.errors import UsageError
from dummyprof.scenarios.options import (
    LoaderChoice,
    ModelChoice,
    TreeOptions,
    check_initializer,
    check_strategies,
    check_tree_if_built,
    loader_names,
)

DEFAULT_STRATEGIES = ("legacy", "per-layer", "unique")


@dataclass
class CompareOptions(LoaderChoice, ModelChoice, TreeOptions):
    """Flat fields: the synthetic tree's, the model's, the loaders', then compare's own (bases in reverse)."""

    depth: int = 12  # compare measures time: a deeper, wider tree than audit and inspect build
    hidden: int = 512
    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    repeat: int = 5
    repeat_auto: bool = False  # --repeat auto: rounds until the speedups' intervals are tight or the budget is spent
    warmup: int = 1
    device: str = "auto"
    initializer: str | None = None
    max_memory: int | None = None
    time_budget: float = 60.0  # seconds the measured rounds may take; a run predicted to take longer is projected
    project: bool = True  # False: refuse (DoesNotFitError) instead of projecting, as the perf gate needs
    # One instrumented round per strategy, after the timed rounds and apart from them (compare --trace).
    trace: bool = False


def validate(options: CompareOptions) -> list[str]:
    """Check what is to be measured, before anything is built or imported; returns the loaders' names.

    How long and where to measure (``repeat``, ``device``, ``max_memory``) are checked
    by the run, on the machine that measures.
    """
    check_strategies(options.strategies, require_one=bool(options.strategies) or not options.loaders)
    names = loader_names(options.loaders, options.strategies)
    check_initializer(options.initializer)
    if options.repeat_auto and not options.project:
        raise UsageError.for_field("repeat_auto", "the perf gate keeps fixed repeats; set repeat = N")
    check_tree_if_built(options, options)
    return names
