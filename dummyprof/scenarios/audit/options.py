"""What ``audit`` takes, and the one check of it that the CLI and the Python API share."""

from __future__ import annotations

from dataclasses import dataclass, field

from dummyprof.errors import UsageError
from dummyprof.results.audit import FINDING_KINDS
from dummyprof.scenarios.options import (
    LoaderChoice,
    ModelChoice,
    TreeOptions,
    check_initializer,
    check_strategies,
    check_tree_if_built,
    loader_names,
)

DEFAULT_STRATEGIES = ("per-layer", "unique")


@dataclass
class AuditOptions(LoaderChoice, ModelChoice, TreeOptions):
    """Flat fields: the synthetic tree's, the model's, the loaders', then audit's own (bases in reverse)."""

    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    loader_initializer: str | None = None  # declared by the user: compare loaders' values with strategies using it
    initializer: str | None = None  # every strategy uses this one instead of its own
    device: str = "cpu"
    max_memory: int | None = None
    ignore: list[str] = field(default_factory=list)


def validate(options: AuditOptions) -> list[str]:
    """Check everything that can be checked before a model is built; returns the loaders' names."""
    for kind in options.ignore:
        if kind not in FINDING_KINDS:
            raise UsageError.for_field(
                "ignore", f"unknown finding kind {kind!r}; choose from: {', '.join(FINDING_KINDS)}"
            )
    check_initializer(options.initializer)
    check_initializer(options.loader_initializer, field="loader_initializer")
    check_strategies(options.strategies, require_one=False)
    names = loader_names(options.loaders, options.strategies)
    if not options.strategies and not options.loaders:
        raise UsageError.for_field("strategies", "give at least one --strategy or --loader to audit")
    check_tree_if_built(options, options)
    return names
