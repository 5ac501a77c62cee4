"""--export pytorch-benchmark / report --format pytorch-benchmark: PyTorch OSS benchmark-database v3 records."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import CliResult

Cli = Callable[..., CliResult]
TREE = ("--depth", "3", "--hidden", "64", "--repeat", "2", "--warmup", "0", "--device", "cpu")
# The v3 shape `vllm bench startup` writes (vllm/benchmarks/lib/utils.py), one record per metric.
SHAPE = {
    "benchmark": {"name", "mode", "dtype", "extra_info"},
    "model": {"name", "type", "backend", "origins", "extra_info"},
    "metric": {"name", "benchmark_values", "target_value", "extra_info"},
}
RUNNER = {
    "name", "type", "cpu_info", "cpu_count", "mem_info", "avail_mem_in_gb",
    "gpu_info", "gpu_count", "gpu_mem_info", "avail_gpu_mem_in_gb", "extra_info",
}  # fmt: skip
METRICS = {"fill_time_s", "peak_rss_bytes", "visits", "redundant_visits", "bytes_written"}


def validate(record: dict[str, Any]) -> None:
    assert set(record) == {*SHAPE, "runners", "dependencies"}
    for key, fields in SHAPE.items():
        assert set(record[key]) == fields, key
    assert isinstance(record["metric"]["benchmark_values"], list)
    assert all(isinstance(v, float) for v in record["metric"]["benchmark_values"])
    assert isinstance(record["model"]["origins"], list)
    assert isinstance(record["runners"], list) and record["runners"]
    for runner in record["runners"]:
        assert set(runner) == RUNNER
    assert isinstance(record["dependencies"], dict) and record["dependencies"]["torch"]


def test_export_writes_one_valid_record_per_metric(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "startup.json"
    result = cli("compare", *TREE, "--export", "pytorch-benchmark", str(path), "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.stderr
    records = json.loads(path.read_text())
    assert len(records) == 3 * len(METRICS)  # three strategies
    for record in records:
        validate(record)
    by = {(r["benchmark"]["extra_info"]["strategy"], r["metric"]["name"]): r for r in records}
    assert {m for _, m in by} == METRICS
    saved = json.loads((tmp_path / "r.json").read_text())["compare"]
    legacy = next(s for s in saved["strategies"] if s["name"] == "legacy")
    assert by[("legacy", "fill_time_s")]["metric"]["benchmark_values"] == legacy["time"]["samples"]
    assert by[("legacy", "visits")]["metric"]["benchmark_values"] == [float(legacy["visits"])]
    assert by[("legacy", "fill_time_s")]["metric"]["extra_info"]["projected"] is False


def test_report_renders_a_saved_projected_run(cli: Cli, tmp_path: Path) -> None:
    saved = tmp_path / "r.json"
    run = cli("compare", *TREE, "--max-memory", "1KiB", "--time-budget", "0.5", "--json", str(saved), "-q")
    assert run.exit_code == 0, run.stderr
    shown = cli("report", str(saved), "--format", "pytorch-benchmark")
    assert shown.exit_code == 0, shown.stderr
    records = json.loads(shown.stdout)
    for record in records:
        validate(record)
    time = next(r for r in records if r["metric"]["name"] == "fill_time_s")
    assert time["metric"]["extra_info"]["projected"] is True
    low, high = time["metric"]["extra_info"]["interval_s"]
    assert low <= time["metric"]["benchmark_values"][0] <= high
    assert time["benchmark"]["extra_info"]["fill"] == "projected"


def test_export_bad_format_fails_before_measuring(cli: Cli, tmp_path: Path) -> None:
    result = cli("compare", *TREE, "--export", "pytorch-bench", str(tmp_path / "x.json"))
    assert result.exit_code == 2
    assert result.stderr.startswith("dummyprof: error: --export: ")
    assert "pytorch-benchmark" in result.stderr
    assert not (tmp_path / "x.json").exists()
