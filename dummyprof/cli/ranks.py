"""``engram`` on several ranks: ``--nproc N`` starts them from here; under torchrun this process is one.

``--nproc``: the options are parsed and checked here, before any rank starts, and the library runs the
ranks and hands back the gathered Results. Under torchrun every rank parses its own flags after joining,
so bad input on any rank is reported by rank on rank 0 (exit 2 on every rank), and flags that differ
between ranks are named before anything is measured.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from dummyprof.cli.output import check_outputs, emit, html_reports, report_error
from dummyprof.errors import UsageError, flag_text
from dummyprof.scenarios.engram.ranks.world import LaunchEnv
from dummyprof.units import parse_float, parse_int

if TYPE_CHECKING:
    from dummyprof.scenarios.engram.options import EngramOptions
    from dummyprof.scenarios.engram.ranks.world import World


def engram_on_ranks(params: dict[str, Any], env: LaunchEnv | None, parse: Callable[[], EngramOptions]) -> int:
    """The exit code; ``parse`` turns the flags into checked single-process options."""
    timeout_s = parse_float("--dist-timeout", str(params["dist_timeout"]), example="600")
    json_path, force, quiet = params["json_path"], params["force"], params["quiet"]
    if env is None:
        return _nproc(params, parse, timeout_s)
    if params["nproc"] is not None:
        raise UsageError("--nproc", f"this process is already rank {env.rank} of {env.world_size}; drop --nproc")
    if not timeout_s > 0:
        raise UsageError("--dist-timeout", f"must be a positive number of seconds, got {timeout_s:g}")
    from dummyprof.scenarios.engram.ranks.rank import run_rank
    from dummyprof.scenarios.engram.ranks.world import pick_backend

    def prepare(world: World) -> EngramOptions:
        from dummyprof.scenarios.engram.options import validate
        from dummyprof.scenarios.engram.ranks.rank import rank_options

        options = parse()
        validate(rank_options(options, world, available=0))
        if world.rank == 0:  # only rank 0 writes the results files
            check_outputs({"--json": json_path, "--html": params["html"]}, force=force)
        return options

    backend = pick_backend(str(params["dist_backend"]), offload=bool(params["offload"]), device=str(params["device"]))
    names = {"--" + k.replace("_", "-"): str(v) for k, v in sorted(params.items()) if k != "all_ranks"}
    outcome = run_rank(
        env, prepare, backend=backend, timeout_s=timeout_s, describe=flag_text, names=names, report=report_error
    )
    if outcome.exit_code:
        if outcome.error and outcome.rank != 0:
            report_error(outcome.error)
        raise typer.Exit(outcome.exit_code)
    if outcome.gathered is not None:
        reports = html_reports(params["html"])
        return emit(outcome.gathered, json_path=json_path, quiet=quiet, force=force, reports=reports)
    if params["all_ranks"] and outcome.results is not None:
        sys.stdout.flush()
        emit(outcome.results, json_path=None, quiet=quiet)
    return 0


def _nproc(params: dict[str, Any], parse: Callable[[], EngramOptions], timeout_s: float) -> int:
    """Check everything, then start the ranks here; rank 0's gathered Results are printed and saved."""
    import dataclasses

    from dummyprof.scenarios.engram.ranks.run import EngramRanksOptions, launch_ranks

    nproc = parse_int("--nproc", str(params["nproc"]), minimum=1, example="2")
    single = parse()
    fields = {f.name: getattr(single, f.name) for f in dataclasses.fields(single)}
    options = EngramRanksOptions(
        **fields, nproc=nproc, dist_timeout_s=timeout_s, dist_backend=str(params["dist_backend"])
    )
    json_path, force, quiet = params["json_path"], params["force"], params["quiet"]
    reports = check_outputs({"--json": json_path, "--html": params["html"]}, force=force)
    run = launch_ranks(options, describe=flag_text)
    code = emit(run.gathered, json_path=json_path, quiet=quiet, force=force, reports=reports)
    if params["all_ranks"]:
        for own in run.own[1:]:
            emit(own, json_path=None, quiet=quiet)
    return code
