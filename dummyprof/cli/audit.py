"""``dummyprof audit``: what each strategy or loader writes, and what it gets wrong."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from dummyprof.cli.html_option import HtmlOpt, html_reports
from dummyprof.cli.model_options import (
    LoaderArgOpt,
    LoaderOpt,
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
from dummyprof.units import parse_bytes

HELP = """\
Trace every write each strategy or loader makes, and report what is wrong.

Each filler runs once on its own freshly built model under a tracer that sees
every in-place write (fill_, uniform_, copy_, out= ...). Findings (exit 1):

  missed                  one filler writes a tensor, another does not
  repeated                one filler writes a tensor more than once
  values-differ           same initializer, different final bytes
  non-persistent-written  a non-persistent buffer (rotary inv_freq) written
  unregistered            a tensor kept in a plain attribute, list or dict,
                          where no traversal reaches it
  replaced                a loader replaced a tensor instead of writing it
  recorder-mismatch       a strategy's recorder disagrees with the tracer

Tied and aliased storages, tensors nobody writes and persistence questions are
shown as notes and never fail. Exit codes: 0 clean, 1 findings, 2 bad input.

Examples:
  dummyprof audit --preset dense-decoder
  dummyprof audit --model tests/fixtures/models.py:build
  dummyprof audit --model ./m.py:build -s per-layer --loader ./fill.py:fill
  dummyprof audit --preset moe-decoder -s legacy --ignore repeated
"""


def register(app: typer.Typer) -> None:
    app.command("audit", help=HELP, no_args_is_help=False)(audit)


def audit(
    model: ModelOpt = None,
    preset: PresetOpt = None,
    model_arg: ModelArgOpt = None,
    trust_remote_code: TrustRemoteCodeOpt = False,
    strategy: Annotated[
        Optional[list[str]],  # noqa: UP045 - typer needs Optional here on Python 3.10
        typer.Option("--strategy", "-s", help="Strategy to audit (repeatable). Default: per-layer and unique."),
    ] = None,
    loader: LoaderOpt = None,
    loader_arg: LoaderArgOpt = None,
    loader_initializer: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            metavar="NAME",
            help="Declare that the loaders fill like this initializer (v0.33, v0.29, fast): their final bytes are then "
            "compared with the strategies using it.",
        ),
    ] = None,
    initializer: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="Use this initializer (v0.33, v0.29 or fast) for every strategy, so all their values compare."
        ),
    ] = None,
    ignore: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--ignore", metavar="KIND", help="A finding kind that should not fail the audit (repeatable)."),
    ] = None,
    depth: TreeDepthOpt = "3",
    width: TreeWidthOpt = "1",
    hidden: TreeHiddenOpt = "64",
    dtype: TreeDtypeOpt = "float32",
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N or auto.")] = "cpu",
    max_memory: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(metavar="SIZE", help="Memory the run may use, e.g. 8GiB. Default: 80% of available."),
    ] = None,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> int:
    from dummyprof.scenarios.audit.options import DEFAULT_STRATEGIES, AuditOptions

    strategies = list(strategy) if strategy else ([] if loader else list(DEFAULT_STRATEGIES))
    options = AuditOptions(
        **tree_fields(depth, width, hidden, dtype, examples=(3, 1, 64)),
        strategies=strategies,
        loaders=list(loader or []),
        loader_args=parse_args_flag(loader_arg, "--loader-arg"),
        loader_initializer=loader_initializer,
        initializer=initializer,
        model=model,
        preset=preset,
        model_args=parse_args_flag(model_arg, "--model-arg"),
        trust_remote_code=trust_remote_code,
        device=device,
        max_memory=parse_bytes("--max-memory", max_memory) if max_memory is not None else None,
        ignore=list(ignore or []),
    )
    check_outputs({"--json": json_path, "--html": html}, force=force, inputs=run_inputs(model=model, loaders=loader))
    reports = html_reports(html)
    from dummyprof.scenarios.audit import run as scenario

    with user_stdout_to_stderr(json_to_stdout(json_path)):
        results = scenario.run(options)
    if emit(results, json_path=json_path, quiet=quiet, force=force, reports=reports):
        return EXIT_NOT_WRITTEN  # never 1: a finding that was not recorded is not a verdict CI can trust
    assert results.audit is not None
    return 0 if results.audit.clean else 1
