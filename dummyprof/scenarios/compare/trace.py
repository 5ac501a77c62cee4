"""One instrumented fill round, never timed: a span per module the traversal is at and per tensor it fills.

The traversal's ``model.modules()`` is shadowed by one that notes each module as it is yielded: the time at a
module lasts until the next one is asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import nn

from dummyprof.loaders.initializers import get_initializer
from dummyprof.loaders.strategies import Strategy
from dummyprof.measure.device import synchronize
from dummyprof.measure.engine import Clock
from dummyprof.measure.recorder import VisitRecorder, storage_key
from dummyprof.results.trace import Span, StrategyTrace


class _ModuleWatch:
    def __init__(self, model: nn.Module, clock: Clock, spans: list[Span], origin: float) -> None:
        self._model = model
        self._clock = clock
        self._spans = spans
        self._origin = origin
        self._names = {id(m): path for path, m in model.named_modules()}
        self._open: Span | None = None

    def modules(self) -> Iterator[nn.Module]:
        for module in nn.Module.modules(self._model):
            self.close()
            self._open = Span(
                kind="module", name=self._names.get(id(module), "?"), start_s=self._clock() - self._origin
            )
            self._spans.append(self._open)
            yield module
        self.close()

    def close(self) -> None:
        if self._open is not None:
            self._open.duration_s = self._clock() - self._origin - self._open.start_s
            self._open = None


def trace_fills(
    build: Callable[[torch.device], nn.Module],
    device: torch.device,
    strategies: Sequence[Strategy],
    initializer: str | None,
) -> list[StrategyTrace]:
    """A fresh model per strategy, filled once with a span per module and per fill."""
    return [_trace_fill(build(device), s, initializer or s.initializer, device) for s in strategies]


def _trace_fill(
    model: nn.Module, strategy: Strategy, initializer_name: str, device: torch.device, clock: Clock = time.perf_counter
) -> StrategyTrace:
    initializer = get_initializer(initializer_name)
    recorder = VisitRecorder(model)
    spans: list[Span] = []
    synchronize(device)
    origin = clock()
    watch = _ModuleWatch(model, clock, spans, origin)
    object.__setattr__(model, "modules", watch.modules)  # instance attribute: nn.Module.__setattr__ would refuse
    try:
        with torch.no_grad():
            for local_name, tensor in strategy.traverse(model):
                start = clock() - origin
                outcome = initializer(tensor, local_name)
                synchronize(device)
                duration = clock() - origin - start
                recorder.record(tensor, outcome)
                record = recorder.records[storage_key(tensor)]
                spans.append(
                    Span(
                        kind="fill",
                        name=record.name,
                        start_s=start,
                        duration_s=duration,
                        local_name=local_name,
                        dtype=record.dtype,
                        nbytes=record.nbytes,
                        visit=record.visits,
                        bytes_written=outcome.bytes_written,
                    )
                )
        watch.close()
    finally:
        del model.__dict__["modules"]
    total = clock() - origin
    return StrategyTrace(strategy=strategy.name, initializer=initializer_name, total_s=total, spans=spans)
