"""Model anatomy (torch only, no other dummyprof package): the one walk over a module tree's registered tensors.

Persistence per module is ``Module._save_to_state_dict``'s rule, the one vLLM's per-layer loader reads: a buffer
named in ``_non_persistent_buffers_set`` is left out. What ``state_dict()`` really returns (hooks included):
:func:`buffer_persistence`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import nn

PARAMETER = "parameter"
BUFFER = "buffer"
NON_PERSISTENT = "non-persistent buffer"


def storage_key(tensor: torch.Tensor) -> int:  # views and detached copies share it
    return int(tensor.untyped_storage()._cdata)


def dtype_name(dtype: torch.dtype) -> str:
    """``float8_e4m3fn`` for ``torch.float8_e4m3fn``: the name users type."""
    return str(dtype).removeprefix("torch.")


def qualified_name(path: str, local: str) -> str:
    return f"{path}.{local}" if path else local


def module_depth(path: str) -> int:
    return 0 if not path else path.count(".") + 1


def describe(tensor: torch.Tensor) -> tuple[list[int], str, int]:
    return list(tensor.shape), dtype_name(tensor.dtype), tensor.numel() * tensor.element_size()


class Registered(NamedTuple):  # one registered name of a tensor: ``path.local`` on ``module``
    path: str  # the owning module's path ("" for the root)
    local: str
    kind: str  # PARAMETER, BUFFER or NON_PERSISTENT (by the module's own rule)
    tensor: torch.Tensor
    module: nn.Module

    @property
    def name(self) -> str:
        return qualified_name(self.path, self.local)

    @property
    def depth(self) -> int:
        return module_depth(self.path)


def own_registered(module: nn.Module) -> Iterator[tuple[str, torch.Tensor, str]]:
    """``(local name, tensor, kind)`` of the module's own parameters, then buffers."""
    for local, param in module._parameters.items():
        if param is not None:
            yield local, param, PARAMETER
    non_persistent: set[str] = getattr(module, "_non_persistent_buffers_set", set())
    for local, buf in module._buffers.items():
        if buf is not None:
            yield local, buf, NON_PERSISTENT if local in non_persistent else BUFFER


def own_tensors(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """A module's own parameters and persistent buffers, as ``state_dict()`` would select them."""
    for local, tensor, kind in own_registered(module):
        if kind != NON_PERSISTENT:
            yield local, tensor


def walk(model: nn.Module, *, remove_duplicate: bool = False) -> Iterator[Registered]:
    """Every registered name of every tensor, in ``named_modules`` order (a module reached by two paths under
    both, unless ``remove_duplicate``)."""
    for path, module in model.named_modules(remove_duplicate=remove_duplicate):
        for local, tensor, kind in own_registered(module):
            yield Registered(path, local, kind, tensor, module)


def registered_tensors(model: nn.Module) -> Iterator[torch.Tensor]:
    for module in model.modules():
        for _, tensor, _ in own_registered(module):
            yield tensor


@dataclass
class Persistence:
    non_persistent: set[str] = field(default_factory=set)  # qualified buffer names
    notes: list[str] = field(default_factory=list)


def buffer_persistence(model: nn.Module) -> Persistence:
    """Qualified names of non-persistent buffers as ``state_dict()`` selects them (a hook may drop one), and where
    torch's private ``_non_persistent_buffers_set`` disagrees or is missing."""
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
            name = qualified_name(path, local)
            by_private = None if private is None else local in private
            by_state_dict = None if saved is None else name not in saved
            non_persistent = by_state_dict if by_state_dict is not None else bool(by_private)
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


def storage_owners(model: nn.Module, persistence: Persistence | None = None) -> dict[int, list[Registered]]:
    """Every registered name of every storage, in walk order; buffers persistent by each module's rule, or by
    ``persistence`` (:func:`buffer_persistence`)."""
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
    tensors: dict[int, torch.Tensor] = {}
    for tensor in registered_tensors(model):
        tensors.setdefault(storage_key(tensor), tensor)
    return tensors


def name_keys(model: nn.Module) -> dict[str, int]:
    return {entry.name: storage_key(entry.tensor) for entry in walk(model)}


def model_bytes(model: nn.Module) -> int:
    """Bytes to build the model: each storage (meta ones too) at the larger of its size and its biggest view's,
    so an estimate on meta never falls short."""
    seen: dict[int, int] = {}
    for tensor in registered_tensors(model):
        key = storage_key(tensor)
        seen[key] = max(seen.get(key, 0), tensor.untyped_storage().nbytes(), tensor.nbytes)
    return sum(seen.values())


def allocated_bytes(model: nn.Module) -> int:
    """Bytes of distinct storages the model holds on real devices (meta tensors hold none)."""
    tensors = storage_tensors(model).values()
    return sum(t.untyped_storage().nbytes() for t in tensors if t.device.type != "meta")


def largest_low_precision_elements(model: nn.Module) -> int:
    """Elements of the biggest float under 16 bits: the initializers' temporaries scale with it."""
    return max(
        (t.numel() for t in registered_tensors(model) if t.is_floating_point() and t.element_size() < 2), default=0
    )


def has_meta(model: nn.Module) -> bool:
    return any(t.device.type == "meta" for t in registered_tensors(model))


# -- tensors a module holds outside its registries: no traversal reaches them, no dummy loader fills them

MAX_NESTING = 3  # lists of dicts of tensors are common; deeper structures are not
_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules"})


def _nested(value: Any, name: str, depth: int) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield name, value
    elif depth < MAX_NESTING and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _nested(item, f"{name}[{i}]", depth + 1)
    elif depth < MAX_NESTING and isinstance(value, dict):
        for key, item in value.items():
            yield from _nested(item, f"{name}[{key!r}]", depth + 1)


def unregistered_tensors(model: nn.Module, registered_keys: set[int]) -> list[tuple[str, torch.Tensor]]:
    """Tensors held as plain attributes, in lists or dicts, whose storage no registered name reaches."""
    found: list[tuple[str, torch.Tensor]] = []
    seen: set[int] = set()
    for path, module in model.named_modules():
        for attr, value in vars(module).items():
            if attr in _MODULE_INTERNALS:
                continue
            for name, tensor in _nested(value, qualified_name(path, attr), 0):
                key = storage_key(tensor)
                if key in registered_keys or key in seen:
                    continue
                seen.add(key)
                found.append((name, tensor))
    return found
