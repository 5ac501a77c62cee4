"""Python entry points (``import dummyprof`` exposes them lazily): build a model, save and render results."""

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
    """Build ``package.module:callable``, ``./file.py:callable`` or ``hf:...`` with ``args``, as ``--model`` does
    (sized on meta first; one that comes back on meta materialized with ``to_empty``, ties re-made)."""
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
    """``results`` rendered, without torch, by any reporter ``report --format`` takes (the terminal's, plain text
    unless ``color``, by default); ``markdown=True`` for ``format="markdown"``; ``quiet``: the summary line alone."""
    from dummyprof.reports.registry import RenderOptions
    from dummyprof.reports.registry import render as render_with

    return render_with(results, "markdown" if markdown else format, RenderOptions(width, color, quiet), flag=None)
