"""Fill strategies: a traversal of any ``nn.Module`` (never the synthetic models') plus a per-tensor initializer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from dummyprof.anatomy import own_tensors, storage_key
from dummyprof.errors import UsageError
from dummyprof.loaders.initializers import Initializer, get_initializer
from dummyprof.measure.recorder import VisitRecorder

Traversal = Callable[[nn.Module], Iterator[tuple[str, torch.Tensor]]]


@dataclass(frozen=True)
class Strategy:
    name: str
    description: str
    traverse: Traversal
    initializer: str = "v0.33"


def legacy_traversal(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """vLLM <= 0.29: every module, then everything in its *recursive* state_dict()."""
    for layer in model.modules():
        yield from layer.state_dict().items()


def per_layer_traversal(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """vLLM >= 0.30 (PR #56682): every module, its own tensors only."""
    for layer in model.modules():
        yield from own_tensors(layer)


def unique_traversal(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Per-layer, but each storage once: tied and aliased tensors are filled a single time."""
    seen: set[int] = set()
    for layer in model.modules():
        for name, tensor in own_tensors(layer):
            key = storage_key(tensor)
            if key not in seen:
                seen.add(key)
                yield name, tensor


STRATEGIES: dict[str, Strategy] = {}
PLUGIN_GROUP = "dummyprof.strategies"
_plugins_loaded = False


def load_plugins() -> list[str]:
    """Register the ``Strategy`` (or callable returning one) each ``dummyprof.strategies`` entry point names;
    returns the plugins that failed to load, by name, rather than breaking every command."""
    global _plugins_loaded
    if _plugins_loaded:
        return []
    _plugins_loaded = True
    from importlib.metadata import entry_points

    problems = []
    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            obj = entry.load()
            strategy = obj if isinstance(obj, Strategy) else obj()
            if not isinstance(strategy, Strategy):
                raise TypeError(f"{entry.value} is not a dummyprof Strategy")
            register_strategy(strategy)
        except Exception as exc:  # a broken plugin must not take the CLI down with it
            problems.append(f"strategy plugin {entry.name!r} ({entry.value}): {exc}")
    return problems


def register_strategy(strategy: Strategy, *, replace: bool = False) -> Strategy:
    if strategy.name in STRATEGIES and not replace:
        raise ValueError(f"strategy {strategy.name!r} is already registered")
    STRATEGIES[strategy.name] = strategy
    return strategy


def get_strategy(name: str, *, flag: str = "--strategy") -> Strategy:
    if name not in STRATEGIES:
        load_plugins()
    try:
        return STRATEGIES[name]
    except KeyError:
        known = ", ".join(STRATEGIES)
        raise UsageError(flag, f"unknown strategy {name!r}; choose from: {known}") from None


for _builtin in (
    Strategy("legacy", "vLLM <= 0.29: modules() x recursive state_dict(), old initializer", legacy_traversal, "v0.29"),
    Strategy("per-layer", "vLLM >= 0.30: each module's own parameters and persistent buffers", per_layer_traversal),
    Strategy("unique", "per-layer, each storage exactly once (tied and aliased included)", unique_traversal),
):
    register_strategy(_builtin)


def run_strategy(
    model: nn.Module,
    strategy: Strategy,
    *,
    initializer: Initializer | None = None,
    recorder: VisitRecorder | None = None,
) -> None:
    """Fill ``model`` in place with ``strategy``; count each visit in ``recorder`` if given."""
    init = initializer if initializer is not None else get_initializer(strategy.initializer)
    with torch.no_grad():
        if recorder is None:
            for name, tensor in strategy.traverse(model):
                init(tensor, name)
        else:
            for name, tensor in strategy.traverse(model):
                recorder.record(tensor, init(tensor, name))
