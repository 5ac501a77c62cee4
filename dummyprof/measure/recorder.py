"""Visit and write accounting per storage.

A *visit* is each time a strategy hands a tensor to the initializer; a *write*
is what the initializer then wrote. Both are keyed by the identity of the
underlying storage, so a tied parameter or a view shares one record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from dummyprof.loaders.initializers import FillOutcome


def storage_key(tensor: torch.Tensor) -> int:
    """Identity of the storage behind ``tensor`` (views and detached copies share it)."""
    return int(tensor.untyped_storage()._cdata)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass
class StorageRecord:
    """What the recorder knows of one storage, and how it was treated."""

    names: list[str]
    module: str
    depth: int
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    kinds: list[str] = field(default_factory=list)
    visits: int = 0
    bytes_written: int = 0

    @property
    def name(self) -> str:
        return self.names[0]


def _module_depth(path: str) -> int:
    return 0 if not path else path.count(".") + 1


def index_model(model: nn.Module) -> dict[int, StorageRecord]:
    """Every storage reachable through registered parameters and buffers, with all its names.

    A storage is named after its first persistent owner (a parameter before a
    non-persistent alias of it); its depth is that of its shallowest owner.
    """
    owners: dict[int, list[tuple[str, str, int, torch.Tensor]]] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        non_persistent: set[str] = getattr(module, "_non_persistent_buffers_set", set())
        owned = [(n, p, "parameter") for n, p in module._parameters.items() if p is not None]
        owned += [
            (n, b, "non-persistent buffer" if n in non_persistent else "buffer")
            for n, b in module._buffers.items()
            if b is not None
        ]
        for local, tensor, kind in owned:
            qualified = f"{path}.{local}" if path else local
            entries = owners.setdefault(storage_key(tensor), [])
            if all(name != qualified for name, _, _, _ in entries):
                entries.append((qualified, kind, _module_depth(path), tensor))
    records: dict[int, StorageRecord] = {}
    for key, entries in owners.items():
        entries.sort(key=lambda e: e[1] == "non-persistent buffer")  # stable: keeps visiting order otherwise
        name, _, _, tensor = entries[0]
        records[key] = StorageRecord(
            names=[e[0] for e in entries],
            module=name.rpartition(".")[0],
            depth=min(e[2] for e in entries),
            shape=tuple(tensor.shape),
            dtype=dtype_name(tensor.dtype),
            nbytes=max(e[3].nbytes for e in entries),
            kinds=[e[1] for e in entries],
        )
    return records


class VisitRecorder:
    """Counts visits and written bytes per storage of one model instance."""

    def __init__(self, model: nn.Module) -> None:
        self.records = index_model(model)
        self.peak_scratch_bytes = 0
        self.visits = 0

    def record(self, tensor: torch.Tensor, outcome: FillOutcome) -> None:
        key = storage_key(tensor)
        record = self.records.get(key)
        if record is None:
            record = StorageRecord(
                names=[f"<unregistered #{len(self.records)}>"],
                module="",
                depth=-1,
                shape=tuple(tensor.shape),
                dtype=dtype_name(tensor.dtype),
                nbytes=tensor.nbytes,
                kinds=["unregistered"],
            )
            self.records[key] = record
        record.visits += 1
        record.bytes_written += outcome.bytes_written
        self.visits += 1
        if outcome.scratch_bytes > self.peak_scratch_bytes:
            self.peak_scratch_bytes = outcome.scratch_bytes
