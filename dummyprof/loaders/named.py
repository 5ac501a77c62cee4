"""Loaders known by name, each an ordinary ``fn(model)`` timed and traced like any ``--loader``: ``hf-init``
(transformers' ``post_init()`` on the materialized model, docs/huggingface.md), ``vllm`` and ``sglang`` (those
engines' dummy-weight initialization, when the package is importable in this Python).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dummyprof.errors import UsageError

if TYPE_CHECKING:  # torch-free at import: option checks look names up before anything heavy is loaded
    from torch import nn

FLAG = "--loader"


def _missing(package: str, extra: str) -> UsageError:
    return UsageError(FLAG, f"{package} is not installed in this Python ({sys.executable}); {extra}")


def hf_init(model: nn.Module) -> None:
    """transformers' weight init, as ``from_config`` runs it (``post_init``), on a model built on meta."""
    if importlib.util.find_spec("transformers") is None:
        raise _missing("transformers", 'in your dummyprof clone, pip install -e ".[hf]"')
    from transformers import PreTrainedModel

    if not isinstance(model, PreTrainedModel):
        raise UsageError(
            FLAG,
            f"hf-init runs transformers' own weight init and needs a transformers model (--model hf:CONFIG, or "
            f"a callable returning a PreTrainedModel); this model is a {type(model).__name__}",
        )
    tied = _untie_onto_meta(model)
    try:
        model.post_init()
    finally:
        _retie(model, tied)  # post_init ties them; this only matters when it raised half-way


def _untie_onto_meta(model: nn.Module) -> dict[str, str]:
    """Give each tied target a meta placeholder, as ``from_config``'s init sees it untied (its draw then is neither
    timed nor a model write, the one difference); returns target -> source."""
    import torch
    from torch import nn

    tied: dict[str, str] = {}
    for target, source in model.get_expanded_tied_weights_keys(all_submodels=True).items():  # type: ignore[operator]
        try:
            shared = model.get_parameter(source)
            if model.get_parameter(target) is not shared:
                continue  # not tied in this model (tie_word_embeddings=False): init writes both, as from_config does
        except AttributeError:
            continue
        owner, _, name = target.rpartition(".")
        placeholder = torch.empty_like(shared, device="meta")
        setattr(model.get_submodule(owner), name, nn.Parameter(placeholder, requires_grad=shared.requires_grad))
        tied[target] = source
    return tied


def _retie(model: nn.Module, tied: dict[str, str]) -> None:
    for target, source in tied.items():
        owner, _, name = target.rpartition(".")
        module = model.get_submodule(owner)
        shared = model.get_parameter(source)
        if getattr(module, name) is not shared:
            setattr(module, name, shared)


def vllm(model: nn.Module) -> None:
    """vLLM's ``DummyModelLoader(LoadConfig(load_format="dummy")).load_weights(model)``, as ``vllm serve`` runs it."""
    from vllm.config.load import LoadConfig
    from vllm.model_executor.model_loader import dummy_loader

    dummy_loader.DummyModelLoader(LoadConfig(load_format="dummy")).load_weights(model, model_config=None)


def sglang(model: nn.Module) -> None:
    """SGLang's dummy-weight initialization (``initialize_dummy_weights``), as ``--load-format dummy`` runs it."""
    from sglang.srt.model_loader.weight_utils import initialize_dummy_weights

    initialize_dummy_weights(model)


# name -> (fill function, package that must be importable, how to get it)
NAMED: dict[str, tuple[Callable[[nn.Module], Any], str | None, str]] = {
    "hf-init": (hf_init, None, ""),
    "vllm": (
        vllm,
        "vllm",
        "pip install vllm, or run dummyprof with vLLM's Python (PYTHONPATH=. /path/to/vllm-venv/bin/python -m "
        "dummyprof ...); benchmarks/ has the differential checks",
    ),
    "sglang": (sglang, "sglang", "pip install sglang, or run dummyprof with SGLang's Python"),
}


def named_loader(spec: str) -> Callable[[nn.Module], Any] | None:
    """The fill function for a loader name, None for anything else; a name whose package is missing is refused."""
    entry = NAMED.get(spec)
    if entry is None:
        return None
    fn, package, how = entry
    if package is not None and importlib.util.find_spec(package) is None:
        raise _missing(package, how)
    return fn
