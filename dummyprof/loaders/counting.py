"""Exact visit and byte counts for a model of any size: the strategy's own traversal over the model on meta.

Visits and bytes written depend on shapes, dtypes and attributes, not on bytes: the visit recorder runs with an
initializer that answers what it *would* write (its ``plan``), so nothing is allocated and 671B parameters count
in seconds. Tests check these counts against real fills of small models.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from dummyprof.loaders.initializers import FillOutcome, PlannedInitializer, get_initializer
from dummyprof.loaders.strategies import Strategy, run_strategy
from dummyprof.measure.recorder import VisitRecorder


@dataclass
class VisitPlan:
    rule: str
    dtype: torch.dtype
    outcome: FillOutcome
    local_name: str


@dataclass
class CountResult:
    strategy: str
    initializer: str
    recorder: VisitRecorder
    visits: list[VisitPlan]
    walk_seconds: float  # the traversal with the recorder and a no-op fill (Python cost only)


@dataclass
class CountingTooLong(Exception):
    """The walk passed its deadline: ``visits`` counted in ``seconds`` and it was not done."""

    strategy: str
    visits: int
    seconds: float

    def __str__(self) -> str:
        return f"{self.strategy}: {self.visits} visits in {self.seconds:.1f} s, not done"


_CHECK_EVERY = 1024  # visits between clock reads: cheap, and a deadline is still noticed within milliseconds


@dataclass
class _Planner:
    """An initializer stand-in: records each visit's plan and writes nothing."""

    initializer: PlannedInitializer
    strategy: str
    deadline: float | None
    clock: Callable[[], float]
    started: float
    visits: list[VisitPlan] = field(default_factory=list)

    def __call__(self, tensor: torch.Tensor, local_name: str) -> FillOutcome:
        if self.deadline is not None and len(self.visits) % _CHECK_EVERY == 0 and self.clock() > self.deadline:
            raise CountingTooLong(self.strategy, len(self.visits), self.clock() - self.started)
        rule, outcome = self.initializer.plan(tensor, local_name)
        self.visits.append(VisitPlan(rule, tensor.dtype, outcome, local_name))
        return outcome


def count_on_meta(
    model: nn.Module,
    strategy: Strategy,
    initializer: str | None = None,
    *,
    deadline: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> CountResult:
    """``strategy``'s traversal over ``model`` (meta tensors) with the recorder; past ``deadline`` (a ``clock()``
    reading) :class:`CountingTooLong`: legacy's walk grows as tensors x depth."""
    name = initializer or strategy.initializer
    recorder = VisitRecorder(model)
    t0 = clock()
    planner = _Planner(get_initializer(name), strategy.name, deadline, clock, t0)
    run_strategy(model, strategy, initializer=planner, recorder=recorder)
    return CountResult(strategy.name, name, recorder, planner.visits, clock() - t0)
