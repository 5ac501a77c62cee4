"""Every file a run reads, computed in one place for every command and the gate.

``files.outputs.check_outputs`` refuses each of them as an output, with or without ``--force``:
the files behind the ``--model`` value (each model source declares its own:
``scenarios/model_choice.SOURCES``), each ``--loader`` file, the gate config and every model
and loader file it names, the baseline, the results file ``report`` reads (standard input too: the
file behind descriptor 0). Nothing here imports the user's code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dummyprof.files.inputs import RunInput
from dummyprof.files.reading import STDIN, STDIN_FILE

if TYPE_CHECKING:  # the gate's config module loads numpy: --help and flag errors load none
    from dummyprof.gate.config import GateConfig


def _specs(label: str, model: str | None, loaders: Iterable[str] | None) -> Iterator[RunInput]:
    from dummyprof.usercode import spec_reads

    if model:
        from dummyprof.scenarios.model_choice import source_kind

        flag = f"{label}model" if label else "--model"
        yield from (RunInput(what.replace("{flag}", flag), path) for what, path in source_kind(model).reads(model))
    for i, spec in enumerate(loaders or []):
        flag = f"{label}loaders[{i}]" if label else ("--loader" if i == 0 else f"--loader #{i + 1}")
        yield from (RunInput(what.replace("{flag}", flag), path) for what, path in spec_reads(spec))


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
    ``RESULTS.json``; ``-``: standard input), and a gate config with what it names."""
    found = list(_specs("", model, loaders))
    for flag, path in (files or {}).items():
        if path is not None and str(path) == STDIN:  # the file behind descriptor 0, if it is one
            found.append(RunInput(f"the {flag} input (standard input)", STDIN_FILE))
        elif path is not None:
            found.append(RunInput(f"the {flag} input", Path(path)))
    if gate is not None:  # the config file, and every model and loader file its scenarios name (relative to it)
        found.append(RunInput("the --config input", Path(gate.path)))
        for scenario in gate.scenarios:
            found.extend(_options_files(f"scenarios.{scenario.name}.options.", scenario.options))
    return found
