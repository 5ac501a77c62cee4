"""Cold start against the engine's own loader: vLLM's dummy fill in a fresh process, beside dummyprof's figures.

Run from dummyprof's environment, with the Python of a throwaway environment that has vLLM (never one of the
project's dependencies; docs/engine-goldens.md)::

    python benchmarks/engine_cold_start.py --vllm-python /path/to/vllm-venv/bin/python \\
        --shard llama-3.2-1b --shard llama-3.1-8b-tp4 --trials 3 --json cold-start.json

For each shard (a published config and rank 0 of a tensor-parallel layout) and each trial, in an order that
rotates from trial to trial, each a fresh process:

- vLLM: the shard built by vLLM's own classes on the CPU, for real (``initialize_model`` with the machinery of
  ``vllm_goldens.py``: compiled extensions stubbed, an H200 faked so quantization methods pick the layouts they pick
  there, the rank's parallel groups set); its memory comes from ``torch.empty``, untouched. Then
  ``DummyModelLoader(LoadConfig(load_format="dummy")).load_weights(model, model_config)`` is timed, once the
  helper processes the build started have ended (``settle``): wall time and the process's minor page faults,
  system and user time (``getrusage`` deltas) around the fill, and the CPU the rest of the machine spent
  meanwhile; the visits and bytes its per-tensor initializer writes (hooked); then the same fill again on the
  touched tensors (the refill);
- dummyprof measured: ``dummyprof compare --model hf:CONFIG [--tp N] --device cpu -s per-layer -s legacy --json``,
  the shard fitting memory, with ``--time-budget 30m --repeat 3`` (``--measured-budget``, ``--measured-repeat``) so
  that its rounds fit the budget and are measured, not projected (a layout's rank 0 shard is built as vLLM splits
  it and filled; docs/deployments.md);
- dummyprof projected: the same with ``--max-memory`` at half the shard, so it is projected from calibration fills
  at the default ``--time-budget``.

Where the two interpreters' torch builds differ (vLLM's CUDA build against dummyprof's CPU build), it says so and
also runs dummyprof's two commands on the engine's interpreter (``PYTHONPATH`` at this checkout; dummyprof's
dependencies must be installed there: of vLLM 0.33's environment, only scipy was missing). It prints, per trial,
both sides' visits and bytes written and their difference, the ratios dummyprof measured / vLLM and projected /
vLLM (per-layer is vLLM 0.33's traversal, the like-for-like one; legacy, vLLM <= 0.29's, for reference), whether
vLLM's time lies in the projection's interval, and the load average before each process; then the ratios as one
Markdown table. ``--json`` keeps every figure. Exit 1 when a process failed or the bytes differ.

This file runs under both interpreters: the driver (stdlib only) and, with ``--engine-trial``, one vLLM trial.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MARK = "ENGINE-TRIAL "  # the engine trial's one line of results on stdout; vLLM's own output goes to stderr
FORMAT = 1  # the --json record's layout
BYTES_WITHIN = 1088  # vLLM and dummyprof fill the same bytes to within this (the issue's side-by-side figure)
TIMEOUT_S = 1800  # one process; dummyprof's default --time-budget is 60 s of measured rounds
SETTLE_S = 120  # the longest wait for the build's helper processes before the fill is timed anyway


@dataclasses.dataclass(frozen=True)
class Shard:
    name: str
    config: str  # relative to the repository root
    tp: int
    label: str


SHARDS = {
    s.name: s
    for s in (
        Shard("llama-3.2-1b", "benchmarks/configs/Llama-3.2-1B.json", 1, "Llama-3.2-1B whole"),
        Shard("llama-3.1-8b-tp4", "tests/data/Llama-3.1-8B.json", 4, "Llama-3.1-8B tp 4 rank 0"),
        Shard("qwen1.5-moe-tp8", "benchmarks/configs/Qwen1.5-MoE-A2.7B.json", 8, "Qwen1.5-MoE-A2.7B tp 8 rank 0"),
        Shard(
            "llama-3.1-8b-ct-fp8-tp4",
            "tests/data/Llama-3.1-8B-Instruct-FP8-dynamic.json",
            4,
            "Llama-3.1-8B compressed-tensors fp8 tp 4 rank 0",
        ),
    )
}


# ---- one vLLM trial, in the engine's interpreter -------------------------------------------------------------------


def _machine_busy_s() -> float:
    """CPU seconds every process on the machine has spent so far (``/proc/stat``: all but idle and iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _usage(fn: Callable[[], None]) -> dict[str, float]:
    """Wall time and this process's page faults and CPU time spent in ``fn``, and the CPU time the rest of the
    machine spent meanwhile (what competed for the cores)."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    busy = _machine_busy_s()
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    busy = _machine_busy_s() - busy
    after = resource.getrusage(resource.RUSAGE_SELF)
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return {
        "wall_s": wall,
        "user_s": user,
        "sys_s": system,
        "others_cpu_s": max(0.0, busy - user - system),
        "minor_faults": after.ru_minflt - before.ru_minflt,
        "major_faults": after.ru_majflt - before.ru_majflt,
    }


def _children() -> list[str]:
    """The command lines of this process's running children."""
    me, found = str(os.getpid()), []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == me:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip())
        except OSError:
            continue
    return found


def settle(limit_s: float = SETTLE_S) -> dict[str, Any]:
    """Wait, up to ``limit_s``, for the helper processes the build started to end. vLLM's build on this faked H200
    starts kernel-library helpers (``humming``'s nvrtc build and launcher) that spend seconds of CPU right after;
    on a GPU node they take cores the fill does not use, on a 2-core VM they take the fill's own."""
    start, seen = time.perf_counter(), _children()
    while _children() and time.perf_counter() - start < limit_s:
        time.sleep(0.1)
    return {"helpers": seen, "waited_s": time.perf_counter() - start, "still_running": _children()}


def engine_trial(shard: Shard) -> dict[str, Any]:
    """Build rank 0 of ``shard`` with vLLM's classes on the CPU and time its dummy loader's first fill and refill."""
    import vllm_goldens as goldens  # this file's folder is on sys.path when it runs as a script

    goldens.fake_cuda((9, 0), "NVIDIA H200")
    import torch
    import vllm
    from vllm.config.load import LoadConfig
    from vllm.model_executor.model_loader import dummy_loader

    directory = tempfile.mkdtemp()
    try:
        shutil.copy(ROOT / shard.config, Path(directory) / "config.json")
        start = time.perf_counter()
        model, model_config = goldens.build_rank(directory, {"tp": shard.tp}, 0, device="cpu")
        build_s = time.perf_counter() - start
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in _registered(model)}
    visits: list[tuple[Any, str]] = []
    original = dummy_loader.initialize_single_dummy_weight

    def hooked(param: Any, *args: Any, name: str = "", **kwargs: Any) -> None:
        visits.append((param, name))
        original(param, *args, name=name, **kwargs)

    loader = dummy_loader.DummyModelLoader(LoadConfig(load_format="dummy"))
    helpers = settle()
    dummy_loader.initialize_single_dummy_weight = hooked
    try:
        first = _usage(lambda: loader.load_weights(model, model_config))
        count = len(visits)
        refill = _usage(lambda: loader.load_weights(model, model_config))
    finally:
        dummy_loader.initialize_single_dummy_weight = original
    first_visits = visits[:count]
    written = sum(t.nbytes for t, name in first_visits if goldens.fill_rule(t, name)[0] != "skip")
    return {
        "vllm": vllm.__version__,
        "torch": torch.__version__,
        "torch_cuda_build": torch.version.cuda,
        "torch_threads": torch.get_num_threads(),
        "build_s": build_s,
        "settle": helpers,
        "held_bytes": sum(storages.values()),
        "storages": len(storages),
        "visits": count,
        "visited_storages": len({t.untyped_storage().data_ptr() for t, _ in first_visits}),
        "bytes_written": written,
        "first": first,
        "refill": refill,
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def _registered(model: Any) -> list[Any]:
    """Every registered tensor (parameters and buffers) on a real device."""
    tensors = [t for _, t in model.named_parameters(remove_duplicate=False)]
    tensors += [t for _, t in model.named_buffers(remove_duplicate=False)]
    return [t for t in tensors if t.device.type != "meta"]


# ---- the driver ----------------------------------------------------------------------------------------------------


def _run(command: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=ROOT, check=False)
    return done, time.perf_counter() - start


def _failure(done: subprocess.CompletedProcess[str]) -> str:
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return f"exit {done.returncode}: " + " | ".join(tail)


def run_engine(python: str, shard: Shard) -> dict[str, Any]:
    done, wall = _run([python, str(Path(__file__).resolve()), "--engine-trial", shard.name])
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if done.returncode or not lines:
        return {"error": _failure(done), "process_wall_s": wall}
    return {**json.loads(lines[-1].removeprefix(MARK)), "process_wall_s": wall}


@dataclasses.dataclass
class Side:
    """One interpreter running dummyprof: its label, Python, environment and whether it takes ``--project``."""

    label: str
    python: str
    env: dict[str, str] | None
    project_flag: bool


@dataclasses.dataclass(frozen=True)
class Measured:
    """How the measured runs are asked for: a time budget they fit in, and their rounds."""

    budget: str
    repeat: int
    strategies: tuple[str, ...] = ("per-layer", "legacy")


def compare_command(
    side: Side, shard: Shard, out: Path, extra: Measured | int, strategies: tuple[str, ...] = ("per-layer", "legacy")
) -> list[str]:
    """``compare`` on ``shard``: measured with ``extra``'s budget and rounds (a ``Measured``), or projected under
    ``--max-memory extra`` (bytes) at the default time budget."""
    command = [side.python, "-m", "dummyprof", "compare", "--model", f"hf:{shard.config}"]
    command += ["--tp", str(shard.tp)] if shard.tp > 1 else []
    command += ["--device", "cpu", *(a for name in strategies for a in ("-s", name))]
    command += ["--json", str(out), "--force", "-q"]
    if isinstance(extra, Measured):
        command += ["--time-budget", extra.budget, "--repeat", str(extra.repeat)]
    else:
        command += ["--max-memory", f"{max(1, extra >> 20)}MiB"] + (["--project"] if side.project_flag else [])
    return command


def run_dummyprof(side: Side, shard: Shard, extra: Measured | int, strategies: tuple[str, ...]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "compare.json"
        command = compare_command(side, shard, out, extra, strategies)
        done, wall = _run(command, side.env)
        if done.returncode or not out.exists():
            return {"error": _failure(done), "command": command[1:], "process_wall_s": wall}
        document = json.loads(out.read_text())
    return {**dummyprof_figures(document), "command": command[1:], "process_wall_s": wall}


def dummyprof_figures(document: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's figures per strategy from a ``compare --json`` document (a plain compare or a deployment)."""
    environment = document["environment"]
    deployment = document.get("deployment")
    if deployment:
        ranks = {r["rank"]: r for r in deployment["ranks"]}
        zero = ranks[0]
        filled = ranks.get(zero.get("filled_as", 0), zero)
        times = {s["strategy"]: s["time"] for s in filled["strategies"]}
        strategies = {
            s["strategy"]: _strategy(s, s["time"] or times.get(s["strategy"]), s.get("redundant_visits"))
            for s in zero["strategies"]
        }
        held = zero["held_bytes"]
    else:
        compare = document["compare"]
        strategies = {s["name"]: _strategy(s, s["time"], s.get("redundant_visits")) for s in compare["strategies"]}
        held = compare["model"]["bytes"]
    notices = document.get("notices", [])
    return {"torch": environment["torch_version"], "held_bytes": held, "strategies": strategies, "notices": notices}


def _strategy(entry: dict[str, Any], estimate: dict[str, Any] | None, redundant: int | None) -> dict[str, Any]:
    estimate = estimate or {}
    return {
        "visits": entry["visits"],
        "redundant_visits": redundant,
        "bytes_written": entry["bytes_written"],
        "time_s": estimate.get("value"),
        "how": estimate.get("how"),
        "low_s": estimate.get("low"),
        "high_s": estimate.get("high"),
        "samples_s": estimate.get("samples", []),
        "floor_s": estimate.get("floor"),
    }


def interpreter_torch(python: str, env: dict[str, str] | None = None) -> str:
    done, _ = _run([python, "-c", "import torch; print(torch.__version__)"], env)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else "?"


def accepts_project(python: str, env: dict[str, str] | None) -> bool:
    """Whether this dummyprof's compare has a ``--project`` flag (else ``--max-memory`` alone forces projecting)."""
    done, _ = _run([python, "-m", "dummyprof", "compare", "--help"], env)
    return "--project " in done.stdout or "--project\n" in done.stdout


def trial_order(methods: list[str], trial: int) -> list[str]:
    """Rotated by trial, so no method always runs first; vLLM first in trial 0 (its bytes size --max-memory)."""
    k = trial % len(methods)
    return methods[k:] + methods[:k]


def run_trial(
    shard: Shard, trial: int, vllm_python: str, sides: list[Side], measured: Measured, held: list[int]
) -> list[dict[str, Any]]:
    methods = ["vllm"] + [f"{side.label}:{mode}" for side in sides for mode in ("measured", "projected")]
    runs = []
    for method in trial_order(methods, trial):
        load = os.getloadavg()
        if method == "vllm":
            result = run_engine(vllm_python, shard)
        else:
            label, mode = method.split(":")
            side = next(s for s in sides if s.label == label)
            if mode == "measured":
                result = run_dummyprof(side, shard, measured, measured.strategies)
            elif held:
                result = run_dummyprof(side, shard, held[0] // 2, measured.strategies)
            else:
                result = {"error": "no shard size known yet to set --max-memory below it"}
            result["mode"] = mode
            result["interpreter"] = label
        if not held and result.get("held_bytes"):
            held.append(int(result["held_bytes"]))
        result["method"] = method
        result["loadavg"] = list(load)
        runs.append(result)
        print(f"  trial {trial + 1} {method}: {_one_line(result)}", file=sys.stderr, flush=True)
    return runs


def _one_line(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"FAILED {result['error']}"
    if "first" in result:
        return f"fill {result['first']['wall_s']:.2f} s, {result['visits']} visits, {result['bytes_written']:,} B"
    per_layer = result["strategies"].get("per-layer", {})
    return f"per-layer {per_layer.get('how')} {per_layer.get('time_s') or float('nan'):.2f} s"


# ---- the report ----------------------------------------------------------------------------------------------------


def _ratio(value: float | None, reference: float) -> str:
    return "-" if value is None else f"{value / reference:.2f}"


def _within(strategy: dict[str, Any], reference: float) -> str:
    low, high = strategy.get("low_s"), strategy.get("high_s")
    if low is None or high is None:
        return "-"
    return "yes" if low <= reference <= high else ("below" if reference < low else "above")


def comparison_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per dummyprof run of a trial: its figures against this trial's vLLM first fill."""
    engine = next((r for r in runs if r["method"] == "vllm" and "error" not in r), None)
    rows = []
    for run in runs:
        if run["method"] == "vllm" or "error" in run or engine is None:
            continue
        reference = engine["first"]["wall_s"]
        per_layer, legacy = run["strategies"].get("per-layer", {}), run["strategies"].get("legacy", {})
        rows.append(
            {
                "interpreter": run["interpreter"],
                "mode": run["mode"],
                "torch": run["torch"],
                "loadavg_1m": run["loadavg"][0],
                "vllm_s": reference,
                "per_layer_how": per_layer.get("how"),
                "per_layer_s": per_layer.get("time_s"),
                "per_layer_ratio": None if per_layer.get("time_s") is None else per_layer["time_s"] / reference,
                "per_layer_interval_s": [per_layer.get("low_s"), per_layer.get("high_s")],
                "vllm_in_interval": _within(per_layer, reference),
                "legacy_s": legacy.get("time_s"),
                "legacy_ratio": None if legacy.get("time_s") is None else legacy["time_s"] / reference,
                "visits_difference": per_layer.get("visits", 0) - engine["visits"],
                "bytes_difference": per_layer.get("bytes_written", 0) - engine["bytes_written"],
            }
        )
    return rows


def print_shard(shard: Shard, trials: list[list[dict[str, Any]]]) -> None:
    print(f"\n{shard.label} ({shard.name}: hf:{shard.config}" + (f" --tp {shard.tp})" if shard.tp > 1 else ")"))
    print(
        " trial  load  settled   vLLM first fill  minor faults   sys s   user s  CPU/wall  others CPU   refill   visits"
        "  written"
    )
    for number, runs in enumerate(trials, 1):
        for run in runs:
            if run["method"] != "vllm":
                continue
            load = f"{run['loadavg'][0]:4.1f}"
            if "error" in run:
                print(f" {number:>5}  {load}   FAILED: {run['error']}")
                continue
            first, refill = run["first"], run["refill"]
            share = (first["sys_s"] + first["user_s"]) / first["wall_s"]
            settled = run.get("settle", {})
            print(
                f" {number:>5}  {load}  {settled.get('waited_s', 0.0):>5.1f} s  {first['wall_s']:>13.2f} s  "
                f"{first['minor_faults']:>12,}  {first['sys_s']:>6.2f}  {first['user_s']:>7.2f}  {share:>8.2f}"
                f"  {first.get('others_cpu_s', float('nan')):>8.2f} s  {refill['wall_s']:>5.2f} s  "
                f"{run['visits']:>7,}  {run['bytes_written']:,} B"
            )
    print(
        " trial  load  dummyprof on   asked      got        per-layer  / vLLM         interval  vLLM in"
        "    legacy  / vLLM  visits     bytes diff"
    )
    for number, runs in enumerate(trials, 1):
        for run in runs:
            if run["method"] != "vllm" and "error" in run:
                print(f" {number:>5}  {run['loadavg'][0]:4.1f}  {run['method']}: FAILED: {run['error']}")
        for row in comparison_rows(runs):
            print(f" {number:>5}  " + _row_line(row))


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _row_line(row: dict[str, Any]) -> str:
    low, high = row["per_layer_interval_s"]
    interval = "-" if low is None or high is None else f"{low:.2f}-{high:.2f} s"
    return (
        f"{row['loadavg_1m']:4.1f}  {row['interpreter']:<13}  {row['mode']:<9}  {row['per_layer_how'] or '-':<9}  "
        f"{_seconds(row['per_layer_s']):>8}  {_ratio(row['per_layer_s'], row['vllm_s']):>6}  {interval:>15}  "
        f"{row['vllm_in_interval']:<5}  {_seconds(row['legacy_s']):>8}  {_ratio(row['legacy_s'], row['vllm_s']):>6}  "
        f"{row['visits_difference']:>+6,}  {row['bytes_difference']:>+11,} B"
        + ("" if abs(row["bytes_difference"]) <= BYTES_WITHIN else "  BYTES DIFFER")
    )


def print_summary(shards: list[Shard], trials: dict[str, list[list[dict[str, Any]]]], sides: list[Side]) -> None:
    """The issue's table, one cell per trial in trial order: paste-ready Markdown."""
    print("\n| shard | dummyprof on | vLLM first fill (its refill) | measured / vLLM | projected / vLLM | load |")
    print("|---|---|---|---|---|---|")
    for shard in shards:
        engines = [r for runs in trials[shard.name] for r in runs if r["method"] == "vllm" and "error" not in r]
        fills = ", ".join(f"{r['first']['wall_s']:.1f}" for r in engines)
        refills = ", ".join(f"{r['refill']['wall_s']:.1f}" for r in engines)
        for side in sides:
            rows = [row for runs in trials[shard.name] for row in comparison_rows(runs)]
            ratios = {
                mode: ", ".join(
                    f"{row['per_layer_ratio']:.2f}"
                    + ("" if row["per_layer_how"] == mode else f" ({row['per_layer_how']})")
                    for row in rows
                    if row["interpreter"] == side.label and row["mode"] == mode and row["per_layer_ratio"] is not None
                )
                for mode in ("measured", "projected")
            }
            loads = [r["loadavg"][0] for runs in trials[shard.name] for r in runs]
            load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
            print(
                f"| {shard.label} | {side.label} | {fills or '-'} s ({refills or '-'} s) | {ratios['measured'] or '-'} "
                f"| {ratios['projected'] or '-'} | {load} |"
            )


def print_versions(record: dict[str, Any]) -> None:
    torch = record["torch"]
    print(
        f"vLLM {record['vllm']}; torch: vLLM's interpreter {torch['engine']}, dummyprof's {torch['dummyprof']}"
        + (
            " (the builds differ: dummyprof also ran on the engine's interpreter, rows 'engine')"
            if record["builds_differ"]
            else ""
        )
    )
    print(
        f"{record['machine']['cpus']} CPUs, {record['machine']['processor']}; load: 1-minute load average before "
        "each process; settled: the wait, after vLLM's build, for the helper processes it started (kernel-library "
        "builds) to end; CPU/wall: the fill's CPU seconds (user + sys, all threads) per second; others CPU: what the "
        "rest of the machine spent during the fill;\n"
        "per-layer is vLLM 0.33's traversal (like for like), legacy vLLM <= 0.29's; diffs: dummyprof per-layer less "
        "vLLM; a whole model (no --tp) is counted by dummyprof as transformers builds it (q, k, v and gate, up "
        "unfused; no kv scales), so its visits differ from vLLM's: its bytes are the check"
    )


# ---- main ----------------------------------------------------------------------------------------------------------


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shard", action="append", choices=sorted(SHARDS), help="a shard (repeatable; default all)")
    parser.add_argument("--trials", type=int, default=3, help="fresh-process trials per method (default 3)")
    parser.add_argument("--json", type=Path, help="write every figure here (refuses to overwrite without --force)")
    parser.add_argument("--force", action="store_true", help="overwrite --json")
    parser.add_argument(
        "--vllm-python",
        default=os.environ.get("VLLM_PYTHON", "/work/vllm-venv/bin/python"),
        help="the Python of the environment with vLLM (default $VLLM_PYTHON, else /work/vllm-venv/bin/python)",
    )
    parser.add_argument(
        "--measured-budget", default="30m", help="--time-budget of the measured runs, long enough to measure them"
    )
    parser.add_argument(
        "--strategy", action="append", choices=("per-layer", "legacy"), help="dummyprof's strategies (default both)"
    )
    parser.add_argument("--measured-repeat", type=int, default=3, help="--repeat of the measured runs (default 3)")
    parser.add_argument("--python", default=sys.executable, help="dummyprof's Python (default: this one)")
    parser.add_argument("--engine-trial", choices=sorted(SHARDS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.trials < 1 or args.measured_repeat < 1:
        parser.error("--trials and --measured-repeat: at least 1")
    if args.json is not None and args.json.exists() and not args.force:
        parser.error(f"--json: {args.json} exists; pass --force to overwrite it")
    if not Path(args.vllm_python).exists():
        parser.error(f"--vllm-python: {args.vllm_python} not found; give the Python of an environment with vLLM")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.engine_trial:
        with contextlib.redirect_stdout(sys.stderr):
            result = engine_trial(SHARDS[args.engine_trial])
        print(MARK + json.dumps(result), flush=True)
        return 0
    engine_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    torch_engine, torch_ours = interpreter_torch(args.vllm_python), interpreter_torch(args.python)
    sides = [Side("dummyprof-env", args.python, None, accepts_project(args.python, None))]
    if torch_engine != torch_ours:
        sides.append(Side("engine", args.vllm_python, engine_env, accepts_project(args.vllm_python, engine_env)))
    shards = [SHARDS[name] for name in (args.shard or SHARDS)]
    measured = Measured(args.measured_budget, args.measured_repeat, tuple(args.strategy or ("per-layer", "legacy")))
    record: dict[str, Any] = {
        "format": FORMAT,
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "vllm": "?",
        "torch": {"engine": torch_engine, "dummyprof": torch_ours},
        "builds_differ": torch_engine != torch_ours,
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "measured_runs": dataclasses.asdict(measured),
        "projected_runs": "--max-memory at half the shard's bytes, the default --time-budget",
        "bytes_within": BYTES_WITHIN,
        "shards": {},
    }
    held: dict[str, list[int]] = {s.name: [] for s in shards}
    trials: dict[str, list[list[dict[str, Any]]]] = {s.name: [] for s in shards}
    for trial in range(args.trials):
        for shard in shards:  # trials interleaved across shards and methods
            runs = run_trial(shard, trial, args.vllm_python, sides, measured, held[shard.name])
            trials[shard.name].append(runs)
            record["vllm"] = next((r["vllm"] for r in runs if "vllm" in r), record["vllm"])
    failed = False
    print_versions(record)
    for shard in shards:
        print_shard(shard, trials[shard.name])
        rows = [comparison_rows(runs) for runs in trials[shard.name]]
        failed |= any("error" in run for runs in trials[shard.name] for run in runs)
        failed |= any(abs(row["bytes_difference"]) > BYTES_WITHIN for trial in rows for row in trial)
        record["shards"][shard.name] = {**dataclasses.asdict(shard), "trials": trials[shard.name], "rows": rows}
    print_summary(shards, trials, sides)
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
        print(f"\nwritten to {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
