"""Per-tensor dummy initializers, faithful to vLLM (see REFERENCE.md section 2).

An initializer takes a tensor and its local name, writes dummy values in place
and returns a :class:`FillOutcome` saying how many bytes it wrote and how large a
temporary it needed. It never looks at the module tree: that is the traversal's job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

DEFAULT_SEED = 1234
DEFAULT_RANGE = 1e-3
FP8_RANGE = 1.0

_FP8_E8M0 = getattr(torch, "float8_e8m0fnu", None)
_FP4_X2 = getattr(torch, "float4_e2m1fn_x2", None)
SCALE_BYTE = 120  # UE8M0 exponent byte vLLM 0.33 writes into scale tensors


class FillOutcome(NamedTuple):
    bytes_written: int
    scratch_bytes: int


NOT_WRITTEN = FillOutcome(0, 0)

Initializer = Callable[[torch.Tensor, str], FillOutcome]


def _generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def is_float_dtype(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point


def float_bits(dtype: torch.dtype) -> int:
    return torch.finfo(dtype).bits


@dataclass(frozen=True)
class V033Initializer:
    """vLLM 0.33 ``initialize_single_dummy_weight``: first matching rule wins."""

    seed: int = DEFAULT_SEED
    low: float | None = None
    high: float | None = None
    name: str = "v0.33"

    def __call__(self, tensor: torch.Tensor, local_name: str) -> FillOutcome:
        if tensor.device.type == "meta":
            return NOT_WRITTEN
        declared = getattr(tensor, "dummy_weight_value", None)
        if declared is not None:
            tensor.fill_(declared)
            return FillOutcome(tensor.nbytes, 0)
        dtype = tensor.dtype
        if (_FP8_E8M0 is not None and dtype == _FP8_E8M0) or (dtype == torch.uint8 and "scale" in local_name):
            tensor.view(torch.uint8).fill_(SCALE_BYTE)
            return FillOutcome(tensor.nbytes, 0)
        if dtype in (torch.uint8, torch.int8) or (_FP4_X2 is not None and dtype == _FP4_X2):
            gen = _generator(tensor.device, self.seed)
            if dtype == torch.int8:
                tensor.random_(-128, 128, generator=gen)
            else:
                tensor.view(torch.uint8).random_(0, 256, generator=gen)
            return FillOutcome(tensor.nbytes, 0)
        if not dtype.is_floating_point:
            return NOT_WRITTEN
        gen = _generator(tensor.device, self.seed)
        if float_bits(dtype) < 16:
            low = -FP8_RANGE if self.low is None else self.low
            high = FP8_RANGE if self.high is None else self.high
            scratch = torch.empty_like(tensor, dtype=torch.float16)
            scratch.uniform_(low, high, generator=gen)
            tensor.copy_(scratch)
            return FillOutcome(tensor.nbytes, scratch.nbytes)
        low = -DEFAULT_RANGE if self.low is None else self.low
        high = DEFAULT_RANGE if self.high is None else self.high
        tensor.uniform_(low, high, generator=gen)
        return FillOutcome(tensor.nbytes, 0)


@dataclass(frozen=True)
class V029Initializer:
    """vLLM <= 0.29: meta skip, non-floats untouched, floats uniform ±1e-3.

    Floats under 16 bits go through two whole-tensor conversions (to float16 and
    back), so the temporaries cost 2 + 1 bytes per element.
    """

    seed: int = DEFAULT_SEED
    low: float = -DEFAULT_RANGE
    high: float = DEFAULT_RANGE
    name: str = "v0.29"

    def __call__(self, tensor: torch.Tensor, local_name: str) -> FillOutcome:
        if tensor.device.type == "meta" or not tensor.dtype.is_floating_point:
            return NOT_WRITTEN
        gen = _generator(tensor.device, self.seed)
        if float_bits(tensor.dtype) < 16:
            widened = tensor.to(torch.float16)
            narrowed = widened.uniform_(self.low, self.high, generator=gen).to(tensor.dtype)
            tensor.copy_(narrowed)
            return FillOutcome(tensor.nbytes, widened.nbytes + narrowed.nbytes)
        tensor.uniform_(self.low, self.high, generator=gen)
        return FillOutcome(tensor.nbytes, 0)


INITIALIZERS: dict[str, Initializer] = {
    "v0.33": V033Initializer(),
    "v0.29": V029Initializer(),
}


def get_initializer(name: str) -> Initializer:
    try:
        return INITIALIZERS[name]
    except KeyError:
        from dummyprof.errors import UsageError

        known = ", ".join(sorted(INITIALIZERS))
        raise UsageError("--initializer", f"unknown initializer {name!r}; choose one of: {known}") from None
