"""The ``inspect`` scenario: the module tree on meta (nothing allocated), its sizes, and each strategy's visits."""

from __future__ import annotations

import torch
from torch import nn

from dummyprof.anatomy import (
    buffer_persistence,
    canonical_name,
    module_depth,
    own_registered,
    qualified_name,
    registered_tensors,
    storage_key,
    storage_owners,
)
from dummyprof.loaders.initializers import NOT_WRITTEN
from dummyprof.loaders.strategies import get_strategy, run_strategy
from dummyprof.measure.environment import collect_environment
from dummyprof.measure.recorder import VisitRecorder
from dummyprof.models.source import ModelSource
from dummyprof.results.inspect import InspectResult, ModuleNode
from dummyprof.results.session import Results
from dummyprof.scenarios.inspect.options import InspectOptions, validate
from dummyprof.scenarios.model_choice import chosen_source, model_summary

__all__ = ["InspectOptions", "run", "validate"]


def _visits(model: nn.Module, strategies: list[str]) -> dict[str, dict[int, int]]:
    counts: dict[str, dict[int, int]] = {}
    for name in strategies:
        recorder = VisitRecorder(model)
        run_strategy(model, get_strategy(name), initializer=lambda tensor, name: NOT_WRITTEN, recorder=recorder)
        counts[name] = {key: record.visits for key, record in recorder.records.items()}
    return counts


def _nodes(model: nn.Module, strategies: list[str]) -> list[ModuleNode]:
    storages = storage_owners(model, buffer_persistence(model))
    canonical = {key: canonical_name(entries) for key, entries in storages.items()}
    visits = _visits(model, strategies)
    nodes: dict[str, ModuleNode] = {}
    for path, module in model.named_modules():
        node = ModuleNode(path=path, type=type(module).__name__, depth=module_depth(path))
        node.children = len(module._modules)
        for local, tensor, _ in own_registered(module):
            node.own_tensors += 1
            key = storage_key(tensor)
            if canonical[key] != qualified_name(path, local):
                node.shared.append(f"{local} = {canonical[key]}")
        nodes[path] = node
    # Each storage adds to its owner, and to the subtree of its owner and of every ancestor, once.
    for key, entries in storages.items():
        size = max(e.tensor.numel() * e.tensor.element_size() for e in entries)
        path = canonical[key].rpartition(".")[0]
        home = nodes.get(path)
        if home is not None:  # else owned by a module reached only through a duplicate path
            home.own_bytes += size
            _add_visits(home.visits, home.redundant, visits, key)
        parts = path.split(".") if path else []
        for cut in range(len(parts), -1, -1):
            above = nodes.get(".".join(parts[:cut]))
            if above is not None:
                above.subtree_bytes += size
                _add_visits(above.subtree_visits, above.subtree_redundant, visits, key)
    return list(nodes.values())


def _add_visits(total: dict[str, int], redundant: dict[str, int], visits: dict[str, dict[int, int]], key: int) -> None:
    """Add one storage's visits per strategy, and those beyond the first as redundant."""
    for strategy, counts in visits.items():
        count = counts.get(key, 0)
        total[strategy] = total.get(strategy, 0) + count
        redundant[strategy] = redundant.get(strategy, 0) + max(0, count - 1)


def run(options: InspectOptions, *, source: ModelSource | None = None) -> Results:
    validate(options)
    if options.deployed:
        from dummyprof.scenarios.deployment.run import run_deployment

        return run_deployment(options, "inspect", strategies=list(options.strategies), source=source)
    if source is None:
        source = chosen_source(options)
    model = source.build(torch.device("meta"))
    nodes = _nodes(model, list(options.strategies))
    kept = [
        n
        for n in nodes
        if (options.max_depth is None or n.depth <= options.max_depth)
        and (n.depth == 0 or n.subtree_bytes >= options.min_bytes)
    ]
    root = nodes[0]
    result = InspectResult(
        model=model_summary(
            source,
            "meta (nothing allocated)",
            modules=len(nodes),
            tensors=len({storage_key(t) for t in registered_tensors(model)}),
            names=sum(n.own_tensors for n in nodes),
            nbytes=root.subtree_bytes,
        ),
        strategies=list(options.strategies),
        nodes=kept,
        max_depth=options.max_depth,
        min_bytes=options.min_bytes,
        hidden_modules=len(nodes) - len(kept),
        real_device_tensors=sum(1 for t in registered_tensors(model) if t.device.type != "meta"),
    )
    environment = collect_environment(torch.device("cpu"))
    return Results(command="inspect", environment=environment, inspect=result, notices=list(source.notes))
