"""Memory budgets: check that a run fits before allocating anything."""

from __future__ import annotations

import torch

from dummyprof.errors import DoesNotFitError
from dummyprof.measure.memory import available_memory_bytes, gpu_free_bytes
from dummyprof.units import format_bytes

DEFAULT_SHARE = 0.8  # leave room for the interpreter, torch and the OS
GPU_SHARE = 0.9  # the CUDA context and allocator fragmentation need the rest


def host_budget(max_memory: int | None = None, share: float = DEFAULT_SHARE) -> int:
    """Bytes a run may use: ``max_memory`` if given (capped by what is free), else a share of free memory."""
    available = available_memory_bytes()
    if max_memory is not None:
        return min(max_memory, available)
    return int(available * share)


def device_budget(device: torch.device, max_memory: int | None = None) -> tuple[int, str]:
    """Bytes a model on ``device`` may use, and where that memory is (for messages)."""
    if device.type == "cuda":
        free = gpu_free_bytes(device) or 0
        return (int(free * GPU_SHARE) if max_memory is None else min(max_memory, free)), f"GPU {device}"
    return host_budget(max_memory), "host memory"


def ensure_fits(needed: int, budget: int, *, flag: str, what: str, fix: str) -> None:
    if needed > budget:
        raise DoesNotFitError(
            flag,
            f"{what} needs {format_bytes(needed)} but only {format_bytes(budget)} can be used here; {fix}",
        )
