"""What ``audit`` takes, and the one check of it that the CLI and the Python API share."""

from __future__ import annotations

from dataclasses import dataclass

from dummyprof.errors import UsageError
from dummyprof.scenarios.deployment.options import DeploymentChoice
from dummyprof.scenarios.options import DEFAULT_STRATEGIES as EVERY_STRATEGY
from dummyprof.scenarios.options import (
    INITIALIZER_NAMES,
    LoaderChoice,
    ModelChoice,
    SmallTreeOptions,
    check_common,
    check_fillers,
    check_initializer,
    max_memory_option,
    strategies_option,
)
from dummyprof.schema import option

DEFAULT_STRATEGIES = EVERY_STRATEGY[1:]  # all but legacy (scenarios/options.py says why)
_NAMES = ", ".join(INITIALIZER_NAMES)


@dataclass
class AuditOptions(DeploymentChoice, LoaderChoice, ModelChoice, SmallTreeOptions):
    """Flat fields: the synthetic tree's, the model's, the loaders', then audit's own (bases in reverse)."""

    strategies: list[str] = strategies_option("audit", DEFAULT_STRATEGIES)
    loader_initializer: str | None = option(
        None,
        metavar="NAME",
        help=f"Declare that the loaders fill like this initializer ({_NAMES}): their final bytes are then "
        "compared with the strategies using it.",
    )
    initializer: str | None = option(  # every strategy uses this one instead of its own
        None,
        help=f"Use this initializer ({', '.join(INITIALIZER_NAMES[:-1])} or {INITIALIZER_NAMES[-1]}) for every "
        "strategy, so all their values compare.",
    )
    device: str = option("cpu", help="cpu, cuda, cuda:N or auto.")
    max_memory: int | None = max_memory_option()
    ignore: list[str] = option(
        factory=list, unit="list", metavar="KIND", help="A finding kind that should not fail the audit (repeatable)."
    )


def validate(options: AuditOptions) -> list[str]:
    """Check everything that can be checked before a model is built; returns the loaders' names."""
    from dummyprof.results.audit import FINDING_KINDS  # here, not at import: --help reads this module

    for kind in options.ignore:
        if kind not in FINDING_KINDS:
            raise UsageError.for_field(
                "ignore", f"unknown finding kind {kind!r}; choose from: {', '.join(FINDING_KINDS)}"
            )
    names = check_fillers(options, require_one=False)
    check_initializer(options.loader_initializer, field="loader_initializer")
    if not options.strategies and not options.loaders:
        raise UsageError.for_field("strategies", "give at least one --strategy or --loader to audit")
    check_common(options)
    return names
