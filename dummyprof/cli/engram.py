"""``dummyprof engram``: Engram tables per rank, fp8 fill methods, memory, measured or projected."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from dummyprof.cli.html_option import HtmlOpt, html_reports
from dummyprof.cli.output import EXIT_NOT_WRITTEN, check_outputs, emit, progress_bar
from dummyprof.cli.output_options import ForceOpt, JsonOpt, QuietOpt
from dummyprof.errors import UsageError
from dummyprof.scenarios.engram.ranks.world import launch_env
from dummyprof.units import parse_bytes, parse_count, parse_float, parse_int

if TYPE_CHECKING:
    from dummyprof.scenarios.engram.options import EngramOptions

# The default --method list, torch-free so that parsing flags imports no fill code; tests keep it equal
# to loaders.fp8_methods.METHODS. Names are checked by the scenario's validate, not here.
METHOD_NAMES = ("random-convert", "random-scratch", "random-chunked", "random-fast", "constant", "memset")

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


def register(app: typer.Typer) -> None:
    app.command("engram", help=HELP, no_args_is_help=False)(engram)


def engram(
    ctx: typer.Context,
    rows: Annotated[
        str,
        typer.Option(metavar="COUNT", help="Rows of one table, all ranks together: 2e9, 384M, 1.5G, 2_000_000_000."),
    ] = "384M",
    dim: Annotated[str, typer.Option(metavar="INT", help="Row width (fp8 elements).")] = "256",
    block_size: Annotated[
        str, typer.Option(metavar="INT", help="Elements per scale byte; --dim must divide by it.")
    ] = "32",
    tables: Annotated[str, typer.Option(metavar="INT", help="Tables per model (DeepSeek V4.1 Flash has 2).")] = "1",
    tp_size: Annotated[str, typer.Option(metavar="INT", help="Tensor-parallel size.")] = "1",
    dp_size: Annotated[
        str, typer.Option(metavar="INT", help="Data-parallel size; tables shard over tp x dp ranks.")
    ] = "1",
    rank: Annotated[str, typer.Option(metavar="INT", help="Which rank to build (0 .. tp x dp - 1).")] = "0",
    heads: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on Python 3.10
        typer.Option(metavar="INT", help="Hash heads per table, split whole over ranks. Default: one per rank."),
    ] = None,
    offload: Annotated[
        bool, typer.Option("--offload", help="Keep the tables in host memory (pinned by default).")
    ] = False,
    backing: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            metavar="KIND",
            help="Host memory kind with --offload: pinned (torch.empty pin_memory=True), pinned-copy "
            "(tensor.pin_memory()), pinned-register (cudaHostRegister), pageable, hugepages, shm, or mmap:PATH "
            "(a new file on disk, mapped shared, removed at once).",
        ),
    ] = None,
    device: Annotated[str, typer.Option(help="Without --offload: cpu, cuda, cuda:N or auto.")] = "auto",
    method: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--method", "-m", help="Fill method (repeatable). Default: all; memset always runs as the floor."),
    ] = None,
    repeat: Annotated[str, typer.Option(metavar="INT", help="Full-size rounds per method, interleaved.")] = "3",
    chunk_elements: Annotated[str, typer.Option(metavar="COUNT", help="Chunk of random-chunked, e.g. 64Mi.")] = "64Mi",
    max_memory: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SIZE", help="Memory the run may use, e.g. 8GiB. Default: 80% of available."),
    ] = None,
    time_budget: Annotated[
        str, typer.Option(metavar="SECONDS", help="Time for all measuring; sizes and rounds are chosen to fit.")
    ] = "40",
    deadline: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            metavar="SECONDS", help="Health-check deadline, e.g. 600: flags methods whose start-up passes it."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan (sizes, measure vs project); allocate nothing.")
    ] = False,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    nproc: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            metavar="INT",
            help="Start INT ranks on this host (tp x dp must equal INT; a core and a process's memory each).",
        ),
    ] = None,
    dist_backend: Annotated[
        str, typer.Option(help="Multi-rank: auto (nccl for tables on GPUs, else gloo), gloo or nccl.")
    ] = "auto",
    dist_timeout: Annotated[
        str,
        typer.Option(metavar="SECONDS", help="Multi-rank: how long a rank waits for the others at any step."),
    ] = "600",
    all_ranks: Annotated[
        bool, typer.Option("--all-ranks", help="Multi-rank: every rank prints its own report too (rank 0 always).")
    ] = False,
) -> int:
    params = dict(ctx.params)
    env = launch_env()
    if nproc is None and env is None:
        for flag, given in (("--all-ranks", all_ranks), ("--dist-backend", dist_backend != "auto")):
            if given:
                raise UsageError(flag, "only applies to a multi-rank run: add --nproc N or start under torchrun")
        options = _options(params)
        check_outputs({"--json": json_path, "--html": html}, force=force)
        reports = html_reports(html)
        from dummyprof.scenarios.engram import run as scenario

        with progress_bar(not quiet and not dry_run, "engram") as progress:
            results = scenario.run(options, progress=progress)
        return EXIT_NOT_WRITTEN if emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports) else 0
    from dummyprof.cli.ranks import engram_on_ranks

    return engram_on_ranks(params, env, lambda: _options(params))


def _options(params: dict[str, Any]) -> EngramOptions:
    """Parse every flag and check the options (no measuring); raises UsageError naming the flag."""
    from dummyprof.scenarios.engram.options import EngramOptions, validate

    def text(name: str) -> str:
        return str(params[name])

    heads, max_memory, deadline, method = params["heads"], params["max_memory"], params["deadline"], params["method"]
    heads_n = parse_int("--heads", heads, minimum=1, example="8") if heads is not None else None
    max_memory_n = parse_bytes("--max-memory", max_memory) if max_memory is not None else None
    deadline_s = parse_float("--deadline", deadline, example="600") if deadline is not None else None
    options = EngramOptions(
        rows=parse_count("--rows", text("rows"), example="2e9"),
        dim=parse_int("--dim", text("dim"), minimum=1, example="256"),
        block_size=parse_int("--block-size", text("block_size"), minimum=1, example="32"),
        tables=parse_int("--tables", text("tables"), minimum=1, example="2"),
        tp_size=parse_int("--tp-size", text("tp_size"), minimum=1, example="8"),
        dp_size=parse_int("--dp-size", text("dp_size"), minimum=1, example="1"),
        rank=parse_int("--rank", text("rank"), minimum=0, example="0"),
        heads=heads_n,
        offload=bool(params["offload"]),
        backing=params["backing"],
        device=text("device"),
        methods=list(method) if method else list(METHOD_NAMES),
        repeat=parse_int("--repeat", text("repeat"), minimum=1, example="3"),
        chunk_elements=parse_count("--chunk-elements", text("chunk_elements"), example="64Mi"),
        max_memory=max_memory_n,
        time_budget_s=parse_float("--time-budget", text("time_budget"), example="40"),
        deadline_s=deadline_s,
        dry_run=bool(params["dry_run"]),
    )
    validate(options)
    return options
