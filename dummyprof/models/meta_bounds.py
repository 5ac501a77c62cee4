"""Bounds on building a model on the meta device: it costs no tensor bytes, but every module is a Python object.

A config with 10^9 layers builds for hours on meta and fills memory with module objects. Every
module, parameter and buffer registered during a bounded build passes torch's global registration
hooks, so the build stops, from inside, once it has made more objects than memory holds or run past
its time: :class:`BuildStopped` says how far it got.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from torch.nn.modules import module as torch_module

from dummyprof.errors import DoesNotFitError

Clock = Callable[[], float]

# Python memory of one module or tensor built on meta (measured: about 2 KiB for Llama's layers, with the
# copies a run makes of the meta model, twice that); what turns host memory into a most-objects bound.
BYTES_PER_META_OBJECT = 4096
STOP_TIME = "time"
STOP_OBJECTS = "objects"


@dataclass(frozen=True)
class BuildLimits:
    """How long a meta build may take and how many modules plus tensors it may make (None: unbounded)."""

    seconds: float | None = None
    max_objects: int | None = None
    time_field: str = ""  # the options field that set ``seconds`` (``time_budget``), '' for a default
    clock: Clock = time.perf_counter
    # The whole seconds of ``time_field`` that give a build this many seconds, with an offer's margin (the build has
    # a share of that budget); None where ``seconds`` is no share of a budget.
    budget_for: Callable[[float], int] | None = None

    def past_time(self, flag: str, got: str, fix: str, needed_s: float | None = None) -> DoesNotFitError:
        """``got`` (ending "past" or "over") went beyond ``seconds``: names the time budget when it set them, and the
        budget that holds ``needed_s`` (the build's predicted seconds) where there is a prediction."""
        budget = "its share of the time budget" if self.time_field else "the limit for building on meta"
        more = ""
        if self.time_field and self.budget_for is not None and needed_s is not None:
            more = f" or give --time-budget {self.budget_for(needed_s)}s"
        elif self.time_field and needed_s is None:
            more = "; how long the whole build takes is not predicted, so no --time-budget can be promised"
        message = f"{got} {budget} ({self.seconds or 0:.0f} s); {fix}{more}"
        return DoesNotFitError(None if self.time_field else flag, message, field=self.time_field or None)

    def too_many_objects(self, flag: str, got: str, fix: str) -> DoesNotFitError:
        """``got`` makes more modules and tensors than ``max_objects``."""
        held = f"more than the {self.max_objects or 0:,} this machine's memory holds as Python objects"
        return DoesNotFitError(flag, f"{got}, {held}; {fix}")


class BuildStopped(Exception):
    """A bounded build ran past a limit: why (time | objects), and how far it got."""

    def __init__(self, reason: str, objects: int, seconds: float) -> None:
        super().__init__(f"stopped on {reason} after {objects:,} objects in {seconds:.1f} s")
        self.reason = reason
        self.objects = objects
        self.seconds = seconds


@contextmanager
def bounded_build(limits: BuildLimits | None) -> Iterator[None]:
    """Count every module, parameter and buffer registered inside; raise BuildStopped past a limit."""
    if limits is None or (limits.seconds is None and limits.max_objects is None):
        yield
        return
    clock = limits.clock
    start = clock()
    made = 0

    def check(*_args: Any) -> None:
        nonlocal made
        made += 1
        if limits.max_objects is not None and made > limits.max_objects:
            raise BuildStopped(STOP_OBJECTS, made, clock() - start)
        if limits.seconds is not None and made % 64 == 0 and clock() - start > limits.seconds:
            raise BuildStopped(STOP_TIME, made, clock() - start)

    handles = [
        torch_module.register_module_module_registration_hook(check),
        torch_module.register_module_parameter_registration_hook(check),
        torch_module.register_module_buffer_registration_hook(check),
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def within(limits: BuildLimits | None, *, flag: str, what: str, fix: str = "") -> Iterator[None]:
    """A bounded build whose stop is one line: what was being built, how far it got, which limit stopped it
    and what to change (``fix``)."""
    try:
        with bounded_build(limits):
            yield
    except BuildStopped as stop:
        assert limits is not None
        got = (
            f"{what}: building it on meta stopped after {stop.seconds:.1f} s with {stop.objects:,} modules and tensors"
        )
        fix = fix or "build a smaller model (fewer layers or experts in --model-arg)"
        if stop.reason == STOP_TIME:
            raise limits.past_time(flag, f"{got}, past", fix) from None
        raise limits.too_many_objects(flag, got, fix) from None
