"""Scenario commands the gate can run: where each one's options and ``run`` live, and its metrics.

Modules are named, not imported, so reading a config stays light until a
scenario actually runs. To gate a new scenario, add one ``register_command``.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dummyprof.gate.metrics import Extractor, MetricSpec, Namer, compare_metric_names, compare_metrics
from dummyprof.results.session import Results


@dataclass(frozen=True)
class CommandSpec:
    name: str
    module: str  # has the options dataclass and ``run(options, *, progress=...) -> Results``
    options_class: str
    extract: Extractor
    metric_names: Namer
    # Options that change how long or how often we measure, not what is measured.
    not_in_fingerprint: frozenset[str] = frozenset()
    # Checks options that can be checked without measuring; raises UsageError.
    validate: Callable[[Any], None] | None = None

    def _module(self) -> Any:
        return importlib.import_module(self.module)

    def options_type(self) -> type:
        cls = getattr(self._module(), self.options_class)
        assert dataclasses.is_dataclass(cls) and isinstance(cls, type)
        return cls

    def run(self, options: Any, *, progress: Callable[[int, int, str], None] | None = None) -> Results:
        result: Results = self._module().run(options, progress=progress)
        return result

    def metrics_for(self, options: Any) -> dict[str, MetricSpec]:
        return self.metric_names(options)


def _validate_compare(options: Any) -> None:
    from dummyprof.loaders.strategies import get_strategy

    for name in options.strategies:
        get_strategy(name, flag="strategies")
    if options.initializer is not None:
        from dummyprof.loaders.initializers import get_initializer

        get_initializer(options.initializer)


COMMANDS: dict[str, CommandSpec] = {}


def register_command(spec: CommandSpec) -> CommandSpec:
    COMMANDS[spec.name] = spec
    return spec


register_command(
    CommandSpec(
        name="compare",
        module="dummyprof.scenarios.compare.run",
        options_class="CompareOptions",
        extract=compare_metrics,
        metric_names=compare_metric_names,
        not_in_fingerprint=frozenset({"repeat", "warmup", "max_memory", "device"}),
        validate=_validate_compare,
    )
)


def _engram() -> CommandSpec:
    from dummyprof.gate.engram_metrics import engram_metric_names, engram_metrics, validate_engram

    return CommandSpec(
        name="engram",
        module="dummyprof.scenarios.engram.run",
        options_class="EngramOptions",
        extract=engram_metrics,
        metric_names=engram_metric_names,
        not_in_fingerprint=frozenset({"repeat", "max_memory", "time_budget_s", "deadline_s", "device"}),
        validate=validate_engram,
    )


register_command(_engram())
