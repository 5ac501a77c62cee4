"""Every terminal report fits 80 and 120 columns (issue #13), as compare's does (tests/test_compare_noise.py).

No line wider than the terminal, nothing cut with '…', the short headers present, figures whole on
one line, and ``-q`` one line of at most 80 columns. Inputs are saved files (tests/fixtures/results_v1,
real runs) and Results built here; only the engram ones run the scenario, on a fake clock.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from dummyprof.reports.kinds import summary_line
from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.audit import FillerSummary
from dummyprof.results.common import Contention, Estimate
from dummyprof.results.compare import (
    CalibrationClass,
    CompareResult,
    ModelSummary,
    Projection,
    SizeDecision,
    StrategyResult,
)
from dummyprof.results.deployment import NO_CUDA_HERE, DeploymentResult, HostFill, RankEntry, RankStrategy
from dummyprof.results.engram import EngramResult, LinearFit
from dummyprof.results.ranks import RankFill, RankRecord
from dummyprof.results.session import Results
from dummyprof.results.store import load_results
from dummyprof.results.sweep import GrowthFit, SeriesPoint, SweepPoint, SweepResult
from tests.fixtures.results import gate_results

SAVED = Path(__file__).parent / "fixtures" / "results"
WIDTHS = [80, 120]


def fits(results: Results, width: int, headers: tuple[str, ...] = (), *, detail: bool = False) -> str:
    """The report at ``width``, checked: no line over it, no '…', each header a word of its own, -q one line."""
    out = render(results, "terminal", RenderOptions(width=width, detail=detail))
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    assert "…" not in out
    for header in headers:
        assert re.search(rf"(^| ){re.escape(header)}( |$)", out, re.M), header
    quiet = render(results, "terminal", RenderOptions(width=width, quiet=True))
    assert len(quiet.splitlines()) == 1 and len(quiet.rstrip("\n")) <= 80, quiet
    return out


def flat(out: str) -> str:
    """The report as one line: a sentence wrapped over lines reads whole again."""
    return re.sub(r" *\n", " ", out)


@pytest.mark.parametrize("width", WIDTHS)
def test_audit_fits(width: int) -> None:
    results = load_results(SAVED / "audit.json")
    assert results.audit is not None
    results.audit.fillers.append(
        FillerSummary("fill_like_vllm_033", "loader", None, 12_345, 6, 1_234_567_890, 3, 17)
    )  # a loader: its own values, and a figure of every width
    out = fits(results, width, ("filler", "init", "writes", "tensors", "repeated", "written", "other"))
    assert re.search(r"fill_like_vllm_033 +loader +12,345 +6/7 +3 +1\.15 GiB +17 ", out)
    assert re.search(r"per-layer +v0\.33 +7 +6/7 +1 +36\.50 KiB +0 ", out)
    assert "init loader: a loader's own values (compared with no other filler)" in flat(out)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("source", ["every-verdict", "saved"])
def test_gate_fits_with_every_check_name_whole(width: int, source: str) -> None:
    results = gate_results() if source == "every-verdict" else load_results(SAVED / "gate.json")
    out = fits(results, width, ("check", "baseline", "current", "change", "verdict"))
    assert results.gate is not None
    for c in results.gate.checks:
        for part in c.name.split(" / "):  # a ratio may wrap at its ' / ', never inside a metric's name
            assert re.search(rf"(^| ){re.escape(part)}( |$)", out, re.M), part
        assert all(word in out for word in c.verdict.split())
    if source == "every-verdict":
        assert "limit <= 2; 13 is over the limit 2" in out and re.search(r"per-layer\.max_visits +2 +13 +\+11 ", out)


@pytest.mark.parametrize("width", WIDTHS)
def test_baseline_fits(width: int) -> None:
    out = fits(load_results(SAVED / "baseline.json"), width, ("metric", "kind", "value", "rounds"))
    assert re.search(r"legacy\.time +time +5\.1 ms +3 ", out)
    assert re.search(r"legacy\.bytes_written +counter +83,456 ", out)  # exact, without ' B' (the name says bytes)


GIB, MIB, KIB = 1 << 30, 1 << 20, 1 << 10


def _compare(mode: str = "projected") -> Results:
    """A big model compare projected (or, ``measured``, filled and shown next to its projection), widest figures:
    ms times (the longest format), an interval per strategy, one strategy at the memset floor, and calibration
    fills of every rule, their sizes in two units."""
    figures = [  # name, init, visits, redundant, max/t, written, (point, low, high, floor, walk), floor-bound
        ("legacy", "v0.29", 1_234_567, 1_024_001, 6, int(82.9 * GIB), (0.9204, 0.7251, 0.9307, 0.0318, 0.1234), False),
        ("per-layer", "v0.33", 210_566, 1, 2, int(14.96 * GIB), (0.2053, 0.1842, 0.2257, 0.0574, 0.0456), False),
        ("unique", "v0.33", 210_565, 0, 1, int(14.96 * GIB), (0.1875, 0.1875, 0.1875, 0.1875, 0.0431), True),
    ]
    strategies = [
        StrategyResult(
            name=name, initializer=init, visits=visits, redundant_visits=redundant, max_visits=most,
            bytes_written=written, time=Estimate.projected(*times[:3], floor=times[3], device="cpu"),
            projection=Projection(Estimate.projected(*times[:3], floor=times[3], device="cpu"), times[4],
                                  peak_rss_bytes=int(153.7 * GIB), floor_bound=bound),
        )
        for name, init, visits, redundant, most, written, times, bound in figures
    ]  # fmt: skip
    classes = [("v0.29", "uniform", "bfloat16"), ("v0.29", "uniform-via-fp16", "float8_e4m3fn")]
    classes += [("v0.33", r, d) for r, d in [("uniform", "bfloat16"), ("declared", "float32"),
                ("uniform-via-fp16", "float8_e4m3fn"), ("scale-byte", "uint8"), ("random-bytes", "int8")]]  # fmt: skip
    calibration = [
        CalibrationClass(
            initializer=init, rule=rule, dtype=dtype, sizes_bytes=[k * 1000 * KIB for k in range(1, 5)],
            trials=[Estimate.measured([0.001] * 3)] * 4, small_call_s=0.000123,
            fit=LinearFit(slope=1 / (0.0891e9 * (i + 1) ** 2), r_squared=0.9987 - i / 100),
        )
        for i, (init, rule, dtype) in enumerate(classes)
    ]  # fmt: skip
    size = SizeDecision(
        mode="projected", reason="memory", needed_bytes=int(16.1 * GIB), budget_bytes=int(11.8 * GIB),
        predicted_s=4.2, time_budget_s=60.0, memset_bytes_per_s=2.61e9, calibration_s=9.1, counting_s=0.4,
        calibration=calibration,
    )  # fmt: skip
    model = ModelSummary("hf:Llama-3.1-8B", "hf: LlamaForCausalLM", modules=291, tensors=291, names=291)
    model.bytes = int(14.96 * GIB)
    result = CompareResult(model=model, strategies=strategies, counts="exact-meta", size=size)
    if mode == "measured":  # filled for real, one 20% slower than projected, and calibrated: projection next to it
        result.size.mode, result.size.reason, result.counts, result.repeat = "measured", "fits", "exact", 3
        result.size.budget_bytes = 24 * GIB
        for s, median in zip(result.strategies, (1.1045, 0.2131, 0.1907), strict=True):
            s.time = Estimate.measured([median * 0.95, median, median * 1.3])
    return Results(command="compare", compare=result)


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_projected_fits(width: int) -> None:
    time = ("strategy", "time", "range", "speedup", "floor", "walk")
    work = ("init", "visits", "redund.", "max/t", "written", "peak RSS")
    calibration = ("rule, dtype", "sizes", "trials", "GB/s", "R²", "tiny")
    out = fits(_compare(), width, (*time, *work, *calibration))
    assert re.search(r"legacy +~920\.4 ms +725\.1 ms–930\.7 ms +~1\.00x +31\.8 ms +123\.4 ms ", out)
    assert re.search(r"unique +~187\.5 ms +187\.5 ms–187\.5 ms +~4\.91x +187\.5 ms +43\.1 ms ", out)
    assert re.search(r"legacy +v0\.29 +1,234,567 +1,024,001 +6 +82\.90 GiB +~153\.70 GiB ", out)
    assert "at the floor: unique (calibrated faster than memset)" in flat(out)
    assert re.search(r"v0\.29 +uniform bf16 +1000\.00 KiB–3\.91 MiB +12 +0\.09 +0\.999 +123 µs ", out)
    assert re.search(r"v0\.33 +random-bytes i8 +1000\.00 KiB–3\.91 MiB +12 +4\.37 +0\.939 +123 µs ", out)
    assert "uniform-via-fp16" in out and "fp8e4m3" in out and "float8" not in out
    assert "~: projected from smaller samples, not measured" in out
    quiet = render(_compare(), "terminal", RenderOptions(width=width, quiet=True))
    # the answer first, the device named: the other strategies give way (82 columns with them)
    assert quiet == "projected fill on cpu, fastest unique 187.5 ms (4.9x legacy) of 3 strategies\n"


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_compare_quiet_names_the_device_of_its_times(device: str) -> None:
    measured = load_results(SAVED / "compare.json")
    projected = _compare()
    for results in (measured, projected):
        assert results.compare is not None
        results.compare.model.device = device
    assert summary_line(measured) == (
        f"median fill on {device}: unique 192 µs (5.2x); per-layer 356 µs (2.8x), legacy 993 µs"
        if device == "cpu"  # 81 columns on cuda:0: "fill" gives way, never the device
        else f"median on {device}: unique 192 µs (5.2x); per-layer 356 µs (2.8x), legacy 993 µs"
    )
    assert summary_line(projected).startswith(f"projected fill on {device}, fastest unique 187.5 ms (4.9x legacy)")
    for width in WIDTHS:
        fits(measured, width)
        fits(projected, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_measured_with_its_projection_fits(width: int) -> None:
    out = fits(_compare("measured"), width, ("projected", "range", "measured", "floor", "walk"), detail=True)
    assert re.search(r"legacy +~920\.4 ms +725\.1 ms–930\.7 ms +1\.10 s +31\.8 ms +123\.4 ms ", out)
    assert re.search(r"per-layer +~205\.3 ms +184\.2 ms–225\.7 ms +213\.1 ms +57\.4 ms +45\.6 ms ", out)
    assert "projected peak RSS: ~153.70 GiB, every strategy" in flat(out)


_RUNS: dict[str, Results] = {}  # the fake-clock runs, once each for both widths (the projected one takes seconds)


def _engram(kind: str) -> Results:
    if kind in ("engram", "engram-projected", "engram-plan"):
        return load_results(SAVED / f"{kind}.json")
    if kind not in _RUNS:
        _RUNS[kind] = _engram_run(kind)
    return copy.deepcopy(_RUNS[kind])


def _engram_run(kind: str) -> Results:
    from dummyprof.scenarios.engram.options import EngramOptions
    from dummyprof.scenarios.engram.run import run
    from tests.test_engram_scenario import counter_clock

    if kind == "fake-measured":
        options = EngramOptions(rows=2048, dim=64, repeat=2, deadline_s=2.5, time_budget_s=10**6)
    else:  # projected with intervals and a deadline
        options = EngramOptions(rows=400_000, dim=64, max_memory=8 << 20, time_budget_s=10**6, deadline_s=20)
    return run(options, clock=counter_clock())


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", ["engram", "engram-projected", "engram-plan", "fake-measured", "fake-projected"])
@pytest.mark.usefixtures("two_kernel_workers")
def test_engram_fits(width: int, kind: str) -> None:
    results = _engram(kind)
    engram = results.engram
    assert engram is not None
    headers: tuple[str, ...] = ("method", "needs", "scratch", "fits")
    if not engram.dry_run:
        headers += ("how", "fill", "rate", "%memset", "start-up", "peak RSS")
    out = fits(results, width, headers, detail=True)
    glance = fits(results, width).splitlines()  # the answer first, then a line per method (a dry run: the plan)
    assert glance[0] == render(results, "terminal", RenderOptions(quiet=True)).rstrip("\n")
    if not engram.dry_run:
        assert [line.split()[0] for line in glance[4 : 4 + len(engram.methods)]] == [m.name for m in engram.methods]
        assert "Fill methods" not in "\n".join(glance) and "Fill methods" in out
    if kind.startswith("fake"):
        headers = ("range", "largest term", "deadline", "zeros", "distinct", "weights", "scales")
        assert all(re.search(rf"(^| ){re.escape(h)}( |$)", out, re.M) for h in headers)
    if kind == "fake-projected":
        assert "~12.71 s  12.71 s–50.85 s" in out and "~: projected from smaller samples" in out
        assert re.search(r"random-convert +~26\.43 s +26\.43 s–115 s +first touch 48% +missed ", out)
        assert "(projected)" not in out  # one mark, '~', explained under each table that has it
    if kind == "engram-plan":
        assert "fill and start-up times: unavailable: dry run: nothing allocated" in out
        assert "random-convert, random-scratch: does not fit in memory" in flat(out)


def _engram_worst_quiet(case: str) -> Results:
    """The saved projected run (start-ups ~5.75 s to ~12.14 s, none fit) made to say the most on its -q line."""
    results = load_results(SAVED / "engram-projected.json")
    engram = results.engram
    assert engram is not None
    if case == "one method":  # one method, projected at 123.4 ms, fits, over a 100 ms deadline: 81 columns before
        engram.methods = [m for m in engram.methods if m.name in ("random-scratch", engram.floor_method)]
        engram.budget.deadline_s = 0.1
        for m in engram.methods:
            m.startup, m.fits_in_memory, m.over_deadline = Estimate.projected(0.1234), True, True
    else:  # every method the same to 4 digits, some fit, all over a 100 ms deadline: 81 columns before
        engram.budget.deadline_s = 0.1
        for i, m in enumerate(engram.methods):
            m.startup, m.fits_in_memory, m.over_deadline = Estimate.projected(0.1234), i < 2, True
    return results


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(
    ("case", "line"),
    [
        ("one method", "random-scratch:{} ~123.4 ms on {}; 100.0 ms deadline missed by ~23.4 ms"),
        ("all equal", "random-convert:{} ~123.4 ms on {}; 100.0 ms deadline missed by ~23.4 ms"),
    ],
)
@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_engram_quiet_keeps_to_80_columns_in_the_worst_case(width: int, case: str, line: str, device: str) -> None:
    results = _engram_worst_quiet(case)
    assert results.engram is not None
    results.engram.backing.device = device  # where the tables were filled: the device of every time shown
    fits(results, width)
    said = line.format(" start-up" if device == "cpu" else "", device)  # "start-up" gives way, never the device
    assert render(results, "terminal", RenderOptions(width=width, quiet=True)) == said + "\n"


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_engram_quiet_names_the_device_of_its_start_up(device: str) -> None:
    results = load_results(SAVED / "engram-projected.json")
    assert results.engram is not None
    results.engram.backing.device = device
    line = f"recommended constant: start-up ~5.75 s per rank on {device}; no --deadline"
    # 81 columns on cuda:0 with how many fit: that gives way, never the device
    assert summary_line(results) == line + ("; none fit" if device == "cpu" else "")


def _deployment(device: str) -> Results:
    """tp 2, pp 2 of a 7.5 GB model, projected on ``device``: the slowest rank's line is 82 columns whole."""
    ranks = [
        RankEntry(
            rank=r,
            stage=r // 2,
            held_bytes=round(3.74 * GIB),
            strategies=[RankStrategy("per-layer", time=Estimate.projected(13.24 if r == 2 else 12.0))],
        )
        for r in range(4)
    ]
    result = DeploymentResult(device=device, tp=2, pp=2, world=4, ranks=ranks, slowest_rank=2)
    result.slowest_strategy = "per-layer"
    return Results(command="deployment", deployment=result)


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_deployment_quiet_keeps_the_strategy_and_the_device(device: str) -> None:
    results = _deployment(device)
    # too long with the bytes per rank: they give way, not the strategy's name nor the device
    assert summary_line(results) == f"tp 2, pp 2: 4 ranks; slowest rank 2 per-layer ~13.24 s on {device}"
    assert results.deployment is not None
    results.deployment.pp, results.deployment.world = 1, 2
    results.deployment.ranks = results.deployment.ranks[2:]
    assert summary_line(results) == f"tp 2: 2 ranks, up to 3.74 GiB/rank; slowest rank 2 per-layer ~13.24 s on {device}"
    for width in WIDTHS:
        fits(results, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_inspect_fits(width: int) -> None:
    out = fits(load_results(SAVED / "inspect.json"), width)
    assert "(+N): N redundant" in out and "legacy 49 (+30)" in out
    assert "own 1 tensor 8.00 KiB" in out and "tensor(s)" not in out


def _sweep() -> Results:
    """A compare sweep over depth 2..16: three rounds a point (a min–max each), fits with intervals."""
    series = ["legacy", "per-layer", "unique"]
    points = []
    for depth in (2, 4, 8, 16):
        entries = {}
        for k, name in enumerate(series, start=1):
            median = 0.001 * depth ** (2 / k)
            entries[name] = SeriesPoint(
                time=Estimate.measured([median * 0.9, median, median * 1.4]),
                visits=int(4.5 * depth**2) if name == "legacy" else 9 * depth,
                bytes_written=123_456 * depth,
                peak_rss_bytes=300 << 20,
            )
        points.append(SweepPoint(depth, 111_111 * depth, entries))
    fits = [
        GrowthFit(name, metric, 1.7 if name == "legacy" else 0.97, 0.0, 0.9987, 1.13, 2.27, 3, 4, 16)
        for name in series
        for metric in ("visits", "time", "bytes")
    ]
    sweep = SweepResult("compare", "depth", [2, 4, 8, 16], series, points, fits, fit_from=4, repeat=3)
    return Results(command="sweep", sweep=sweep)


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_fits_and_splits_its_points_only_when_narrow(width: int) -> None:
    headers = ("median", "min–max", "visits", "written", "peak RSS", "exponent", "95% interval", "R²", "points")
    out = fits(_sweep(), width, (*headers, "trend"))
    assert ("(2/2)" in out) == (width == 80)  # one table when it fits, two parts when not
    assert re.search(r" 16 +legacy +1\.70 MiB", out)
    assert "14.4 ms–22.4 ms" in out  # legacy at depth 16: 1 ms x 16², 0.9x to 1.4x
    assert re.search(r"legacy +visits +1\.70 +\[1\.13, 2\.27\] +0\.9987 +3 \(4–16\) ", out)
    quiet = render(_sweep(), "terminal", RenderOptions(width=width, quiet=True))
    assert quiet == "visit exponents over depth 4–16: legacy 1.70, per-layer 0.97, unique 0.97\n"


METHODS = ["random-convert", "random-scratch", "random-chunked", "random-fast", "constant", "memset"]


def _ranks(world: int = 8) -> Results:
    """Eight ranks on two hosts, every default method: the widest multi-rank report."""
    from dummyprof.scenarios.engram.ranks.rank import aggregate

    records = []
    for rank in range(world):
        fills = [
            RankFill(m, "measured", Estimate(0.2 + 0.01 * i + 0.001 * rank), 100 << 20, True, Estimate(300e6),
                     Estimate(0.2 + 0.01 * i), Estimate(0.25 + 0.01 * i + 0.001 * rank), 3)
            for i, m in enumerate(METHODS)
        ]  # fmt: skip
        records.append(
            RankRecord(
                rank=rank, world_size=world, local_rank=rank % 4, local_world_size=4,
                host=f"gpu-node-{rank // 4:02d}", part_rows=250_000_000,
                table_bytes=66_000_000_000, reserved_bytes=66_000_003_072, available_bytes=1_500_000_000_000,
                allocate_s=Estimate(0.000418 + rank * 1e-6), first_touch_s=Estimate(12.5 + rank / 100),
                fills=fills, peak_rss_bytes=66_500_000_000 + rank, steps=["x"], engram=EngramResult(),
            )
        )  # fmt: skip
    results = Results(command="engram", engram=EngramResult(), ranks=records)
    results.ranks_aggregate = aggregate(records, "nccl")
    return results


@pytest.mark.parametrize("width", WIDTHS)
def test_ranks_fit_and_split_the_per_rank_times_only_when_narrow(width: int) -> None:
    headers = ("rank", "host", "local", "rows", "bytes", "reserved", "peak RSS", "allocate", "first touch")
    headers += ("convert", "memset", "phase", "slowest rank", "alone", "together", "ratio", "per rank")
    out = fits(_ranks(), width, (*headers, "ranks", "largest need", "available", "all fit"))
    assert ("Times per rank (1/2)" in out) == (width == 80)
    assert re.search(r" 7/8 +gpu-node-01 +3/4 +250,000,000 +61\.47 GiB +61\.47 GiB +61\.93 GiB ", out)
    for rank in range(8):
        assert f"{(0.2 + 0.05 + 0.001 * rank) * 1e3:.1f} ms" in out  # every rank's constant fill, whole
    assert "r0:x1.25 " in out and "r7:x1.28" in out  # each rank's own ratio, whole, wrapped between ranks
    assert re.search(r"gpu-node-00 +0-3 +245\.87 GiB +400\.00 MiB +1\.36 TiB +247\.73 GiB +yes", out)
    assert "largest need: random-convert's, all the host's ranks together" in flat(out)
    quiet = render(_ranks(), "terminal", RenderOptions(width=width, quiet=True))
    assert quiet == "8 ranks on 2 hosts (nccl); contention x1.23 (memset) to x1.28 (random-convert)\n"


def _ranks_short_of_memory() -> Results:
    """The eight ranks, each needing its 61.47 GiB of tables and, for two methods, half as much again of scratch:
    gpu-node-00 (279.40 GiB free) cannot hold those two on its four ranks, gpu-node-01 (232.83 GiB) none."""
    from dummyprof.scenarios.engram.ranks.rank import aggregate

    results = _ranks()
    for rec in results.ranks:
        rec.available_bytes = 300_000_000_000 if rec.host == "gpu-node-00" else 250_000_000_000
        for f in rec.fills:
            f.needed_bytes = rec.reserved_bytes * (3 if f.method in ("random-convert", "random-scratch") else 2) // 2
    results.ranks_aggregate = aggregate(results.ranks, "nccl")
    return results


@pytest.mark.parametrize("width", WIDTHS)
def test_ranks_short_of_memory_fit_and_say_so_in_80_columns(width: int) -> None:
    out = fits(_ranks_short_of_memory(), width, ("largest need", "available", "all fit"))
    assert re.search(r"gpu-node-00 +0-3 +245\.87 GiB +368\.80 GiB +279\.40 GiB +247\.73 GiB +no ", out)
    notes = flat(out)
    assert "; gpu-node-00 cannot hold random-convert, random-scratch; gpu-node-01 cannot hold random-convert," in notes
    quiet = render(_ranks_short_of_memory(), "terminal", RenderOptions(width=width, quiet=True))
    assert quiet == "8 ranks on 2 hosts (nccl); contention x1.23 to x1.28; 2 hosts short of memory\n"


def test_a_report_keeps_to_its_width_however_long_the_names() -> None:
    """Names longer than a whole line fold; nothing is cut and no line passes the width."""
    results = copy.deepcopy(gate_results())
    assert results.gate is not None
    results.gate.checks[0].name = "per-layer." + "x" * 90 + ".visits"
    results.gate.checks[0].scenario = "a-scenario-name-" + "y" * 80
    out = render(results, "terminal", RenderOptions(width=80))
    assert max(len(line) for line in out.splitlines()) <= 80 and "…" not in out
    assert "per-layer." + "x" * 20 in out


BUSY = Contention(wall_s=1, cores=2, pressure=0.6, steal=0.0, process_cpu_share=0.7, reasons=["cpu-pressure"])
QUIET = Contention(wall_s=1, cores=2, pressure=0.0, steal=0.0, process_cpu_share=1.9)


def _measured_under(results: Results, reading: Contention) -> None:
    """The reading taken while the rounds ran, as the strategies' times carry it."""
    assert results.compare is not None
    for s in results.compare.strategies:
        s.time.contention = reading


def _calibrated_under(results: Results, reading: Contention) -> None:
    """The reading taken while the calibration fills ran, as the projections carry it."""
    assert results.compare is not None
    for s in results.compare.strategies:
        if s.projection is not None:
            s.projection.time.contention = reading


def test_quiet_lines_say_contended_when_their_times_were_taken_on_a_busy_machine() -> None:
    """-q is the answer alone: a time taken under contention carries the mark there too, whatever else gives way."""
    projected = _compare()
    assert projected.compare is not None
    _calibrated_under(projected, QUIET)
    assert "CONTENDED" not in summary_line(projected)
    _calibrated_under(projected, BUSY)
    # the answer stays first: the fastest strategy and its speedup, whatever the machine
    assert summary_line(projected) == "projected fill on cpu: unique 187.5 ms (4.9x legacy) of 3 strategies; CONTENDED"
    measured = load_results(SAVED / "compare.json")
    assert measured.compare is not None
    _measured_under(measured, BUSY)  # the timed rounds' reading, for a measured run
    assert summary_line(measured) == "median on cpu, fastest unique 192 µs (5.2x legacy) of 3 strategies; CONTENDED"

    engram = load_results(SAVED / "engram-projected.json")
    assert engram.engram is not None
    for m in engram.engram.methods:
        m.time.contention = BUSY
    line = "recommended constant: start-up ~5.75 s per rank on cpu; no --deadline; CONTENDED"
    assert summary_line(engram) == line  # how many fit gives way, never the mark

    deployment = _deployment("cpu")
    assert deployment.deployment is not None
    deployment.deployment.contention = BUSY
    assert summary_line(deployment) == "tp 2, pp 2: 4 ranks; slowest rank 2 per-layer ~13.24 s on cpu; CONTENDED"
    for results in (projected, measured, engram, deployment):
        for width in WIDTHS:
            fits(results, width)


def test_a_first_touch_probe_cut_short_by_the_budget_says_so_and_names_the_budget_that_would_not() -> None:
    from dummyprof.results.common import FirstTouch

    projected = _compare()
    assert projected.compare is not None
    assert "PARTLY SAMPLED" not in flat(render(projected, "terminal", RenderOptions(width=200)))
    projected.compare.size.first_touch = FirstTouch(
        chunk_bytes=64 << 20,
        fresh_s=[0.3, 0.2],
        touched_s=[0.1, 0.1],
        needed_bytes=1 << 30,
        binding="time",
        budget_s=30.2,
    )
    out = flat(render(projected, "terminal", RenderOptions(width=200)))
    assert (
        "FIRST TOUCH PARTLY SAMPLED for lack of time: the pages past the probe are priced at its last pages' rate "
        "(the interval: its cheapest and dearest); --time-budget 31s or more probes them all"
    ) in out
    projected.compare.size.first_touch = FirstTouch(chunk_bytes=64 << 20, needed_bytes=1 << 30, binding="memory")
    out = flat(render(projected, "terminal", RenderOptions(width=200)))
    assert (
        "FIRST TOUCH NOT PROBED: --max-memory leaves no room for fresh pages, so the projection leaves out the first "
        "write to 1.00 GiB of them and reads low by its page faults; --max-memory 128.00 MiB or more probes them"
    ) in out
    projected.compare.size.first_touch.fresh_s, projected.compare.size.first_touch.touched_s = [0.3, 0.2], [0.1, 0.1]
    assert "FIRST TOUCH" not in flat(render(projected, "terminal", RenderOptions(width=200)))  # sampled, in part
    deployment = _deployment("cpu")
    assert deployment.deployment is not None
    deployment.deployment.fresh_budget_s = 44.0
    out = flat(render(deployment, "terminal", RenderOptions(width=200)))
    assert "--time-budget 44s or more probes them all" in out
    saved = render(deployment, "json", RenderOptions())
    assert '"fresh_budget_s": 44.0' in saved or '"fresh_budget_s":44.0' in saved


def test_contended_quiet_lines_keep_to_80_columns_in_their_longest_cases() -> None:
    # a GPU layout whose host-resident tables were timed here and whose device part was not (no CUDA), contended
    results = _deployment("cuda:0")
    assert results.deployment is not None
    d = results.deployment
    d.not_timed, d.target = NO_CUDA_HERE, "cuda"
    for r in d.ranks:
        r.strategies = [
            RankStrategy(
                "per-layer",
                host=HostFill(
                    visits=4, bytes_written=1 << 30, time=Estimate.projected(5.12, device="cpu", contention=BUSY)
                ),
            )
        ]
    line = summary_line(results)
    assert line == "tp 2, pp 2: 4 ranks; host ~5.12 s on cpu, device not timed; CONTENDED"
    # a model with nothing to fill, contended: the short head, the fastest strategy, and no speedup
    empty = _compare()
    assert empty.compare is not None
    empty.compare.model.bytes = 0
    for s in empty.compare.strategies:
        s.bytes_written = 0
    assert empty.compare.nothing_to_fill
    _calibrated_under(empty, BUSY)
    assert summary_line(empty) == "projected on cpu: unique 187.5 ms (nothing to fill) of 3 strategies; CONTENDED"


@pytest.mark.parametrize("busy", [QUIET, BUSY])
@pytest.mark.parametrize("names", [("legacy", "per-layer", "unique"), ("legacy", "per-layer-" + "x" * 30, "u" * 24)])
def test_the_quiet_line_names_the_fastest_strategy_and_its_speedup_whatever_the_machine(
    busy: Contention, names: tuple[str, str, str]
) -> None:
    """The answer first: however busy the machine and however long the names, the fastest strategy is the first
    named, with its speedup over the baseline, within 80 columns; the HTML headline is the same line."""
    results = load_results(SAVED / "compare.json")  # legacy 993 µs, per-layer 356 µs, unique 192 µs
    assert results.compare is not None
    _measured_under(results, busy)
    for s, name in zip(results.compare.strategies, names, strict=True):
        s.name = name
    line = summary_line(results)
    assert len(line) <= 80 and line.endswith("; CONTENDED") == busy.contended
    fastest = names[2]
    assert re.match(rf"median (fill )?on cpu(, fastest |: ){fastest} 192 µs \(5\.2x( legacy)?\)", line)


def test_a_baseline_that_is_fastest_is_named_so() -> None:
    results = load_results(SAVED / "compare.json")
    assert results.compare is not None
    _measured_under(results, BUSY)
    legacy, _, unique = results.compare.strategies
    legacy.time, unique.time = unique.time, legacy.time
    assert summary_line(results) == "median on cpu, fastest legacy 192 µs (the baseline) of 3 strategies; CONTENDED"
