"""``dummyprof inspect``: the module tree with sizes and visits per strategy."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from dummyprof.cli.model_options import (
    ModelArgOpt,
    ModelOpt,
    PresetOpt,
    TreeDepthOpt,
    TreeDtypeOpt,
    TreeHiddenOpt,
    TreeWidthOpt,
    TrustRemoteCodeOpt,
    parse_args_flag,
    tree_fields,
)
from dummyprof.cli.output import (
    EXIT_NOT_WRITTEN,
    check_outputs,
    emit,
    json_to_stdout,
    user_stdout_to_stderr,
)
from dummyprof.cli.output_options import ForceOpt, JsonOpt, QuietOpt
from dummyprof.files.inputs import run_inputs
from dummyprof.units import parse_bytes, parse_int

HELP = """\
Show the module tree: each module's type, own tensors and bytes, and how many
times each strategy visits it, redundant visits in red.

Nothing is allocated: the model is built on the meta device and each strategy
is walked with a no-op initializer, so even a huge layout inspects instantly.

Examples:
  dummyprof inspect --preset deepseek-v4-like --max-depth 3
  dummyprof inspect --model ./m.py:build --model-arg layers=61 \\
    --min-bytes 1MiB
  dummyprof inspect --preset torch-transformer -s legacy --json tree.json
"""


def register(app: typer.Typer) -> None:
    app.command("inspect", help=HELP, no_args_is_help=False)(inspect)


def inspect(
    model: ModelOpt = None,
    preset: PresetOpt = None,
    model_arg: ModelArgOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    strategy: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional here on Python 3.10
        typer.Option("--strategy", "-s", help="Strategy to count (repeatable). Default: legacy, per-layer, unique."),
    ] = None,
    max_depth: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="INT", help="Show modules at most this deep (0: the root only)."),
    ] = None,
    min_bytes: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SIZE", help="Hide modules whose subtree holds fewer bytes, e.g. 1MiB."),
    ] = None,
    depth: TreeDepthOpt = "3",
    width: TreeWidthOpt = "1",
    hidden: TreeHiddenOpt = "64",
    dtype: TreeDtypeOpt = "float32",
    json_path: JsonOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    from dummyprof.scenarios.inspect.options import DEFAULT_STRATEGIES, InspectOptions

    options = InspectOptions(
        **tree_fields(depth, width, hidden, dtype, examples=(3, 1, 64)),
        strategies=list(strategy) if strategy else list(DEFAULT_STRATEGIES),
        model=model,
        preset=preset,
        model_args=parse_args_flag(model_arg, "--model-arg"),
        trust_remote_code=trust_remote_code,
        max_depth=parse_int("--max-depth", max_depth, minimum=0, example="3") if max_depth is not None else None,
        min_bytes=parse_bytes("--min-bytes", min_bytes, example="1MiB") if min_bytes is not None else 0,
    )
    check_outputs({"--json": json_path}, force=force, inputs=run_inputs(model=model))
    from dummyprof.scenarios.inspect import run as scenario

    with user_stdout_to_stderr(json_to_stdout(json_path)):
        results = scenario.run(options)
    return EXIT_NOT_WRITTEN if emit(results, json_path=json_path, quiet=quiet, force=force) else 0
