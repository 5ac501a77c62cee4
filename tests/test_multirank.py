"""Multi-rank engram runs: real processes, gloo, launched by torch.distributed's own launcher.

Each test starts real ranks (``python -m torch.distributed.run`` or ``dummyprof engram --nproc``) on
small tables, with a subprocess timeout so nothing can hang the suite. Faults are injected per rank
through a ``sitecustomize`` module on PYTHONPATH (imported by every process at start-up, before
dummyprof): a patched ``Runner.allocate`` that misbehaves on one rank only (``RANK``, read when called:
ranks started by ``--nproc`` learn their rank after start-up).
Select them with ``pytest -m multirank``; they run in the default suite.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from dummyprof.models.engram import EngramSpec, shard
from dummyprof.results.store import load_results

pytestmark = pytest.mark.multirank

LIMIT_S = 90  # a run that takes longer has hung: fail instead of waiting
ROWS, DIM, HEADS = 4099, 64, 3  # uneven on purpose: heads of 1,367 / 1,366 / 1,366 rows, 2 heads on rank 0
SMALL = [
    "--rows", str(ROWS), "--dim", str(DIM), "--heads", str(HEADS), "--offload", "--backing", "pageable",
    "--method", "memset", "--method", "constant", "--repeat", "2", "--time-budget", "5", "--dist-timeout", "30",
]  # fmt: skip


def _env(site: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="250", OMP_NUM_THREADS="1")
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return env


def torchrun(nproc: int, *args: str, cwd: Path, site: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    command += ["-m", "dummyprof", "engram", *args]
    return subprocess.run(command, cwd=cwd, env=_env(site), capture_output=True, text=True, timeout=LIMIT_S)


def nproc_here(cli: Any, monkeypatch: pytest.MonkeyPatch, site: Path, *args: str) -> Any:
    """``dummyprof engram --nproc 2 ARGS`` in this process (torch already loaded: no second start-up); the
    ranks it spawns are fresh interpreters that import ``site``'s sitecustomize from PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return cli("engram", "--nproc", "2", *args)


def fault(tmp_path: Path, rank: int, code: str) -> Path:
    """A sitecustomize whose ``Runner.allocate`` runs ``code`` on one rank (the others allocate as usual)."""
    site = tmp_path / "site"
    site.mkdir()
    body = textwrap.indent(textwrap.dedent(code), "        ")
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        "from dummyprof.scenarios.engram.runner import Runner\n"
        "_allocate = Runner.allocate\n"
        "def allocate(self, part_rows):\n"
        f"    if os.environ.get('RANK') == '{rank}':\n{body}\n"
        "    return _allocate(self, part_rows)\n"
        "Runner.allocate = allocate\n"
    )
    return site


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    where = tmp_path_factory.mktemp("torchrun2")
    out = torchrun(2, *SMALL, "--tp", "2", "--json", "r.json", cwd=where)
    return out, where / "r.json"


def _covers_every_row_once(data: dict[str, Any], tp: int, dp: int) -> None:
    ranks = data["ranks"]
    world = tp * dp
    assert sorted(r["rank"] for r in ranks) == list(range(world))  # every rank, once
    assert {r["world_size"] for r in ranks} == {world}
    spec = EngramSpec(rows=ROWS, dim=DIM, heads=HEADS, tp=tp, dp=dp)
    heads: list[int] = []
    for r in sorted(ranks, key=lambda r: r["rank"]):
        lay = r["engram"]["layout"]
        assert lay["rank"] == r["rank"]
        mine = shard(spec, r["rank"])
        assert r["part_rows"] == lay["part_rows"] == mine.part_rows
        assert r["table_bytes"] == mine.part_rows * (DIM + DIM // 32)
        heads += range(mine.first_head, mine.first_head + mine.heads)
    assert sorted(heads) == list(range(HEADS)) or world > HEADS
    assert sum(r["part_rows"] for r in ranks) == ROWS


def test_torchrun_two_ranks_cover_every_row_once_in_one_report(
    two: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    out, path = two
    assert out.returncode == 0, out.stderr[-3000:]
    data = _json(path)
    _covers_every_row_once(data, 2, 1)
    assert [r["part_rows"] for r in sorted(data["ranks"], key=lambda r: r["rank"])] == [2733, 1366]
    agg = data["ranks_aggregate"]
    assert agg["world_size"] == 2 and agg["backend"] == "gloo" and agg["steps_aligned"]
    assert [n["ranks"] for n in agg["nodes"]] == [[0, 1]]
    assert agg["nodes"][0]["table_bytes"] == ROWS * (DIM + DIM // 32)
    assert [c["method"] for c in agg["contention"]] == ["memset", "constant"]
    for c in agg["contention"]:
        assert c["rounds"] == 2 and c["ratio"]["value"] > 0
        assert c["ratio"]["value"] == pytest.approx(c["together_s"]["value"] / c["alone_s"]["value"])
    phases = [p["phase"] for p in agg["critical_path"]]
    assert phases == ["allocate", "first touch", "memset", "constant"]
    assert all(p["slowest_rank"] in (0, 1) for p in agg["critical_path"])
    # One report, printed by rank 0 only: one per-rank table with a row for each rank.
    assert out.stdout.count("Ranks (2)") == 1
    assert out.stdout.count("results written to r.json") == 1
    assert "2,733" in out.stdout and "1,366" in out.stdout
    assert "Contention" in out.stdout and "Critical path" in out.stdout
    assert "2 ranks on 1 host (gloo)" in out.stdout
    # The saved file loads and renders without the run.
    loaded = load_results(path)
    assert len(loaded.ranks) == 2 and loaded.ranks_aggregate is not None


def test_nproc_gives_the_same_report_as_torchrun(
    two: tuple[subprocess.CompletedProcess[str], Path],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``dummyprof engram --nproc 2`` run in this process (torch already loaded: no third start-up to wait for); its
    ranks are fresh interpreters as ever, their output read at the descriptors."""
    from dummyprof.cli.app import main

    for name, value in {"NO_COLOR": "1", "COLUMNS": "250", "OMP_NUM_THREADS": "1"}.items():  # as _env() sets them
        monkeypatch.setenv(name, value)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    capfd.readouterr()
    code = main(["engram", "--nproc", "2", *SMALL, "--tp", "2", "--json", "r.json"])
    stdout, stderr = capfd.readouterr()
    assert code == 0, stderr[-3000:]
    a, b = _json(two[1]), _json(tmp_path / "r.json")

    def shape(data: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (r["rank"], r["world_size"], r["local_rank"], r["part_rows"], r["table_bytes"], r["reserved_bytes"],
             [f["method"] for f in r["fills"]], r["steps"])
            for r in sorted(data["ranks"], key=lambda r: r["rank"])
        ]  # fmt: skip

    assert shape(a) == shape(b)
    assert [c["method"] for c in a["ranks_aggregate"]["contention"]] == [
        c["method"] for c in b["ranks_aggregate"]["contention"]
    ]
    assert stdout.count("Ranks (2)") == 1 and "2 ranks on 1 host (gloo)" in stdout


def test_four_ranks_tp2_dp2(tmp_path: Path) -> None:
    args = ["--rows", str(ROWS), "--dim", str(DIM), "--heads", "4", "--offload", "--backing", "pageable"]
    args += ["--method", "memset", "--repeat", "1", "--time-budget", "5", "--dist-timeout", "30"]
    out = torchrun(4, *args, "--tp", "2", "--dp", "2", "--json", "r.json", "-q", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    data = _json(tmp_path / "r.json")
    assert sorted(r["rank"] for r in data["ranks"]) == [0, 1, 2, 3]
    assert [r["part_rows"] for r in sorted(data["ranks"], key=lambda r: r["rank"])] == [1025, 1025, 1025, 1024]
    assert sum(r["part_rows"] for r in data["ranks"]) == ROWS
    assert {r["local_world_size"] for r in data["ranks"]} == {4}
    assert out.stdout.count("4 ranks on 1 host") == 1  # -q: rank 0's summary line only


def test_a_failing_rank_is_reported_by_rank_and_nothing_hangs(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dummyprof.cli.app import main

    site = fault(tmp_path, 1, 'raise MemoryError("simulated: out of memory while allocating")')
    monkeypatch.setenv("NO_COLOR", "1")
    capfd.readouterr()
    code = nproc_here(lambda *args: main(list(args)), monkeypatch, site, *SMALL, "--tp", "2")
    out, err = capfd.readouterr()  # at the descriptors: every rank's output too, not only this process's
    assert code == 1
    assert "dummyprof: error: rank 1 (" in err
    assert "MemoryError: simulated: out of memory while allocating" in err
    assert err.count("simulated: out of memory") == 1  # rank 0 reports it; rank 1 stays quiet
    assert "Ranks (" not in out


def test_a_killed_rank_is_named_by_the_launcher(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    site = fault(tmp_path, 1, "import signal; os.kill(os.getpid(), signal.SIGKILL)")
    out = nproc_here(cli, monkeypatch, site, *SMALL, "--tp", "2")
    assert out.exit_code == 1
    assert "dummyprof: error: rank 1 was killed by SIGKILL" in out.stderr


def test_a_rank_that_stops_answering_is_named_after_the_timeout(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = fault(tmp_path, 1, "import time; time.sleep(600)")
    args = [a if a != "30" else "4" for a in SMALL]  # --dist-timeout 4
    out = nproc_here(cli, monkeypatch, site, *args, "--tp", "2")
    assert out.exit_code == 1
    assert "not reached by every rank within 4 s (--dist-timeout)" in out.stderr
    assert "rank 1 at step" in out.stderr


def test_bad_input_on_one_rank_is_named_and_every_rank_exits_2(tmp_path: Path) -> None:
    # Only under torchrun does each rank parse flags of its own (--nproc checks them once, before starting).
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\nif os.environ.get('RANK') == '1':\n    sys.argv += ['--dim', '250']\n"
    )
    out = torchrun(2, *SMALL, "--tp", "2", cwd=tmp_path, site=site)
    assert out.returncode == 1  # torchrun's own code when ranks fail; its summary shows each rank's
    assert set(re.findall(r"exitcode *: (\d+)", out.stderr)) == {"2"}  # every rank exited 2
    lines = [line for line in out.stderr.splitlines() if line.startswith("dummyprof: error:")]
    assert len(lines) == 1
    assert "rank 1: --dim: 250 is not a multiple of the scale block (32 elements, one scale byte each)" in lines[0]
    assert "rank 0" not in lines[0]


def test_the_gate_runs_a_multirank_scenario_with_exact_counters_per_rank(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "dummyprof.toml"
    config.write_text(
        textwrap.dedent(f"""
        [scenarios.ranks]
        command = "engram-ranks"
        options = {{ nproc = 2, rows = {ROWS}, dim = {DIM}, heads = {HEADS}, tp = 2, offload = true, \
backing = "pageable", methods = ["memset"], repeat = 3, time_budget_s = 5.0, dist_timeout_s = 30.0 }}
        counters = "all"
        """)
    )
    baseline = tmp_path / "baseline.json"
    result = cli("baseline", "--config", str(config), "--output", str(baseline), "-q")
    assert result.exit_code == 0, result.stderr
    metrics = json.loads(baseline.read_text())["gate"]["scenarios"][0]["metrics"]
    assert metrics["rank0.table_bytes_per_rank"]["value"] == 2733 * (DIM + DIM // 32)
    assert metrics["rank1.table_bytes_per_rank"]["value"] == 1366 * (DIM + DIM // 32)
    assert metrics["rank1.memset.bytes_written"]["value"] == 1366 * (DIM + DIM // 32)
    assert len(metrics["memset.time"]["samples"]) == 3  # one critical-path time per round


def _leaves_early(env: Any) -> str:
    """Rank 1 leaves with status 0 before returning (user code calling os._exit(0)); rank 0 keeps working."""
    import time

    if env.rank == 1:
        os._exit(0)
    time.sleep(LIMIT_S)
    return "done"


def test_a_rank_that_exits_0_before_finishing_fails_the_run() -> None:
    from dummyprof.ranks.launch import spawn
    from dummyprof.ranks.world import RanksFailed

    with pytest.raises(RanksFailed) as failed:  # not the time limit's message: the early exit is seen at once
        spawn(_leaves_early, (), 2, limit_s=LIMIT_S - 1)
    assert str(failed.value) == "rank 1 left with exit status 0 before finishing its work"
    assert failed.value.exit_code == 1


def _returns_then_one_fails(env: Any, flag: str) -> int:
    """Rank 0 returns at once; rank 1 waits until rank 0 has returned, then fails."""
    import time
    from pathlib import Path

    if env.rank == 0:
        Path(flag).touch()
        return 7
    while not Path(flag).exists():
        time.sleep(0.05)
    time.sleep(1.0)  # rank 0's value is in the pipe by now
    raise ValueError("boom")


def test_a_failed_rank_keeps_what_the_finished_ranks_returned(tmp_path: Path) -> None:
    from dummyprof.ranks.launch import spawn
    from dummyprof.ranks.world import RanksFailed

    with pytest.raises(RanksFailed) as failed:
        spawn(_returns_then_one_fails, (str(tmp_path / "returned"),), 2, limit_s=LIMIT_S)
    assert str(failed.value) == "rank 1 failed: ValueError: boom"
    assert failed.value.values == {0: 7}
