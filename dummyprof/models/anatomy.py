"""What a module tree holds, beyond what strategies walk: persistence, sharing, stray tensors.

Persistence is decided by what ``state_dict()`` selects, cross-checked with
torch's private ``_non_persistent_buffers_set``: a state-dict hook or an
overridden ``_save_to_state_dict`` can drop a buffer the private set does not
list, and a module may lack the private set altogether.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from dummyprof.measure.recorder import dtype_name, storage_key

MAX_NESTING = 3  # lists of dicts of tensors are common; deeper structures are not


@dataclass
class Persistence:
    non_persistent: set[str] = field(default_factory=set)  # qualified buffer names
    notes: list[str] = field(default_factory=list)


def buffer_persistence(model: nn.Module) -> Persistence:
    """Qualified names of non-persistent buffers, and where the two sources of truth disagree."""
    result = Persistence()
    try:
        saved: set[str] | None = set(model.state_dict(keep_vars=True))
    except Exception as exc:  # a module whose state_dict() cannot run: fall back on the private set
        saved = None
        result.notes.append(
            f"state_dict() raised {type(exc).__name__}: {exc}; persistence from _non_persistent_buffers_set"
        )
    for path, module in model.named_modules(remove_duplicate=False):
        private = getattr(module, "_non_persistent_buffers_set", None)
        missing_private_noted = False
        for local, buffer in module._buffers.items():
            if buffer is None:
                continue
            name = f"{path}.{local}" if path else local
            by_private = None if private is None else local in private
            by_state_dict = None if saved is None else name not in saved
            if by_state_dict is not None:
                non_persistent = by_state_dict
            elif by_private is not None:
                non_persistent = by_private
            else:
                non_persistent = False
            if by_private is None and by_state_dict is not None and not missing_private_noted:
                result.notes.append(
                    f"{path or '<root>'} ({type(module).__name__}) has no _non_persistent_buffers_set; "
                    "persistence of its buffers taken from state_dict()"
                )
                missing_private_noted = True
            elif by_private is not None and by_state_dict is not None and by_private != by_state_dict:
                said = "non-persistent" if by_private else "persistent"
                result.notes.append(
                    f"{name}: _non_persistent_buffers_set says {said} but state_dict() "
                    f"{'leaves it out' if by_state_dict else 'includes it'}; following state_dict()"
                )
            if non_persistent:
                result.non_persistent.add(name)
    return result


@dataclass
class Owned:
    """One registered name of a storage."""

    name: str
    kind: str  # parameter, buffer, non-persistent buffer
    tensor: torch.Tensor


def registered(model: nn.Module, persistence: Persistence) -> dict[int, list[Owned]]:
    """Every registered name of every storage, in ``named_modules`` order (duplicate paths included)."""
    storages: dict[int, list[Owned]] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        for local, tensor in module._parameters.items():
            if tensor is not None:
                _add(storages, Owned(f"{path}.{local}" if path else local, "parameter", tensor))
        for local, tensor in module._buffers.items():
            if tensor is not None:
                name = f"{path}.{local}" if path else local
                kind = "non-persistent buffer" if name in persistence.non_persistent else "buffer"
                _add(storages, Owned(name, kind, tensor))
    return storages


def _add(storages: dict[int, list[Owned]], owned: Owned) -> None:
    entries = storages.setdefault(storage_key(owned.tensor), [])
    if all(e.name != owned.name for e in entries):
        entries.append(owned)


def canonical_name(entries: list[Owned]) -> str:
    """The first parameter's name, else the first persistent buffer's, else the first name."""
    rank = {"parameter": 0, "buffer": 1}
    return sorted(entries, key=lambda e: rank.get(e.kind, 2))[0].name


def _walk(value: Any, name: str, depth: int) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield name, value
    elif depth < MAX_NESTING and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, f"{name}[{i}]", depth + 1)
    elif depth < MAX_NESTING and isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{name}[{key!r}]", depth + 1)


_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules"})


def unregistered_tensors(model: nn.Module, registered_keys: set[int]) -> list[tuple[str, torch.Tensor]]:
    """Tensors modules hold as plain attributes, in lists or dicts, whose storage no registered name reaches."""
    found: list[tuple[str, torch.Tensor]] = []
    seen: set[int] = set()
    for path, module in model.named_modules():
        for attr, value in vars(module).items():
            if attr in _MODULE_INTERNALS:
                continue
            for name, tensor in _walk(value, f"{path}.{attr}" if path else attr, 0):
                key = storage_key(tensor)
                if key in registered_keys or key in seen:
                    continue
                seen.add(key)
                found.append((name, tensor))
    return found


def describe(tensor: torch.Tensor) -> tuple[list[int], str, int]:
    return list(tensor.shape), dtype_name(tensor.dtype), tensor.numel() * tensor.element_size()
