"""compare, inspect and audit with --tp/--ep/--pp/--dp: one entry per rank, equal to count_deployment (issue #19)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from dummyprof.deploy import ParallelLayout, count_deployment
from dummyprof.deploy.online_quant import PER_LAYER, WHOLE_MODEL, online_quantize
from dummyprof.models.presets import dense_decoder
from tests.conftest import CliResult

Cli = Callable[..., CliResult]
LLAMA = "hf:tests/data/Llama-3.1-8B.json"
SMALL = (
    *("--model-arg", "num_hidden_layers=2", "--model-arg", "hidden_size=256", "--model-arg", "vocab_size=2048"),
    *("--model-arg", "intermediate_size=512"),
)
PRESET = (
    "--preset",
    "dense-decoder",
    "--model-arg",
    "layers=2",
    "--model-arg",
    "hidden=128",
    "--model-arg",
    "vocab=256",
)


def _small_llama() -> torch.nn.Module:
    pytest.importorskip("transformers")
    from dummyprof.models.huggingface import hf_source

    args = {"num_hidden_layers": 2, "hidden_size": 256, "vocab_size": 2048, "intermediate_size": 512}
    return hf_source(LLAMA, args).build(torch.device("meta"))


def _json(cli: Cli, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "r.json"
    result = cli(*args, "--json", str(out))
    assert result.exit_code == 0, result.stderr
    return json.loads(out.read_text())


def test_inspect_tp2_has_one_entry_per_rank_equal_to_count_deployment(cli: Cli, tmp_path: Path) -> None:
    data = _json(cli, tmp_path, "inspect", "--model", LLAMA, *SMALL, "--tp", "2")
    assert data["command"] == "deployment"
    section = data["deployment"]
    expected = count_deployment(_small_llama(), ParallelLayout(tp=2), strategies=["legacy", "per-layer", "unique"])
    assert [r["rank"] for r in section["ranks"]] == [0, 1]
    for entry, rank in zip(section["ranks"], expected.ranks, strict=True):
        assert entry["held_bytes"] == rank.held_bytes
        assert entry["replicated_bytes"] == rank.replicated_bytes
        assert entry["tp_rank"] == rank.tp_rank
        for s in entry["strategies"]:
            want = rank.strategy(s["strategy"])
            assert (s["visits"], s["redundant_visits"], s["bytes_written"]) == (
                want.visits,
                want.redundant_visits,
                want.bytes_written,
            )
            assert s["time"] is None  # inspect counts, never fills
    # the identity: the ranks' bytes = the whole model + replicated tensors once per extra rank (no padding here)
    held = sum(r["held_bytes"] for r in section["ranks"])
    assert section["model_bytes"] == expected.model_bytes
    assert held == section["model_bytes"] + section["replicated_extra_bytes"]
    assert section["replicated_extra_bytes"] == expected.ranks[0].replicated_bytes


def test_node_view_fit_verdicts(cli: Cli, tmp_path: Path) -> None:
    data = _json(
        cli, tmp_path, "inspect", "--model", LLAMA, *SMALL, "--tp", "2", "--ranks-per-node", "1",
        "--device-memory", "4MiB", "--host-memory", "1GiB",
    )  # fmt: skip
    section = data["deployment"]
    first = section["ranks"][0]
    held = first["held_bytes"] + first["rotary_cache_bytes"] + first["kv_scale_bytes"]  # device bytes
    assert [n["ranks"] for n in section["nodes"]] == [[0], [1]]
    assert [r["node"] for r in section["ranks"]] == [0, 1]
    for r in section["ranks"]:
        assert r["device_fits"] is False
        assert r["device_room_bytes"] == 4 * 2**20 - held
    roomy = _json(cli, tmp_path, "inspect", "--model", LLAMA, *SMALL, "--tp", "2", "--device-memory", "1GiB", "--force")
    assert all(r["device_fits"] and r["device_room_bytes"] == 2**30 - held for r in roomy["deployment"]["ranks"])


def test_compare_tp2_measures_the_shard_and_exports_per_rank_records(cli: Cli, tmp_path: Path) -> None:
    export = tmp_path / "bench.json"
    args = ("compare", *PRESET, "--tp", "2", "--repeat", "1", "--warmup", "0", "--export", "pytorch-benchmark")
    data = _json(cli, tmp_path, *args, str(export))
    section = data["deployment"]
    meta = dense_decoder(layers=2, hidden=128, vocab=256, heads=8, kv_heads=2)
    layout = ParallelLayout(tp=2)
    with torch.device("meta"):
        meta = dense_decoder(layers=2, hidden=128, vocab=256)
    expected = count_deployment(
        meta, layout, options={"heads": 8, "kv_heads": 2}, strategies=["legacy", "per-layer", "unique"]
    )
    for entry, rank in zip(section["ranks"], expected.ranks, strict=True):
        assert entry["held_bytes"] == rank.held_bytes
        assert entry["filled_as"] == 0
        for s in entry["strategies"]:
            assert s["visits"] == rank.strategy(s["strategy"]).visits
            assert s["time"]["how"] == "measured" and len(s["time"]["samples"]) == 1
    assert section["slowest_rank"] in (0, 1) and section["slowest_strategy"] == "per-layer"
    records = json.loads(export.read_text())
    assert len(records) == 2 * 3 * 5  # ranks x strategies x metrics
    visits = {
        (r["benchmark"]["extra_info"]["rank"], r["benchmark"]["extra_info"]["strategy"]): r["metric"][
            "benchmark_values"
        ]
        for r in records
        if r["metric"]["name"] == "visits"
    }
    assert visits[(1, "legacy")] == [float(expected.ranks[1].strategy("legacy").visits)]


def test_quiet_summary_fits_80_columns(cli: Cli) -> None:
    result = cli("inspect", "--model", LLAMA, *SMALL, "--tp", "2", "--device-memory", "1GiB", "-q")
    assert result.exit_code == 0
    line = result.stdout.strip()
    assert "\n" not in line and len(line) <= 80
    assert line.startswith("tp 2: 2 ranks, up to ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("inspect", "--model", LLAMA, *SMALL, "--tp", "3"),
            "--tp: 32 attention heads and 8 kv heads do not split over 3 ranks",
        ),
        (("inspect", "--model", LLAMA, *SMALL, "--tp", "2", "--ranks-per-node", "4"), "--ranks-per-node: 4 ranks"),
        (("audit", "--model", LLAMA, *SMALL, "--ep", "3", "--tp", "2"), "--ep: 3 experts ranks but tp 2"),
        (("compare", *PRESET, "--online-quant", "int4"), "--online-quant: unknown format 'int4'"),
        (("compare", *PRESET, "--online-quant", "fp8", "--max-memory", "64KiB"), "--max-memory: online fp8 per layer"),
        (("compare", *PRESET, "--tp", "2", "--trace", "x.json"), "--trace: traces one model's fill, not a deployment"),
    ],
)
def test_bad_deployment_input_is_one_line_exit_2(cli: Cli, args: tuple[str, ...], message: str) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_online_quant_peaks_are_the_exact_accounting(cli: Cli, tmp_path: Path) -> None:
    data = _json(cli, tmp_path, "compare", *PRESET, "--online-quant", "fp8", "--repeat", "1", "--warmup", "0")
    entries = {q["mode"]: q for q in data["deployment"]["online_quant"]}
    with torch.device("meta"):
        meta = dense_decoder(layers=2, hidden=128, vocab=256)
    for mode in (PER_LAYER, WHOLE_MODEL):
        want, _ = online_quantize(meta, mode=mode, scale="tensor", execute=False)
        got = entries[mode]
        assert got["peak_bytes"] == want.peak_bytes
        assert (got["fp8_bytes"], got["scale_bytes"], got["quantized"]) == (
            want.fp8_bytes,
            want.scale_bytes,
            want.quantized,
        )
        assert got["executed"] and got["seconds"] is not None
    assert entries[PER_LAYER]["peak_bytes"] < entries[WHOLE_MODEL]["peak_bytes"]
    assert data["deployment"]["online_quant_target"] == "whole model"


def test_strings_from_the_model_are_data_in_every_medium() -> None:
    from dummyprof.reports.registry import RenderOptions, get_reporter
    from dummyprof.results.common import Estimate
    from dummyprof.results.deployment import DeploymentResult, RankEntry, RankStrategy
    from dummyprof.results.session import Results

    hostile = "\x1b[31m|`<b>*x*</b>"
    strategy = RankStrategy(strategy=hostile, visits=3, bytes_written=6, time=Estimate.projected(1.0))
    result = DeploymentResult(description=hostile, source=hostile, world=1, ranks=[RankEntry(strategies=[strategy])])
    results = Results(command="deployment", deployment=result)
    text = get_reporter("terminal", "deployment").render(results, RenderOptions(width=80))
    assert "\x1b" not in text and "\\x1b" in text
    md = get_reporter("markdown", "deployment").render(results, RenderOptions())
    assert re.search(r"(?<!\\)<b>", md) is None and "\x1b" not in md  # every tag opener escaped


def test_the_gate_refuses_a_layout() -> None:
    from dummyprof.errors import UsageError
    from dummyprof.scenarios.compare.options import CompareOptions, validate

    with pytest.raises(UsageError, match="tp: the perf gate measures one process"):
        validate(CompareOptions(tp=2, project=False))


def test_two_real_gloo_ranks_record_the_meta_counts(cli: Cli, tmp_path: Path) -> None:
    """Part 3: each real rank's own fill records exactly what count_deployment computed on meta for it."""
    args = ("compare", *PRESET, "--tp", "2", "--nproc", "2", "--repeat", "1", "--warmup", "0", "-s", "legacy")
    section = _json(cli, tmp_path, *args, "-s", "per-layer")["deployment"]
    assert (section["nproc"], section["backend"]) == (2, "gloo")
    with torch.device("meta"):
        meta = dense_decoder(layers=2, hidden=128, vocab=256)
    expected = count_deployment(meta, ParallelLayout(tp=2), options={"heads": 8, "kv_heads": 2})
    for entry, rank in zip(section["ranks"], expected.ranks, strict=True):
        for s in entry["strategies"]:
            want = rank.strategy(s["strategy"])
            assert (s["rank_visits"], s["rank_bytes_written"]) == (want.visits, want.bytes_written)
            assert s["rank_time"]["value"] > 0


def test_nproc_must_equal_the_layout(cli: Cli) -> None:
    result = cli("compare", *PRESET, "--ep", "4", "--tp", "2", "--nproc", "2")
    assert result.exit_code == 2
    assert "--nproc: 2 processes for a layout of 4 ranks; give --nproc 4" in result.stderr


def test_offloaded_engram_tables_are_pinned_per_node_rounded_to_powers_of_two(cli: Cli, tmp_path: Path) -> None:
    args = ("inspect", "--preset", "deepseek-v4-like", "--model-arg", "engram_rows=3000", "--tp", "2")
    data = _json(cli, tmp_path, *args, "--ranks-per-node", "1", "--host-memory", "1MiB")
    section = data["deployment"]
    # per rank: 2 tables, each 8 of its 16 hash heads of 3,000 rows (heads 0..7 of 188 rows, 8..15 of 187):
    # rows x 256 fp8 bytes and rows x 8 scale bytes each
    assert [r["offloaded_bytes"] for r in section["ranks"]] == [2 * rows * (256 + 8) for rows in (1504, 1496)]
    pinned = 2 * (2**19 + 2**14)  # 385,024 and 382,976 -> 512 KiB, 12,032 and 11,968 -> 16 KiB
    assert [(n["ranks"], n["pinned_bytes"], n["host_fits"]) for n in section["nodes"]] == [
        ([0], pinned, False),
        ([1], pinned, False),
    ]


def test_measured_and_projected_peaks_are_both_growth_over_the_rss_before() -> None:
    from dummyprof.results.common import Estimate, MemoryUse
    from dummyprof.results.compare import Projection, StrategyResult
    from dummyprof.results.deployment import RankStrategy
    from dummyprof.scenarios.deployment.fills import _fill_figures

    entry = RankStrategy(strategy="per-layer")
    time = Estimate.projected(2.0, 1.5, 3.0, floor=1.0)
    projection = Projection(time=time, peak_rss_bytes=5100, rss_before_bytes=4000)
    _fill_figures(entry, StrategyResult(name="per-layer", projection=projection))
    assert entry.time == time
    assert entry.peak_bytes == 1100  # written bytes + temporary, not the process
    measured = RankStrategy(strategy="per-layer")
    memory = MemoryUse(rss_before_bytes=420 << 20, rss_peak_bytes=(420 << 20) + (102 << 20))
    _fill_figures(measured, StrategyResult(name="per-layer", time=Estimate.measured([1.0]), memory=memory))
    assert measured.peak_bytes == 102 << 20


def test_a_deployment_renders_to_html_with_its_per_rank_table(cli: Cli, tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    page, out = tmp_path / "d.html", tmp_path / "d.json"
    result = cli("inspect", "--model", LLAMA, *SMALL, "--tp", "2", "--json", str(out))
    assert result.exit_code == 0, result.stderr
    result = cli("report", str(out), "--format", "html", "--output", str(page))
    assert result.exit_code == 0, result.stderr
    text = page.read_text()
    terminal = cli("report", str(out)).stdout
    sizes = set(re.findall(r"\d+(?:\.\d+)? [KMG]iB", terminal))
    assert sizes and "<table" in text
    assert {size for size in sizes if size not in text} == set()  # every size the terminal shows is on the page


def test_the_largest_world_answers_with_one_entry_per_distinct_shard(cli: Cli, tmp_path: Path) -> None:
    """Issue #26.3: dp 65,536 (the bound) is two entries at tp 2, and the node view still counts every rank."""
    data = _json(cli, tmp_path, "inspect", *PRESET, "--tp", "2", "--dp", "32768", "--ranks-per-node", "8192")
    result = data["deployment"]
    assert [(r["rank"], r["copies"]) for r in result["ranks"]] == [(0, 32_768), (1, 32_768)]
    assert [len(n["ranks"]) for n in result["nodes"]] == [8192] * 8
    held = sum(r["held_bytes"] * r["copies"] for r in result["ranks"])
    assert sum(n["held_bytes"] for n in result["nodes"]) == held


def test_sigterm_while_shards_are_built_stops_at_the_next_shard(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal

    from dummyprof.deploy import Sharder

    built: list[int] = []
    real = Sharder.build

    def terminated(self: Sharder, coord: object, *args: object, **kwargs: object) -> object:
        built.append(coord.rank)  # type: ignore[attr-defined]
        if len(built) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs at the next bytecode, inside shard building
        return real(self, coord, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Sharder, "build", terminated)
    result = cli("inspect", *PRESET, "--tp", "2", "--pp", "2", "--json", str(tmp_path / "r.json"))
    assert (result.exit_code, result.stderr) == (143, "dummyprof: error: terminated (SIGTERM)\n")
    assert built == [0] and not (tmp_path / "r.json").exists()


def test_a_gpu_layout_without_cuda_here_is_not_timed_and_keeps_exact_counts(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = ("compare", *PRESET, "--tp", "2", "--repeat", "1", "--warmup", "0", "--device-memory", "1GiB")
    section = _json(cli, tmp_path, *args)["deployment"]
    assert (section["target"], section["not_timed"], section["shards_filled"]) == ("cuda", "no-cuda-device-here", 0)
    with torch.device("meta"):
        meta = dense_decoder(layers=2, hidden=128, vocab=256)
    expected = count_deployment(
        meta, ParallelLayout(tp=2), options={"heads": 8, "kv_heads": 2}, strategies=["per-layer"]
    )
    for entry, rank in zip(section["ranks"], expected.ranks, strict=True):
        per_layer = next(s for s in entry["strategies"] if s["strategy"] == "per-layer")
        assert per_layer["time"] is None  # no CPU time stands in for a GPU's
        counted = rank.strategy("per-layer")
        assert (per_layer["visits"], per_layer["bytes_written"]) == (counted.visits, counted.bytes_written)
    quiet = cli(*args, "-q")
    assert quiet.stdout.strip() == "tp 2: 2 ranks, all fit the device; not timed: no CUDA device here"
    assert "fill: not timed: no CUDA device here" in cli(*args).stdout


ENGRAM = ("--preset", "deepseek-v4-like", "--model-arg", "engram_rows=3000")


@pytest.mark.parametrize("memory", [None, "512KiB"])
def test_a_gpu_layout_without_cuda_times_its_host_resident_tables_here(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory: str | None
) -> None:
    """#25.1: the CPU-offloaded Engram tables live in host memory, so they are timed on this host (measured, or
    projected where --max-memory cannot hold them); the device-resident rest says not timed, counts exact."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = ("compare", *ENGRAM, "--tp", "2", "--device-memory", "1GiB", "--repeat", "1", "--warmup", "0")
    args += ("-s", "per-layer", "-s", "legacy", *(("--max-memory", memory) if memory else ()))
    section = _json(cli, tmp_path, *args)["deployment"]
    assert (section["target"], section["not_timed"]) == ("cuda", "no-cuda-device-here")
    assert [r["offloaded_bytes"] for r in section["ranks"]] == [794_112, 789_888]  # tables' rows split by heads
    for entry, legacy_bytes in zip(section["ranks"], [3_080_192, 3_063_808], strict=True):
        per_layer, legacy = entry["strategies"]
        assert (per_layer["time"], legacy["time"]) == (None, None)  # device part
        # two tables, each a weight and its scales: per-layer visits each once; legacy sixteen times in all
        host, legacy_host = per_layer["host"], legacy["host"]
        assert (host["visits"], host["bytes_written"]) == (4, entry["offloaded_bytes"])
        assert (legacy_host["visits"], legacy_host["bytes_written"], legacy_host["time"]["how"]) == (
            16,
            legacy_bytes,
            "projected",
        )
        if memory is None:
            assert (host["time"]["how"], len(host["time"]["samples"])) == ("measured", 1)
        else:  # more than --max-memory: projected from the probe, with its interval
            assert host["time"]["how"] == "projected"
            assert host["time"]["low"] <= host["time"]["value"] <= host["time"]["high"]
        assert host["time"]["contention"]["wall_s"] > 0 and host["time"]["device"] == "cpu"
    quiet = cli(*args, "-q").stdout.strip()
    assert re.fullmatch(r"tp 2: 2 ranks; host ~?\S+ \S+ on cpu, device not timed: no CUDA device here", quiet), quiet
    report = cli(*args).stdout
    assert "fill: the device-resident part (visits less host visits, written less host written) not timed" in report
    headline = r"tp 2: 2 ranks; host ~?\S+ \S+ on cpu, device not timed: no CUDA device here"
    assert re.fullmatch(headline, report.splitlines()[0])  # the headline leads the report
    host = r" per-layer +\d+ \(\d+\) +\S+ MiB +4 +77\d\.\d+ KiB +~?\S+ \S+"  # work table: host visits, bytes, fill
    assert re.search(host, report), report


def test_a_cpu_deployment_names_its_device_in_every_headline(cli: Cli) -> None:
    args = ("compare", *PRESET, "--tp", "2", "--repeat", "3", "--warmup", "0", "--device", "cpu")
    quiet = cli(*args, "-q").stdout.strip()
    assert quiet.startswith("tp 2: 2 ranks") and quiet.endswith(" on cpu"), quiet
    report = cli(*args).stdout
    headline = report.splitlines()[0]  # leads the report
    assert re.match(r"tp 2: 2 ranks.*; (slowest rank \d|ranks within noise) per-layer .* on cpu$", headline), headline


def test_the_slowest_rank_is_named_only_outside_the_noise() -> None:
    from dummyprof.results.common import Estimate
    from dummyprof.results.deployment import DeploymentResult, RankEntry, RankStrategy
    from dummyprof.scenarios.deployment.fills import _slowest

    def rank(index: int, seconds: float, low: float, high: float) -> RankEntry:
        figures = RankStrategy("per-layer", time=Estimate.projected(seconds, low, high))
        return RankEntry(rank=index, counted_as=index, filled_as=index, strategies=[figures])

    overlapping = DeploymentResult(ranks=[rank(0, 10.0, 8.0, 12.0), rank(1, 17.0, 11.0, 20.0)])  # 70% larger
    _slowest(overlapping)
    assert (overlapping.slowest_rank, overlapping.slowest_within_noise) == (1, True)
    apart = DeploymentResult(ranks=[rank(0, 10.0, 8.0, 12.0), rank(1, 17.0, 12.5, 20.0)])
    _slowest(apart)
    assert (apart.slowest_rank, apart.slowest_within_noise) == (1, False)
    alike = DeploymentResult(ranks=[rank(0, 10.0, 9.0, 11.0)])  # one shard for every rank: none is slower
    alike.ranks.append(RankEntry(rank=1, counted_as=0, filled_as=0, strategies=list(alike.ranks[0].strategies)))
    _slowest(alike)
    assert alike.slowest_within_noise


def test_the_layout_is_parsed_once_and_handed_on_as_one_object(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #28: the checks, the run and every shard take the one ParallelLayout built from --tp/--ep/--pp/--dp."""
    from dummyprof.layout import ParallelLayout

    built: list[ParallelLayout] = []
    real = ParallelLayout.from_sizes.__func__  # type: ignore[attr-defined]

    def counted(cls: type[ParallelLayout], **sizes: int) -> ParallelLayout:
        built.append(real(cls, **sizes))
        return built[-1]

    monkeypatch.setattr(ParallelLayout, "from_sizes", classmethod(counted))
    section = _json(cli, tmp_path, "inspect", *PRESET, "--tp", "2", "--ep", "4")["deployment"]
    assert built == [ParallelLayout(tp=2, dp=2, expert_parallel=True)]  # --ep 4 over tp 2 set dp 2, once
    assert (section["tp"], section["dp"], section["ep"], section["world"]) == (2, 2, 4, 4)


def test_load_buffers_count_in_the_device_fit(cli: Cli, tmp_path: Path) -> None:
    """A device exactly the weights' size does not fit once the rotary cache and kv scales are added."""
    first = _json(cli, tmp_path, "inspect", "--model", LLAMA, *SMALL, "--tp", "2")["deployment"]["ranks"][0]
    buffers = first["rotary_cache_bytes"] + first["expert_map_bytes"] + first["kv_scale_bytes"]
    assert buffers == 131_072 * 128 * 2 + 2 * 16  # rotary [positions, head_dim 128] bf16; 2 layers x 4 scales
    data = _json(
        cli,
        tmp_path,
        "inspect",
        "--model",
        LLAMA,
        *SMALL,
        "--tp",
        "2",
        "--device-memory",
        str(first["held_bytes"]),
        "--force",
    )
    rank = data["deployment"]["ranks"][0]
    assert (rank["device_fits"], rank["device_room_bytes"]) == (False, -buffers)


def test_real_ranks_that_do_not_finish_lose_nothing_already_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    from dummyprof.ranks.world import RanksFailed
    from dummyprof.results.deployment import DeploymentResult, RankEntry, RankStrategy
    from dummyprof.scenarios.deployment import ranks
    from dummyprof.scenarios.deployment.fills import _real_ranks

    def one_finishes(options: object, strategies: list[str], limit_s: float) -> dict:
        failed = RanksFailed("2 ranks did not finish within 63 s")
        failed.values = {0: {"strategies": {"per-layer": {"seconds": 1.5, "visits": 15, "bytes_written": 99}}}}
        raise failed

    monkeypatch.setattr(ranks, "run_ranks", one_finishes)
    result = DeploymentResult(ranks=[RankEntry(rank=r, strategies=[RankStrategy("per-layer")]) for r in (0, 1)])
    from types import SimpleNamespace

    _real_ranks(result, SimpleNamespace(nproc=2, time_budget=3.0), ["per-layer"])
    assert (result.ranks_finished, result.ranks_failure) == ([0], "2 ranks did not finish within 63 s")
    mine, theirs = (r.strategies[0] for r in result.ranks)
    assert mine.rank_time is not None and mine.rank_time.value == 1.5
    assert (mine.rank_visits, mine.rank_bytes_written) == (15, 99)
    assert (theirs.rank_time, theirs.rank_visits) == (None, None)  # missing, not zero
    from dummyprof.reports.kinds.deployment import work_table

    notes = " ".join(work_table(result).notes)
    assert "own rank: ranks finished: 0 of 2; the others did not (2 ranks did not finish within 63 s)" in notes
