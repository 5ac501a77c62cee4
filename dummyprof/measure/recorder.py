"""Visits (a strategy hands a tensor to the initializer) and the bytes then written, per storage: a tied parameter
or a view shares its storage's record."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from dummyprof.anatomy import dtype_name, persistent_first, storage_key, storage_owners


@dataclass
class StorageRecord:
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


def index_model(model: nn.Module) -> dict[int, StorageRecord]:
    """Every storage behind registered parameters and buffers, with all its names: named after its first
    persistent owner, as deep as its shallowest."""
    records: dict[int, StorageRecord] = {}
    for key, owners in storage_owners(model).items():
        entries = persistent_first(owners)
        first = entries[0]
        records[key] = StorageRecord(
            names=[e.name for e in entries],
            module=first.name.rpartition(".")[0],
            depth=min(e.depth for e in entries),
            shape=tuple(first.tensor.shape),
            dtype=dtype_name(first.tensor.dtype),
            nbytes=max(e.tensor.nbytes for e in entries),
            kinds=[e.kind for e in entries],
        )
    return records


class VisitRecorder:
    def __init__(self, model: nn.Module) -> None:
        self.records = index_model(model)
        self.peak_scratch_bytes = 0
        self.visits = 0

    def record(self, tensor: torch.Tensor, outcome: tuple[int, int]) -> None:
        """One visit: ``outcome`` is (bytes written, scratch bytes), as a fill's ``FillOutcome`` says."""
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
        written, scratch = outcome
        record.bytes_written += written
        self.visits += 1
        self.peak_scratch_bytes = max(self.peak_scratch_bytes, scratch)
