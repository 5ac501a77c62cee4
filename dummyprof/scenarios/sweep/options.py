"""What ``sweep`` takes, and the one check of it that the CLI, the gate and the Python API share."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from dummyprof.errors import UsageError, flag_for
from dummyprof.scenarios.compare.options import SWEEP_REPEAT, CompareOptions
from dummyprof.scenarios.engram.options import EngramOptions

TREE_PARAMETERS = ("depth", "width", "hidden")
ENGRAM_PARAMETER = "rows"
MODEL_ARG_PREFIX = "model-arg:"


@dataclass
class SweepOptions:
    """Plain data (the CI gate builds it from TOML): the parameter, its values, and the swept scenario's options."""

    parameter: str = "depth"  # depth, width, hidden (synthetic tree), rows (engram) or model-arg:NAME
    values: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16])
    fit_from: int | None = None  # smallest value the fits use; default: the middle value
    compare: CompareOptions = field(default_factory=lambda: CompareOptions(repeat=SWEEP_REPEAT))
    engram: EngramOptions | None = None  # the base options of an engram sweep (parameter "rows")

    @property
    def scenario(self) -> str:
        return "engram" if self.parameter == ENGRAM_PARAMETER else "compare"

    @property
    def model_arg(self) -> str | None:
        return self.parameter.removeprefix(MODEL_ARG_PREFIX) if self.parameter.startswith(MODEL_ARG_PREFIX) else None


def validate(options: SweepOptions) -> None:
    """Check the parameter, its values and the largest point's options (and memory) before the first point runs."""
    known = [*TREE_PARAMETERS, ENGRAM_PARAMETER, f"{MODEL_ARG_PREFIX}NAME"]
    if options.parameter not in (*TREE_PARAMETERS, ENGRAM_PARAMETER) and not options.model_arg:
        raise UsageError.for_field(
            "parameter", f"cannot sweep {options.parameter!r}; choose one of: {', '.join(known)}"
        )
    swept = "model_args" if options.model_arg else options.parameter
    values = options.values
    for bad, why in (
        (len(values) < 2, f"a sweep needs at least two values, got {values}; e.g. {flag_for(swept)} 1:16"),
        (any(v < 1 for v in values), f"every value must be at least 1, got {min(values, default=0)}"),
        (len(set(values)) != len(values), f"values repeat: {values}; give each value once"),
        (sorted(values) != list(values), f"values must increase, got {values}"),
    ):
        if bad:
            raise UsageError.for_field(swept, why)
    if options.fit_from is not None and sum(1 for v in values if v >= options.fit_from) < 2:
        raise UsageError.for_field("fit_from", f"leaves fewer than two of {values} to fit; use at most {values[-2]}")
    if options.model_arg and not (options.compare.model or options.compare.preset):
        raise UsageError.for_field("model_args", "a swept model argument needs --model or --preset")
    if options.parameter in TREE_PARAMETERS and (options.compare.model or options.compare.preset):
        raise UsageError.for_field(
            swept, "sizes the synthetic tree; with --model/--preset sweep a --model-arg KEY=RANGE instead"
        )
    if options.scenario == "engram":
        from dummyprof.scenarios.engram.options import validate as validate_engram

        validate_engram(engram_options(options, values[-1]))
    else:
        _check_compare(compare_options(options, values[-1]))


def _check_compare(largest: CompareOptions) -> None:
    """The largest point's flags and memory need, before the first point runs."""
    from dummyprof.measure.device import resolve_device
    from dummyprof.scenarios.compare.options import validate as validate_compare
    from dummyprof.scenarios.model_choice import check_source_fits, chosen_source

    validate_compare(largest)
    device = resolve_device(largest.device)
    check_source_fits(chosen_source(largest), device, largest.max_memory)


def compare_options(options: SweepOptions, value: int) -> CompareOptions:
    """The compare run at one point. Never projected: a sweep fits measured times (too big or too slow is an error)."""
    if options.model_arg:
        changes: dict[str, Any] = {"model_args": {**options.compare.model_args, options.model_arg: value}}
    else:
        changes = {options.parameter: value}
    return dataclasses.replace(options.compare, project=False, **changes)


def engram_options(options: SweepOptions, value: int) -> EngramOptions:
    return dataclasses.replace(options.engram or EngramOptions(), rows=value, dry_run=False)
