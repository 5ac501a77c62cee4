"""Choosing the device and waiting for it before reading the clock."""

from __future__ import annotations

import re

import torch

from dummyprof.errors import UsageError

DEVICE_CHOICES = "cpu, cuda, cuda:N or auto"


def resolve_device(spec: str, *, flag: str = "--device") -> torch.device:
    text = spec.strip().lower()
    if text == "auto":
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    if text == "cpu":
        return torch.device("cpu")
    match = re.fullmatch(r"cuda(?::(\d+))?", text)
    if not match:
        raise UsageError(flag, f"unknown device {spec!r}; choose {DEVICE_CHOICES}")
    if not torch.cuda.is_available():
        raise UsageError(
            flag, f"{spec!r} asked for CUDA but this torch ({torch.__version__}) sees no CUDA GPU; use {flag} cpu"
        )
    index = int(match.group(1)) if match.group(1) else torch.cuda.current_device()
    count = torch.cuda.device_count()
    if index >= count:
        raise UsageError(flag, f"{spec!r}: only {count} CUDA device(s) present (cuda:0..cuda:{count - 1})")
    return torch.device("cuda", index)


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels so the clock measures the fill, not its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
