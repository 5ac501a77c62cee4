"""vLLM's own dummy loader as a dummyprof ``--loader``: trace and time the real thing.

Not part of CI or of the project's dependencies: run dummyprof with a Python
that has vLLM installed (docs/semantics.md, "vLLM in its own environment"), e.g.::

    PYTHONPATH=. /tmp/vllm-venv/bin/python -m dummyprof audit --preset dense-decoder \
        -s per-layer --loader benchmarks/vllm_loader.py:fill --loader-initializer v0.33
    PYTHONPATH=. /tmp/vllm-venv/bin/python -m dummyprof compare --preset deepseek-v4-like \
        -s per-layer --loader benchmarks/vllm_loader.py:fill
"""

from __future__ import annotations

from torch import nn


def fill(model: nn.Module) -> None:
    """``DummyModelLoader(LoadConfig(load_format="dummy")).load_weights(model)``, as ``vllm serve`` runs it."""
    from vllm.config.load import LoadConfig
    from vllm.model_executor.model_loader import dummy_loader

    dummy_loader.DummyModelLoader(LoadConfig(load_format="dummy")).load_weights(model, model_config=None)
