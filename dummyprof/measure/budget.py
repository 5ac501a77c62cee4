"""Memory budgets: check that a run fits before allocating anything."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch

from dummyprof.errors import DoesNotFitError
from dummyprof.measure import cgroup
from dummyprof.measure.memory import available_memory_bytes, gpu_free_bytes
from dummyprof.units import format_bytes

DEFAULT_SHARE = 0.8  # leave room for the interpreter, torch and the OS
GPU_SHARE = 0.9  # the CUDA context and allocator fragmentation need the rest
PSUTIL = "psutil"  # HostMemory.limit: what bounds the host memory a run may use


@dataclass(frozen=True)
class HostMemory:
    """Host memory a run may use: the machine's available, capped by the container's cgroup limit."""

    available_bytes: int
    machine_available_bytes: int  # psutil's ``available``
    cgroup: cgroup.CgroupLimit | None

    @property
    def limit(self) -> str:  # psutil or cgroup v1/v2: whichever leaves less
        if self.cgroup is not None and self.cgroup.free_bytes < self.machine_available_bytes:
            return f"cgroup v{self.cgroup.version}"
        return PSUTIL

    def describe(self) -> str:
        if self.cgroup is not None and self.limit != PSUTIL:
            return (
                f"{format_bytes(self.available_bytes)} free under the container's "
                f"{format_bytes(self.cgroup.limit_bytes)} {self.limit} limit ({self.cgroup.limit_file})"
            )
        return f"{format_bytes(self.available_bytes)} available ({PSUTIL})"


def host_memory(root: Path | None = None, proc_cgroup: Path | None = None) -> HostMemory:
    """Available host memory, never more than the cgroup limit leaves (the roots: for tests)."""
    machine = available_memory_bytes()
    limit = cgroup.cgroup_memory_limit(root or cgroup.CGROUP_ROOT, proc_cgroup or cgroup.PROC_CGROUP)
    available = machine if limit is None else min(machine, limit.free_bytes)
    return HostMemory(available, machine, limit)


def host_budget(max_memory: int | None = None, *, memory: HostMemory | None = None) -> int:
    """Bytes a run may use: ``max_memory`` if given (capped by what is free), else a share of free memory."""
    available = (memory or host_memory()).available_bytes
    if max_memory is not None:
        return min(max_memory, available)
    return int(available * DEFAULT_SHARE)


def device_available(device: torch.device) -> int:
    """All the memory ``device`` has free now: the most any ``--max-memory`` can really give."""
    if device.type == "cuda":
        return gpu_free_bytes(device) or 0
    return host_memory().available_bytes


def device_budget(device: torch.device, max_memory: int | None = None) -> tuple[int, str]:
    """Bytes a model on ``device`` may use, and where that memory is (for messages)."""
    if device.type == "cuda":
        free = device_available(device)
        return (int(free * GPU_SHARE) if max_memory is None else min(max_memory, free)), f"GPU {device}"
    return host_budget(max_memory), "host memory"


# engram Budget.limit / HostMemory.limit values that no flag raises: what bounds memory there instead.
LIMIT_FIXES = {
    "disk": "the disk of the --backing mmap: file is the limit, not --max-memory: free space there or give "
    "mmap:PATH on a disk with room",
    "/dev/shm": "/dev/shm is the limit, not --max-memory: free space there or use another --backing",
    "GPU": "the GPU's free memory is the limit, not --max-memory: free it or lower the size",
}


# A time budget a refusal offers holds what the refusing check predicted, its interval's spread and this margin on
# top: another run on the same machine predicts again, a little higher or lower.
OFFER_MARGIN = 1.25


def offered_seconds(needed_s: float, *, noise: float = 1.0, share: float = 1.0, margin: float = OFFER_MARGIN) -> int:
    """The ``--time-budget`` under which a step needing ``needed_s`` is measured in full, the one advice every
    command gives: ``share`` the step's part of the budget, ``noise`` the prediction's high end over its point,
    with ``margin`` (a refusal's: a value that passes the same check when followed), in whole seconds."""
    return max(1, math.ceil(needed_s / share * max(noise, 1.0) * margin))


def limit_flag(limit: str) -> str:
    """The flag that can change a budget bound by ``limit``: the one its error names."""
    return {"--max-memory": "--max-memory", "disk": "--backing", "/dev/shm": "--backing"}.get(limit, "--dim")


def memory_fix(limit: str) -> str:
    """The advice for a budget bound by ``limit``: only the user's own --max-memory is raised by a flag."""
    if limit == "--max-memory":
        return "raise --max-memory"
    return LIMIT_FIXES.get(
        limit, f"this machine's memory ({limit}) is the limit, not --max-memory: lower the size (--dim, --rows)"
    )


def ensure_fits(needed: int, budget: int, *, flag: str, what: str, fix: str) -> None:
    if needed > budget:
        raise DoesNotFitError(
            flag,
            f"{what} needs {format_bytes(needed)} but only {format_bytes(budget)} can be used here; {fix}",
        )
