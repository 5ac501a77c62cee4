"""What a run reads, as the never-write rule compares it: the files the edge names (``cli/inputs.run_inputs``),
and every module the process imported from outside Python's trees (``imported_sources``)."""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dummyprof.files.reading import backing_file


@dataclass(frozen=True)
class RunInput:  # a file the run reads, and how a message names it ("the --model input")
    what: str
    path: Path


_PACKAGE_DIR = os.path.realpath(Path(__file__).parents[1])


def _installed_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    roots.add(site.getusersitepackages())
    both = {os.path.join(form, "") for r in roots for form in (os.path.abspath(r), os.path.realpath(r))}
    return (*both, os.path.join(_PACKAGE_DIR, ""))


def imported_sources() -> Iterator[RunInput]:
    """The files (or archives) of modules imported from outside Python and its installed packages: a user's code
    imports its helpers as it runs, after the outputs were checked, so ``write_outputs`` checks them again."""
    roots = _installed_roots()
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if not isinstance(origin, str) or origin.startswith(roots):
            continue  # the plain prefix test first: resolving links of every torch module costs 50 ms
        found = backing_file(origin)
        real = os.path.realpath(found) if found is not None else None
        if real is not None and not real.startswith(roots):
            shown = "" if name.startswith("_dummyprof_user_") else f" ({name})"
            yield RunInput(f"a module the run imported{shown}", Path(real))
