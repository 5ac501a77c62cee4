"""Every file a run reads, computed in one place for every command and the gate.

``files.outputs.check_outputs`` refuses each of them as an output, with or without
``--force``: the ``--model`` file (or the module a ``pkg.mod:fn`` spec names), an ``hf:``
config and every file in an ``hf:`` folder, each ``--loader`` file, the gate config and
every model and loader file it names, the baseline, the results file ``report`` reads;
and (``imported_sources``) every module the process imported from outside Python's trees.
Nothing here imports the user's code: a module is found the way ``import`` would find it,
without running its package.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import site
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dummyprof.files.reading import STDIN

if TYPE_CHECKING:
    from dummyprof.gate.config import GateConfig

HF_PREFIX = "hf:"
# An hf: folder is a model's snapshot; a folder with more files than this is not one, and is not walked further.
MAX_FOLDER_FILES = 10_000


@dataclass(frozen=True)
class RunInput:
    """A file the run reads, and how a message names it ("the --model input")."""

    what: str
    path: Path


def _module_file(dotted: str) -> Path | None:
    """The file ``import dotted`` would execute, found without importing its packages (None: not found)."""
    search: list[str] | None = [os.getcwd(), *(p or os.getcwd() for p in sys.path)]  # cwd first, as --model does
    spec = None
    parts = dotted.split(".")
    for i in range(len(parts)):
        try:
            spec = PathFinder.find_spec(".".join(parts[: i + 1]), search)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        locations = spec.submodule_search_locations
        search = list(locations) if locations is not None else None
        if search is None and i < len(parts) - 1:
            return None
    origin = spec.origin if spec is not None else None
    return Path(origin) if origin and os.path.isfile(origin) else None


def _spec_files(flag: str, spec: str) -> Iterator[RunInput]:
    """The files a ``--model``/``--loader`` value reads: hf: config or folder, ./file.py, or a package module."""
    if spec.startswith(HF_PREFIX):
        local = Path(spec.removeprefix(HF_PREFIX)).expanduser()
        if local.is_dir():
            yield RunInput(f"the {flag} input", local)
            what = f"a file of the {flag} folder {str(local)!r}"
            every = (Path(root) / name for root, _, names in os.walk(local) for name in names)
            yield from (RunInput(what, path) for path in itertools.islice(every, MAX_FOLDER_FILES))
        elif local.exists():  # a hub id (ORG/NAME) is not read from here
            yield RunInput(f"the {flag} input", local)
        return
    target, sep, _ = spec.rpartition(":")
    if not sep or not target:
        return  # a named loader (hf-init, vllm) or a preset: no file of the user's
    if target.endswith(".py") or "/" in target or os.sep in target:
        yield RunInput(f"the {flag} input", Path(target))
        return
    module = _module_file(target)
    if module is not None:
        yield RunInput(f"the {flag} input (module {target})", module)


def _specs(label: str, model: str | None, loaders: Iterable[str] | None) -> Iterator[RunInput]:
    if model:
        yield from _spec_files(f"{label}model" if label else "--model", model)
    for i, spec in enumerate(loaders or []):
        flag = f"{label}loaders[{i}]" if label else ("--loader" if i == 0 else f"--loader #{i + 1}")
        yield from _spec_files(flag, spec)


def _options_files(label: str, options: Any) -> Iterator[RunInput]:
    """``model`` and ``loaders`` of an options dataclass and of the options nested in it (a sweep's ``compare``)."""
    yield from _specs(label, getattr(options, "model", None), getattr(options, "loaders", None))
    if dataclasses.is_dataclass(options):
        for field in dataclasses.fields(options):
            nested = getattr(options, field.name)
            if dataclasses.is_dataclass(nested) and not isinstance(nested, type):
                yield from _options_files(f"{label}{field.name}.", nested)


def run_inputs(
    *,
    model: str | None = None,
    loaders: Iterable[str] | None = None,
    files: Mapping[str, Path | None] | None = None,
    gate: GateConfig | None = None,
) -> list[RunInput]:
    """Every file a run reads: the model and loader specs, ``files`` read as given (``--baseline``,
    ``RESULTS.json``; ``-`` is standard input and no file), and a gate config with what it names."""
    found = list(_specs("", model, loaders))
    for flag, path in (files or {}).items():
        if path is not None and str(path) != STDIN:
            found.append(RunInput(f"the {flag} input", Path(path)))
    if gate is not None:  # the config file, and every model and loader file its scenarios name (relative to it)
        found.append(RunInput("the --config input", Path(gate.path)))
        for scenario in gate.scenarios:
            found.extend(_options_files(f"scenarios.{scenario.name}.options.", scenario.options))
    return found


_PACKAGE_DIR = os.path.realpath(Path(__file__).parents[1])


def _installed_roots() -> tuple[str, ...]:
    """Where Python's own and installed modules live: what is imported from there is not the user's."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    roots.add(site.getusersitepackages())
    both = {os.path.join(form, "") for r in roots for form in (os.path.abspath(r), os.path.realpath(r))}
    return (*both, os.path.join(_PACKAGE_DIR, ""))


def imported_sources() -> Iterator[RunInput]:
    """The source files of modules this process imported from outside Python and its installed packages.

    A user's model or loader module imports its helpers while it runs, after the outputs were first
    checked: these are read by the run too, so ``write_outputs`` checks them again before writing.
    """
    roots = _installed_roots()
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if not isinstance(origin, str) or origin.startswith(roots) or not os.path.isfile(origin):
            continue  # the plain prefix test first: resolving links of every torch module costs 50 ms
        real = os.path.realpath(origin)
        if not real.startswith(roots):
            shown = "" if name.startswith("_dummyprof_user_") else f" ({name})"
            yield RunInput(f"a module the run imported{shown}", Path(real))
