"""Python entry points for what the commands do: build a model, run strategies or a loader, render.

Everything here returns plain objects (an ``nn.Module``, a :class:`Results`,
a string); nothing prints. ``import dummyprof`` exposes these lazily.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from dummyprof.results.session import Results


def load_model(spec: str, *, device: str | torch.device = "cpu", **args: Any) -> nn.Module:
    """Build ``package.module:callable`` or ``./file.py:callable`` with ``args``, as ``--model`` does.

    Sized on the meta device first; a model that comes back on meta is
    materialized on ``device`` with ``to_empty`` (ties re-made).
    """
    from dummyprof.models.loading import model_source

    return model_source(spec, args).build(torch.device(device))


def build_preset(name: str, *, device: str | torch.device = "cpu", **args: Any) -> nn.Module:
    """Build a preset (``torch-transformer``, ``dense-decoder``, ``moe-decoder``, ``deepseek-v4-like``)."""
    from dummyprof.models.presets import preset_source

    return preset_source(name, args).build(torch.device(device))


def render(results: Results, *, markdown: bool = False, width: int = 160) -> str:
    """The terminal report (plain text, no colour) or the Markdown report of any Results."""
    if markdown:
        from dummyprof.reports.markdown import render_markdown

        return render_markdown(results)
    import io

    from rich.console import Console

    from dummyprof.reports.terminal import render as render_terminal

    buffer = io.StringIO()
    render_terminal(results, Console(file=buffer, width=width, no_color=True, highlight=False, soft_wrap=False))
    return buffer.getvalue()
