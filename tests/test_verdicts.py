"""Verdicts against a limit are judged on the interval, by one rule (``results/verdict.py``), for every command."""

from __future__ import annotations

import pytest

from dummyprof.reports.format import verdict_text
from dummyprof.reports.kinds import summary_line
from dummyprof.reports.kinds.engram import deadline_text
from dummyprof.reports.messages import say
from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.common import Contention, Estimate
from dummyprof.results.engram import Budget, EngramResult, MethodResult, PhaseResult
from dummyprof.results.session import Results
from dummyprof.results.verdict import CONTENDED, MET, MISSED, UNCERTAIN, Verdict, fits, judge
from dummyprof.scenarios.engram.runner import derive
from dummyprof.units import format_seconds

BUSY = Contention(wall_s=60, cores=2, pressure=0.99, steal=0.0, process_cpu_share=0.22, reasons=["cpu-pressure"])
HEAD = "recommended constant: "
QUIET = Contention(wall_s=60, cores=2, pressure=0.0, steal=0.0, process_cpu_share=1.9)


@pytest.mark.parametrize(
    ("low", "high", "code"),
    [
        (397.0, 600.0, MET),  # the high end on the deadline: within it
        (397.0, 481.0, MET),
        (600.0, 600.0, MET),
        (600.5, 1120.0, MISSED),  # the low end past it
        (397.0, 1120.0, UNCERTAIN),  # the run's own interval holds the deadline: "~469 s" alone would say met
        (599.0, 600.5, UNCERTAIN),
    ],
)
def test_a_verdict_is_judged_on_the_interval(low: float, high: float, code: str) -> None:
    assert judge(low, high, 600.0) == Verdict(code, 600.0)


@pytest.mark.parametrize(("low", "high"), [(100.0, 200.0), (700.0, 800.0), (500.0, 700.0)])
def test_a_contended_run_gets_no_verdict_whatever_its_interval(low: float, high: float) -> None:
    assert judge(low, high, 600.0, contended=True) == Verdict(CONTENDED, 600.0)


def test_an_interval_upside_down_is_a_bug_not_a_verdict() -> None:
    with pytest.raises(ValueError, match=r"low end 2\.0 is above its high end 1\.0"):
        judge(2.0, 1.0, 600.0)


def test_a_byte_count_fits_a_memory_to_the_byte() -> None:
    gib = 2**30
    assert fits(141 * gib, 141 * gib) and not fits(141 * gib + 1, 141 * gib)
    assert judge(80 * gib, 80 * gib, 141 * gib).code == MET and judge(142 * gib, 142 * gib, 141 * gib).code == MISSED


@pytest.mark.parametrize(
    ("verdict", "ends", "long", "short"),
    [
        (Verdict(MET, 600.0), (397.0, 481.0), "600 s deadline met, 119 s to spare", "met"),
        (Verdict(MISSED, 600.0), (742.0, 1120.0), "600 s deadline missed by 142 s", "missed"),
        (Verdict(UNCERTAIN, 600.0), (397.0, 1120.0), "600 s deadline uncertain: 397 s to 1120 s", "uncertain"),
        (Verdict(CONTENDED, 600.0), (397.0, 1120.0), "600 s deadline: no verdict", "no verdict"),
    ],
)
def test_the_words_of_each_verdict(verdict: Verdict, ends: tuple[float, float], long: str, short: str) -> None:
    """Met: the room left at the interval's high end; missed: the gap at its low end; uncertain: both ends."""
    assert verdict_text(verdict, ends, "600 s deadline", format_seconds) == long
    assert say(f"short.{verdict.code}") == short


def _engram(fill_s: list[float], deadline: float, contention: Contention | None = QUIET) -> Results:
    """One method measured over ``fill_s`` rounds after 1 s of allocation and 2 s of first touch, and the floor."""
    phases = [
        PhaseResult(name="allocate", time=Estimate.measured([1.0], contention=contention)),
        PhaseResult(name="first touch", time=Estimate.measured([2.0], contention=contention)),
    ]
    methods = [
        MethodResult(name="constant", bytes_written=10**9, time=Estimate.measured(fill_s, contention=contention)),
        MethodResult(name="memset", bytes_written=10**9, time=Estimate.measured(fill_s, contention=contention)),
    ]
    result = EngramResult(budget=Budget(memory_bytes=2**34, deadline_s=deadline), phases=phases, methods=methods)
    derive(result)
    return Results(command="engram", engram=result)


@pytest.mark.parametrize(
    ("fill_s", "deadline", "code", "line"),
    [
        # start-up 3 s + the rounds: 4.0 s to 6.0 s (median 5.0 s)
        ([1.0, 2.0, 3.0], 6.0, MET, HEAD + "start-up 5.00 s on cpu; 6.00 s deadline met, 0 µs to spare"),
        ([1.0, 2.0, 3.0], 3.5, MISSED, HEAD + "start-up 5.00 s on cpu; 3.50 s deadline missed by 500.0 ms"),
        ([1.0, 2.0, 3.0], 5.5, UNCERTAIN, HEAD + "5.00 s on cpu; 5.50 s deadline uncertain: 4.00 s to 6.00 s"),
    ],
)  # fmt: skip
def test_engram_judges_its_start_up_on_the_rounds(fill_s: list[float], deadline: float, code: str, line: str) -> None:
    """A measured start-up's interval is its terms' fastest to slowest readings: the point (5 s) alone would have
    met a 5.5 s deadline."""
    results = _engram(fill_s, deadline)
    assert results.engram is not None
    constant = results.engram.methods[0]
    assert constant.deadline == Verdict(code, deadline)
    assert (constant.startup.low, constant.startup.high) == (4.0, 6.0)
    assert constant.over_deadline is (code == MISSED)
    assert summary_line(results) == line
    out = render(results, "terminal", RenderOptions(width=80))
    assert out.splitlines()[0] == line
    assert f"{'missed' if code == MISSED else code}" in out.splitlines()[4]  # the constant's row, deadline column


def test_engram_gives_no_verdict_from_a_contended_run_and_says_what_to_do() -> None:
    results = _engram([1.0, 2.0, 3.0], 600.0, BUSY)
    assert results.engram is not None
    assert results.engram.methods[0].deadline == Verdict(CONTENDED, 600.0)
    assert results.engram.methods[0].over_deadline is False
    # the answer still comes first: the method, its time, and that there is no verdict
    assert summary_line(results) == ("recommended constant: 5.00 s on cpu; 600 s deadline: no verdict; CONTENDED")
    out = " ".join(render(results, "terminal", RenderOptions(width=200)).split())
    assert (
        "no verdict on the 600 s deadline: the machine was busy while the times were taken (CPU pressure 99%, "
        "steal 0%, this process 0.22 of 2 CPUs), so they are slower than it can do; rerun on a quiet machine"
    ) in out
    detail = " ".join(render(results, "markdown", RenderOptions()).split())
    assert "no verdict on the 600 s deadline" in detail


def test_a_file_without_a_stored_verdict_is_judged_by_the_same_rule() -> None:
    """docs/img/engram-html.json's shape: a projected start-up ~1553 s [1342 s, 2840 s], stored as 'over'."""
    m = MethodResult(name="constant", startup=Estimate.projected(1553.0, 1342.0, 2840.0))
    m.over_deadline = True
    result = EngramResult(budget=Budget(deadline_s=600.0), methods=[m])
    assert deadline_text(result, m) == "600 s deadline missed by ~742 s"
    result.budget.deadline_s = 2000.0
    assert deadline_text(result, m) == "2000 s deadline uncertain: ~1342 s to ~2840 s"
    m.time = Estimate.projected(1000.0, contention=BUSY)
    assert deadline_text(result, m) == "2000 s deadline: no verdict"


@pytest.mark.parametrize(("memory", "fits_", "room"), [(1000, True, "0 B left"), (999, False, "short 1 B")])
def test_a_deployment_judges_device_memory_by_the_same_rule_to_the_byte(memory: int, fits_: bool, room: str) -> None:
    """A rank's device bytes (held less offloaded, plus load buffers) against --device-memory: met on the byte."""
    from types import SimpleNamespace

    from dummyprof.reports.kinds.deployment import _room
    from dummyprof.results.deployment import DeploymentResult, RankEntry
    from dummyprof.scenarios.deployment.run import _node_view

    rank = RankEntry(rank=0, held_bytes=900, offloaded_bytes=100, rotary_cache_bytes=200)
    result = DeploymentResult(world=1, ranks=[rank])
    options = SimpleNamespace(ranks_per_node=None, host_memory=1 << 40, device_memory=memory)
    _node_view(result, {0: [100]}, options)  # type: ignore[arg-type]
    assert rank.device_bytes == 1000 and rank.device_fits is fits_ and rank.device_room_bytes == memory - 1000
    assert _room(rank).text == room
    assert result.nodes[0].host_fits is True  # 128 B pinned (a power of two) within the host's memory
