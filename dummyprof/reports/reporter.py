"""What a reporter is; apart from the registry so that reporters describe themselves without importing it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dummyprof.results.session import Results


@dataclass(frozen=True)
class RenderOptions:
    """How to lay a report out. Only the terminal reporter reads these (files carry every table)."""

    width: int = 160  # columns of the terminal report (160: tables in files and CI logs do not wrap)
    color: bool = False  # ANSI colour and styles; False gives plain text
    quiet: bool = False  # terminal: only the summary line
    detail: bool = False  # terminal: every table (files always carry them); the default fits one screen


@dataclass(frozen=True)
class Reporter:
    """One output format: ``kinds`` are the ``Results.command`` values it renders (``None``: every kind).

    Where ``reads_tensor_rows(options)`` is false, ``dummyprof report`` leaves ``compare.tensors`` (a row per
    storage, most of a large file) out of the file it loads, neither converted nor checked.
    """

    name: str
    suffix: str
    kinds: frozenset[str] | None
    render: Callable[[Results, RenderOptions], str]
    description: str = ""
    reads_tensor_rows: Callable[[RenderOptions], bool] = lambda options: True

    def supports(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds
