"""Per-tensor dummy initializers, faithful to vLLM (docs/semantics.md, "Initializers"): ``init(tensor, local_name)``
writes in place and returns the bytes written and the temporary needed; the module tree is the traversal's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import torch

from dummyprof.errors import UsageError
from dummyprof.loaders import random_fast
from dummyprof.loaders.outcome import DEFAULT_SEED, NOT_WRITTEN, FillOutcome

DEFAULT_RANGE = 1e-3
FP8_RANGE = 1.0

_FP8_E8M0 = getattr(torch, "float8_e8m0fnu", None)
SCALE_BYTE = 120  # UE8M0 exponent byte vLLM 0.33 writes into scale tensors


Initializer = Callable[[torch.Tensor, str], FillOutcome]


def _generator(device: torch.device, seed: int) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


# Rules an initializer applies to a tensor; calibration fills group tensors by (initializer, rule, dtype).
RULE_SKIP = "skip"  # not written (integer indices, meta tensors)
RULE_DECLARED = "declared"  # fill_ with the tensor's dummy_weight_value
RULE_SCALE = "scale-byte"  # fill_ the UE8M0 scale byte
RULE_RANDOM_BYTES = "random-bytes"  # random_ over int8/uint8/fp4 bytes
RULE_UNIFORM = "uniform"  # uniform_ in place (16- and 32-bit floats)
RULE_UNIFORM_VIA_FP16 = "uniform-via-fp16"  # uniform_ into an fp16 temporary, copied back (fp8)
RULE_RANDOM_FAST = "random-fast"  # masked random words at memory speed (the fast initializer)


def vllm_fills(tensor: torch.Tensor, local_name: str) -> bool:
    """Whether vLLM's per-layer dummy fill writes this tensor's bytes: any dummy loader must then write it too
    (``audit``, ``dummyprof.testing``)."""
    return tensor.device.type != "meta" and V033Initializer().plan(tensor, local_name)[0] != RULE_SKIP


def _float_rule(tensor: torch.Tensor, *, fp16_scratch: int) -> tuple[str, FillOutcome]:
    """Floats of 16 bits and more uniform in place, narrower ones through fp16 temporaries; other dtypes skipped."""
    if not tensor.dtype.is_floating_point:
        return RULE_SKIP, NOT_WRITTEN
    if torch.finfo(tensor.dtype).bits < 16:
        return RULE_UNIFORM_VIA_FP16, FillOutcome(tensor.nbytes, fp16_scratch)
    return RULE_UNIFORM, FillOutcome(tensor.nbytes, 0)


@dataclass(frozen=True)
class V033Initializer:
    """vLLM 0.33 ``initialize_single_dummy_weight``: first matching rule wins."""

    seed: int = DEFAULT_SEED
    low: float | None = None
    high: float | None = None
    name: str = "v0.33"

    def plan(self, tensor: torch.Tensor, local_name: str) -> tuple[str, FillOutcome]:
        """The rule applied to ``tensor`` and what it writes, as if it were real; writes nothing (counting on meta)."""
        if getattr(tensor, "dummy_weight_value", None) is not None:
            return RULE_DECLARED, FillOutcome(tensor.nbytes, 0)
        dtype = tensor.dtype
        if (_FP8_E8M0 is not None and dtype == _FP8_E8M0) or (dtype == torch.uint8 and "scale" in local_name):
            return RULE_SCALE, FillOutcome(tensor.nbytes, 0)
        if dtype in (torch.uint8, torch.int8, random_fast.FP4_X2):  # FP4_X2: None where torch has no packed fp4
            return RULE_RANDOM_BYTES, FillOutcome(tensor.nbytes, 0)
        return _float_rule(tensor, fp16_scratch=2 * tensor.numel())  # one fp16 temporary

    def __call__(self, tensor: torch.Tensor, local_name: str) -> FillOutcome:
        if tensor.device.type == "meta":
            return NOT_WRITTEN
        rule, outcome = self.plan(tensor, local_name)
        if rule == RULE_DECLARED:
            tensor.fill_(getattr(tensor, "dummy_weight_value"))  # noqa: B009 - the model's, not an attribute of ours
        elif rule == RULE_SCALE:
            tensor.view(torch.uint8).fill_(SCALE_BYTE)
        elif rule == RULE_RANDOM_BYTES:
            gen = _generator(tensor.device, self.seed)
            if tensor.dtype == torch.int8:
                tensor.random_(-128, 128, generator=gen)
            else:
                tensor.view(torch.uint8).random_(0, 256, generator=gen)
        elif rule in (RULE_UNIFORM_VIA_FP16, RULE_UNIFORM):
            via_fp16 = rule == RULE_UNIFORM_VIA_FP16
            bound = FP8_RANGE if via_fp16 else DEFAULT_RANGE
            target = torch.empty_like(tensor, dtype=torch.float16) if via_fp16 else tensor
            target.uniform_(
                -bound if self.low is None else self.low,
                bound if self.high is None else self.high,
                generator=_generator(tensor.device, self.seed),
            )
            if via_fp16:
                tensor.copy_(target)
        return outcome


@dataclass(frozen=True)
class V029Initializer:
    """vLLM <= 0.29: meta skip, non-floats untouched, floats uniform ±1e-3 (under 16 bits through two whole-tensor
    conversions, to float16 and back: 2 + 1 bytes of temporaries per element)."""

    seed: int = DEFAULT_SEED
    low: float = -DEFAULT_RANGE
    high: float = DEFAULT_RANGE
    name: str = "v0.29"

    def plan(self, tensor: torch.Tensor, local_name: str) -> tuple[str, FillOutcome]:
        return _float_rule(tensor, fp16_scratch=2 * tensor.numel() + tensor.nbytes)  # widened, then narrowed

    def __call__(self, tensor: torch.Tensor, local_name: str) -> FillOutcome:
        if tensor.device.type == "meta":
            return NOT_WRITTEN
        rule, outcome = self.plan(tensor, local_name)
        if rule == RULE_SKIP:
            return outcome
        gen = _generator(tensor.device, self.seed)
        if rule == RULE_UNIFORM_VIA_FP16:
            widened = tensor.to(torch.float16)
            narrowed = widened.uniform_(self.low, self.high, generator=gen).to(tensor.dtype)
            tensor.copy_(narrowed)
        else:
            tensor.uniform_(self.low, self.high, generator=gen)
        return outcome


class PlannedInitializer(Protocol):
    def plan(self, tensor: torch.Tensor, local_name: str) -> tuple[str, FillOutcome]: ...

    def __call__(self, tensor: torch.Tensor, local_name: str) -> FillOutcome: ...


def _v033_handles(tensor: torch.Tensor, local_name: str) -> bool:
    """What the fast initializer leaves to v0.33: declared values, scale bytes, dtypes without a bit rule."""
    rule, _ = V033Initializer().plan(tensor, local_name)
    return rule in (RULE_DECLARED, RULE_SCALE) or tensor.dtype not in random_fast.RULES


@dataclass(frozen=True)
class FastInitializer:
    """vLLM 0.33's rules, in its order, and ranges, with random values made at memory speed (``random_fast``: not
    the same bytes); dtypes without a bit rule (fp8 ``fnuz``) fall back to v0.33, a non-contiguous tensor is
    filled through a contiguous copy (scratch)."""

    seed: int = DEFAULT_SEED
    workers: int | None = None  # None: torch.get_num_threads()
    name: str = "fast"

    def plan(self, tensor: torch.Tensor, local_name: str) -> tuple[str, FillOutcome]:
        """As if ``tensor`` were a real CPU tensor (the scratch is that of a CPU fill)."""
        if _v033_handles(tensor, local_name):
            return V033Initializer(self.seed).plan(tensor, local_name)
        size = tensor.nbytes
        scratch = random_fast.scratch_for(size, self.workers)
        staging = 0 if tensor.is_contiguous() else size
        return RULE_RANDOM_FAST, FillOutcome(size, staging + scratch)

    def __call__(self, tensor: torch.Tensor, local_name: str) -> FillOutcome:
        if tensor.device.type == "meta":
            return NOT_WRITTEN
        if _v033_handles(tensor, local_name):
            # v0.33 itself: a declared value or scale byte (rules 2-3), untouched integers (rule 5), fnuz floats
            return V033Initializer(self.seed)(tensor, local_name)
        if tensor.is_contiguous():
            return random_fast.fill(tensor, self.seed, workers=self.workers)
        staging = tensor.contiguous()
        outcome = random_fast.fill(staging, self.seed, workers=self.workers)
        tensor.copy_(staging)
        return FillOutcome(tensor.nbytes, staging.nbytes + outcome.scratch_bytes)


INITIALIZERS: dict[str, PlannedInitializer] = {
    "v0.33": V033Initializer(),
    "v0.29": V029Initializer(),
    "fast": FastInitializer(),
}


def get_initializer(name: str, *, field: str = "initializer") -> PlannedInitializer:
    """The initializer called ``name``; an unknown name is refused naming the options ``field`` that gave it."""
    try:
        return INITIALIZERS[name]
    except KeyError:
        known = ", ".join(sorted(INITIALIZERS))
        raise UsageError.for_field(field, f"unknown initializer {name!r}; choose one of: {known}") from None
