"""Terminal rendering of any Results document: dispatch on the command that made it."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from dummyprof.reports.audit_terminal import render_audit
from dummyprof.reports.engram_terminal import render_engram
from dummyprof.reports.format import format_bytes
from dummyprof.reports.gate_terminal import render_baseline, render_gate
from dummyprof.reports.inspect_terminal import render_inspect
from dummyprof.results.session import Results

Renderer = Callable[[Results, Console], None]


def _compare(results: Results, console: Console) -> None:
    from dummyprof.reports.compare_terminal import render_compare

    render_compare(results, console)


RENDERERS: dict[str, Renderer] = {"compare": _compare, "gate": render_gate, "baseline": render_baseline}
RENDERERS.update(audit=render_audit, inspect=render_inspect)
RENDERERS["engram"] = render_engram


def environment_line(results: Results) -> str:
    env = results.environment
    threads = f"{env.torch_threads} torch threads" if env.torch_threads else ""
    return (
        f"dummyprof {results.dummyprof_version}, torch {env.torch_version}, {env.device} ({env.device_name}), "
        f"CPU {env.cpu_model} x{env.cpu_count}, {threads}, {format_bytes(env.total_memory_bytes)} RAM"
    )


def render(results: Results, console: Console, *, quiet: bool = False) -> None:
    """Full tables, or with ``quiet`` only the summary line."""
    if not quiet:
        renderer = RENDERERS.get(results.command)
        if renderer is None:
            console.print(f"no terminal renderer for command {results.command!r}; use --json")
        else:
            renderer(results, console)
        for notice in results.notices:
            console.print(f"notice: {notice}", style="yellow")
        console.print(environment_line(results), style="dim")
    if results.summary:
        console.print(results.summary, style="bold" if not quiet else None)
