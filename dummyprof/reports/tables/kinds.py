"""Which Results kinds are built as blocks (one table model for every format), and by what.

A kind listed here is rendered by every backend from the same blocks; the terminal passes
``detail`` (its default report is one screen), files always ask for the detail.
"""

from __future__ import annotations

from collections.abc import Callable

from dummyprof.reports.tables.compare import compare_blocks
from dummyprof.reports.tables.deployment import deployment_blocks
from dummyprof.reports.tables.model import Block
from dummyprof.reports.tables.sweep import sweep_blocks
from dummyprof.results.session import Results


def _compare(results: Results, detail: bool) -> list[Block]:
    assert results.compare is not None
    return compare_blocks(results.compare, detail=detail)


def _sweep(results: Results, detail: bool) -> list[Block]:
    assert results.sweep is not None
    return sweep_blocks(results.sweep)


def _deployment(results: Results, detail: bool) -> list[Block]:
    assert results.deployment is not None
    return deployment_blocks(results.deployment, detail=detail)


BLOCKS: dict[str, Callable[[Results, bool], list[Block]]] = {
    "compare": _compare,
    "sweep": _sweep,
    "deployment": _deployment,
}
# The kinds whose summary line leads their terminal report (the answer first, issue #20).
HEADLINE_FIRST = frozenset({"compare", "deployment"})
