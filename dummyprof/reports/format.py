"""Formatting of figures shared by the terminal and Markdown reporters."""

from __future__ import annotations

from dummyprof.results.common import Figure, Timing
from dummyprof.units import format_bytes, format_seconds

__all__ = ["GENERATOR_BOUND_WHY", "figure_bytes", "format_bytes", "format_seconds", "rate", "timing_cell"]


# Why a fill far under the memset floor is slow (the roofline line of compare and engram).
GENERATOR_BOUND_WHY = (
    "bound by the random generator, not by memory: on CPU, torch's uniform_ draws on one thread behind the "
    "generator's lock (and fp8 goes through an fp16 temporary), whatever the memory system could take"
)


def figure_bytes(figure: Figure) -> str:
    if figure.value is None:
        return f"unavailable: {figure.unavailable}" if figure.unavailable else "unavailable"
    text = format_bytes(figure.value)
    return f"{text} (projected)" if figure.projected else text


def timing_cell(timing: Timing) -> str:
    if not timing.samples_s:
        return "n/a"
    if len(timing.samples_s) == 1:
        return format_seconds(timing.median)
    return f"{format_seconds(timing.median)} [{format_seconds(timing.min)}–{format_seconds(timing.max)}]"


def rate(bytes_: int | float, seconds: float | None) -> str:
    if not seconds:
        return "n/a"
    return f"{bytes_ / seconds / 1e9:.2f} GB/s"
