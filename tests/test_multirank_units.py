"""Multi-rank pieces in one process: launcher environment, failure-aware barriers, checks, aggregate, reports."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dummyprof.errors import UsageError, flag_text
from dummyprof.ranks.world import LaunchEnv, RanksFailed, World, check_ranks, launch_env
from dummyprof.reports.kinds.ranks import ranks_summary
from dummyprof.reports.markdown import render_markdown
from dummyprof.reports.terminal import render
from dummyprof.results.common import Estimate
from dummyprof.results.engram import EngramResult
from dummyprof.results.ranks import RankFill, RankRecord
from dummyprof.results.session import Results
from dummyprof.results.store import results_from_dict, results_to_json
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.ranks import options as ranks_options
from dummyprof.scenarios.engram.ranks import run as ranks_run
from dummyprof.scenarios.engram.ranks.options import EngramRanksOptions, validate
from dummyprof.scenarios.engram.ranks.rank import aggregate, budget_source, rank_options

ENV = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


class FakeStore:
    """The few TCPStore calls a World makes, in memory."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}

    def set(self, key: str, value: str) -> None:
        self.data[key] = value.encode()

    def get(self, key: str) -> bytes:
        return self.data[key]

    def add(self, key: str, n: int) -> int:
        value = int(self.data.get(key, b"0")) + n
        self.data[key] = str(value).encode()
        return value

    def check(self, keys: list[str]) -> bool:
        return all(k in self.data for k in keys)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def world(rank: int = 0, size: int = 2, *, store: Any = None, local_size: int | None = None) -> World:
    env = LaunchEnv(rank, size, rank, local_size or size, "127.0.0.1", 29500)
    clock = FakeClock()
    return World(env, store or FakeStore(), "gloo", 5.0, clock=clock, sleep=clock.sleep)


def test_launch_env_is_read_from_torchrun_variables() -> None:
    assert launch_env({}) is None
    env = launch_env(ENV)
    assert env == LaunchEnv(1, 2, 1, 2, "127.0.0.1", 29500)
    assert launch_env({**ENV, "LOCAL_WORLD_SIZE": "1"}) == LaunchEnv(1, 2, 1, 1, "127.0.0.1", 29500)


def test_incomplete_launch_env_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="MASTER_ADDR, MASTER_PORT not set"):
        launch_env({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"})
    with pytest.raises(UsageError, match="WORLD_SIZE='two' is not an integer"):
        launch_env({**ENV, "WORLD_SIZE": "two"})


def test_barrier_reports_a_failed_rank_by_rank() -> None:
    store = FakeStore()
    other = world(1, store=store)
    assert other.fail("MemoryError: out of memory", usage=False) is False  # rank 0 never reported: say it locally
    me = world(0, store=store)
    with pytest.raises(RanksFailed) as caught:
        me.barrier("fill memset")
    assert str(caught.value) == "rank 1 (" + me.host + ") failed: MemoryError: out of memory"
    assert caught.value.exit_code == 1 and not caught.value.quiet


def test_barrier_failure_of_bad_input_exits_2_and_is_quiet_off_rank_0() -> None:
    store = FakeStore()
    world(0, store=store).fail("--dim: bad", usage=True)
    with pytest.raises(RanksFailed) as caught:
        world(1, store=store).barrier("allocate")
    assert caught.value.exit_code == 2 and caught.value.quiet


def test_barrier_names_the_rank_that_never_arrived() -> None:
    store = FakeStore()
    me = world(0, store=store)
    with pytest.raises(RanksFailed) as caught:
        me.barrier("allocate")
    assert str(caught.value) == (
        "step 1 (allocate) not reached by every rank within 5 s (--dist-timeout): rank 1 at step 0 (start)"
    )
    assert me.clock() >= 5.0  # it waited the whole timeout, no longer


def test_a_failed_rank_stays_quiet_once_rank_0_reported() -> None:
    store = FakeStore()
    store.set("reported", "1")
    assert world(1, store=store).fail("boom", usage=False) is True


class Gathered(World):
    """A World whose all_gather returns what every rank would have sent."""

    def __init__(self, rank: int, seen: list[Any]) -> None:
        super().__init__(LaunchEnv(rank, len(seen), rank, len(seen), "h", 1), FakeStore(), "gloo", 5.0)
        self.seen = seen

    def all_gather(self, label: str, value: Any) -> list[Any]:
        return self.seen


def test_the_same_bad_input_on_every_rank_is_one_line() -> None:
    seen = [("--tp: no", {}), ("--tp: no", {})]
    with pytest.raises(RanksFailed) as caught:
        check_ranks(Gathered(0, seen), None, {})
    assert str(caught.value) == "ranks 0, 1: --tp: no"
    assert caught.value.exit_code == 2 and not caught.value.quiet
    with pytest.raises(RanksFailed) as other:
        check_ranks(Gathered(1, seen), None, {})
    assert other.value.quiet


def test_flags_that_differ_between_ranks_are_named() -> None:
    seen = [(None, {"--rows": "4M", "--repeat": "2"}), (None, {"--rows": "4M", "--repeat": "3"})]
    with pytest.raises(RanksFailed, match=r"flags differ between ranks: --repeat \(rank 0: 2, rank 1: 3\);"):
        check_ranks(Gathered(0, seen), None, {})
    check_ranks(Gathered(0, [(None, {"--rows": "4M"})] * 2), None, {})  # the same everywhere: passes


def test_rank_options_take_the_rank_and_a_share_of_the_node_budget() -> None:
    options = EngramOptions(rows=1000, tp=2, max_memory=8_000)
    mine = rank_options(options, world(1, 2), available=10_000)
    assert (mine.rank, mine.max_memory) == (1, 4_000)
    default = rank_options(EngramOptions(rows=1000, tp=4), world(3, 4, local_size=2), available=10_000)
    assert default.max_memory == 4_000  # 80% of available, split over 2 local ranks
    mapped = rank_options(EngramOptions(rows=1000, tp=2, offload=True, backing="mmap:/t/e.bin"), world(1, 2), 10)
    assert mapped.backing == "mmap:/t/e.bin.rank1"  # each rank creates its own file


def test_tp_times_dp_must_equal_the_world_size() -> None:
    with pytest.raises(UsageError) as caught:
        rank_options(EngramOptions(rows=1000, tp=4), world(0, 2), available=10_000)
    assert flag_text(caught.value) == (
        "--tp: tp 4 x dp 1 = 4 ranks, but torch.distributed started 2 processes; "
        "use tp 2 (with dp 1) or start 4 processes"
    )


def _record(rank: int, host: str, alone: float, together: float, fill_s: float, steps: list[str]) -> RankRecord:
    return RankRecord(
        rank=rank,
        world_size=2,
        local_rank=rank,
        local_world_size=2,
        host=host,
        part_rows=100 + rank,
        table_bytes=1000,
        reserved_bytes=1024,
        available_bytes=3000 - rank,
        allocate_s=Estimate(0.001 * (rank + 1)),
        first_touch_s=Estimate(0.5 - 0.1 * rank),
        fills=[
            RankFill(
                "memset",
                "measured",
                Estimate(fill_s),
                1500,
                True,
                Estimate(2000.0),
                Estimate(alone),
                Estimate(together),
                2,
            )
        ],
        peak_rss_bytes=2000,
        steps=steps,
        engram=EngramResult(),
    )


def test_aggregate_critical_path_nodes_and_contention() -> None:
    records = [_record(0, "a", 1.0, 1.5, 0.2, ["x", "y"]), _record(1, "a", 2.0, 3.0, 0.4, ["x", "y"])]
    agg = aggregate(records, "gloo")
    crit = {p.phase: (p.slowest_rank, p.seconds.value, p.fastest_seconds.value) for p in agg.critical_path}
    assert crit == {"allocate": (1, 0.002, 0.001), "first touch": (0, 0.5, 0.4), "memset": (1, 0.4, 0.2)}
    (node,) = agg.nodes
    assert (node.ranks, node.available_bytes, node.table_bytes, node.peak_rss_sum_bytes) == ([0, 1], 2999, 2000, 4000)
    assert node.needed_bytes == {"memset": 3000} and node.fits == {"memset": False}  # 3000 > 2999
    (c,) = agg.contention
    assert (c.alone_s.value, c.together_s.value, c.ratio.value) == (2.0, 3.0, 1.5)
    assert agg.steps_aligned and not agg.notes
    # 111 columns with the bytes (2.93 KiB > 2.93 KiB): -q keeps to 80 and leaves them to the table
    assert ranks_summary(agg) == "2 ranks on 1 host (gloo); contention x1.50 (memset); a cannot hold memset"
    agg.nodes[0].needed_bytes["memset"] = 2000
    agg.nodes[0].fits["memset"] = True
    assert ranks_summary(agg) == "2 ranks on 1 host (gloo); contention x1.50 (memset)"


def test_aggregate_notes_ranks_that_took_other_steps() -> None:
    agg = aggregate([_record(0, "a", 1, 1, 1, ["x", "y"]), _record(1, "b", 1, 1, 1, ["x", "z"])], "gloo")
    assert not agg.steps_aligned
    assert agg.notes == ["rank 1 took other steps than rank 0 from step 2 (z vs y)"]
    assert [n.host for n in agg.nodes] == ["a", "b"]


def _gathered() -> Results:
    records = [_record(0, "a", 1.0, 1.5, 0.2, ["x"]), _record(1, "a", 2.0, 3.0, 0.4, ["x"])]
    results = Results(command="engram", engram=EngramResult(), ranks=records)
    results.ranks_aggregate = aggregate(records, "gloo")
    return results


def test_saved_multirank_results_round_trip_and_one_process_files_have_no_ranks() -> None:
    import json

    loaded = results_from_dict(json.loads(results_to_json(_gathered())))
    assert [r.rank for r in loaded.ranks] == [0, 1]
    assert loaded.ranks_aggregate is not None and loaded.ranks_aggregate.contention[0].ratio.value == 1.5
    old = results_from_dict({"schema_version": 6, "command": "engram", "engram": {}})
    assert old.ranks == [] and old.ranks_aggregate is None


def test_reports_show_every_rank_and_the_ratio() -> None:
    buffer = io.StringIO()
    render(_gathered(), Console(file=buffer, width=250, no_color=True))
    text = buffer.getvalue()
    assert "Ranks (2)" in text and "0/2" in text and "1/2" in text
    assert "x1.50" in text and "r0:x1.50 r1:x1.50" in text
    assert re.search(r" a +0-1 +.* no +\n", text) and "; a cannot hold memset\n" in text  # the names under the table
    md = render_markdown(_gathered())
    assert "**Ranks (2)**" in md and "| memset | 2.00 s | 3.00 s | x1.50 |" in md


# --- checked before any rank starts (issue #17 item 3) ---------------------------------------------------


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Any:
    """This machine as the ranks' checks see it: cores, memory available, the size of one rank's process."""

    class Machine:
        def set(self, cores: int, available: int, per_rank: int) -> None:
            monkeypatch.setattr(ranks_options, "cpu_count", lambda: cores)
            monkeypatch.setattr(ranks_options, "available_memory_bytes", lambda: available)
            monkeypatch.setattr(ranks_options, "private_bytes", lambda: per_rank)

    found = Machine()
    found.set(64, 1 << 40, 1 << 28)
    return found


def _no_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    def spawn(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a rank was started")

    monkeypatch.setattr(ranks_run, "spawn", spawn)


def test_tp_times_dp_is_checked_against_nproc_before_any_rank_starts(
    cli: Any, machine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_ranks(monkeypatch)
    with pytest.raises(UsageError) as caught:
        validate(EngramRanksOptions(rows=4096, nproc=4, tp=1))
    assert caught.value.field == "nproc"
    result = cli("engram", "--nproc", "4", "--tp", "1", "--rows", "4096", "--offload")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "dummyprof: error: --nproc: 4 ranks, but the tables are split over tp 1 x dp 1 = 1; "
        "make tp x dp 4 (e.g. tp 4, dp 1) or start 1"
    ]


def test_more_ranks_than_cores_or_memory_are_refused_before_any_rank_starts(
    cli: Any, machine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_ranks(monkeypatch)
    machine.set(2, 24 << 30, 180 << 20)
    result = cli("engram", "--nproc", "64", "--tp", "64", "--rows", "4096", "--offload")
    assert (result.exit_code, result.stderr.splitlines()) == (
        2,
        [
            "dummyprof: error: --nproc: 64 ranks on 2 cores: ranks sharing a core time the scheduler, "
            "not the fills; use 2 or fewer"
        ],
    )
    machine.set(64, 3 << 30, 1 << 30)
    with pytest.raises(UsageError) as caught:
        validate(EngramRanksOptions(rows=4096, nproc=4, tp=4, offload=True))
    assert flag_text(caught.value) == (
        "--nproc: 4 ranks need at least 4.00 GiB for their processes alone (1.00 GiB each, this process's own "
        "memory with torch loaded), more than the 3.00 GiB available; use 3 or fewer"
    )
    validate(EngramRanksOptions(rows=4096, nproc=3, tp=3, offload=True))  # 3 fit


def test_other_rank_options_are_named_by_field() -> None:
    with pytest.raises(UsageError) as caught:
        validate(EngramRanksOptions(rows=4096, nproc=2, tp=2, rank=1))
    assert (caught.value.field, caught.value.message) == ("rank", "every rank takes its own (0 to 1); drop it")
    with pytest.raises(UsageError) as caught:
        validate(EngramRanksOptions(rows=4096, nproc=2, tp=2, dist_backend="mpi"))
    assert flag_text(caught.value) == "--dist-backend: unknown backend 'mpi'; choose from: auto, gloo, nccl"


# --- threads and the memory budget, said per rank (issue #20) --------------------------------------------


def test_threads_per_rank_share_the_cores_unless_omp_num_threads_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(ranks_run, "cpu_count", lambda: 16)
    assert ranks_run.threads_per_rank(2) == (8, "cores")
    assert ranks_run.threads_per_rank(3) == (5, "cores")
    monkeypatch.setattr(ranks_run, "cpu_count", lambda: 2)
    assert ranks_run.threads_per_rank(2) == (1, "cores")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert ranks_run.threads_per_rank(2) == (3, "OMP_NUM_THREADS")


def test_threads_are_said_once_under_the_ranks_table() -> None:
    results = _gathered()
    for rec in results.ranks:
        rec.threads, rec.threads_source, rec.cores = 1, "cores", 2
    buffer = io.StringIO()
    render(results, Console(file=buffer, width=120, no_color=True))
    assert buffer.getvalue().count("threads: 1 per rank (2 cores / 2 ranks)\n") == 1
    assert "\nthreads: 1 per rank (2 cores / 2 ranks)\n" in render_markdown(results)
    results.ranks[1].threads = 2
    assert "threads: r0:1 r1:2" in render_markdown(results)
    assert "threads:" not in render_markdown(_gathered())  # older files did not record them


def test_the_memory_budget_is_labelled_per_rank() -> None:
    two = world(0, 2)
    given = EngramOptions(rows=1000, tp=2, max_memory=4 << 30)
    assert budget_source("--max-memory 2.00 GiB", given, two, 0) == "per rank: --max-memory 4.00 GiB / 2 ranks"
    assert budget_source("--max-memory 2.00 GiB, capped by 1.50 GiB available", given, two, 0) == (
        "per rank: --max-memory 4.00 GiB / 2 ranks, capped by 1.50 GiB available"
    )
    default = EngramOptions(rows=1000, tp=2)
    assert budget_source("--max-memory 3.20 GiB", default, two, 8 << 30) == (
        "per rank: 80% of 8.00 GiB available / 2 ranks"
    )
    assert budget_source("1.00 GiB free in /dev/shm", given, two, 0) == "1.00 GiB free in /dev/shm"


def test_no_library_module_starts_a_dummyprof_command_line() -> None:
    """Issue #18: ranks are started from Python with the options as data; only cli/ deals in command lines."""
    package = Path(__file__).resolve().parent.parent / "dummyprof"
    offenders = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.parent.name != "cli"
        and any(
            word in path.read_text() for word in ("import subprocess", '"-m", "dummyprof"', "torch.distributed.run")
        )
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("flag", "value"), [("--all-ranks", None), ("--dist-backend", "gloo"), ("--dist-timeout", "30")]
)
def test_multi_rank_flags_are_refused_on_a_single_process_run(cli: Any, flag: str, value: str | None) -> None:
    result = cli("engram", "--rows", "4096", "--dry-run", flag, *([] if value is None else [value]))
    assert (result.exit_code, result.stderr.splitlines()) == (
        2,
        [f"dummyprof: error: {flag}: only applies to a multi-rank run: add --nproc N or start under torchrun"],
    )
