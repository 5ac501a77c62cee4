"""Every kind of Results, a module each (its ``Kind``: reports/kind.py), registered here, where every reporter reads
them: a new kind is one module and one entry in ``BUILTIN``."""

from __future__ import annotations

from typing import Any

from dummyprof.reports.kind import Kind
from dummyprof.reports.kinds import audit, compare, deployment, engram, gate, inspect, sweep
from dummyprof.results.session import SECTIONS, Results

BUILTIN = (compare.KIND, sweep.KIND, audit.KIND, inspect.KIND, engram.KIND, gate.GATE, gate.BASELINE, deployment.KIND)
KINDS: dict[str, Kind[Any]] = {kind.name: kind for kind in BUILTIN}


def summary_line(results: Results) -> str:
    """The kind's one line; empty for a document without its section (a multi-rank run's aggregate says it)."""
    kind = KINDS[results.command]
    present = results.ranks_aggregate is not None or getattr(results, SECTIONS[results.command]) is not None
    return kind.summary(kind.section(results)) if present else ""
