"""The words for engram projections and rooflines, shared by the terminal and Markdown reporters.

Results carry the data (fits, intervals, bounds, codes); this module turns it into short phrases.
"""

from __future__ import annotations

from collections.abc import Sequence

from dummyprof.reports.format import GENERATOR_BOUND_WHY
from dummyprof.results.engram import (
    FALLBACK_FLAT,
    FALLBACK_POOR_FIT,
    FITS,
    FOR_MEMORY,
    FOR_TIME,
    PLANNED,
    EngramResult,
    MethodResult,
    SampleGroupInfo,
    TimeProjection,
)
from dummyprof.units import format_bytes, format_seconds


def interval_text(low: float, high: float) -> str:
    return f"{format_seconds(low)}–{format_seconds(high)}"


def projection_how(p: TimeProjection | None, own: str = "") -> str:
    """How a projection was made: line or fallback, R², extrapolation, and the bound when it applied."""
    if p is None:
        return "projected"
    return f"projected ({projection_detail(p, own)})"


def projection_detail(p: TimeProjection, own: str = "") -> str:
    """The words inside :func:`projection_how`'s parentheses."""
    line = p.line
    r2 = f"R² {line.r_squared:.3f}" if line is not None else ""
    if p.fallback and not p.rate_bytes:
        how = f"no growth with size ({r2}): median reading"
    elif p.fallback == FALLBACK_POOR_FIT:
        how = f"{r2} under {p.min_r_squared:g}: rate of the largest sample ({format_bytes(p.rate_bytes)})"
    elif p.fallback == FALLBACK_FLAT:
        how = f"line not rising ({r2}): rate of the largest sample ({format_bytes(p.rate_bytes)})"
    else:
        how = f"line, {r2}, {line.points if line else 0} sizes"
    how += f", x{p.extrapolation:,.0f}"
    if p.bounded and p.ceiling_bytes_per_s:
        whose = "its own fastest sample" if p.ceiling_name == own else f"the {p.ceiling_name} floor"
        how += f", raised to {whose} ({p.ceiling_bytes_per_s / 1e9:.2f} GB/s)"
    elif p.bounded:
        how += ", bounded"
    return how


def dominant_text(m: MethodResult) -> str:
    if not m.startup_dominant or m.startup_dominant_share is None:
        return ""
    return f"{m.startup_dominant} {m.startup_dominant_share:.0%}"


def generator_bound_line(methods: Sequence[MethodResult], floor: str) -> str | None:
    """One line naming the fills that reach under a few percent of the floor, and why."""
    flagged = [m for m in methods if m.generator_bound and m.name != floor]
    if not flagged:
        return None
    shares = ", ".join(
        f"{m.name} {m.percent_of_floor.value:.1f}%" for m in flagged if m.percent_of_floor.value is not None
    )
    return f"{shares} of {floor}: {GENERATOR_BOUND_WHY}"


def sample_group_note(group: SampleGroupInfo, part_rows: int) -> str:
    kind = "memory-bound" if group.memory_bound else "generator-bound"
    rounds = f", {group.rounds} readings each" if group.rounds > 1 else ""
    return (
        f"{kind} methods ({', '.join(group.methods)}) projected from {len(group.rows)} sample sizes of "
        f"{group.rows[0]:,} to {group.rows[-1]:,} rows per table{rounds} "
        f"({part_rows / group.rows[-1]:,.0f}x extrapolation to {part_rows:,} rows)"
    )


PLANNED_REASONS = {
    FITS: "fits: measured in full unless the calibration at start-up says one round exceeds the time budget",
    FOR_MEMORY: "does not fit in memory: will be projected from samples",
}


def reason_text(m: MethodResult) -> str:
    """Why a method was projected, or how a dry run plans it; empty when it was measured."""
    if m.legacy_reason:
        return m.legacy_reason
    if m.mode == PLANNED:
        return PLANNED_REASONS.get(m.reason, m.reason)
    if m.reason == FOR_MEMORY:
        return "does not fit in memory"
    if m.reason == FOR_TIME:
        about = f"about {format_seconds(m.one_fill_s)}" if m.one_fill_s is not None else "longer than that"
        return f"one full-size fill would take {about}, over the time budget"
    return m.reason  # a code this version does not know (a newer file): shown as it is


def plan_notes(result: EngramResult) -> list[str]:
    """What the plan changed, and the backing's own note when the backing asked for was the one used."""
    notes = list(result.legacy_plan_notes)
    if result.huge_pages_from_sample:
        notes.append("huge-page bytes were read back on the largest sample, not the full table")
    cut = result.rounds_cut
    if cut is not None:
        notes.append(
            f"measured {cut.rounds} of {cut.repeat} rounds at full size for {', '.join(cut.methods)}: one round "
            f"takes about {format_seconds(cut.round_s)} and the time budget is {format_seconds(cut.time_budget_s)}"
        )
    backing = result.backing
    if backing.note and backing.used == backing.requested and not result.dry_run and backing.note not in notes:
        notes.append(backing.note)  # a different backing's note is a notice of the run instead
    return notes
