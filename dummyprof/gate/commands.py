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
    module: str  # has ``run(options, *, progress=...) -> Results``
    options_class: str
    extract: Extractor
    metric_names: Namer
    # Options that change how long or how often we measure, not what is measured.
    not_in_fingerprint: frozenset[str] = frozenset()
    # Has the options dataclass and, if it can check them, ``validate(options)``: the same check the
    # CLI and the Python API run. Default: ``module``.
    options_module: str | None = None

    def _module(self) -> Any:
        return importlib.import_module(self.module)

    def _options_module(self) -> Any:
        return importlib.import_module(self.options_module or self.module)

    def options_type(self) -> type:
        cls = getattr(self._options_module(), self.options_class)
        assert dataclasses.is_dataclass(cls) and isinstance(cls, type)
        return cls

    def validate(self, options: Any) -> None:
        """The scenario's own ``validate``, if it has one: checks what can be checked without measuring."""
        check = getattr(self._options_module(), "validate", None)
        if check is not None:
            check(options)

    def run(self, options: Any, *, progress: Callable[[int, int, str], None] | None = None) -> Results:
        if self.name == "compare":
            # A gate compares measurements: a model too big or slow to fill here could not be measured.
            options = dataclasses.replace(options, project=False)
        result: Results = self._module().run(options, progress=progress)
        return result

    def metrics_for(self, options: Any) -> dict[str, MetricSpec]:
        return self.metric_names(options)


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
        not_in_fingerprint=frozenset({"repeat", "warmup", "max_memory", "device", "trace"}),
        options_module="dummyprof.scenarios.compare.options",
    )
)


def _engram() -> CommandSpec:
    from dummyprof.gate.engram_metrics import engram_metric_names, engram_metrics

    return CommandSpec(
        name="engram",
        module="dummyprof.scenarios.engram.run",
        options_class="EngramOptions",
        extract=engram_metrics,
        metric_names=engram_metric_names,
        not_in_fingerprint=frozenset({"repeat", "max_memory", "time_budget_s", "deadline_s", "device"}),
        options_module="dummyprof.scenarios.engram.options",
    )


register_command(_engram())


def _engram_ranks() -> CommandSpec:
    from dummyprof.gate.engram_ranks_metrics import engram_ranks_metric_names, engram_ranks_metrics

    return CommandSpec(
        name="engram-ranks",
        module="dummyprof.scenarios.engram.ranks.run",
        options_class="EngramRanksOptions",
        extract=engram_ranks_metrics,
        metric_names=engram_ranks_metric_names,
        not_in_fingerprint=frozenset(
            {"repeat", "max_memory", "time_budget_s", "deadline_s", "device", "dist_timeout_s"}
        ),
        options_module="dummyprof.scenarios.engram.ranks.options",
    )


register_command(_engram_ranks())


def _sweep() -> CommandSpec:
    from dummyprof.gate.sweep_metrics import sweep_metric_names, sweep_metrics

    return CommandSpec(
        name="sweep",
        module="dummyprof.scenarios.sweep.run",
        options_class="SweepOptions",
        extract=sweep_metrics,
        metric_names=sweep_metric_names,
        not_in_fingerprint=frozenset({"fit_from"}),
        options_module="dummyprof.scenarios.sweep.options",
    )


register_command(_sweep())
