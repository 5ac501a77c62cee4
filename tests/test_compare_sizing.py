"""compare: measured where the model fits, projected (exact counts, calibrated times) where it does not."""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from dummyprof.loaders.counting import CountingTooLong, count_on_meta
from dummyprof.loaders.strategies import get_strategy
from dummyprof.measure.projection import fit_line
from dummyprof.models.synthetic import TreeSpec, build_tree, synthetic_source
from dummyprof.results.common import Estimate
from dummyprof.results.compare import CalibrationClass
from dummyprof.scenarios.compare.run import CompareOptions, run
from dummyprof.scenarios.compare.sizing import MetaCounts, project_strategy
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
TREE = ("--depth", "4", "--hidden", "64", "--engram-rows", "64", "--repeat", "1", "--warmup", "0", "--device", "cpu")


def _options(**kw: object) -> CompareOptions:
    base = {"depth": 4, "hidden": 64, "engram_rows": 64, "repeat": 1, "warmup": 0, "device": "cpu"}
    return CompareOptions(**{**base, **kw})  # type: ignore[arg-type]


def test_projected_counts_equal_the_measured_counts() -> None:
    """The same tree measured for real and projected: every count, strategy by strategy and tensor by tensor."""
    measured = run(_options()).compare
    projected = run(_options(max_memory=1024, time_budget=0.5)).compare
    assert measured is not None and projected is not None
    assert measured.size.mode == "measured" and measured.counts == "exact"
    assert projected.size.mode == "projected" and projected.size.reason == "memory"
    assert projected.counts == "exact-meta" and projected.repeat == 0
    for a, b in zip(measured.strategies, projected.strategies, strict=True):
        assert (a.name, a.visits, a.redundant_visits, a.max_visits, a.bytes_written, a.peak_scratch_bytes) == (
            b.name,
            b.visits,
            b.redundant_visits,
            b.max_visits,
            b.bytes_written,
            b.peak_scratch_bytes,
        )
        assert b.time.samples == []  # nothing was filled at full size
    assert {k: t.visits for k, t in measured.tensors.items()} == {k: t.visits for k, t in projected.tensors.items()}
    assert projected.model.bytes == measured.model.bytes


def test_projection_has_an_interval_and_never_beats_the_memset_floor() -> None:
    result = run(_options(max_memory=1024, time_budget=0.5)).compare
    assert result is not None
    size = result.size
    assert size.memset_bytes_per_s and size.memset_bytes_per_s > 0
    assert {c.rule for c in size.calibration} >= {"uniform"}
    for c in size.calibration:
        assert len(c.sizes_bytes) >= 2 and all(t.samples for t in c.trials)
    for s in result.strategies:
        p = s.projection
        assert p is not None
        t = p.time
        assert t.floor == pytest.approx(s.bytes_written / size.memset_bytes_per_s)
        assert t.floor is not None and t.low is not None and t.value is not None and t.high is not None
        assert t.floor <= t.low <= t.value <= t.high
        assert p.peak_rss_bytes > 0


def _count(depth: int = 2) -> object:
    model = build_tree(TreeSpec(depth=depth, hidden=64), "meta")
    return count_on_meta(model, get_strategy("per-layer"))


def test_floor_binds_when_calibration_claims_faster_than_memset() -> None:
    count = _count()
    written = sum(r.bytes_written for r in count.recorder.records.values())  # type: ignore[attr-defined]
    free = fit_line([1.0, 2.0], [0.0, 0.0])  # a calibration that says filling costs nothing
    dtypes = {str(v.dtype).removeprefix("torch.") for v in count.visits}  # type: ignore[attr-defined]
    rules = {v.rule for v in count.visits}  # type: ignore[attr-defined]
    calibration = [
        CalibrationClass(initializer="v0.33", rule=r, dtype=d, fit=free, fit_low=free, fit_high=free)
        for r in rules
        for d in dtypes
    ]
    p = project_strategy(count, calibration, memset_bytes_per_s=1e6, rss_now=0)  # type: ignore[arg-type]
    assert p.floor_bound
    t = p.time
    assert t.value == pytest.approx(max(written / 1e6, p.walk_s)) or t.value == pytest.approx(written / 1e6)
    assert t.low == t.high == t.value and t.how == "projected"


def test_projection_sums_calibrated_visit_costs() -> None:
    count = _count()
    slope = 1e-9  # 1 GB/s
    line = fit_line([1.0, 2.0], [slope, 2 * slope])
    dtypes = {str(v.dtype).removeprefix("torch.") for v in count.visits}  # type: ignore[attr-defined]
    rules = {v.rule for v in count.visits}  # type: ignore[attr-defined]
    calibration = [
        CalibrationClass(initializer="v0.33", rule=r, dtype=d, fit=line, fit_low=line, fit_high=line, small_call_s=0.0)
        for r in rules
        for d in dtypes
    ]
    p = project_strategy(count, calibration, memset_bytes_per_s=1e15, rss_now=100)  # type: ignore[arg-type]
    written = sum(v.outcome.bytes_written for v in count.visits)  # type: ignore[attr-defined]
    assert p.time.value == pytest.approx(p.walk_s + written * slope)
    assert not p.floor_bound


def test_slow_measured_rounds_are_projected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that fits memory but whose rounds would overrun the time budget is projected too."""
    from dummyprof.scenarios.compare import sizing

    monkeypatch.setattr(sizing, "QUICK_BYTES", 0)  # predict even this small tree
    result = run(_options(time_budget=1e-6, repeat=5)).compare
    assert result is not None
    assert result.size.mode == "projected" and result.size.reason == "time"
    assert result.size.predicted_s is not None and result.size.predicted_s > 1e-6


def test_a_calibrated_measured_run_shows_projection_next_to_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    from dummyprof.scenarios.compare import sizing

    monkeypatch.setattr(sizing, "QUICK_BYTES", 0)
    result = run(_options(time_budget=600)).compare
    assert result is not None
    assert result.size.mode == "measured" and result.size.calibration
    assert all(s.projection is not None and s.time.samples for s in result.strategies)


def test_cli_projected_run_says_so_and_round_trips(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    result = cli("compare", *TREE, "--max-memory", "1KiB", "--time-budget", "0.5s", "--json", str(path))
    assert result.exit_code == 0, result.stderr
    assert "counts: exact for the full model" in result.stdout
    assert "PROJECTED, not measured" in result.stdout
    projected = re.compile(r"projected( fill)? on \S+[:,] ")  # the fastest strategy first
    (summary,) = [line for line in result.stdout.splitlines() if projected.match(line)]
    assert len(summary) <= 80  # the -q line, shorter words where the figures are long (issue #13)
    assert "Strategies: projected time (speedup vs legacy)" in result.stdout and "…" not in result.stdout
    data = json.loads(path.read_text())
    assert data["compare"]["size"]["mode"] == "projected"
    assert data["compare"]["strategies"][0]["projection"]["time"]["value"] > 0
    for fmt in ("terminal", "markdown"):
        shown = cli("report", str(path), "--format", fmt)
        assert shown.exit_code == 0, shown.stderr
        assert "projected" in shown.stdout.lower()


@pytest.mark.parametrize(("value", "message"), [("0", "must be greater than 0"), ("soon", "expected a duration")])
def test_bad_time_budget(cli: Cli, value: str, message: str) -> None:
    result = cli("compare", *TREE, "--time-budget", value)
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: --time-budget: ") and message in result.stderr


def test_loaders_cannot_be_projected(cli: Cli) -> None:
    result = cli(
        "compare",
        *TREE,
        "--max-memory",
        "1KiB",
        "--time-budget",
        "0.5",
        "--loader",
        "tests/fixtures/loaders.py:fill_once",
    )
    assert result.exit_code == 2
    assert "--loader: " in result.stderr and "is projected, not filled" in result.stderr


def test_meta_source_is_built_without_allocating() -> None:
    source = synthetic_source(TreeSpec(depth=3, hidden=64))
    model = source.build(torch.device("meta"))
    assert all(p.device.type == "meta" for p in model.parameters())


def test_counting_stops_at_its_deadline_and_names_the_strategy() -> None:
    """A walk still going at its deadline stops: how far it got, never minutes of silence."""
    with torch.device("meta"):
        model = build_tree(TreeSpec(depth=6, hidden=32))
    ticks = iter(range(1_000_000))
    clock = lambda: float(next(ticks))  # noqa: E731  (one second per reading)
    with pytest.raises(CountingTooLong) as late:
        count_on_meta(model, get_strategy("legacy"), deadline=0.5, clock=clock)
    assert late.value.strategy == "legacy" and late.value.visits == 0 and late.value.seconds > 0
    # Without a deadline the same walk finishes: the deadline is the only thing that stopped it.
    assert count_on_meta(model, get_strategy("legacy")).recorder.records


def test_compare_past_the_counting_limit_is_one_line_naming_time_budget(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dummyprof.scenarios.compare import sizing

    monkeypatch.setattr(sizing, "counting_limit", lambda budget: -1.0)
    result = cli("compare", *TREE, "--time-budget", "30")
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert line.startswith("dummyprof: error: --time-budget: counting visits on the meta model took longer")
    assert "legacy had made 0 visits" in line and "Traceback" not in result.stdout + result.stderr


def test_counting_limit_is_half_the_budget_and_never_under_ten_seconds() -> None:
    from dummyprof.scenarios.compare.sizing import counting_limit

    assert counting_limit(120) == 60 and counting_limit(4) == 10


def test_projected_peak_rss_is_the_model_it_fills_plus_its_scratch() -> None:
    """The projected peak is RSS now + the bytes the fill first touches + its largest temporary, nothing more."""
    count = _count()
    records = [r for r in count.recorder.records.values() if r.bytes_written]  # type: ignore[attr-defined]
    touched = sum(r.nbytes for r in records)
    scratch = count.recorder.peak_scratch_bytes  # type: ignore[attr-defined]
    line = fit_line([1.0, 2.0], [1e-9, 2e-9])
    dtypes = {str(v.dtype).removeprefix("torch.") for v in count.visits}  # type: ignore[attr-defined]
    rules = {v.rule for v in count.visits}  # type: ignore[attr-defined]
    calibration = [
        CalibrationClass(initializer="v0.33", rule=r, dtype=d, fit=line, fit_low=line, fit_high=line)
        for r in rules
        for d in dtypes
    ]
    p = project_strategy(count, calibration, memset_bytes_per_s=1e15, rss_now=1000)  # type: ignore[arg-type]
    assert p.peak_rss_bytes == 1000 + touched + scratch


def test_the_interval_spans_the_slopes_of_every_trial_line_and_holds_the_capability() -> None:
    # issue #25: the lines through each size's fastest and slowest readings can both miss how steep a single
    # interleaved pass was (their intercepts take the noise); each trial's own line counts too
    from dummyprof.measure.engine import slope_bounds

    sizes = [1.0, 2.0, 3.0]
    samples = [[1.0, 1.0, 1.5], [2.0, 2.0, 2.0], [3.0, 3.9, 3.0]]
    # per-size fastest [1, 2, 3]: slope 1.0 (the capability too); slowest [1.5, 2, 3.9]: slope 1.2;
    # trial 2 [1, 2, 3.9]: slope 1.45; trial 3 [1.5, 2, 3]: slope 0.75
    low, high = slope_bounds(sizes, samples)
    assert low.slope == pytest.approx(0.75) and high.slope == pytest.approx(1.45)


MIB = 1 << 20


def test_calibration_steps_follow_the_share_within_their_bounds() -> None:
    from dummyprof.measure.engine import MAX_STEP, MIN_STEP
    from dummyprof.measure.engine import step_bytes as calibration_step

    rate = 400e6  # bytes/s
    assert calibration_step(1 << 30, rate, 1.5, 2) == 12_000_000  # 1.5 s over 50 fills of s..4s at 400 MB/s
    assert calibration_step(1 << 30, rate, 1e3, 2) == MAX_STEP  # a large share: the most step
    assert calibration_step(20 * MIB, rate, 1e3, 2) == 5 * MIB  # never past a quarter of the largest visit
    assert calibration_step(1 << 30, rate, 1e-6, 2) == MIN_STEP


def test_decide_probes_first_touch_on_a_cpu_and_prices_it_into_every_projection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dummyprof.measure import engine, first_touch
    from dummyprof.measure.memory import FRESH_MAP_BYTES
    from dummyprof.results.common import FirstTouch
    from dummyprof.scenarios.compare import sizing

    probed: list[tuple[int, float, int, int]] = []

    def probe(
        needed: int, *, memory_bytes: int, seconds: float, chunk_bytes: int, share: float, clock: object
    ) -> FirstTouch:
        probed.append((needed, seconds, memory_bytes, chunk_bytes))
        return FirstTouch(chunk_bytes=4096, fresh_s=[0.5], touched_s=[0.25], needed_bytes=needed)

    calibration = [CalibrationClass(sizes_bytes=[1, 2], trials=[Estimate.measured([1.0]), Estimate.measured([2.0])])]
    monkeypatch.setattr(sizing, "calibrate", lambda *a, **k: calibration)
    monkeypatch.setattr(first_touch, "probe", probe)
    prices: list[object] = []
    monkeypatch.setattr(
        sizing,
        "project_strategy",
        lambda *a, pages, **k: prices.append(pages) or sizing.Projection(time=Estimate.projected(1e6)),
    )
    monkeypatch.setattr(sizing, "QUICK_BYTES", 0)  # the tiny tree is calibrated as a large one would be
    source = synthetic_source(TreeSpec(depth=2, hidden=64))
    meta = sizing.count_strategies(source, [get_strategy("per-layer")], None, time_budget_s=60)
    small, _ = sizing.decide(source, meta, torch.device("cpu"), max_memory=1, rounds=3, time_budget_s=60)
    assert small.mode == "projected" and small.reason == "memory"
    needed = sum(r.nbytes for r in meta.counts["per-layer"].recorder.records.values() if r.bytes_written)
    # every page the fill writes first, its share; half the 1-byte budget; mappings the smallest glibc maps afresh
    assert probed == [(needed, 60 * engine.FIRST_TOUCH_SHARE, 0, FRESH_MAP_BYTES)]
    assert small.first_touch is not None and small.first_touch.needed_bytes == needed
    assert prices == [small.first_touch]


def test_the_probe_maps_chunks_the_size_of_the_tensors_holding_half_the_first_touched_bytes() -> None:
    from dummyprof.measure.first_touch import CHUNK_BYTES
    from dummyprof.scenarios.compare.sizing import _first_touched, count_strategies

    def counts(spec: TreeSpec, *names: str) -> MetaCounts:
        return count_strategies(synthetic_source(spec), [get_strategy(n) for n in names], None, time_budget_s=60)

    tree = counts(TreeSpec(depth=12, hidden=512), "per-layer", "legacy")  # 1 MiB matrices hold most of its bytes
    touched = sum(r.nbytes for r in tree.counts["per-layer"].recorder.records.values() if r.bytes_written)
    assert _first_touched(tree) == (touched, MIB)
    wide = counts(TreeSpec(depth=1, hidden=8192), "per-layer")  # 256 MiB matrices: the largest chunk
    assert _first_touched(wide)[1] == CHUNK_BYTES


def test_the_max_memory_the_no_room_notice_offers_probes_the_first_touch(monkeypatch: pytest.MonkeyPatch) -> None:
    from dummyprof.reports.format import first_touch_notice
    from dummyprof.results.common import FirstTouch
    from dummyprof.scenarios.compare import sizing
    from dummyprof.units import parse_bytes

    calibration = [CalibrationClass(sizes_bytes=[1, 2], trials=[Estimate.measured([1.0]), Estimate.measured([2.0])])]
    monkeypatch.setattr(sizing, "calibrate", lambda *a, **k: calibration)
    monkeypatch.setattr(sizing, "project_strategy", lambda *a, **k: sizing.Projection(time=Estimate.projected(1.0)))
    monkeypatch.setattr(sizing, "QUICK_BYTES", 0)
    source = synthetic_source(TreeSpec(depth=3, hidden=256))
    meta = sizing.count_strategies(source, [get_strategy("per-layer")], None, time_budget_s=60)

    def pages(max_memory: int) -> FirstTouch | None:
        cpu = torch.device("cpu")
        decision, _ = sizing.decide(source, meta, cpu, max_memory=max_memory, rounds=3, time_budget_s=60)
        return decision.first_touch

    refused = pages(64 << 10)
    assert refused is not None and not refused.fresh_s
    offered = re.search(r"--max-memory (\S+ \S+) or more probes them", first_touch_notice(refused))
    assert offered is not None
    followed = pages(parse_bytes("--max-memory", offered.group(1).replace(" ", "")))
    assert followed is not None and followed.fresh_s and first_touch_notice(followed) == ""


def test_a_deployments_fresh_page_budget_gives_each_shard_its_own_after_the_host_part() -> None:
    from dummyprof.scenarios.deployment.fills import deployment_fresh_budget

    # 2 shards shared 60 s less a host part of 15 s (a quarter, by bytes); each shard needs a 40 s budget
    assert deployment_fresh_budget(40.0, 2, 60.0, 45.0) == 107.0  # 80 s / 0.75, in whole seconds
    assert deployment_fresh_budget(40.0, 1, 60.0, 60.0) == 40.0


def _fp8_count(rows: int, cols: int, layers: int = 2) -> object:
    """Counts of per-layer over a model of ``layers`` fp8 linears of rows x cols (an fp16 scratch each visit)."""

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(
                torch.empty(rows, cols, dtype=torch.float8_e4m3fn, device="meta"), requires_grad=False
            )

    model = torch.nn.Sequential(*(Layer() for _ in range(layers)))
    return count_on_meta(model, get_strategy("per-layer"), None)


def test_calibration_samples_a_scratch_class_under_the_mmap_threshold_and_big_scratch_is_first_touched() -> None:
    from dummyprof.measure.memory import MMAP_THRESHOLD
    from dummyprof.scenarios.compare.sizing import _classes, _touched

    big, small = _fp8_count(4096, 8192), _fp8_count(1024, 1024)  # fp16 scratch 64 MiB and 2 MiB per visit
    [(init, _name, largest)] = _classes({"per-layer": big}).values()  # type: ignore[dict-item]
    assert init == "v0.33" and 2 * largest < MMAP_THRESHOLD  # its scratch sampled from a reused heap
    # its weights' pages, and a 64 MiB scratch the engine maps afresh at each visit
    assert _touched(big) == 2 * 4096 * 8192 + 2 * (2 * 4096 * 8192)
    assert _touched(small) == 2 * 1024 * 1024  # a 2 MiB scratch comes back from the heap the last visit freed
    [(_i, _n, small_largest)] = _classes({"per-layer": small}).values()  # type: ignore[dict-item]
    assert small_largest == 1024 * 1024  # under the threshold: sampled up to the visit's own size


def test_a_projection_prices_the_first_touch_of_the_scratch_the_engine_maps_afresh() -> None:
    from dummyprof.results.common import FirstTouch

    count = _fp8_count(4096, 8192)
    pages = FirstTouch(chunk_bytes=1 << 20, needed_bytes=1 << 20, fresh_s=[1e-3, 2e-3], touched_s=[0.0, 0.0])
    cls = CalibrationClass(
        initializer="v0.33",
        rule="uniform-via-fp16",
        dtype="float8_e4m3fn",
        sizes_bytes=[1, 2],
        trials=[],
        fit=fit_line([1.0, 2.0], [1.0, 2.0]),
        fit_low=fit_line([1.0, 2.0], [1.0, 2.0]),
        fit_high=fit_line([1.0, 2.0], [1.0, 2.0]),
    )
    projection = project_strategy(count, [cls], 1e12, 0, pages=pages)  # type: ignore[arg-type]
    weights, scratch = 2 * 4096 * 8192, 2 * (2 * 4096 * 8192)
    assert projection.first_touch_s == pytest.approx(pages.price(weights + scratch)[0])


def test_one_reading_per_size_on_one_line_keeps_the_interval_of_its_rates() -> None:
    # three readings on the line 0.3 + 0.9 x: every line through two of them has slope 0.9, yet the rates the
    # readings give (1.2, 1.05, 1.0 per unit) say the fill's rate is known to a fifth, not exactly
    from scipy.special import stdtrit

    from dummyprof.measure.engine import slope_bounds
    from dummyprof.measure.projection import rate_interval

    sizes, readings = [1.0, 2.0, 3.0], [1.2, 2.1, 3.0]
    half = float(stdtrit(2, 0.975)) * statistics.stdev([1.2, 1.05, 1.0]) / math.sqrt(3)
    mean = (1.2 + 1.05 + 1.0) / 3
    assert rate_interval(sizes, readings) == pytest.approx((mean - half, mean + half))
    assert (mean - half, mean + half) == pytest.approx((0.825, 1.342), abs=1e-3)  # t(2) = 4.303
    low, high = slope_bounds(sizes, [[r] for r in readings])
    assert (low.slope, high.slope) == pytest.approx((mean - half, mean + half))
    with pytest.raises(ValueError, match="two readings or more"):
        rate_interval([1.0], [1.0])
