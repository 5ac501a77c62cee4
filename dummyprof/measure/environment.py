"""The environment fingerprint stored with every run."""

from __future__ import annotations

import platform

import torch

from dummyprof._version import __version__
from dummyprof.measure.memory import cpu_count, cpu_model, total_memory_bytes
from dummyprof.results.common import Environment


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return cpu_model()


def collect_environment(device: torch.device, *, random_fast_engine: str = "") -> Environment:
    """``random_fast_engine``: which engine wrote random-fast's values, when the run used it (5x apart)."""
    return Environment(
        dummyprof_version=__version__,
        torch_version=str(torch.__version__),
        python_version=platform.python_version(),
        platform=f"{platform.system()} {platform.machine()}",
        device=str(device),
        device_name=device_name(device),
        cpu_model=cpu_model(),
        cpu_count=cpu_count(),
        torch_threads=torch.get_num_threads(),
        cuda_available=torch.cuda.is_available(),
        cuda_version=torch.version.cuda,
        total_memory_bytes=total_memory_bytes(),
        random_fast_engine=random_fast_engine,
    )
