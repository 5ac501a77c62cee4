"""Cell formatting shared by the gate's terminal, Markdown and JUnit reports."""

from __future__ import annotations

from dummyprof.results.gate import CheckResult
from dummyprof.units import format_seconds


def value_text(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "s":
        return format_seconds(value)
    if unit == "bytes":
        return f"{value:,.0f} B"  # exact: a counter check compares to the byte
    if unit == "x":
        return f"{value:.3f}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


def change_text(check: CheckResult) -> str:
    if check.baseline is None or check.current is None:
        return ""
    if check.kind in ("counter", "limit") and check.unit != "s":
        delta = check.current - check.baseline
        return "=" if delta == 0 else f"{delta:+,.0f}"
    return f"x{check.change:.2f}" if check.change is not None else ""
