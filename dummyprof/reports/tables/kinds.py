"""Each Results kind's block builder; the terminal passes ``detail`` (its default is one screen), files ask for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from dummyprof.reports.tables.audit import audit_blocks
from dummyprof.reports.tables.compare import compare_blocks
from dummyprof.reports.tables.deployment import deployment_blocks
from dummyprof.reports.tables.engram import engram_blocks
from dummyprof.reports.tables.gate import baseline_blocks, gate_blocks
from dummyprof.reports.tables.inspect import inspect_blocks
from dummyprof.reports.tables.model import Block
from dummyprof.reports.tables.sweep import sweep_blocks
from dummyprof.results.session import Results

BLOCKS: dict[str, Callable[[Results, bool], list[Block]]] = {
    "compare": lambda results, detail: compare_blocks(_part(results.compare), detail=detail),
    "sweep": lambda results, detail: sweep_blocks(_part(results.sweep)),
    "audit": lambda results, detail: audit_blocks(_part(results.audit)),
    "inspect": lambda results, detail: inspect_blocks(_part(results.inspect)),
    "engram": lambda results, detail: engram_blocks(results, detail),
    "gate": lambda results, detail: gate_blocks(_part(results.gate)),
    "baseline": lambda results, detail: baseline_blocks(_part(results.gate)),
    "deployment": lambda results, detail: deployment_blocks(_part(results.deployment), detail=detail),
}
# The kinds whose summary line leads their terminal report (the answer first, issue #20).
HEADLINE_FIRST = frozenset({"compare", "deployment", "engram"})
T = TypeVar("T")


def _part(section: T | None) -> T:
    """The kind's section of the Results (a document of that kind always has it)."""
    assert section is not None
    return section
