"""Every in-place write to every storage while any code runs: a ``TorchDispatchMode`` sees each ATen call with its
schema, and an argument annotated as written (``Tensor(a!)``: ``fill_``, ``copy_``, ``out=``, ``_foreach_*_``, any
operator added later) is counted on its storage, so a write through a view lands on the base tensor's record.

Not seen by the dispatcher: a tensor replaced rather than written (``p.data = x``; :func:`replaced_tensors`
compares storages before and after) and a write that bypasses it (``tensor.numpy()``, a raw pointer;
:func:`trace_writes` hashes every storage it saw no write to, before and after).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from dummyprof.anatomy import name_keys, storage_key, storage_tensors
from dummyprof.measure.recorder import StorageRecord, index_model


@dataclass
class StorageWrites:
    writes: int = 0
    bytes_written: int = 0
    ops: list[str] = field(default_factory=list)  # distinct operator names, first-seen order


def _written_tensors(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterable[torch.Tensor]:
    for index, argument in enumerate(func._schema.arguments):
        alias = argument.alias_info
        if alias is None or not alias.is_write:
            continue
        value = args[index] if not argument.kwarg_only and index < len(args) else kwargs.get(argument.name)
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, torch.Tensor))


class WriteTracer(TorchDispatchMode):
    """Writes per storage, as a context manager; every operator runs unchanged (values as untraced, times not)."""

    def __init__(self) -> None:
        super().__init__()
        self.storages: dict[int, StorageWrites] = {}
        self.ops = 0

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        self.ops += 1
        for tensor in _written_tensors(func, args, kwargs):
            entry = self.storages.setdefault(storage_key(tensor), StorageWrites())
            entry.writes += 1
            entry.bytes_written += tensor.numel() * tensor.element_size()
            name = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
            if name not in entry.ops:
                entry.ops.append(name)
        return func(*args, **kwargs)

    def writes_to(self, tensor: torch.Tensor) -> StorageWrites:
        return self.storages.get(storage_key(tensor), StorageWrites())


@dataclass
class TraceResult:
    """Writes per registered storage of one model, plus what the model itself could not account for."""

    records: dict[int, StorageRecord]  # index_model() records, ``visits``/``bytes_written`` = traced writes
    ops: dict[int, list[str]]
    outside_writes: int  # writes to storages not registered in the model (temporaries, unregistered tensors)
    outside: dict[int, StorageWrites]
    replaced: list[str]  # registered names whose storage changed: replaced, not written in place
    untraced: list[int] = field(default_factory=list)  # storages whose bytes changed with no operator writing them


def replaced_tensors(model: nn.Module, before: dict[str, int]) -> list[str]:
    after = name_keys(model)
    return [name for name, key in before.items() if name in after and after[name] != key]


def storage_digest(tensor: torch.Tensor) -> str:
    """blake2b of every byte of the storage behind ``tensor`` (all its views at once)."""
    if tensor.device.type == "meta":
        return "meta"
    raw = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())
    return hashlib.blake2b(raw.cpu().numpy().tobytes(), digest_size=16).hexdigest()


def trace_writes(model: nn.Module, fill: Callable[[nn.Module], Any], *, check_untraced: bool = True) -> TraceResult:
    """``fill(model)`` under a :class:`WriteTracer`, each write attributed to the model's storages. With
    ``check_untraced`` (two reads of the model), a storage whose bytes changed with no operator writing it counts
    as written once (``untraced``)."""
    before = name_keys(model)
    # Holding the original tensors keeps their storages alive, so no new storage can reuse
    # an old address (the key) while the fill runs: replaced tensors always get new keys.
    originals = storage_tensors(model)
    digests = {k: storage_digest(t) for k, t in originals.items()} if check_untraced else {}
    tracer = WriteTracer()
    with tracer:
        fill(model)
    records = index_model(model)
    untraced: list[int] = []
    now = storage_tensors(model) if check_untraced else {}
    ops: dict[int, list[str]] = {}
    for key, record in records.items():
        unseen = key in digests and key in now and key not in tracer.storages
        if unseen and storage_digest(now[key]) != digests[key]:
            untraced.append(key)
            tracer.storages[key] = StorageWrites(1, record.nbytes, ["<outside the dispatcher>"])
        seen = tracer.storages.get(key)
        if seen is not None:
            record.visits = seen.writes
            record.bytes_written = seen.bytes_written
            ops[key] = list(seen.ops)
    outside = {k: v for k, v in tracer.storages.items() if k not in records}
    replaced = replaced_tensors(model, before)
    del originals
    return TraceResult(
        records=records,
        ops=ops,
        outside_writes=sum(v.writes for v in outside.values()),
        outside=outside,
        replaced=replaced,
        untraced=untraced,
    )
