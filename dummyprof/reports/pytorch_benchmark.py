"""PyTorch OSS benchmark-database records (v3), one per metric as ``vllm bench startup`` writes them, so the fill
figures sit beside upstream start-up benchmarks; a projected one says so in ``metric.extra_info``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.results.common import MEASURED, PROJECTED, Estimate
from dummyprof.results.compare import CompareResult, StrategyResult
from dummyprof.results.deployment import RankStrategy
from dummyprof.results.session import Results

BENCHMARK_NAME = "dummyprof dummy-weight fill"


def _runner(results: Results) -> dict[str, Any]:
    env = results.environment
    gpu = env.device.startswith("cuda")
    return {
        "name": env.platform or "unknown",
        "type": env.device,
        "cpu_info": env.cpu_model,
        "cpu_count": env.cpu_count,
        "mem_info": env.total_memory_bytes,
        "avail_mem_in_gb": round(env.total_memory_bytes / 1e9, 2),  # total: what was free is not recorded
        "gpu_info": env.device_name if gpu else "",
        "gpu_count": 1 if gpu else 0,
        "gpu_mem_info": "",
        "avail_gpu_mem_in_gb": 0,
        "extra_info": {"torch_threads": env.torch_threads, "cuda_version": env.cuda_version},
    }


Metric = tuple[str, list[float], dict[str, Any]]  # name, benchmark_values, extra_info


def _time(time: Estimate | None) -> Metric:
    """The fill time: the measured rounds, or the projected point with its interval and memset floor."""
    if time is not None and time.how == MEASURED and time.samples:
        return "fill_time_s", list(time.samples), {"unit": "s", "projected": False, "rounds": len(time.samples)}
    if time is not None and time.is_projected:
        interval = [time.low, time.high]
        extra = {"unit": "s", "projected": True, "interval_s": interval, "memset_floor_s": time.floor}
        return "fill_time_s", [time.value or 0.0], extra
    return "fill_time_s", [], {"unit": "s"}


def _metrics(
    time: Estimate | None, peak: int | None, projected: bool | None, s: StrategyResult | RankStrategy, counts: str
) -> list[Metric]:
    """The fill time, the peak RSS (``projected`` None: neither measured nor projected) and the exact counts."""
    peak_extra: dict[str, Any] = {"unit": "bytes"} if projected is None else {"unit": "bytes", "projected": projected}
    return [
        _time(time),
        ("peak_rss_bytes", [float(peak)] if peak is not None else [], peak_extra),
        ("visits", [float(s.visits)], {"unit": "count", "counts": counts}),
        ("redundant_visits", [float(s.redundant_visits)], {"unit": "count", "counts": counts}),
        ("bytes_written", [float(s.bytes_written)], {"unit": "bytes", "counts": counts}),
    ]


def _strategy_metrics(result: CompareResult, s: StrategyResult) -> list[Metric]:
    """Measured where it was timed, else projected where it was, else neither."""
    if s.time.samples:
        return _metrics(s.time, s.memory.rss_peak_bytes, False, s, result.counts)
    if s.projection is not None:
        return _metrics(s.projection.time, s.projection.peak_rss_bytes, True, s, result.counts)
    return _metrics(None, None, None, s, result.counts)


# One record's parts: the benchmark's dtype and extra_info, the model's name, backend and extra_info, its metrics.
Entry = tuple[str, dict[str, Any], str, str, dict[str, Any], list[Metric]]


def _records(results: Results, entries: Iterable[Entry]) -> list[dict[str, Any]]:
    runner = _runner(results)
    dependencies = {"torch": results.environment.torch_version, "dummyprof": results.dummyprof_version}
    return [
        {
            "benchmark": {"name": BENCHMARK_NAME, "mode": "inference", "dtype": dtype, "extra_info": bench_extra},
            "model": {
                "name": model,
                "type": "dummy-weights",
                "backend": backend,
                "origins": ["dummyprof"],
                "extra_info": model_extra,
            },
            "metric": {"name": name, "benchmark_values": values, "target_value": None, "extra_info": extra},
            "runners": [runner],
            "dependencies": dependencies,
        }
        for dtype, bench_extra, model, backend, model_extra, metrics in entries
        for name, values, extra in metrics
    ]


def benchmark_records(results: Results) -> list[dict[str, Any]]:
    result = results.compare
    assert result is not None
    model = result.model
    about = {"description": model.description, "tensors": model.tensors, "bytes": model.bytes, "options": model.options}
    run = {"fill": result.size.mode, "device": model.device, "repeat": result.repeat, "warmup": result.warmup}
    dtype = str(model.options.get("dtype", ""))
    entries: list[Entry] = []
    for s in result.strategies:
        bench = {"strategy": s.name, "initializer": s.initializer, **run}
        entries.append((dtype, bench, model.source, s.name, about, _strategy_metrics(result, s)))
    return _records(results, entries)


def deployment_records(results: Results) -> list[dict[str, Any]]:
    """One record per rank, strategy and metric; the rank and its place in the layout in benchmark.extra_info."""
    result = results.deployment
    assert result is not None
    layout = {"tp": result.tp, "ep": result.ep, "pp": result.pp, "dp": result.dp, "world": result.world}
    entries: list[Entry] = []
    for r in result.ranks:
        place = {"rank": r.rank, "stage": r.stage, "dp_rank": r.dp_rank, "tp_rank": r.tp_rank, "ep_rank": r.ep_rank}
        about = {"description": result.description, "bytes": result.model_bytes, "rank_bytes": r.held_bytes}
        for s in r.strategies:
            run = {
                "strategy": s.strategy,
                "initializer": s.initializer,
                "fill": s.time.how if s.time else "",
                "filled_as": r.filled_as,
            }
            bench_extra = {**place, **layout, "node": r.node, **run, "device": result.device}
            model_extra = {**about, "storages": r.storages}
            projected = s.time is not None and s.time.how == PROJECTED
            metrics = _metrics(s.time, s.peak_bytes, projected, s, "exact-meta")
            entries.append(("", bench_extra, result.source, s.strategy, model_extra, metrics))
    return _records(results, entries)


def render(results: Results, options: RenderOptions) -> str:
    records = deployment_records(results) if results.command == "deployment" else benchmark_records(results)
    return json.dumps(records, indent=2, default=str) + "\n"


REPORTER = Reporter(
    "pytorch-benchmark",
    ".json",
    frozenset({"compare", "deployment"}),
    render,
    "PyTorch OSS benchmark-database v3 records (one per metric), as vllm bench startup writes them",
    lambda options: False,  # per strategy, never per tensor
)
