"""Words for the noise codes in Results (``measure/noise.py``), shared by the terminal and Markdown reporters."""

from __future__ import annotations

from dummyprof.results.common import NoiseWarning, Timing
from dummyprof.results.compare import CompareResult

NOTHING_TO_FILL = (
    "speedup: n/a: nothing was filled (the model has no tensor with bytes to write), so each time is only the "
    "walk's overhead and a ratio of them says nothing about filling"
)


def spread_cell(timing: Timing) -> str:
    """The coefficient of variation, e.g. '±4%'; 'n/a' under two samples."""
    cv = timing.cv
    return "n/a" if cv is None else f"±{100 * cv:.0f}%"


def speedup_cell(result: CompareResult, name: str) -> str:
    speedup = result.speedup(name)
    return "n/a" if speedup is None else f"{speedup:.2f}x"


def interval_cell(result: CompareResult, name: str) -> str:
    """The speedup's 95% bootstrap interval, e.g. '2.1–3.4x'; '' for the baseline, 'n/a' when unknown."""
    if name == result.baseline_strategy:
        return ""
    interval = result.strategy(name).speedup_interval
    if len(interval) != 2:
        return "n/a"
    return f"{interval[0]:.2f}–{interval[1]:.2f}x"


def noise_line(warning: NoiseWarning, baseline: str) -> str:
    """hyperfine's warnings, adapted: what was seen and what to do about it."""
    if warning.code == "first-round-slow":
        times = f" ({warning.value:.1f}x its median)" if warning.value else ""
        return (
            f"warning: {warning.subject}: the first measured round was significantly slower than the rest{times}: "
            "a cold start (caches, page faults, lazy initialization) that warm-up did not absorb; "
            "raise --warmup"
        )
    if warning.code == "statistical-outliers":
        moved = f"; with them the median is {warning.value:.2f}x the median without" if warning.value else ""
        return (
            f"warning: {warning.subject}: statistical outliers were detected ({warning.count} outside 1.5 IQR of "
            f"the quartiles{moved}); consider re-running on a quiet machine without other programs competing"
        )
    if warning.code == "speedup-uncertain":
        return (
            f"warning: {warning.subject}: the speedup vs {baseline} is uncertain: its 95% interval "
            f"{warning.low:.2f}–{warning.high:.2f}x includes 1.0 (no difference); raise --repeat or quiet the machine"
        )
    if warning.code == "faster-than-floor":
        share = f" ({100 * warning.value:.0f}% of it)" if warning.value else ""
        return (
            f"warning: {warning.subject}: filled faster than the memset floor measured in this run{share}, which "
            "no fill can: the floor's readings were slowed (contention), so its %memset is not shown; rerun quiet"
        )
    return f"warning: {warning.subject}: {warning.code}"


def noise_lines(result: CompareResult) -> list[str]:
    lines = [noise_line(w, result.baseline_strategy) for w in result.noise]
    if result.nothing_to_fill:
        lines.append(NOTHING_TO_FILL)
    return lines
