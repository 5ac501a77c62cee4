"""What a reporter is: a name, a file suffix, the Results kinds it renders, and ``render(results, options) -> str``.

Kept apart from :mod:`dummyprof.reports.registry` so that reporter modules can
describe themselves without importing the registry that imports them.
"""

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


def always(options: RenderOptions) -> bool:
    return True


def never(options: RenderOptions) -> bool:
    return False


@dataclass(frozen=True)
class Reporter:
    """One output format.

    ``kinds`` are the ``Results.command`` values it can render (``None``: every
    kind, as JSON does); ``suffix`` is the file name ending a user would expect
    (``.md``), for commands that pick a file name. ``reads_tensor_rows(options)``
    says whether it reads ``compare.tensors`` (a row per storage, most of a large
    file); when it does not, ``dummyprof report`` leaves them out of the file it
    loads, neither converted nor checked. Unknown reporters are assumed to read them.
    """

    name: str
    suffix: str
    kinds: frozenset[str] | None
    render: Callable[[Results, RenderOptions], str]
    description: str = ""
    reads_tensor_rows: Callable[[RenderOptions], bool] = always

    def supports(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds
