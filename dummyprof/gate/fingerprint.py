"""Fingerprints: which measurements of a scenario may be compared (counters on any machine, timings on one)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import msgspec

from dummyprof.results.common import Environment
from dummyprof.results.gate import Fingerprint
from dummyprof.shapes import AUTO_DTYPE, TREE_DTYPE

# Counters compare torch releases only: a +cpu or +cu128 build walks modules the same way.
COUNTER_FIELDS = ("command", "options", "torch_release")
# Copied from the run's Environment: timings compare only on the same machine and torch build.
MACHINE_FIELDS = ("torch_version", "device", "cpu_model", "torch_threads")
TIMING_FIELDS = ("command", "options", *MACHINE_FIELDS)


def make_fingerprint(
    scenario: str, command: str, options: Any, environment: Environment, *, ignore: Iterable[str] = ()
) -> Fingerprint:
    """``options``: the scenario's options dataclass (or its fields as a dict); ``ignore``: fields left out."""
    skipped = set(ignore)
    flags = _as_built({k: v for k, v in msgspec.to_builtins(options).items() if k not in skipped})
    machine = {name: getattr(environment, name) for name in MACHINE_FIELDS}
    return Fingerprint(scenario=scenario, command=command, options=flags, **machine)


def _as_built(flags: dict[str, Any]) -> dict[str, Any]:
    """``dtype`` auto as what it builds where that is known beforehand: float32 for all but an hf: model (whose
    config decides), so a run at the default compares with one that named float32 (baselines before auto)."""
    model = flags.get("model")
    if flags.get("dtype") == AUTO_DTYPE and not (isinstance(model, str) and model.startswith("hf:")):
        flags["dtype"] = TREE_DTYPE
    return {k: _as_built(v) if isinstance(v, dict) and "dtype" in v else v for k, v in flags.items()}


def option_defaults(options_type: type) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(options_type):
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = msgspec.to_builtins(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = msgspec.to_builtins(f.default_factory())
    return _as_built(defaults)


_UNSET = object()


def _shown(value: Any) -> str:
    return "not set" if value is _UNSET else repr(value)


def differences(
    current: Fingerprint, baseline: Fingerprint, fields: Iterable[str], *, defaults: dict[str, Any] | None = None
) -> list[str]:
    """What differs (``cpu_model: AMD EPYC (baseline: Intel Xeon)``); an option one side lacks counts as its
    default, so a baseline from before an option existed stays comparable while it is left at that."""
    found: list[str] = []
    fallback = defaults or {}
    for name in fields:
        now, then = getattr(current, name), getattr(baseline, name)
        if name == "options":
            for key in sorted(set(now) | set(then)):
                here = now.get(key, fallback.get(key, _UNSET))
                there = then.get(key, fallback.get(key, _UNSET))
                if here != there:
                    found.append(f"{key}: {_shown(here)} (baseline: {_shown(there)})")
        elif now != then:
            found.append(f"{name}: {now!r} (baseline: {then!r})")
    return found
