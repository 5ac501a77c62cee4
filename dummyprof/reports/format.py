"""Figures as words, shared by every command's tables: units, short dtypes, projected figures (``~``), why a
figure is unavailable.

Results store a code for an unavailable figure (see results/engram.py); :func:`unavailable_text` says it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from itertools import groupby

from dummyprof.reports.messages import known, say
from dummyprof.results.common import Contention, Estimate, FirstTouch
from dummyprof.results.verdict import Verdict
from dummyprof.units import format_bytes, format_seconds

# Short dtype names for narrow tables (the JSON keeps torch's names).
DTYPE_ABBREVIATIONS = {
    "float64": "f64",
    "float32": "f32",
    "bfloat16": "bf16",
    "float16": "f16",
    "float8_e4m3fn": "fp8e4m3",
    "float8_e4m3fnuz": "fp8e4m3uz",
    "float8_e5m2": "fp8e5m2",
    "float8_e5m2fnuz": "fp8e5m2uz",
    "float8_e8m0fnu": "fp8e8m0",
    "float4_e2m1fn_x2": "fp4x2",
    "uint8": "u8",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "complex64": "c64",
    "complex128": "c128",
}


def short_dtype(name: str) -> str:
    """``float8_e4m3fn`` -> ``fp8e4m3``; names without an abbreviation pass unchanged."""
    return DTYPE_ABBREVIATIONS.get(name.removeprefix("torch."), name.removeprefix("torch."))


def figure_bytes(figure: Estimate) -> str:
    """A byte figure where a row has room for why it is missing: ``unavailable: <why>``."""
    return estimate_cell(figure, format_bytes, why=True)


# The one way an Estimate is drawn, in every medium: its cell, its range, its whisker.
def estimate_cell(e: Estimate | None, unit: Callable[[float], str] = format_seconds, *, why: bool = False) -> str:
    """``1.23 s`` measured, ``~1.23 s`` projected, ``n/a`` when there is none (``why``: ``unavailable: <reason>``
    where the figure has a reason)."""
    if e is None or e.value is None:
        return f"unavailable: {unavailable_text(e.reason)}" if why and e is not None and e.reason else "n/a"
    return projected(unit(e.value), e.is_projected)


def estimate_range(e: Estimate | None) -> str:
    """``1.20 s–1.50 s``: a projection's interval, or the fastest and slowest of two rounds or more; '' without."""
    span = e.span if e is not None else None
    return f"{format_seconds(span[0])}–{format_seconds(span[1])}" if span is not None else ""


def estimate_whisker(e: Estimate | None) -> tuple[float, float]:
    """A chart's error bar as (below, above) the point: the range's distance from the value; (0, 0) without one."""
    span = e.span if e is not None else None
    if e is None or e.value is None or span is None:
        return 0.0, 0.0
    return max(0.0, e.value - span[0]), max(0.0, span[1] - e.value)


def estimate_spread(e: Estimate) -> str:
    """The rounds' coefficient of variation, e.g. '±4%'; 'n/a' under two rounds."""
    return "n/a" if e.cv is None else f"±{100 * e.cv:.0f}%"


def rate(bytes_: int | float, seconds: float | None) -> str:
    if not seconds:
        return "n/a"
    return f"{bytes_ / seconds / 1e9:.2f} GB/s"


def unavailable_text(reason: str) -> str:
    """The words for a code (``CODE:KIND`` names the kind of memory used); anything else (a probe's own message)
    as it is."""
    code, _, kind = reason.partition(":")
    key = f"unavailable.{code}"
    return say(key, kind=kind) if known(key) else reason


# A projected figure (from smaller samples, not measured at full size) is shown as ``~1.23 s``.
PROJECTED_MARK = "~"


def projected(text: str, figure: Estimate | bool) -> str:
    """``~text`` for a projected figure (or where ``figure`` is True), ``text`` for a measured one."""
    return f"{PROJECTED_MARK}{text}" if (figure if isinstance(figure, bool) else figure.is_projected) else text


def projected_note(figures: Iterable[Estimate | None]) -> list[str]:
    """The note that explains ``~``, for a table where some figure carries it."""
    return [say("fill.projected-mark")] if any(f is not None and f.is_projected for f in figures) else []


def same_unavailable(figures: list[Estimate]) -> str | None:
    """The shared reason when a figure is unavailable for every row, else None."""
    reasons = {f.reason for f in figures}
    if figures and all(f.value is None for f in figures) and len(reasons) == 1:
        return unavailable_text(next(iter(reasons)) or "unavailable")
    return None


def rank_ranges(ranks: list[int]) -> str:
    """``0-3,6`` for ranks 0, 1, 2, 3 and 6: short, and one word (it never wraps)."""
    runs = [[r for _, r in run] for _, run in groupby(enumerate(sorted(ranks)), lambda pair: pair[1] - pair[0])]
    return ",".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def contended_mark(*readings: Contention | None) -> str:
    """'; CONTENDED', which ends a -q line whose times were taken on a busy machine, whatever it gives way; else ''."""
    return "; CONTENDED" if any(c is not None and c.contended for c in readings) else ""


def fresh_text(budget_s: float | None, covered: str = "") -> str:
    """A first-touch probe stopped by the budget before it covered every page the fill first-touches (``covered``:
    what that budget probes, where not all of them)."""
    if budget_s is None:
        return ""
    return say("fill.first-touch-short", budget=math.ceil(budget_s), covered=covered or say("fill.first-touch-all"))


PAGE = 4096  # the page size the first-touch cost is quoted per


def first_touch_text(pages: FirstTouch | None) -> str:
    """The probe of fresh pages, in a clause: how much it covered and what a page's first write cost."""
    if pages is None or not pages.fresh_s:
        return ""
    costs = [c / (pages.chunk_bytes / PAGE) * 1e6 for c in pages.chunk_costs()]
    needed = format_bytes(pages.needed_bytes)
    covered = (
        f"all {needed}"
        if pages.sampled_bytes >= pages.needed_bytes
        else f"{format_bytes(pages.sampled_bytes)} of {needed}"
    )
    return f"first touch {min(costs):.1f}-{max(costs):.1f} µs per 4 KiB page (fresh pages, {covered} probed)"


def first_touch_notice(pages: FirstTouch) -> str:
    """What a first-touch probe cut short leaves out of a projection, and the budget that covers it."""
    if pages.binding == "time":
        covered = ""
        if pages.room_bytes is not None and pages.needed_bytes > pages.room_bytes:
            room, needed = format_bytes(pages.room_bytes), format_bytes(pages.needed_bytes)
            covered = say("fill.first-touch-room", room=room, needed=needed)
        return fresh_text(pages.budget_s, covered)
    if pages.binding != "memory" or pages.fresh_s:  # a memory-bound sample: the calibration line says how much
        return ""
    memory = format_bytes(2 * pages.chunk_bytes)  # the probe's room is half of --max-memory: one chunk in it
    return say("fill.first-touch-no-room", needed=format_bytes(pages.needed_bytes), memory=memory)


def contention_text(c: Contention | None, what: str) -> str:
    """The machine's business while ``what`` ran, one line; '' for a file that has no reading.

    A contended reading says so in capitals with its reason codes: its times are slower than this machine
    can do and another run will not reproduce them.
    """
    if c is None:
        return ""
    figures = contention_figures(c)
    if not c.contended:
        return say("contention.quiet", what=what, figures=figures)
    why = "; ".join(f"{code}: {say('contention.' + code)}" for code in c.reasons)
    return say("contention.contended", what=what, figures=figures, why=why)


def contention_figures(c: Contention) -> str:
    """What was read of the machine's business: 'CPU pressure 99%, steal 0%, this process 0.22 of 2 CPUs'."""
    parts = []
    if c.pressure is not None:
        parts.append(f"CPU pressure {c.pressure:.0%}")
    elif c.load_per_core is not None:
        parts.append(f"load {c.load_per_core:.2f} per core")
    if c.steal is not None:
        parts.append(f"steal {c.steal:.0%}")
    if c.process_cpu_share is not None:
        parts.append(f"this process {c.process_cpu_share:.2f} of {c.cores} CPUs")
    return ", ".join(parts)


def verdict_text(v: Verdict, ends: tuple[float, float], limit: str, show: Callable[[float], str]) -> str:
    """A verdict against ``limit`` (its words, e.g. '600 s deadline') on the interval ``ends`` (low, high), written
    by ``show``:
    met with the room left at the interval's high end (the least there is), missed by the gap at its low end (the
    least it misses by), uncertain with both ends, or no verdict on a contended machine.
    """
    low, high = ends
    fields = {"spare": show(v.limit - high), "gap": show(low - v.limit), "low": show(low), "high": show(high)}
    return say(f"verdict.{v.code}", limit=limit, **fields) if known(f"verdict.{v.code}") else f"{limit}: {v.code}"


def no_verdict_text(limit: str, c: Contention | None) -> str:
    """Why a contended run gives no verdict against ``limit``, what was read, and what to do."""
    read = f" ({contention_figures(c)})" if c is not None else ""
    return say("contention.no-verdict", limit=limit, read=read)
