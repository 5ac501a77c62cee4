"""CLI plumbing of multi-rank runs: join the group, check every rank's flags, report on rank 0 only.

A command under torchrun (or started by ``--nproc``) parses its flags after joining, so bad input on
any rank is reported by rank on rank 0 (exit 2 on every rank), and flags that differ between ranks
are named before anything is measured.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

import typer

from dummyprof.cli.output import EXIT_NOT_WRITTEN, emit
from dummyprof.distributed.world import LaunchEnv, RanksFailed, World, check_ranks, join, pick_backend, run_checked
from dummyprof.errors import DummyprofError
from dummyprof.results.session import Results
from dummyprof.units import parse_float

T = TypeVar("T")


def child_argv(ctx: typer.Context, *, drop: Collection[str]) -> list[str]:
    """The command's flags as given (defaults left out), to start the same command on every rank."""
    out: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        value = ctx.params.get(name)
        if name in drop or value is None or value == param.default or not param.opts:
            continue
        flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        if getattr(param, "is_flag", False):
            if value:
                out.append(flag)
        elif getattr(param, "multiple", False):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def flag_values(params: dict[str, Any], *, ignore: Collection[str] = ()) -> dict[str, str]:
    """Every flag's value as text, for comparing ranks."""
    return {"--" + name.replace("_", "-"): str(value) for name, value in sorted(params.items()) if name not in ignore}


def run_on_ranks(
    env: LaunchEnv,
    params: dict[str, Any],
    *,
    prepare: Callable[[World], T],
    body: Callable[[T, World], tuple[Results, Results | None]],
    backend: str,
    device_type: str,
    timeout: str,
    json_path: Path | None,
    force: bool,
    quiet: bool,
    all_ranks: bool,
) -> int:
    """Join, check, run ``body`` on this rank; rank 0 prints and saves the gathered Results. The exit code."""
    timeout_s = parse_float("--dist-timeout", timeout, example="600")
    if not timeout_s > 0:
        raise typer.BadParameter("must be a positive number of seconds", param_hint="--dist-timeout")
    world = join(env, pick_backend(backend, device_type), timeout_s)
    try:
        error: DummyprofError | None = None
        options: T | None = None
        try:
            options = prepare(world)
        except DummyprofError as exc:
            error = exc
        check_ranks(world, error, flag_values(params, ignore={"all_ranks"}))
        assert options is not None
        ready = options
        mine, gathered = run_checked(world, lambda: body(ready, world))
    except RanksFailed as exc:
        if world.rank == 0:
            sys.stderr.write(f"dummyprof: error: {exc}\n")
            sys.stderr.flush()
            world.reported()
            raise typer.Exit(exc.exit_code) from None
        told = exc.quiet and world.wait_reported()
        if told and not all_ranks:
            raise typer.Exit(exc.exit_code) from None
        raise
    finally:
        world.close()
    if gathered is not None:
        return EXIT_NOT_WRITTEN if emit(gathered, json_path=json_path, quiet=quiet, force=force) else 0
    if all_ranks:
        sys.stdout.flush()
        emit(mine, json_path=None, quiet=quiet)
    return 0
