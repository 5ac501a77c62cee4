"""One Estimate for every time: no other record carries a time's own samples or range, and one set of
renderers draws it (cell, range, whisker) in every medium."""

from __future__ import annotations

import importlib
import pkgutil
import types
import typing

import msgspec
import pytest

import dummyprof.results
from dummyprof.reports.format import estimate_cell, estimate_range, estimate_whisker, figure_bytes, projected_note
from dummyprof.results.common import MEASURED, PROJECTED, UNAVAILABLE, Estimate
from dummyprof.units import format_bytes

# A range that is not a time's: these stay on their records.
NOT_A_TIME = {
    ("NoiseWarning", "low"): "a speedup's bootstrap interval (a ratio)",
    ("NoiseWarning", "high"): "a speedup's bootstrap interval (a ratio)",
    ("StrategyResult", "speedup_interval"): "a speedup's bootstrap interval (a ratio)",
    ("GrowthFit", "ci_low"): "a growth exponent's interval",
    ("GrowthFit", "ci_high"): "a growth exponent's interval",
    ("FirstTouch", "fresh_s"): "one reading per chunk, in the order the pages came: a series over memory, not rounds",
    ("FirstTouch", "touched_s"): "one reading per chunk, in the order the pages came: a series over memory, not rounds",
}
RANGE_ENDS = ("samples", "readings", "low", "high", "floor")


def _records() -> list[type[msgspec.Struct]]:
    found: dict[str, type[msgspec.Struct]] = {}
    for info in pkgutil.iter_modules(dummyprof.results.__path__):
        module = importlib.import_module(f"dummyprof.results.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, msgspec.Struct) and obj.__module__ == module.__name__:
                found[f"{module.__name__}.{obj.__name__}"] = obj
    return list(found.values())


def _floats(hint: object) -> bool:
    return hint is float or (
        typing.get_origin(hint) in (typing.Union, types.UnionType) and float in typing.get_args(hint)
    )


def _own_range(record: type[msgspec.Struct], name: str) -> bool:
    """A field that holds a time's rounds or one end of its range: a list of floats (``samples_s``), a number named
    for an end (``low``, ``high_s``, ``floor_s``, ``startup_low``), or a record of its own low and high
    (an ``Interval``)."""
    hint = typing.get_type_hints(record, include_extras=True)[name]
    if typing.get_origin(hint) is list and typing.get_args(hint) and typing.get_args(hint)[0] is float:
        return True
    if _floats(hint) and name.removesuffix("_s").split("_")[-1] in RANGE_ENDS:
        return True
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    inner = [t for t in (hint, *(typing.get_args(hint) if union else ())) if isinstance(t, type)]
    inner = [t for t in inner if issubclass(t, msgspec.Struct)]
    return any(t is not Estimate and {"low", "high"} <= set(t.__struct_fields__) for t in inner)


def test_no_results_record_but_estimate_declares_a_times_samples_or_range() -> None:
    records = _records()
    assert Estimate in records and len(records) > 40  # the scan sees every record
    offenders = [
        f"{r.__name__}.{name}"
        for r in records
        if r is not Estimate
        for name in r.__struct_fields__
        if _own_range(r, name) and (r.__name__, name) not in NOT_A_TIME
    ]
    assert offenders == []
    assert {"samples", "low", "high", "floor"} <= set(Estimate.__struct_fields__)


class _Interval(msgspec.Struct):
    low: float = 0.0
    high: float = 0.0


class _Timed(msgspec.Struct):  # a time with its own rounds and range: what the scan must catch
    seconds: float = 0.0
    samples_s: list[float] = []
    low_s: float = 0.0
    floor_s: float | None = None
    startup_interval: _Interval | None = None
    time: Estimate | None = None
    floor_bound: bool = False
    warnings: list[_Interval] = []


def test_the_scan_would_see_a_time_with_its_own_range() -> None:
    found = [n for n in _Timed.__struct_fields__ if _own_range(_Timed, n)]
    assert found == ["samples_s", "low_s", "floor_s", "startup_interval"]


def test_measured_projected_and_missing() -> None:
    measured = Estimate.measured([3.0, 1.0, 2.0], device="cpu")
    assert (measured.value, measured.low, measured.high, measured.how) == (2.0, 1.0, 3.0, MEASURED)
    assert measured.span == (1.0, 3.0) and measured.cv == pytest.approx(0.5)
    one = Estimate.measured([2.0])
    assert one.span is None and one.cv is None  # one round: no range to draw
    one.add(4.0)
    assert (one.value, one.low, one.high, one.samples) == (3.0, 2.0, 4.0, [2.0, 4.0])
    projected = Estimate.projected(5.0, 4.0, 7.0, floor=4.0)
    assert projected.is_projected and projected.span == (4.0, 7.0) and projected.how == PROJECTED
    missing = Estimate.missing("dry-run")
    assert (missing.value, missing.how, missing.reason, missing.available) == (None, UNAVAILABLE, "dry-run", False)
    assert Estimate.measured([]).value is None


def test_one_cell_range_and_whisker_for_every_estimate() -> None:
    measured = Estimate.measured([0.5, 1.0, 2.0])
    projected = Estimate.projected(1.5, 1.0, 3.0)
    assert (estimate_cell(measured), estimate_range(measured)) == ("1.00 s", "500.0 ms–2.00 s")
    assert (estimate_cell(projected), estimate_range(projected)) == ("~1.50 s", "1.00 s–3.00 s")
    assert (estimate_cell(Estimate.missing("x")), estimate_range(Estimate.missing("x"))) == ("n/a", "")
    assert (estimate_cell(None), estimate_range(None), estimate_whisker(None)) == ("n/a", "", (0.0, 0.0))
    assert estimate_whisker(measured) == (0.5, 1.0) and estimate_whisker(projected) == (0.5, 1.5)
    assert estimate_whisker(Estimate.measured([1.0])) == (0.0, 0.0)
    assert estimate_cell(Estimate.projected(2048.0), format_bytes) == "~2.00 KiB"
    # a byte figure with room for why: the same cell, its reason said where it is missing
    assert figure_bytes(Estimate.projected(2048.0)) == "~2.00 KiB" and figure_bytes(Estimate(None)) == "n/a"
    assert figure_bytes(Estimate.missing("dry-run")) == "unavailable: dry run: nothing allocated"
    assert projected_note([measured]) == [] and projected_note([measured, projected, None]) != []
