"""#17.7 (wave 2): engram's %memset is of the floor's fastest round; a fill faster than that is flagged, never >100%."""

from __future__ import annotations

import json

from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.common import Estimate
from dummyprof.results.engram import FASTER_THAN_FLOOR, MEASURED, EngramResult, MethodResult
from dummyprof.results.session import Results
from dummyprof.scenarios.engram.runner import derive

GB = 10**9


def _result() -> EngramResult:
    # The floor's rounds: one quiet (1 s) and two preempted (2 s): its median says 1 GB/s, its best 2 GB/s.
    floor = MethodResult(name="memset", mode=MEASURED, bytes_written=2 * GB, time=Estimate.measured([2.0, 1.0, 2.0]))
    steady = MethodResult(name="constant", mode=MEASURED, bytes_written=2 * GB, time=Estimate.measured([1.5, 1.5, 1.5]))
    faster = MethodResult(name="odd", mode=MEASURED, bytes_written=2 * GB, time=Estimate.measured([0.5, 0.5, 0.5]))
    result = EngramResult(methods=[floor, steady, faster])
    derive(result)
    return result


def test_share_is_of_the_fastest_floor_round() -> None:
    result = _result()
    # 2 GB in 1.5 s against the floor's best 2 GB in 1 s: 66.7% (of the floor's median it read 133%)
    assert result.method("constant").percent_of_floor.value == 100 * (2 / 1.5) / 2
    assert result.method("memset").percent_of_floor.value == 50.0  # its median round against its best


def test_a_fill_faster_than_the_floor_is_flagged_in_results_and_every_report() -> None:
    result = _result()
    flagged = result.method("odd").percent_of_floor
    assert (flagged.value, flagged.reason) == (None, FASTER_THAN_FLOOR)
    results = Results(command="engram", engram=result)
    terminal = render(results, "terminal", RenderOptions(width=200))
    assert "over!" in terminal and "measured faster than this run's fastest memset floor" in terminal
    assert "400%" not in terminal and "400.0%" not in terminal
    markdown = render(results, "markdown", RenderOptions())
    assert "over!" in markdown and "fastest memset floor" in markdown
    assert "400%" not in markdown
    saved = json.loads(render(results, "json", RenderOptions()))
    odd = next(m for m in saved["engram"]["methods"] if m["name"] == "odd")
    assert (odd["percent_of_floor"]["value"], odd["percent_of_floor"]["how"]) == (None, "unavailable")
    assert odd["percent_of_floor"]["reason"] == FASTER_THAN_FLOOR
