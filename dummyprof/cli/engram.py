"""``dummyprof engram``: Engram tables per rank, fp8 fill methods, memory, measured or projected."""

from __future__ import annotations

import typer

from dummyprof.cli.output import ForceOpt, HtmlOpt, JsonOpt, QuietOpt, check_outputs, emit, progress_bar
from dummyprof.cli.schema_command import options_from, with_options
from dummyprof.errors import UsageError
from dummyprof.scenarios.engram.options import EngramOptions
from dummyprof.scenarios.engram.ranks.world import launch_env
from dummyprof.schema import Spec

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
  dummyprof engram --rows 384M --tables 2 --tp-size 4 --offload --deadline 600
  dummyprof engram --rows 4M --json engram.json
  dummyprof engram --rows 384M --tp-size 8 --offload --dry-run
  dummyprof engram --rows 64M --offload --backing mmap:/var/tmp/engram.bin

Every rank at once (one gathered report on rank 0; docs/multi-rank.md):
  torchrun --nproc-per-node 8 -m dummyprof engram --rows 2e9 --tp-size 8
  dummyprof engram --rows 2e9 --tp-size 8 --nproc 8
"""


FIELDS = (
    *("rows", "dim", "block_size", "tables", "tp_size", "dp_size", "rank", "heads", "offload", "backing"),
    *("device", "methods", "repeat", "chunk_elements", "max_memory", "time_budget_s", "deadline_s", "dry_run"),
)


# Multi-rank only (--nproc, or under torchrun): read from the context's params by cli/ranks.py.
FLAGS = {
    "nproc": Spec(
        metavar="INT", help="Start INT ranks on this host (tp x dp must equal INT; a core and a process's memory each)."
    ),
    "dist_backend": Spec(help="Multi-rank: auto (nccl for tables on GPUs, else gloo), gloo or nccl."),
    "dist_timeout": Spec(metavar="SECONDS", help="Multi-rank: how long a rank waits for the others at any step."),
    "all_ranks": Spec(unit="flag", help="Multi-rank: every rank prints its own report too (rank 0 always)."),
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
    dist_timeout: str = "600",  # parsed by cli/ranks.py, from ctx.params
    all_ranks: bool = False,
) -> int:
    params = dict(ctx.params)
    env = launch_env()
    if nproc is None and env is None:
        for flag, given in (("--all-ranks", all_ranks), ("--dist-backend", dist_backend != "auto")):
            if given:
                raise UsageError(flag, "only applies to a multi-rank run: add --nproc N or start under torchrun")
        options = options_from(EngramOptions, FIELDS, params)[0]  # the run validates once
        reports = check_outputs({"--json": json_path, "--html": html}, force=force)
        from dummyprof.scenarios.engram import run as scenario

        with progress_bar(not quiet and not options.dry_run, "engram") as progress:
            results = scenario.run(options, progress=progress)
        return emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports)
    from dummyprof.cli.ranks import engram_on_ranks

    def checked() -> EngramOptions:
        """The options, checked here: ranks start only on options that pass (raises UsageError naming the field)."""
        from dummyprof.scenarios.engram.options import validate

        options = options_from(EngramOptions, FIELDS, params)[0]
        validate(options)
        return options

    return engram_on_ranks(params, env, checked)
