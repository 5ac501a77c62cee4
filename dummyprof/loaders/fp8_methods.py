"""Ways to fill fp8 Engram tables with dummy values, and the memset floor they are measured against.

Every method works on the same tensors: per table an fp8 e4m3 ``weight`` and a
uint8 ``weight_scale_inv``. The random methods are vLLM's own initializers
(docs/semantics.md, "Initializers" and "Engram tables"), so their bytes and temporaries are the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from dummyprof.errors import UsageError
from dummyprof.loaders import random_fast
from dummyprof.loaders.initializers import (
    DEFAULT_SEED,
    FP8_RANGE,
    SCALE_BYTE,
    FillOutcome,
    V029Initializer,
    V033Initializer,
)

DEFAULT_CHUNK_ELEMENTS = 64 * 1024 * 1024  # vLLM PR #54958: 64 Mi elements, 128 MiB of fp16 scratch
FLOOR = "memset"
RANDOM_FAST = "random-fast"
MEMSET_BYTE = 0


@dataclass(frozen=True)
class TablePair:
    weight: torch.Tensor  # float8_e4m3fn [part_rows, dim]
    scale: torch.Tensor  # uint8 [part_rows, dim // block]


FillFn = Callable[[Sequence[TablePair], int], FillOutcome]  # tables, chunk elements


def _sum(outcomes: Sequence[FillOutcome]) -> FillOutcome:
    """Bytes add up; tables are filled one after another, so the peak scratch is the largest one."""
    return FillOutcome(sum(o.bytes_written for o in outcomes), max((o.scratch_bytes for o in outcomes), default=0))


def fill_random_convert(tables: Sequence[TablePair], chunk: int = 0) -> FillOutcome:
    """vLLM <= 0.29: whole-tensor fp16 copy, uniform ±1e-3, back to fp8, copy; scales are not floats, left alone."""
    init = V029Initializer()
    return _sum([init(t.weight, "weight") for t in tables])


def fill_random_scratch(tables: Sequence[TablePair], chunk: int = 0) -> FillOutcome:
    """vLLM 0.33: ``empty_like`` fp16 scratch, uniform ±1, ``copy_``; scale bytes set to 120."""
    init = V033Initializer()
    return _sum([o for t in tables for o in (init(t.weight, "weight"), init(t.scale, "weight_scale_inv"))])


def fill_random_chunked(tables: Sequence[TablePair], chunk: int = DEFAULT_CHUNK_ELEMENTS) -> FillOutcome:
    """A bounded fp16 scratch filled chunk by chunk from ONE generator per tensor: on CPU the bytes of
    ``random-scratch``."""
    if chunk < 1:
        raise UsageError.for_field("chunk_elements", f"must be at least 1, got {chunk}")
    outcomes = []
    for t in tables:
        flat = t.weight.view(-1)
        numel = flat.numel()
        gen = torch.Generator(device=flat.device).manual_seed(DEFAULT_SEED)
        scratch = torch.empty(min(chunk, numel), dtype=torch.float16, device=flat.device)
        for start in range(0, numel, chunk):
            part = scratch[: min(chunk, numel - start)]
            part.uniform_(-FP8_RANGE, FP8_RANGE, generator=gen)
            flat[start : start + part.numel()].copy_(part)
        outcomes += [FillOutcome(t.weight.nbytes, scratch.nbytes), _scale_bytes(t)]
        del scratch
    return _sum(outcomes)


def _scale_bytes(t: TablePair) -> FillOutcome:
    t.scale.fill_(SCALE_BYTE)
    return FillOutcome(t.scale.nbytes, 0)


def fill_random_fast(tables: Sequence[TablePair], chunk: int = 0) -> FillOutcome:
    """Masked random words on every core (``random_fast``), scale bytes 120; a fixed scratch, ``chunk`` unused."""
    return _sum([o for t in tables for o in (random_fast.fill(t.weight, DEFAULT_SEED), _scale_bytes(t))])


def fill_constant(tables: Sequence[TablePair], chunk: int = 0) -> FillOutcome:
    """vLLM 0.33's initializer on tables that declare ``dummy_weight_value`` (rule 2; ``EngramTable``: weight
    1.0, scale byte 127), as offloaded tables do; undeclared tables are refused."""
    for t in tables:
        for tensor, name in ((t.weight, "weight"), (t.scale, "weight_scale_inv")):
            if getattr(tensor, "dummy_weight_value", None) is None:
                raise ValueError(
                    f"constant: the table's {name} declares no dummy_weight_value; build the tables with "
                    "models.engram.EngramTable (declare_constant=True)"
                )
    return fill_random_scratch(tables)  # the same initializer: rule 2 fills the declared values


def fill_memset(tables: Sequence[TablePair], chunk: int = 0) -> FillOutcome:
    """The physical floor: one byte value written over every byte, as a plain memset."""
    for t in tables:
        t.weight.view(torch.uint8).fill_(MEMSET_BYTE)
        t.scale.fill_(MEMSET_BYTE)
    return FillOutcome(sum(t.weight.nbytes + t.scale.nbytes for t in tables), 0)


@dataclass(frozen=True)
class FillMethod:
    name: str
    origin: str
    description: str
    fill: FillFn
    scratch_per_element: int  # bytes of temporaries per weight element (before chunking)
    writes_scales: bool
    # The tables it fills declare dummy_weight_value (offloaded, vLLM 0.33); the others fill them undeclared.
    declared: bool = False
    # Its temporaries are first written by dtype conversions, which run on every core (uniform_ runs on one), so
    # their page faults are taken by every thread at once.
    temporaries_parallel: bool = False

    def scratch_bytes(self, weight_elements: int, chunk: int = DEFAULT_CHUNK_ELEMENTS) -> int:
        """Peak temporary bytes for one table (tables are filled one at a time)."""
        return sum(self.temporaries(weight_elements, chunk)) + self.fixed_scratch_bytes

    def temporaries(self, weight_elements: int, chunk: int = DEFAULT_CHUNK_ELEMENTS) -> tuple[int, ...]:
        """Bytes of each temporary one table's weight fill allocates, all alive at its peak: random-convert's fp16
        copy and its fp8 conversion, the others' one fp16 scratch (random-chunked's at most a chunk)."""
        n = min(chunk, weight_elements) if self.name == "random-chunked" else weight_elements
        if self.name == "random-convert":
            return (2 * n, n)
        return (self.scratch_per_element * n,) if self.scratch_per_element else ()

    @property
    def fixed_scratch_bytes(self) -> int:
        """Scratch that does not grow with the table (random-fast's lane arrays): sample sizing adds it once."""
        return random_fast.scratch_bytes() if self.name == RANDOM_FAST else 0

    def bytes_written(self, weight_bytes: int, scale_bytes: int) -> int:
        return weight_bytes + (scale_bytes if self.writes_scales else 0)


METHODS: dict[str, FillMethod] = {
    m.name: m
    for m in (
        FillMethod(
            "random-convert",
            "vLLM <= 0.29",
            "whole tensor to fp16, uniform ±1e-3, back to fp8, copy (two full-size temporaries); scales untouched",
            fill_random_convert,
            3,
            False,
            temporaries_parallel=True,
        ),
        FillMethod(
            "random-scratch",
            "vLLM 0.33 (#56688)",
            "empty_like fp16 scratch, uniform ±1, copy_; scale bytes 120",
            fill_random_scratch,
            2,
            True,
        ),
        FillMethod(
            "random-chunked",
            "vLLM #54958 (open)",
            "fp16 scratch of at most --chunk-elements, one generator; same bytes as random-scratch on CPU",
            fill_random_chunked,
            2,
            True,
        ),
        FillMethod(
            RANDOM_FAST,
            "dummyprof",
            "masked random words on every core: fp8 within ±1, scale bytes 120; scratch a few lanes per worker",
            fill_random_fast,
            0,
            True,
        ),
        FillMethod(
            "constant",
            "vLLM 0.33 offload (#56682)",
            "dummy_weight_value: weight 1.0, scale byte 127",
            fill_constant,
            0,
            True,
            declared=True,
        ),
        FillMethod(FLOOR, "floor", "plain memset of the same bytes: the physical limit", fill_memset, 0, True),
    )
}
DEFAULT_METHODS = tuple(METHODS)


def get_method(name: str) -> FillMethod:
    try:
        return METHODS[name]
    except KeyError:
        raise UsageError.for_field("methods", f"unknown method {name!r}; choose from: {', '.join(METHODS)}") from None


@dataclass(frozen=True)
class Values:
    sampled: int
    weight_zero_share: float  # +0 and -0 in fp8 e4m3
    weight_distinct: int
    scale_values: tuple[int, ...]  # distinct scale bytes seen (at most 8 listed)
    scale_distinct: int
    weight_min: float = 0.0  # smallest and largest fp8 weight in the sample
    weight_max: float = 0.0


def sample_values(tables: Sequence[TablePair], limit: int = 1 << 20) -> Values:
    """Share of zeros and distinct values in up to ``limit`` weight bytes spread over the first table."""
    weight = tables[0].weight.view(-1).view(torch.uint8)
    step = max(1, weight.numel() // limit)
    sample = weight[::step][:limit].cpu()
    zeros = int(((sample & 0x7F) == 0).sum().item())
    scale = tables[0].scale.view(-1)
    scale_sample = scale[:: max(1, scale.numel() // limit)][:limit].cpu()
    scale_distinct = torch.unique(scale_sample)
    as_float = sample.view(tables[0].weight.dtype).float()
    return Values(
        sampled=int(sample.numel()),
        weight_zero_share=zeros / max(1, sample.numel()),
        weight_distinct=int(torch.unique(sample).numel()),
        scale_values=tuple(int(v) for v in scale_distinct[:8].tolist()),
        scale_distinct=int(scale_distinct.numel()),
        weight_min=float(as_float.min().item()) if as_float.numel() else 0.0,
        weight_max=float(as_float.max().item()) if as_float.numel() else 0.0,
    )
