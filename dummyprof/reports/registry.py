"""The one table of reporters (docs/architecture.md, "Reporters"): every command, ``dummyprof report`` and
``dummyprof.render`` pick formats here, and only here is an unknown name or kind refused."""

from __future__ import annotations

from dummyprof.errors import UsageError
from dummyprof.reports import gate_benchmark, gate_junit, html, json_report, markdown, pytorch_benchmark, terminal
from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.results.session import Results

__all__ = ["RenderOptions", "Reporter", "get_reporter", "register_reporter", "render", "reporter_names"]

BUILTIN: tuple[Reporter, ...] = (
    terminal.REPORTER,
    json_report.REPORTER,
    markdown.REPORTER,
    gate_junit.REPORTER,
    gate_benchmark.REPORTER,
    pytorch_benchmark.REPORTER,
    html.REPORTER,
)

_REPORTERS: dict[str, Reporter] = {}


def register_reporter(reporter: Reporter, *, replace: bool = False) -> Reporter:
    """Add a reporter; a second one under a taken name is refused unless ``replace``."""
    if reporter.name in _REPORTERS and not replace:
        raise ValueError(f"a reporter named {reporter.name!r} is already registered")
    _REPORTERS[reporter.name] = reporter
    return reporter


for _reporter in BUILTIN:
    register_reporter(_reporter)


def reporter_names(kind: str | None = None) -> list[str]:
    """Registered names in registration order; with ``kind``, only those that render that kind."""
    return [name for name, r in _REPORTERS.items() if kind is None or r.supports(kind)]


def get_reporter(name: str, kind: str | None = None, *, flag: str | None = "--format") -> Reporter:
    """The reporter called ``name``; with ``kind``, one that renders it. Else a UsageError naming ``flag``."""
    reporter = _REPORTERS.get(name)
    if reporter is None:
        raise UsageError(flag, f"unknown format {name!r}; choose one of: {', '.join(reporter_names())}")
    if kind is not None and not reporter.supports(kind):
        kinds = ", ".join(sorted(reporter.kinds or ()))
        others = ", ".join(reporter_names(kind)) or "none"
        raise UsageError(
            flag, f"format {name!r} renders {kinds} results, not {kind or 'unnamed'}; for these choose one of: {others}"
        )
    return reporter


def render(
    results: Results, name: str = "terminal", options: RenderOptions | None = None, *, flag: str | None = "--format"
) -> str:
    return get_reporter(name, results.command, flag=flag).render(results, options or RenderOptions())
