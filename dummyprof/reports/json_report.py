"""The JSON reporter: the Results document itself, as ``--json`` writes it and :func:`load_results` reads it."""

from __future__ import annotations

from dummyprof.reports.reporter import RenderOptions, Reporter
from dummyprof.results.session import Results
from dummyprof.results.store import results_to_json


def render(results: Results, options: RenderOptions) -> str:
    return results_to_json(results)


REPORTER = Reporter("json", ".json", None, render, "every figure, for machines; dummyprof report reads it back")
