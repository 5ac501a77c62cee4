"""The first touch of fresh pages: the probe's stopping rules, its price of a fill's pages, and its place in a
projection (first visits pay it, redundant visits do not)."""

from __future__ import annotations

import pytest
import torch

from dummyprof.loaders.counting import CountResult, count_on_meta
from dummyprof.loaders.initializers import RULE_DECLARED, RULE_SKIP, RULE_UNIFORM, RULE_UNIFORM_VIA_FP16
from dummyprof.loaders.strategies import get_strategy
from dummyprof.measure import first_touch
from dummyprof.measure.recorder import dtype_name
from dummyprof.models.synthetic import TreeSpec, build_tree
from dummyprof.results.common import Estimate, FirstTouch
from dummyprof.results.compare import CalibrationClass
from dummyprof.results.engram import LinearFit
from dummyprof.scenarios.compare.sizing import operation, project_strategy

KIB = 1 << 10
MIB = 1 << 20


class _Steps:
    """A clock that moves ``step`` seconds at every reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_the_probe_covers_the_pages_needed_in_chunks_each_timed_fresh_then_touched() -> None:
    pages = first_touch.probe(10 * KIB, memory_bytes=1 << 20, seconds=100.0, clock=_Steps(1.0), chunk_bytes=4 * KIB)
    assert len(pages.fresh_s) == 3 and pages.sampled_bytes == 12 * KIB  # 10 KiB needs three 4 KiB chunks
    assert pages.fresh_s == pages.touched_s == [1.0, 1.0, 1.0] and pages.binding == "" and pages.budget_s is None
    assert pages.needed_bytes == 10 * KIB and pages.chunk_bytes == 4 * KIB


def test_the_probe_stops_at_its_memory_and_at_its_time_after_two_chunks_naming_the_budget() -> None:
    short = first_touch.probe(1 << 20, memory_bytes=9 * KIB, seconds=100.0, clock=_Steps(1.0), chunk_bytes=4 * KIB)
    assert short.binding == "memory" and short.sampled_bytes == 8 * KIB and short.budget_s is None
    late = first_touch.probe(
        64 * KIB, memory_bytes=1 << 20, seconds=0.5, clock=_Steps(1.0), chunk_bytes=4 * KIB, share=0.25
    )
    assert late.binding == "time" and len(late.fresh_s) == 2  # never fewer than two chunks
    # 2 s per 4 KiB chunk (fresh + touched): 64 KiB need 32 s, a quarter of a 128 s budget
    assert late.budget_s == 128.0
    # more needed than the room holds: the budget that probes the room, and the advice says so
    roomless = first_touch.probe(
        1 << 20, memory_bytes=18 * KIB, seconds=0.5, clock=_Steps(1.0), chunk_bytes=4 * KIB, share=0.25
    )
    assert roomless.binding == "time" and roomless.room_bytes == 16 * KIB and roomless.budget_s == 32.0
    from dummyprof.reports.format import first_touch_notice

    assert first_touch_notice(roomless).endswith(
        "--time-budget 32s or more probes the 16.00 KiB its room holds (half of the memory budget) of the "
        "1.00 MiB the fill first-touches"
    )
    assert first_touch_notice(late).endswith("--time-budget 128s or more probes them all")


def test_the_budget_a_time_bound_probe_names_prices_the_rest_at_its_dearest_chunk() -> None:
    readings = iter([0.0, 0.0, 1.0, 2.0, 2.0, 5.0, 8.0, 9.0])  # chunks of 1 + 1 s, then 3 + 3 s; then past 0.5 s
    pages = first_touch.probe(
        1 << 20, memory_bytes=16 * KIB, seconds=0.5, clock=lambda: next(readings), chunk_bytes=4 * KIB, share=0.25
    )
    # 2 + 6 s probed, the room's other two chunks at 6 s each: 20 s, a quarter of an 80 s budget
    assert pages.binding == "time" and pages.budget_s == 80.0


def test_measuring_adds_the_time_spent_before_it_to_the_budget_its_probe_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dummyprof.measure import engine

    def probe(needed: int, **_: object) -> FirstTouch:
        return FirstTouch(chunk_bytes=4096, fresh_s=[1.0, 1.0], touched_s=[0.5, 0.5], binding="time", budget_s=80.0)

    monkeypatch.setattr(first_touch, "probe", probe)
    cpu = torch.device("cpu")
    with engine.measuring(engine.Floors(), cpu, fresh_bytes=MIB, memory_bytes=MIB, time_budget_s=4, spent_s=6.5) as f:
        pass
    assert (
        f.pages is not None and f.pages.budget_s == 87.0
    )  # what is left of the budget is the probe's; 6.5 s went before


def test_the_probe_writes_every_page_and_restores_torchs_threads() -> None:
    threads = torch.get_num_threads()
    pages = first_touch.probe(8 << 20, memory_bytes=1 << 30, seconds=60.0, chunk_bytes=4 << 20)
    assert len(pages.fresh_s) == 2 and all(s > 0 for s in pages.fresh_s + pages.touched_s)
    assert torch.get_num_threads() == threads


def test_a_price_takes_the_sampled_chunks_in_order_then_the_tail_for_the_rest() -> None:
    # four 1 KiB chunks whose first touch cost 1, 1, 3, 5 s over their touched memset
    pages = FirstTouch(chunk_bytes=KIB, fresh_s=[2.0, 2.0, 4.0, 6.0], touched_s=[1.0] * 4, needed_bytes=8 * KIB)
    assert pages.chunk_costs() == [1.0, 1.0, 3.0, 5.0]
    # the first two chunks, as the engine meets them; the high end as a fill hiding its writes pays them: fresh
    assert pages.price(2 * KIB) == (2.0, 2.0, 4.0)
    assert pages.price(KIB + KIB // 2) == (1.5, 1.5, 3.0)  # the first chunk and half of the second
    # all four sampled (10 s), then 4 KiB more at the last quarter's 5 s per chunk; low: the rest at the cheapest
    # chunk's 1 s; high: all four fresh (14 s), the rest at the dearest fresh chunk's 6 s
    assert pages.price(8 * KIB) == (30.0, 14.0, 38.0)
    assert pages.price(0) == (0.0, 0.0, 0.0) and FirstTouch().price(KIB) == (0.0, 0.0, 0.0)


def test_a_fill_slower_than_memory_may_pay_up_to_the_whole_fresh_memset() -> None:
    pages = FirstTouch(chunk_bytes=KIB, fresh_s=[2.0, 4.0], touched_s=[1.0, 1.0], needed_bytes=2 * KIB)
    assert pages.chunk_costs(hidden=0.5) == [1.5, 3.5]  # half its touched memset hidden behind the arithmetic
    assert pages.chunk_costs(hidden=3.0) == [2.0, 4.0]  # clamped: never more than the fresh memset
    assert pages.price(2 * KIB) == (4.0, 4.0, 6.0)  # point and low: fresh less touched; high: fresh


def test_a_fresh_chunk_faster_than_its_refill_costs_nothing_not_a_negative() -> None:
    pages = FirstTouch(chunk_bytes=KIB, fresh_s=[1.0], touched_s=[1.5])
    assert pages.chunk_costs() == [0.0] and pages.price(KIB)[:2] == (0.0, 0.0)


def test_one_operation_is_one_class_whichever_initializer_performs_it() -> None:
    assert operation("v0.29", RULE_UNIFORM) == operation("v0.33", RULE_UNIFORM) == RULE_UNIFORM
    assert operation("fast", RULE_DECLARED) == operation("v0.33", RULE_DECLARED)
    # v0.29 widens and narrows whole tensors, v0.33 fills an fp16 temporary: two operations
    assert operation("v0.29", RULE_UNIFORM_VIA_FP16) != operation("v0.33", RULE_UNIFORM_VIA_FP16)


def _calibration(*counts: CountResult) -> list[CalibrationClass]:
    """One class per operation and dtype the counts visit, each writing one GB per second on touched memory."""
    fit = LinearFit(slope=1e-9)
    keys = {(operation(c.initializer, v.rule), dtype_name(v.dtype)) for c in counts for v in c.visits}
    return [
        CalibrationClass(
            initializer="v0.33", rule=op.rpartition(":")[2], dtype=dtype, fit=fit, fit_low=fit, fit_high=fit
        )
        for op, dtype in keys
        if op != RULE_SKIP
    ]


def test_first_visits_pay_the_first_touch_and_redundant_visits_do_not() -> None:
    model = build_tree(TreeSpec(depth=3, width=1, hidden=64), device=torch.device("meta"))
    legacy = count_on_meta(model, get_strategy("legacy"), "v0.33")
    per_layer = count_on_meta(model, get_strategy("per-layer"), "v0.33")
    pages = FirstTouch(chunk_bytes=KIB, fresh_s=[3.0] * 4, touched_s=[1.0] * 4)  # 2 s per KiB, first touch
    touched = sum(r.nbytes for r in per_layer.recorder.records.values() if r.bytes_written)
    for count in (legacy, per_layer):
        bare = project_strategy(count, _calibration(count), 0.0, 0)
        paid = project_strategy(count, _calibration(count), 0.0, 0, pages=pages)
        assert paid.first_touch_s == pytest.approx(pages.price(touched)[0])  # the same pages, first touched once
        assert paid.time.value == pytest.approx((bare.time.value or 0.0) + paid.first_touch_s)
    assert legacy.recorder.visits > per_layer.recorder.visits  # legacy revisits: its extra visits find touched pages


def test_the_floor_holds_the_cheapest_first_touch_too() -> None:
    model = build_tree(TreeSpec(depth=1, width=1, hidden=64), device=torch.device("meta"))
    count = count_on_meta(model, get_strategy("per-layer"), "v0.33")
    written = sum(r.bytes_written for r in count.recorder.records.values())
    touched = sum(r.nbytes for r in count.recorder.records.values() if r.bytes_written)
    pages = FirstTouch(chunk_bytes=1 << 30, fresh_s=[3.0, 9.0], touched_s=[1.0, 1.0])
    projection = project_strategy(count, _calibration(count), 1e9, 0, pages=pages)
    assert projection.time.floor == pytest.approx(written / 1e9 + pages.price(touched)[1])
    assert isinstance(projection.time, Estimate) and projection.time.is_projected


_KEPT_HEAP = """
import resource, torch
from dummyprof.measure.memory import heap_reused, map_afresh
cpu = torch.device("cpu")
map_afresh(cpu)  # as after a measured run: without the kept heap, each of the 8 tensors faults in 2,048 pages
with heap_reused(cpu):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for value in range(8):
        torch.empty(8 << 20, dtype=torch.uint8).fill_(value)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_calibration_temporaries_come_back_from_a_kept_heap() -> None:
    # In a fresh process: glibc serves a request from the smallest free chunk that fits, so free heap that an earlier
    # run in the same process gave back (malloc_trim) can take a tensor before the grown heap does.
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _KEPT_HEAP], capture_output=True, text=True, check=True)
    assert int(run.stdout) < (8 << 20) // 4096  # the heap was grown on entry and is kept: touched memory


def _faults() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_the_probe_maps_each_chunk_afresh_even_where_a_kept_heap_could_serve_it() -> None:
    from dummyprof.measure.memory import heap_reused

    with heap_reused(torch.device("cpu")):  # 96 MiB of touched heap, kept: glibc would serve a chunk from it
        before = _faults()
        pages = first_touch.probe(8 << 20, memory_bytes=1 << 30, seconds=60.0, chunk_bytes=1 << 20)
        faults = _faults() - before
    assert len(pages.fresh_s) == 8 and faults >= (8 << 20) // 4096  # a fault for every page of every chunk


def test_a_measured_fills_temporaries_reuse_the_heap_and_the_model_built_next_lands_on_fresh_pages() -> None:
    from dummyprof.measure.memory import heap_reused, map_afresh

    cpu, pages = torch.device("cpu"), (8 << 20) // 4096
    map_afresh(cpu)  # as in measured rounds: each 8 MiB temporary mapped afresh would fault in 2,048 pages
    with heap_reused(cpu, grown=False):
        before = _faults()
        for value in range(8):
            torch.empty(8 << 20, dtype=torch.uint8).fill_(value)
        temporaries = _faults() - before
    before = _faults()
    torch.empty(8 << 20, dtype=torch.uint8).fill_(0)  # the next model's tensor: the kept heap went back
    assert temporaries < 4 * pages and _faults() - before >= pages  # reused, where afresh they would fault 8 times


_MEASURED_FP8_FILL = """
import resource, torch
from dummyprof.loaders.strategies import get_strategy
from dummyprof.results.compare import ModelSummary
from dummyprof.scenarios.compare import runner

class Layer(torch.nn.Module):
    def __init__(self, side):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(side, side, dtype=torch.float8_e4m3fn), requires_grad=False)

def build():
    return torch.nn.Sequential(*(Layer(1024) for _ in range(32)), *(Layer(4096) for _ in range(2)))

faults, fill = [], runner.run_strategy

def counted(*args, **kwargs):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fill(*args, **kwargs)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)

runner.run_strategy = counted
strategies = [get_strategy("per-layer")]
runner.run_compare(build, ModelSummary(), strategies, torch.device("cpu"), repeat=1, warmup=0, measure_overhead=False)
print(faults[0])
"""


def test_a_measured_fp8_fill_faults_in_its_weights_and_big_scratch_at_every_visit_and_small_scratch_once() -> None:
    import subprocess
    import sys

    # a fresh process, as the engine's worker: no free heap that earlier tests left touched
    run = subprocess.run([sys.executable, "-c", _MEASURED_FP8_FILL], capture_output=True, text=True, check=True)
    faults = int(run.stdout.split()[-1])
    weights, big, small = (32 * MIB + 2 * 16 * MIB) // 4096, 32 * MIB // 4096, 2 * MIB // 4096
    # as vLLM's worker: every weight page and each visit's 32 MiB scratch (an fp16 scratch of 32 MiB for each big
    # layer, 2 MiB for a small one); the 2 MiB scratches mostly reuse the heap (mapped afresh, all 32 would fault in)
    assert weights + 2 * big <= faults < weights + 2 * big + 16 * small
