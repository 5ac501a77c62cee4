"""What ``inspect`` takes, and the one check of it that the CLI and the Python API share."""

from __future__ import annotations

from dataclasses import dataclass, field

from dummyprof.errors import UsageError
from dummyprof.scenarios.options import ModelChoice, TreeOptions, check_strategies, check_tree_if_built

DEFAULT_STRATEGIES = ("legacy", "per-layer", "unique")


@dataclass
class InspectOptions(ModelChoice, TreeOptions):
    """Flat fields: the synthetic tree's, the model's, then inspect's own (bases in reverse)."""

    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    max_depth: int | None = None
    min_bytes: int = 0


def validate(options: InspectOptions) -> None:
    check_strategies(options.strategies, require_one=False)
    if options.max_depth is not None and options.max_depth < 0:
        raise UsageError.for_field("max_depth", f"must be 0 or more, got {options.max_depth}")
    check_tree_if_built(options, options)
