"""Scenario commands the gate can run: where each one's options and ``run`` live (named, imported only when it
runs), and its metrics. A new scenario is a row in ``_BUILTIN``; code outside the package calls ``register_command``."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dummyprof.gate.metrics import (
    Extractor,
    Namer,
    compare_metric_names,
    compare_metrics,
    engram_metric_names,
    engram_metrics,
    engram_ranks_metric_names,
    engram_ranks_metrics,
    sweep_metric_names,
    sweep_metrics,
)
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

    def _options_module(self) -> Any:
        return importlib.import_module(self.options_module or self.module)

    def options_type(self) -> type:
        cls = getattr(self._options_module(), self.options_class)
        assert dataclasses.is_dataclass(cls) and isinstance(cls, type)
        return cls

    def validate(self, options: Any) -> None:
        check = getattr(self._options_module(), "validate", None)
        if check is not None:
            check(options)

    def run(self, options: Any, *, progress: Callable[[int, int, str], None] | None = None) -> Results:
        if self.name == "compare":
            # A gate compares measurements: a model too big or slow to fill here could not be measured.
            options = dataclasses.replace(options, project=False)
        result: Results = importlib.import_module(self.module).run(options, progress=progress)
        return result


COMMANDS: dict[str, CommandSpec] = {}


def register_command(spec: CommandSpec) -> CommandSpec:
    COMMANDS[spec.name] = spec
    return spec


_COMPARE_TIMING = "repeat warmup max_memory device trace"
_ENGRAM_TIMING = "repeat max_memory time_budget_s deadline_s device"
_RANKS_TIMING = f"{_ENGRAM_TIMING} dist_timeout_s"
_RANKS_METRICS = (engram_ranks_metrics, engram_ranks_metric_names)

# name, package under dummyprof.scenarios (its ``run.py`` and ``options.py``), options class, its
# metrics and their names, the options left out of the fingerprint.
_BUILTIN: list[tuple[str, str, str, Extractor, Namer, str]] = [
    ("compare", "compare", "CompareOptions", compare_metrics, compare_metric_names, _COMPARE_TIMING),
    ("engram", "engram", "EngramOptions", engram_metrics, engram_metric_names, _ENGRAM_TIMING),
    ("engram-ranks", "engram.ranks", "EngramRanksOptions", *_RANKS_METRICS, _RANKS_TIMING),
    ("sweep", "sweep", "SweepOptions", sweep_metrics, sweep_metric_names, "fit_from"),
]
for _name, _package, _options, _extract, _names, _unfingerprinted in _BUILTIN:
    register_command(
        CommandSpec(
            _name,
            f"dummyprof.scenarios.{_package}.run",
            _options,
            _extract,
            _names,
            frozenset(_unfingerprinted.split()),
            f"dummyprof.scenarios.{_package}.options",
        )
    )
