"""``dummyprof engram``: Engram tables per rank, fp8 fill methods, memory, measured or projected.

On several ranks, ``--nproc N`` starts them from here; under torchrun this process is one. ``--nproc``:
the options are parsed and checked here, before any rank starts, and the library runs the ranks and
hands back the gathered Results. Under torchrun every rank parses its own flags after joining, so bad
input on any rank is reported by rank on rank 0 (exit 2 on every rank), and flags that differ between
ranks are named before anything is measured.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from dummyprof.cli.output import DETAIL, ForceOpt, HtmlOpt, JsonOpt, QuietOpt, check_outputs, emit, progress_bar
from dummyprof.cli.schema_command import options_from, with_options
from dummyprof.errors import UsageError, flag_text
from dummyprof.ranks.world import LaunchEnv, launch_env
from dummyprof.scenarios.engram.options import ENGRAM_FIELDS, EngramOptions
from dummyprof.schema import Spec
from dummyprof.units import parse_float, parse_int

if TYPE_CHECKING:
    from dummyprof.ranks.world import World

HELP = """\
Size, fill and time one rank's Engram tables (DeepSeek V4.1 ParallelEngramEmbedding).

Per rank: fp8 e4m3 weight [part_rows, dim] and uint8 scales [part_rows, dim/block],
sharded by whole hash heads over tp x dp ranks. Fill methods, interleaved:

  random-convert  vLLM <= 0.29: to fp16, uniform ±1e-3, back to fp8
                  (two temporaries)
  random-scratch  vLLM 0.33: empty_like fp16 scratch, uniform ±1, copy_
  random-chunked  bounded fp16 scratch (--chunk-elements), same bytes as
                  random-scratch on CPU
  random-fast     masked random words on every core: fp8 within ±1,
                  scale byte 120, fixed scratch
  constant        dummy_weight_value: weight 1.0, scale byte 127
                  (offloaded tables)
  memset          the floor: a plain memset of the same bytes

Before allocating, each method's need per rank (tables after allocator rounding
+ scratch) is compared with --max-memory. What fits is measured in full; what
does not is measured at smaller sizes and projected, labelled as such.

Examples:
  dummyprof engram --rows 2e9 --offload
  dummyprof engram --rows 384M --tables 2 --tp 4 --offload --deadline 600
  dummyprof engram --rows 4M --json engram.json
  dummyprof engram --rows 384M --tp 8 --offload --dry-run
  dummyprof engram --rows 64M --offload --backing mmap:/var/tmp/engram.bin

Every rank at once (one gathered report on rank 0; docs/multi-rank.md):
  torchrun --nproc-per-node 8 -m dummyprof engram --rows 2e9 --tp 8
  dummyprof engram --rows 2e9 --tp 8 --nproc 8
"""


FIELDS = (  # engram's groups, in the order --help lists their flags
    *ENGRAM_FIELDS,  # the tables, and the layout they are split over (tp, dp, rank, heads)
    *("offload", "backing", "device"),  # where the tables live
    *("methods", "repeat", "chunk_elements"),  # fill
    *("max_memory", "time_budget_s", "deadline_s", "dry_run"),  # budget
)


# Multi-rank only: --nproc, or under torchrun
FLAGS = {
    "nproc": Spec(
        metavar="INT", help="Start INT ranks on this host (tp x dp must equal INT; a core and a process's memory each)."
    ),
    "dist_backend": Spec(help="Multi-rank: auto (nccl for tables on GPUs, else gloo), gloo or nccl."),
    "dist_timeout": Spec(metavar="SECONDS", help="Multi-rank: how long a rank waits for the others at any step."),
    "all_ranks": Spec(unit="flag", help="Multi-rank: every rank prints its own report too (rank 0 always)."),
    "detail": DETAIL,
}


@with_options(EngramOptions, FIELDS, flags=FLAGS)
def engram(
    ctx: typer.Context,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    nproc: str | None = None,
    dist_backend: str = "auto",
    dist_timeout: str = "600",
    all_ranks: bool = False,
    detail: bool = False,
) -> int:
    params = dict(ctx.params)
    shown: dict[str, Any] = {"detail": detail, "command": "engram"}
    env = launch_env()
    if nproc is None and env is None:
        single_process = (("--all-ranks", all_ranks), ("--dist-backend", dist_backend != "auto"))
        for flag, given in (*single_process, ("--dist-timeout", dist_timeout != "600")):
            if given:
                raise UsageError(flag, "only applies to a multi-rank run: add --nproc N or start under torchrun")
        options = options_from(EngramOptions, FIELDS, params)[0]  # the run validates once
        reports = check_outputs({"--json": json_path, "--html": html}, force=force, command="engram")
        from dummyprof.scenarios.engram import run as scenario

        with progress_bar(not quiet and not options.dry_run, "engram") as progress:
            results = scenario.run(options, progress=progress)
        return emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports, **shown)
    timeout_s = parse_float("--dist-timeout", dist_timeout, example="600")
    if env is not None:
        return _torchrun_rank(params, env, timeout_s)
    # --nproc: check everything, then start the ranks here; rank 0's gathered Results are printed and saved
    import dataclasses

    from dummyprof.scenarios.engram.ranks.run import EngramRanksOptions, launch_ranks

    count = parse_int("--nproc", str(nproc), minimum=1, example="2")
    single = _checked(params)
    fields = {f.name: getattr(single, f.name) for f in dataclasses.fields(single)}
    options = EngramRanksOptions(**fields, nproc=count, dist_timeout_s=timeout_s, dist_backend=dist_backend)
    reports = check_outputs({"--json": json_path, "--html": html}, force=force, command="engram")
    run = launch_ranks(options, describe=flag_text)
    code = emit(run.gathered, json_path=json_path, quiet=quiet, force=force, reports=reports, **shown)
    if all_ranks:
        for own in run.own[1:]:
            emit(own, json_path=None, quiet=quiet, detail=detail)
    return code


def _checked(params: dict[str, Any]) -> EngramOptions:
    """The options, checked here: ranks start only on options that pass (raises UsageError naming the field)."""
    from dummyprof.scenarios.engram.options import validate

    options = options_from(EngramOptions, FIELDS, params)[0]
    validate(options)
    return options


def _torchrun_rank(params: dict[str, Any], env: LaunchEnv, timeout_s: float) -> int:
    """This process as one rank under torchrun: every rank parses its own flags after joining."""
    from dummyprof.cli.output import report_error

    json_path, force, quiet = params["json_path"], params["force"], params["quiet"]
    if params["nproc"] is not None:
        raise UsageError("--nproc", f"this process is already rank {env.rank} of {env.world_size}; drop --nproc")
    if not timeout_s > 0:
        raise UsageError("--dist-timeout", f"must be a positive number of seconds, got {timeout_s:g}")
    from dummyprof.ranks.world import pick_backend
    from dummyprof.scenarios.engram.ranks.rank import run_rank

    reports: list[Any] = []  # rank 0's, probed before anything is measured

    def prepare(world: World) -> EngramOptions:
        from dummyprof.scenarios.engram.options import validate
        from dummyprof.scenarios.engram.ranks.rank import rank_options

        options = _checked(params)
        validate(rank_options(options, world, available=0))
        if world.rank == 0:  # only rank 0 writes the results files
            reports[:] = check_outputs({"--json": json_path, "--html": params["html"]}, force=force, command="engram")
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
    detail = bool(params["detail"])
    if outcome.gathered is not None:
        return emit(
            outcome.gathered,
            json_path=json_path,
            quiet=quiet,
            force=force,
            reports=reports,
            detail=detail,
            command="engram",
        )
    if params["all_ranks"] and outcome.results is not None:
        sys.stdout.flush()
        emit(outcome.results, json_path=None, quiet=quiet, detail=detail)
    return 0
