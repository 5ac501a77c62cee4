"""Figures the HTML page states in words above its charts because no table block holds them: a deployment's device
bytes per group of ranks and the fill kinds the kinds table leaves out, how each of engram's projections was made, an
audit's count of failing findings, the gate's files, exit code and factor. Every string is escaped by the page."""

from __future__ import annotations

from dummyprof.reports.format import estimate_range
from dummyprof.reports.tables.deployment import rank_groups, ranks_text
from dummyprof.results.common import Estimate
from dummyprof.results.gate import PASS
from dummyprof.results.session import Results
from dummyprof.units import format_bytes, format_seconds

FILL_KINDS = {"float": "unquantized weights", "declared": "declared values"}  # those the kinds table leaves out


def deployment_text(results: Results) -> list[str]:
    """Each group of ranks alike: its device bytes, and the bytes of the fill kinds the kinds table leaves out."""
    result = results.deployment
    assert result is not None
    lines = []
    for group in rank_groups(result):
        r = group[0]
        kinds = [f"{FILL_KINDS[k]} {format_bytes(r.fill_kinds[k])}" for k in FILL_KINDS if r.fill_kinds.get(k)]
        more = f" ({', '.join(kinds)})" if kinds else ""
        lines.append(f"ranks {ranks_text(group, result.tp)}: {format_bytes(r.device_bytes)} on the device{more}.")
    return lines


def engram_text(results: Results) -> list[str]:
    """How each projection was made: its sample sizes and their spread, the fit, how far past the samples it reaches."""
    result = results.engram
    assert result is not None
    lines = []
    for m in result.methods:
        if m.time_fit is None or not m.samples:
            continue
        xs = [s.bytes_written for s in m.samples]
        spread = Estimate.measured([s.time.value or 0.0 for s in m.samples])
        full = m.projection is not None and m.time.value is not None
        interval = f", 95% interval {estimate_range(m.projection.time)}" if full and m.projection else ""
        p = m.projection
        fallback = f"; the line was not used ({p.fallback})" if p and p.fallback else ""
        bound = f"; raised to this run's {p.ceiling_name} bound" if p and p.bounded else ""
        lines.append(
            f"{m.name}: {len(m.samples)} sample sizes up to {format_bytes(max(xs))} "
            f"({format_seconds(spread.low)}–{format_seconds(spread.high)}); fit {m.time_fit.model}, "
            f"R² {m.time_fit.r_squared:.3f}, reaching {m.bytes_written / max(xs):,.1f}x past the largest sample"
            f"{interval}{fallback}{bound}."
        )
    return lines


def audit_text(results: Results) -> list[str]:
    result = results.audit
    assert result is not None
    return [f"{len(result.failing)} failing finding(s), {len(result.findings)} in all."]


def gate_text(results: Results) -> list[str]:
    section = results.gate
    assert section is not None
    compared = [c for c in section.checks if c.baseline is not None and c.current is not None]
    equal = sum(c.verdict == PASS and c.current == c.baseline for c in compared)
    return [
        f"config {section.config_path}; baseline {section.baseline_path or 'none'}; exit code {section.exit_code}; "
        f"{equal} of {len(compared)} checks equal their baselines; a time past x{section.factor:.2f} of its "
        "baseline (and significant) regresses."
    ]


# Per kind, the paragraphs above its charts.
TEXTS = {
    "deployment": deployment_text,
    "engram": engram_text,
    "audit": audit_text,
    "gate": gate_text,
    "baseline": gate_text,
}
