"""The model a deployment's options name: shared by the run and its real ranks."""

from __future__ import annotations

from typing import Any

from dummyprof.models.source import ModelSource
from dummyprof.scenarios.model_choice import meta_build_limits, source_or_tree


def chosen_source(options: Any, seconds: float | None = None) -> ModelSource:
    """The model the options name (``--model``, ``--preset`` or the tree), its meta build bounded by ``seconds``."""
    return source_or_tree(
        model=options.model,
        preset=options.preset,
        model_args=options.model_args,
        tree=options.tree_spec(),
        trust_remote_code=options.trust_remote_code,
        quantization=getattr(options, "quantization", "auto"),
        limits=meta_build_limits(seconds),
    )
