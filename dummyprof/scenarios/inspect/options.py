"""What ``inspect`` takes, and the one check of it that the CLI and the Python API share."""

from __future__ import annotations

from dataclasses import dataclass

from dummyprof.scenarios.deployment.options import DeploymentChoice
from dummyprof.scenarios.options import (
    ModelChoice,
    SmallTreeOptions,
    check_common,
    check_strategies,
    strategies_option,
)
from dummyprof.schema import integer, size


@dataclass
class InspectOptions(DeploymentChoice, ModelChoice, SmallTreeOptions):
    """Flat fields: the synthetic tree's, the model's, then inspect's own (bases in reverse)."""

    strategies: list[str] = strategies_option("count")
    max_depth: int | None = integer(None, "Show modules at most this deep (0: the root only).", minimum=0, example="3")
    min_bytes: int = size(
        0, "Hide modules whose subtree holds fewer bytes, e.g. 1MiB.", minimum=0, example="1MiB", shown=""
    )


def validate(options: InspectOptions) -> None:
    check_strategies(options.strategies, require_one=False)
    check_common(options)
