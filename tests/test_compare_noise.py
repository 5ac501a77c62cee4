"""Noise in compare (issue #13): spread, cold starts, outliers, uncertain speedups, nothing to fill; fake clocks."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import pytest
import torch
from torch import nn

from dummyprof.loaders.strategies import Strategy, per_layer_traversal
from dummyprof.models.synthetic import TreeSpec, build_tree
from dummyprof.reports.kinds.compare import compare_summary
from dummyprof.reports.registry import render
from dummyprof.reports.reporter import RenderOptions
from dummyprof.results.compare import CompareResult, ModelSummary
from dummyprof.results.session import Results
from dummyprof.scenarios.compare.runner import run_compare
from tests.fakes import FakeClock


@pytest.fixture(autouse=True)
def no_full_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner collects once a round; with torch and scipy loaded that is ~0.5 s here and times nothing."""
    import gc

    monkeypatch.setattr(gc, "collect", lambda generation=2: 0)


def scripted(clock: FakeClock, seconds: Sequence[float]):  # type: ignore[no-untyped-def]
    """A per-layer traversal whose n-th run takes ``seconds[n]`` on the fake clock (warm-up round included)."""
    times = iter(seconds)

    def traverse(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
        clock.tick(next(times))
        yield from per_layer_traversal(model)

    return traverse


def measure(a: Sequence[float], b: Sequence[float], build=None) -> CompareResult:  # type: ignore[no-untyped-def]
    clock = FakeClock()
    spec = TreeSpec(depth=2, hidden=32)
    strategies = [Strategy("a", "a", scripted(clock, a)), Strategy("b", "b", scripted(clock, b))]
    return run_compare(
        build or (lambda: build_tree(spec)),
        ModelSummary(),
        strategies,
        torch.device("cpu"),
        repeat=len(a) - 1,
        warmup=1,
        clock=clock,
        measure_overhead=False,
    )


def text(result: CompareResult, width: int = 120, reporter: str = "terminal", detail: bool = False) -> str:
    results = Results(command="compare", compare=result)
    return render(results, reporter, RenderOptions(width=width, detail=detail))


STEADY_A = [9.0, 2.0, 2.02, 1.98, 2.0, 2.01, 1.99]  # warm-up first (discarded)
STEADY_B = [9.0, 1.0, 1.01, 0.99, 1.0, 1.02, 0.98]


def test_steady_timings_carry_spread_and_a_tight_interval_and_no_warning() -> None:
    result = measure(STEADY_A, STEADY_B)
    assert result.noise == []
    a, b = result.strategies
    assert a.time.cv == pytest.approx(0.0075, abs=0.001)
    assert a.speedup_interval == []  # the baseline
    low, high = b.speedup_interval
    assert 1.9 < low <= result.speedup("b") <= high < 2.1
    out = text(result)
    assert "±1%" in out and "2.00x" in out and "warning" not in out


def test_a_cold_first_round_is_reported() -> None:
    result = measure([9.0, 6.0, 2.0, 2.02, 1.98, 2.0, 2.01], STEADY_B)
    assert [(w.code, w.subject) for w in result.noise] == [("first-round-slow", "a")]
    assert result.noise[0].value == pytest.approx(6.0 / 2.005)
    out = text(result)
    assert "a: the first measured round was significantly slower than the rest (3.0x its median)" in out
    assert "raise --warmup" in out


def test_outliers_that_move_the_median_are_reported() -> None:
    result = measure([9.0, 2.0, 2.02, 8.0, 1.98, 2.0, 2.01, 1.99], [9.0, 1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0])
    assert [(w.code, w.subject, w.count) for w in result.noise] == [("statistical-outliers", "a", 1)]
    for reporter in ("terminal", "markdown"):
        assert "a: statistical outliers were detected (1 outside 1.5 IQR" in " ".join(
            text(result, 200, reporter).split()
        )


def test_a_speedup_whose_interval_includes_one_is_uncertain() -> None:
    a = [9.0, 1.0, 3.0, 1.1, 2.9, 1.05, 3.1]
    b = [9.0, 2.9, 1.0, 3.0, 1.1, 3.05, 1.0]
    result = measure(a, b)
    uncertain = [w for w in result.noise if w.code == "speedup-uncertain"]
    assert [w.subject for w in uncertain] == ["b"]
    assert uncertain[0].low is not None and uncertain[0].high is not None
    assert uncertain[0].low <= 1.0 <= uncertain[0].high
    assert result.strategy("b").speedup_interval == [uncertain[0].low, uncertain[0].high]
    assert "b: the speedup vs a is uncertain: its 95% interval" in " ".join(text(result).split())


def test_the_interval_is_deterministic() -> None:
    a = [9.0, 1.0, 3.0, 1.1, 2.9, 1.05, 3.1]
    assert measure(a, STEADY_B).strategy("b").speedup_interval == measure(a, STEADY_B).strategy("b").speedup_interval


def test_an_empty_model_shows_no_speedup_and_says_why() -> None:
    result = measure(STEADY_A, STEADY_B, build=nn.Module)
    assert result.nothing_to_fill
    assert result.speedup("b") is None and result.strategy("b").speedup_interval == []
    out = text(result)
    assert "2.00x" not in out and "1.00x" not in out
    assert "speedup: n/a: nothing was filled" in out
    assert compare_summary(result) == "median fill on cpu, fastest b 1.00 s (nothing to fill: no speedup); a 2.00 s"
    assert "2.0x" not in compare_summary(result)
    assert "speedup: n/a: nothing was filled" in text(result, reporter="markdown").replace("\n", " ")


@pytest.mark.parametrize("width", [80, 120])
def test_compare_tables_fit_80_and_120_columns(width: int) -> None:
    """No header or cell cut with '…', no line wider than the terminal, dtypes abbreviated, -q fits."""
    spec = TreeSpec(depth=3, hidden=32)
    clock = FakeClock()
    names = ["legacy", "per-layer", "unique"]
    from dummyprof.loaders.strategies import get_strategy

    strategies = [
        Strategy(n, get_strategy(n).description, get_strategy(n).traverse, initializer=get_strategy(n).initializer)
        for n in names
    ]
    result = run_compare(
        lambda: build_tree(spec), ModelSummary(description="synthetic tree: depth 3"), strategies,
        torch.device("cpu"), repeat=3, warmup=0, clock=clock, measure_overhead=False,
    )  # fmt: skip
    for s, seconds in zip(result.strategies, (2.40, 0.51, 0.0123), strict=True):
        s.time.samples = [seconds, seconds * 1.4, seconds * 0.9]
    out = text(result, width, detail=True)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    assert "…" not in out
    assert "fp8e4m3" in out and "f32" in out and "float" not in out.split("Most revisited")[1].split("Memory")[0]
    for header in ("median", "CV", "min–max", "speedup", "interval", "visits", "redund.", "%memset"):
        assert re.search(rf"(^| ){re.escape(header)}( |$)", out, re.M), header
    quiet = render(Results(command="compare", compare=result), "terminal",
                   RenderOptions(width=width, quiet=True))  # fmt: skip
    assert len(quiet.splitlines()) == 1 and len(quiet.rstrip("\n")) <= 80


def test_no_bootstrap_interval_from_fewer_than_three_samples() -> None:
    from dummyprof.measure.noise import ratio_interval

    assert ratio_interval([2.0, 2.2], [1.0, 1.1]) is None  # two readings: three possible medians, no interval
    assert ratio_interval([2.0, 2.2, 2.1], [1.0, 1.1]) is None
    found = ratio_interval([2.0, 2.2, 2.1], [1.0, 1.1, 1.05])
    assert found is not None and found[0] <= 2.0 <= found[1]


def test_the_bootstrap_interval_agrees_with_scipy_and_never_changes() -> None:
    """numpy's percentile bootstrap, as scipy.stats.bootstrap(method="percentile") draws it, without its import."""
    import numpy as np
    from scipy.stats import bootstrap

    from dummyprof.measure.noise import CONFIDENCE, ratio_interval

    base, mine = [5.29, 4.80, 6.46, 5.10, 5.51], [0.5747, 0.3632, 0.6034, 0.58, 0.55]
    found = ratio_interval(base, mine)
    assert found is not None and found == ratio_interval(base, mine)  # fixed seed: the same interval every time
    scipy = bootstrap(
        (np.asarray(base), np.asarray(mine)),
        lambda a, b, axis=-1: np.median(a, axis=axis) / np.median(b, axis=axis),
        n_resamples=20_000,
        confidence_level=CONFIDENCE,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(1),
    ).confidence_interval
    assert found[0] == pytest.approx(scipy.low, rel=0.03) and found[1] == pytest.approx(scipy.high, rel=0.03)
