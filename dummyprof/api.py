"""Python entry points for what the commands do: build a model, run strategies or a loader, render.

Everything here returns plain objects (an ``nn.Module``, a :class:`Results`,
a string); nothing prints. ``import dummyprof`` exposes these lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dummyprof.results.session import Results

if TYPE_CHECKING:  # torch loads only when a model is built: render() works on a machine without it
    import torch
    from torch import nn


def save_results(results: Results, path: Path | str) -> None:
    """Write ``results`` as the ``--json`` file format, atomically: a crash leaves the old file or the new one."""
    from dummyprof.files.outputs import publish
    from dummyprof.results.store import results_to_json

    publish(Path(path), results_to_json(results), replace=True)


def load_model(spec: str, *, device: str | torch.device = "cpu", **args: Any) -> nn.Module:
    """Build ``package.module:callable``, ``./file.py:callable`` or ``hf:...`` with ``args``, as ``--model`` does.

    Sized on the meta device first; a model that comes back on meta is
    materialized on ``device`` with ``to_empty`` (ties re-made).
    """
    import torch

    from dummyprof.scenarios.model_choice import choose_source

    return choose_source(model=spec, preset=None, model_args=args).build(torch.device(device))


def build_preset(name: str, *, device: str | torch.device = "cpu", **args: Any) -> nn.Module:
    """Build a preset (``torch-transformer``, ``dense-decoder``, ``moe-decoder``, ``deepseek-v4-like``)."""
    import torch

    from dummyprof.scenarios.model_choice import choose_source

    return choose_source(model=None, preset=name, model_args=args).build(torch.device(device))


def render(
    results: Results,
    format: str = "terminal",
    *,
    markdown: bool = False,
    width: int = 160,
    color: bool = False,
    quiet: bool = False,
) -> str:
    """``results`` rendered by a registered reporter: the terminal report (plain text unless ``color``) by default.

    ``format`` is any name ``dummyprof report --format`` takes (terminal, json,
    markdown, junit, ...); ``markdown=True`` is kept as a shorthand for
    ``format="markdown"``; ``quiet`` gives the terminal's summary line alone. Imports no
    torch: renders a saved file anywhere.
    """
    from dummyprof.reports.registry import RenderOptions
    from dummyprof.reports.registry import render as render_with

    return render_with(results, "markdown" if markdown else format, RenderOptions(width, color, quiet), flag=None)
