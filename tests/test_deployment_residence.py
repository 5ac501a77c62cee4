"""Issue #25.1: each byte of a GPU deployment is timed on the device it lives on.

The device-resident part of a shard is filled on the device, its host-resident part (the CPU-offloaded Engram
tables) on this host's CPU, in pinned memory where CUDA is present. There is no GPU here: the choice per tensor
is a plain function, checked with ``torch.cuda.is_available`` faked and meta/cpu standing in for the device.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from dummyprof.deploy import ParallelLayout
from dummyprof.deploy.engine import source_sharder
from dummyprof.deploy.shards import RankShard
from dummyprof.loaders.counting import count_on_meta
from dummyprof.loaders.strategies import get_strategy
from dummyprof.models.presets import preset_source
from dummyprof.scenarios.deployment import fills
from dummyprof.scenarios.deployment.fills import device_part
from dummyprof.scenarios.deployment.run import DEVICE, HOST, fill_device, residence
from tests.conftest import CliResult

META = torch.device("meta")
# two Engram tables (each a weight and its scales) of 3000 rows, split over 2 tp ranks by heads
ENGRAM = ("--preset", "deepseek-v4-like", "--model-arg", "engram_rows=3000")
HOST_BYTES = [794_112, 789_888]  # each rank's tables (test_deployment_cli pins the same)


def _shards(tp: int = 2) -> list[RankShard]:
    source = preset_source("deepseek-v4-like", {"engram_rows": 3000})
    model = source.build(META)
    layout = ParallelLayout(tp=tp)
    sharder = source_sharder(source, model, layout)
    return [sharder.build(coord) for coord in layout.coords()]


def _named(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    found = dict(module.named_parameters(remove_duplicate=False))
    found.update(module.named_buffers(remove_duplicate=False))
    return found


def test_each_tensor_lives_on_the_host_only_if_it_is_an_offloaded_table() -> None:
    for shard, host_bytes in zip(_shards(), HOST_BYTES, strict=True):
        where = residence(shard)
        assert set(where) == {t.name for t in shard.tensors}
        host = sorted(name for name, w in where.items() if w == HOST)
        assert host == [
            "model.engram.0.weight",
            "model.engram.0.weight_scale_inv",
            "model.engram.1.weight",
            "model.engram.1.weight_scale_inv",
        ]
        assert sum(t.nbytes for t in shard.tensors if where[t.name] == HOST) == host_bytes


@pytest.mark.parametrize("cuda", [True, False])
def test_the_fill_device_per_tensor(monkeypatch: pytest.MonkeyPatch, cuda: bool) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    gpu = torch.device("cuda", 0)
    assert fill_device(HOST, gpu) == torch.device("cpu")  # a host table never goes to the device-side fill
    assert fill_device(DEVICE, gpu) == gpu
    assert fill_device(DEVICE, META) == META  # meta standing in for the device
    assert fills.pinned_host_memory() is cuda  # pinned as vLLM pins them where CUDA is, pageable otherwise


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_the_device_part_holds_every_device_resident_tensor_and_no_host_table(device: str) -> None:
    for shard, host_bytes in zip(_shards(), HOST_BYTES, strict=True):
        where = residence(shard)
        whole = {t.name: t.nbytes for t in shard.tensors}
        tables = fills._host_tables(shard)
        counts = {
            name: count_on_meta(shard.module, get_strategy(name)).recorder.records.values()
            for name in ("per-layer", "legacy")
        }
        part = device_part(shard, torch.device(device))
        held = _named(part)
        assert {n for n, w in where.items() if w == DEVICE} <= set(held)  # every device-resident tensor ...
        assert not {n for n, w in where.items() if w == HOST} & set(held)  # ... and no host table
        assert all(t.device.type == device for t in held.values())
        stored = {id(t): t.nbytes for t in held.values()}  # tied tensors count once
        assert sum(stored.values()) == sum(whole.values()) - host_bytes
        # the host-side fill gets exactly the tables, and their bytes
        assert sorted(n for n, *_ in tables) == sorted(n for n, w in where.items() if w == HOST)
        assert sum(torch.Size(shape).numel() * dtype.itemsize for _, shape, dtype, _ in tables) == host_bytes
        # exact visits and bytes per side: the device part's and the tables' add up to the whole shard's
        fresh = _shards()[shard.coord.rank]
        for name, records in counts.items():
            mine = count_on_meta(device_part(fresh, META), get_strategy(name)).recorder.records.values()
            table_names = {n for n, *_ in tables}
            host_side = [x for x in records if table_names & set(x.names)]
            assert not any(table_names & set(x.names) for x in mine)
            assert sum(x.visits for x in mine) + sum(x.visits for x in host_side) == sum(x.visits for x in records)
            assert sum(x.bytes_written for x in mine) + sum(x.bytes_written for x in host_side) == sum(
                x.bytes_written for x in records
            )


def _json(cli: Any, tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "r.json"
    result: CliResult = cli(*args, "--json", str(out))
    assert result.exit_code == 0, result.stderr
    return json.loads(out.read_text())


def test_with_cuda_the_device_part_is_filled_on_the_device_and_the_tables_on_the_host(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CUDA faked present, the CPU standing in for the GPU: compare fills each shard's device-resident part on
    the "device" and its offloaded tables in (requested) pinned host memory, never one on the other's side."""
    import dummyprof.measure.device as device_module
    import dummyprof.scenarios.compare.measure as compare_measure

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(device_module, "resolve_device", lambda spec: torch.device("cpu"))
    monkeypatch.setattr(compare_measure, "resolve_device", lambda spec: torch.device("cpu"))
    device_side: list[dict[str, torch.Tensor]] = []
    host_side: list[tuple[list[str], bool]] = []
    real_measure, real_fill = fills.measure, fills._fill_host_tables

    def spy_measure(options: Any, *, source: Any, progress: Any) -> Any:
        build = source.build

        def recorded(device: torch.device) -> torch.nn.Module:
            module = build(device)
            if device.type != "meta":
                device_side.append(_named(module))
            return module

        source.build = recorded
        return real_measure(options, source=source, progress=progress)

    def spy_fill(tables: Any, clock: Any, *, pinned: bool = False, touched: bool = False) -> float:
        host_side.append(([name for name, *_ in tables], pinned))
        return real_fill(tables, clock, pinned=False, touched=touched)  # no CUDA here to pin with

    monkeypatch.setattr(fills, "measure", spy_measure)
    monkeypatch.setattr(fills, "_fill_host_tables", spy_fill)
    args = ("compare", *ENGRAM, "--tp", "2", "--device", "cuda", "--repeat", "1", "--warmup", "0", "-s", "per-layer")
    section = _json(cli, tmp_path, *args)["deployment"]
    assert (section["target"], section["not_timed"]) == ("cuda", "")
    tables = {f"model.engram.{i}.{w}" for i in (0, 1) for w in ("weight", "weight_scale_inv")}
    assert device_side and all(not tables & set(named) for named in device_side)  # no table on the device side
    filled = [names for names, _ in host_side if names != ["probe"]]
    assert filled and all(set(names) == tables for names in filled)  # only the tables on the host side
    assert all(pinned for _, pinned in host_side)  # pinned memory where CUDA is present
    for entry, host_bytes in zip(section["ranks"], HOST_BYTES, strict=True):
        assert entry["offloaded_bytes"] == host_bytes
        (s,) = entry["strategies"]
        assert s["time"]["how"] in ("measured", "projected") and s["time"]["value"] is not None  # device-resident
        assert (s["host"]["visits"], s["host"]["bytes_written"]) == (4, host_bytes)
        assert (s["host"]["time"]["device"], s["host"]["pinned"]) == ("cpu", True)
        assert s["host"]["time"]["value"] is not None
    report = cli(*args).stdout
    # the headline leads the report, each part on the device it lives on (the host's measured: no ~)
    assert re.match(r"tp 2: 2 ranks.*; slowest rank \d .*, host \d\S* \S+ on cpu \(pinned memory\)", report), report
    assert "fill on cpu " in report and "host fill on cpu" in report
    quiet = cli(*args, "-q").stdout.strip()
    assert " on cpu" in quiet and "host" in quiet, quiet


def test_every_time_in_the_work_table_names_its_device() -> None:
    """Unit: both parts timed (the device part on cuda:0, the tables on the host); real ranks on the host's CPU."""
    from dummyprof.reports.kinds.deployment import deployment_summary, work_table
    from dummyprof.results.common import Estimate
    from dummyprof.results.deployment import DeploymentResult, HostFill, RankEntry, RankStrategy

    host = HostFill(4, 794_112, Estimate.measured([0.002], device="cpu"), pinned=True)
    figures = RankStrategy("per-layer", visits=97, bytes_written=3_500_000, time=Estimate.measured([0.5]))
    figures.host, figures.rank_time = host, Estimate(0.7)
    entry = RankEntry(rank=0, counted_as=0, filled_as=0, offloaded_bytes=794_112, strategies=[figures])
    result = DeploymentResult(device="cuda:0", target="cuda", tp=1, world=1, ranks=[entry], nproc=1)
    result.slowest_rank, result.slowest_strategy = 0, "per-layer"
    table = work_table(result)
    headers = [c.header for c in table.columns]
    assert headers[4] == "fill on cuda:0" and "host fill on cpu" in headers and headers[-1] == "own rank on cpu"
    notes = "; ".join(table.notes)
    assert "filled on this host's cpu (pinned memory)" in notes
    assert "shard's device-resident part (visits less host visits, written less host written) filled on cuda:0" in notes
    assert "a GPU layout: own rank is the whole shard filled on cpu, a CPU time, not the GPU start-up" in notes
    row = [cell.text for cell in table.rows[0]]  # the host part's visits, bytes and time beside the device part's
    assert row[2:10] == ["97 (0)", "3.34 MiB", "500.0 ms", "", "4", "775.50 KiB", "2.0 ms", "700.0 ms"]
    assert (
        deployment_summary(result)
        == "tp 1: 1 ranks; slowest rank 0 500.0 ms on cuda:0, host 2.0 ms on cpu (pinned memory)"
    )
