"""Storages and their owners: every registered name grouped by the storage behind it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from dummyprof.anatomy.tensors import storage_key
from dummyprof.anatomy.walk import BUFFER, NON_PERSISTENT, PARAMETER, Registered, registered_tensors, walk

if TYPE_CHECKING:
    from dummyprof.anatomy.persistence import Persistence


def storage_owners(model: nn.Module, persistence: Persistence | None = None) -> dict[int, list[Registered]]:
    """Every registered name of every storage, in ``named_modules`` order (duplicate paths included).

    Buffers are persistent by each module's own rule; pass ``persistence`` (from
    :func:`buffer_persistence`) to follow what ``state_dict()`` really returned instead.
    """
    owners: dict[int, list[Registered]] = {}
    for entry in walk(model):
        if persistence is not None and entry.kind != PARAMETER:
            entry = entry._replace(kind=NON_PERSISTENT if entry.name in persistence.non_persistent else BUFFER)
        entries = owners.setdefault(storage_key(entry.tensor), [])
        name = entry.name
        if all(e.name != name for e in entries):
            entries.append(entry)
    return owners


def canonical_name(entries: list[Registered]) -> str:
    """The name a checkpoint knows a storage by: the first parameter's, else the first persistent buffer's."""
    rank = {PARAMETER: 0, BUFFER: 1}
    return sorted(entries, key=lambda e: rank.get(e.kind, 2))[0].name


def persistent_first(entries: list[Registered]) -> list[Registered]:
    """Owners in walk order, non-persistent ones last: the first is where a loader first reaches the storage."""
    return sorted(entries, key=lambda e: e.kind == NON_PERSISTENT)  # stable: keeps walk order otherwise


def storage_tensors(model: nn.Module) -> dict[int, torch.Tensor]:
    """One tensor per distinct storage (the first registered one), keyed by storage."""
    tensors: dict[int, torch.Tensor] = {}
    for tensor in registered_tensors(model):
        tensors.setdefault(storage_key(tensor), tensor)
    return tensors


def name_keys(model: nn.Module) -> dict[str, int]:
    """Storage key behind every registered name (duplicate module paths included)."""
    return {entry.name: storage_key(entry.tensor) for entry in walk(model)}


def model_bytes(model: nn.Module) -> int:
    """Bytes to build the model: distinct storages behind registered tensors, meta ones included.

    A storage counts at the larger of its own size and its biggest view's logical
    bytes, so an estimate made on the meta device never falls short.
    """
    seen: dict[int, int] = {}
    for tensor in registered_tensors(model):
        key = storage_key(tensor)
        seen[key] = max(seen.get(key, 0), tensor.untyped_storage().nbytes(), tensor.nbytes)
    return sum(seen.values())


def allocated_bytes(model: nn.Module) -> int:
    """Bytes of distinct storages the model holds on real devices (meta tensors hold none)."""
    seen: dict[int, int] = {}
    for tensor in registered_tensors(model):
        if tensor.device.type == "meta":
            continue
        key = storage_key(tensor)
        seen[key] = max(seen.get(key, 0), tensor.untyped_storage().nbytes())
    return sum(seen.values())


def largest_low_precision_elements(model: nn.Module) -> int:
    """Elements of the biggest float under 16 bits: the initializers' temporaries scale with it."""
    return max(
        (t.numel() for t in registered_tensors(model) if t.is_floating_point() and t.element_size() < 2), default=0
    )


def has_meta(model: nn.Module) -> bool:
    return any(t.device.type == "meta" for t in registered_tensors(model))
