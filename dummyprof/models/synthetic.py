"""A deterministic synthetic model tree that exercises every initializer rule.

Each block, ``depth`` levels deep and ``width`` children wide, registers its
tensors directly, so a tensor owned by a block at module depth k sits k levels
below the root and is visited k + 1 times by the legacy traversal.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, replace

import torch
from torch import nn

from dummyprof.anatomy import model_bytes, storage_tensors
from dummyprof.errors import UsageError
from dummyprof.models.engram import EngramTable, engram_table_bytes
from dummyprof.models.source import FitHint, ModelSource
from dummyprof.schema import check_values
from dummyprof.shapes import AUTO_DTYPE, TREE_DTYPE, TreeShape

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
SCALE_BLOCK = 32
HAS_FP8 = hasattr(torch, "float8_e4m3fn")
# What still recurses once the tree is built with a loop (add_blocks): torch's modules(),
# named_modules(), state_dict(), named_parameters() and to_empty(), one Python frame per level
# (measured: at a limit of 1000 each works to 984-996 levels from a shallow stack). The headroom
# covers the frames below them: the CLI and a scenario call them from about 20 deep, pytest
# from about 60; tests/test_limits.py runs every one of them at max_depth() from that stack.
FRAMES_PER_LEVEL = 1
RECURSION_HEADROOM = 100
MAX_BLOCKS = 200_000


def max_depth() -> int:
    """The deepest tree torch's recursive module walks can handle under this interpreter's recursion limit."""
    return (sys.getrecursionlimit() - RECURSION_HEADROOM) // FRAMES_PER_LEVEL


@dataclass
class TreeSpec(TreeShape):
    """What to build (fields: ``shapes.TreeShape``; see ``dummyprof compare --help``)."""

    fp8: bool = HAS_FP8

    def __post_init__(self) -> None:
        if self.dtype == AUTO_DTYPE:
            self.dtype = TREE_DTYPE

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def vocab(self) -> int:
        return 2 * self.hidden

    @property
    def blocks(self) -> int:
        return sum(self.width**k for k in range(1, self.depth + 1))


def validate_spec(spec: TreeSpec) -> None:
    """Check a spec before anything is allocated; raise UsageError naming the field (``depth``, ...).

    Each declared bound first (``schema.check_values``), then what the bounds cannot say.
    """
    check_values(spec)
    if spec.dtype not in DTYPES:
        raise UsageError.for_field("dtype", f"unknown dtype {spec.dtype!r}; choose one of: {', '.join(DTYPES)}")
    if spec.depth > max_depth():
        raise UsageError.for_field(
            "depth",
            f"{spec.depth} levels is deeper than torch's modules() and state_dict() can recurse "
            f"(one Python frame per level, recursion limit {sys.getrecursionlimit()}); "
            f"use --depth {max_depth()} or less",
        )
    if spec.hidden < SCALE_BLOCK or spec.hidden % SCALE_BLOCK:
        raise UsageError.for_field(
            "hidden", f"must be a positive multiple of {SCALE_BLOCK} (the fp8 scale block), got {spec.hidden}"
        )
    if spec.width > 1 and spec.blocks > MAX_BLOCKS:
        raise UsageError.for_field(
            "width",
            f"--depth {spec.depth} --width {spec.width} makes {spec.blocks:,} blocks (limit {MAX_BLOCKS:,}); "
            "lower --width or --depth",
        )


def _meta_block(spec: TreeSpec) -> nn.Module:
    """One block's tensors on meta, where they cost nothing: the block counted from its one definition."""
    return SyntheticBlock(spec, torch.device("meta"))


def tree_bytes(spec: TreeSpec) -> int:
    """Bytes the whole tree allocates (aliases counted once), computed from the spec without allocating."""
    total = spec.blocks * model_bytes(_meta_block(spec))
    total += spec.vocab * spec.hidden * spec.torch_dtype.itemsize  # tied embedding / lm_head
    if spec.engram_rows:
        total += engram_table_bytes(spec.engram_rows, spec.hidden, SCALE_BLOCK)
    return total


def tree_tensor_count(spec: TreeSpec) -> int:
    """Distinct registered storages (aliases and tied weights counted once)."""
    per_block = len(storage_tensors(_meta_block(spec)))  # weight_alias shares the weight's storage
    return spec.blocks * per_block + 1 + (1 if spec.meta else 0) + (2 if spec.engram_rows else 0)


class SyntheticBlock(nn.Module):
    """One level of the tree: the tensor kinds real decoder layers hold."""

    def __init__(self, spec: TreeSpec, device: torch.device) -> None:
        """One block, without its children: ``add_blocks`` attaches those without recursing."""
        super().__init__()
        h, dtype = spec.hidden, spec.torch_dtype

        def param(*shape: int, dt: torch.dtype = dtype) -> nn.Parameter:
            return nn.Parameter(torch.empty(shape, dtype=dt, device=device), requires_grad=False)

        self.weight = param(h, h)  # linear-style
        self.bias = param(h)
        self.norm_weight = param(h)  # layer norm declaring its dummy value, as vLLM's norms do
        self.norm_weight.dummy_weight_value = 1.0  # type: ignore[attr-defined]
        self.norm_bias = param(h)
        self.norm_bias.dummy_weight_value = 0.0  # type: ignore[attr-defined]
        if spec.fp8:
            self.qweight = param(h, h, dt=torch.float8_e4m3fn)
            self.weight_scale_inv = param(h, h // SCALE_BLOCK, dt=torch.uint8)
        self.int8_weight = param(h, h, dt=torch.int8)
        self.register_buffer("expert_index", torch.zeros(h, dtype=torch.int64, device=device))
        self.register_buffer("running_stat", torch.zeros(h, dtype=dtype, device=device))
        self.register_buffer("weight_alias", self.weight.data.t(), persistent=False)
        self.register_buffer("rope_cache", torch.zeros(h, dtype=dtype, device=device), persistent=False)


def add_blocks(root: nn.Module, spec: TreeSpec, device: torch.device) -> None:
    """Attach ``spec.depth`` levels of ``spec.width`` blocks under ``root``, in pre-order, with a loop.

    Built iteratively so construction never limits the depth (a recursive constructor costs
    two recursion-limit slots per level in CPython 3.11: the call and the type's __call__).
    """
    pending: list[tuple[nn.Module, str, int]] = [(root, f"child{i}", 1) for i in reversed(range(spec.width))]
    while pending:
        parent, name, level = pending.pop()
        block = SyntheticBlock(spec, device)
        parent.add_module(name, block)
        if level < spec.depth:
            pending.extend((block, f"child{i}", level + 1) for i in reversed(range(spec.width)))


class TiedOwner(nn.Module):
    """Holds a reference to a Parameter owned elsewhere (embedding / lm_head tying)."""

    def __init__(self, weight: nn.Parameter) -> None:
        super().__init__()
        self.weight = weight


class SyntheticModel(nn.Module):
    """Root: a tied embedding / lm_head pair, ``width`` top-level blocks, optional meta and Engram tensors."""

    def __init__(self, spec: TreeSpec, device: torch.device) -> None:
        super().__init__()
        shared = nn.Parameter(
            torch.empty((spec.vocab, spec.hidden), dtype=spec.torch_dtype, device=device), requires_grad=False
        )
        self.embed_tokens = TiedOwner(shared)
        add_blocks(self, spec, device)
        self.lm_head = TiedOwner(shared)
        if spec.meta:
            self.meta_placeholder = nn.Parameter(
                torch.empty((spec.hidden,), dtype=spec.torch_dtype, device="meta"), requires_grad=False
            )
        if spec.engram_rows:
            self.engram = EngramTable(spec.engram_rows, spec.hidden, SCALE_BLOCK, device=device)


def build_tree(spec: TreeSpec, device: torch.device | str = "cpu") -> SyntheticModel:
    """Build the tree described by ``spec`` on ``device`` (uninitialized memory)."""
    validate_spec(spec)
    return SyntheticModel(spec, torch.device(device))


def synthetic_source(spec: TreeSpec) -> ModelSource:
    """The tree as a model source: built when neither ``--model`` nor ``--preset`` is given."""
    validate_spec(spec)
    notes = []
    if not spec.fp8:
        notes.append("this torch build has no float8_e4m3fn: fp8 weights and their scales are left out")
    # The legacy initializer widens the biggest fp8 tensor to fp16 and narrows it back: 3 bytes/element.
    fp8_elements = max(spec.hidden * spec.hidden if spec.fp8 else 0, spec.engram_rows * spec.hidden)
    return ModelSource(
        source="synthetic",
        description=(
            f"synthetic tree: depth {spec.depth}, width {spec.width}, hidden {spec.hidden}, {spec.dtype}"
            + (", meta tensor" if spec.meta else "")
            + (f", engram {spec.engram_rows} rows" if spec.engram_rows else "")
        ),
        build=lambda device: SyntheticModel(spec, device),  # checked once above, not again each round
        estimated_bytes=tree_bytes(spec),
        options={**asdict(spec), "blocks": spec.blocks, "expected_tensors": tree_tensor_count(spec)},
        notes=notes,
        largest_scratch_bytes=3 * fp8_elements,
        fit_hint=lambda budget: _tree_fit_hint(spec, budget),
        size_flag="--hidden",
    )


def _tree_fit_hint(spec: TreeSpec, budget: int) -> FitHint:
    """The largest power-of-two multiple of the scale block that fits as ``hidden``; else lower width or depth."""
    fitting = None
    hidden = SCALE_BLOCK
    while hidden <= spec.hidden and tree_bytes(replace(spec, hidden=hidden)) + 3 * hidden * hidden <= budget:
        fitting = hidden
        hidden *= 2
    if fitting is None:
        return FitHint("width", also=("depth",))
    return FitHint("hidden", fitting, also=("width", "depth"))
