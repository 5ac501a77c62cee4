"""What one kind of Results (a ``Results.command``) means to the reporters: one ``Kind`` in its module in
``reports/kinds/``, registered once in ``reports/kinds/__init__.py``, where every reporter reads it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from dummyprof.reports.html_figures import Section
from dummyprof.reports.tables.model import Block
from dummyprof.results.session import SECTIONS, Results

S = TypeVar("S")


@dataclass(frozen=True)
class Kind(Generic[S]):
    """Each part takes the kind's section of the Results (``section``), so none looks it up again."""

    name: str  # the Results.command it renders
    blocks: Callable[[S, bool], list[Block]]  # its report as blocks; the bool: detail (not by default on a terminal)
    summary: Callable[[S], str]  # its one line (-q), clauses fitted by summary.fit
    headline_first: bool = False  # the summary line leads the terminal report (the answer first)
    notices: Callable[[S], list[str]] = lambda section: []  # what its data implies, after what a source said
    texts: Callable[[S], list[str]] = lambda section: []  # HTML: figures no block holds, as sentences over the charts
    pictures: Callable[[S], list[Section]] = lambda section: []  # HTML: pictures no table holds, after the charts
    device: Callable[[S], str] | None = None  # where its times were taken, for a chart's title (None: the run's)
    part: Callable[[Results], Any] | None = None  # its section, where not the one SECTIONS names (engram: the whole)

    def section(self, results: Results) -> S:
        """The kind's section of the Results (a document of that kind always has it)."""
        section: S | None = self.part(results) if self.part else getattr(results, SECTIONS[self.name])
        assert section is not None
        return section
