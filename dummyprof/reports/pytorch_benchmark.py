"""PyTorch OSS benchmark-database records (v3), as ``vllm bench startup`` writes them: one record per metric.

Each record has ``benchmark{name, mode, dtype, extra_info}``, ``model{name, type,
backend, origins, extra_info}``, ``metric{name, benchmark_values, target_value,
extra_info}``, ``runners[...]`` and ``dependencies``, so dummyprof's fill
figures sit beside upstream start-up benchmarks. A projected figure says so in
``metric.extra_info`` (``"projected": true``, with its interval and floor); counts
are exact either way.
"""

from __future__ import annotations

import json
from typing import Any

from dummyprof.reports.reporter import RenderOptions, Reporter, never
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


def _metrics(result: CompareResult, s: StrategyResult) -> list[tuple[str, list[float], dict[str, Any]]]:
    counts = {"counts": result.counts}
    p = s.projection
    if s.timing.samples_s:
        time = (s.timing.samples_s, {"unit": "s", "projected": False, "rounds": len(s.timing.samples_s)})
        peak = s.memory.rss_peak_bytes
        memory = ([float(peak)] if peak is not None else [], {"unit": "bytes", "projected": False})
    elif p is not None:
        interval = [p.low_s, p.high_s]
        time = ([p.seconds], {"unit": "s", "projected": True, "interval_s": interval, "memset_floor_s": p.floor_s})
        memory = ([float(p.peak_rss_bytes)], {"unit": "bytes", "projected": True})
    else:
        time, memory = ([], {"unit": "s"}), ([], {"unit": "bytes"})
    return [
        ("fill_time_s", time[0], time[1]),
        ("peak_rss_bytes", memory[0], memory[1]),
        ("visits", [float(s.visits)], {"unit": "count", **counts}),
        ("redundant_visits", [float(s.redundant_visits)], {"unit": "count", **counts}),
        ("bytes_written", [float(s.bytes_written)], {"unit": "bytes", **counts}),
    ]


def benchmark_records(results: Results) -> list[dict[str, Any]]:
    result = results.compare
    assert result is not None
    model = result.model
    runner = _runner(results)
    dependencies = {"torch": results.environment.torch_version, "dummyprof": results.dummyprof_version}
    records = []
    for s in result.strategies:
        for name, values, extra in _metrics(result, s):
            records.append(
                {
                    "benchmark": {
                        "name": BENCHMARK_NAME,
                        "mode": "inference",
                        "dtype": str(model.options.get("dtype", "")),
                        "extra_info": {
                            "strategy": s.name,
                            "initializer": s.initializer,
                            "fill": result.size.mode,
                            "device": model.device,
                            "repeat": result.repeat,
                            "warmup": result.warmup,
                        },
                    },
                    "model": {
                        "name": model.source,
                        "type": "dummy-weights",
                        "backend": s.name,
                        "origins": ["dummyprof"],
                        "extra_info": {
                            "description": model.description,
                            "tensors": model.tensors,
                            "bytes": model.bytes,
                            "options": model.options,
                        },
                    },
                    "metric": {
                        "name": name,
                        "benchmark_values": values,
                        "target_value": None,
                        "extra_info": extra,
                    },
                    "runners": [runner],
                    "dependencies": dependencies,
                }
            )
    return records


def _rank_metrics(s: RankStrategy) -> list[tuple[str, list[float], dict[str, Any]]]:
    if s.fill == "measured":
        time = (list(s.samples_s), {"unit": "s", "projected": False, "rounds": len(s.samples_s)})
    elif s.fill == "projected":
        interval = [s.low_s, s.high_s]
        time = (
            [s.seconds or 0.0],
            {"unit": "s", "projected": True, "interval_s": interval, "memset_floor_s": s.floor_s},
        )
    else:
        time = ([], {"unit": "s"})
    peak = [float(s.peak_bytes)] if s.peak_bytes is not None else []
    return [
        ("fill_time_s", *time),
        ("peak_rss_bytes", peak, {"unit": "bytes", "projected": s.fill == "projected"}),
        ("visits", [float(s.visits)], {"unit": "count", "counts": "exact-meta"}),
        ("redundant_visits", [float(s.redundant_visits)], {"unit": "count", "counts": "exact-meta"}),
        ("bytes_written", [float(s.bytes_written)], {"unit": "bytes", "counts": "exact-meta"}),
    ]


def deployment_records(results: Results) -> list[dict[str, Any]]:
    """One record per rank, strategy and metric; the rank and its place in the layout in benchmark.extra_info."""
    result = results.deployment
    assert result is not None
    runner = _runner(results)
    dependencies = {"torch": results.environment.torch_version, "dummyprof": results.dummyprof_version}
    layout = {"tp": result.tp, "ep": result.ep, "pp": result.pp, "dp": result.dp, "world": result.world}
    records = []
    for r in result.ranks:
        place = {"rank": r.rank, "stage": r.stage, "dp_rank": r.dp_rank, "tp_rank": r.tp_rank, "ep_rank": r.ep_rank}
        for s in r.strategies:
            for name, values, extra in _rank_metrics(s):
                records.append(
                    {
                        "benchmark": {
                            "name": BENCHMARK_NAME,
                            "mode": "inference",
                            "dtype": "",
                            "extra_info": {
                                **place,
                                **layout,
                                "node": r.node,
                                "strategy": s.strategy,
                                "initializer": s.initializer,
                                "fill": s.fill,
                                "filled_as": r.filled_as,
                                "device": result.device,
                            },
                        },
                        "model": {
                            "name": result.source,
                            "type": "dummy-weights",
                            "backend": s.strategy,
                            "origins": ["dummyprof"],
                            "extra_info": {
                                "description": result.description,
                                "bytes": result.model_bytes,
                                "rank_bytes": r.held_bytes,
                                "storages": r.storages,
                            },
                        },
                        "metric": {"name": name, "benchmark_values": values, "target_value": None, "extra_info": extra},
                        "runners": [runner],
                        "dependencies": dependencies,
                    }
                )
    return records


def render(results: Results, options: RenderOptions) -> str:
    records = deployment_records(results) if results.command == "deployment" else benchmark_records(results)
    return json.dumps(records, indent=2, default=str) + "\n"


REPORTER = Reporter(
    "pytorch-benchmark",
    ".json",
    frozenset({"compare", "deployment"}),
    render,
    "PyTorch OSS benchmark-database v3 records (one per metric), as vllm bench startup writes them",
    never,  # per strategy, never per tensor
)
