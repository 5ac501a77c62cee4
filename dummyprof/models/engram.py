"""Engram-style tables (DeepSeek V4.1 ``ParallelEngramEmbedding``, docs/semantics.md, "Engram tables")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from dummyprof.errors import UsageError
from dummyprof.layout import EngramRange, engram_range, engram_split_refusal
from dummyprof.schema import check_values
from dummyprof.shapes import EngramShape

# Hash heads of a whole model's table: (max n-gram 3 - 1) x 8 heads, a DeepSeek-V4.1-like choice of the
# presets and the synthetic tree (vLLM reads engram_n_heads from the checkpoint's config; we have none).
HASH_HEADS = 16
FP8_WEIGHT_VALUE = 1.0
SCALE_BYTE_ONE = 127  # UE8M0 exponent byte for a scale of 1.0


Empty = Callable[[tuple[int, ...], torch.dtype], torch.Tensor]  # allocates a tensor of a shape and dtype


class EngramTable(nn.Module):
    """One rank's share of an Engram table: fp8 rows plus UE8M0 scale bytes per block.

    With ``declare_constant`` the tensors carry ``dummy_weight_value`` so the
    dummy fill is a memset, as vLLM declares for CPU-offloaded tables. ``empty``
    allocates the two tensors in a chosen memory (the ``engram`` scenario passes
    its backing's arena: pinned, huge-page, shm or file-backed); by default
    ``torch.empty`` on ``device``.
    """

    def __init__(
        self,
        rows: int,
        dim: int,
        block_size: int = 32,
        *,
        device: torch.device | str = "cpu",
        declare_constant: bool = True,
        empty: Empty | None = None,
        heads: int = HASH_HEADS,
    ) -> None:
        super().__init__()
        self.heads = min(heads, rows)  # hash heads: a deployment splits the table by whole heads (layout.engram_range)
        if dim % block_size:
            raise ValueError(f"dim {dim} is not a multiple of block size {block_size}")
        empty = empty or (lambda shape, dtype: torch.empty(shape, dtype=dtype, device=device))
        self.weight = nn.Parameter(empty((rows, dim), torch.float8_e4m3fn), requires_grad=False)
        self.weight_scale_inv = nn.Parameter(empty((rows, dim // block_size), torch.uint8), requires_grad=False)
        self.declare(declare_constant)

    def declare(self, constant: bool) -> None:
        """Declare (or stop declaring) ``dummy_weight_value`` on both tensors, as offloaded tables do (or not)."""
        for tensor, value in ((self.weight, FP8_WEIGHT_VALUE), (self.weight_scale_inv, SCALE_BYTE_ONE)):
            if constant:
                tensor.dummy_weight_value = value  # type: ignore[attr-defined]
            elif hasattr(tensor, "dummy_weight_value"):
                del tensor.dummy_weight_value


def engram_table_bytes(rows: int, dim: int, block_size: int = 32) -> int:
    """Bytes of one table: one fp8 byte per element plus one scale byte per block."""
    return rows * dim + rows * (dim // block_size)


# --- Sharding across tensor- (x data-) parallel ranks -------------------------------------------------
#
# vLLM's ParallelEngramEmbedding splits a table by whole hash heads (``layout.engram_range``). The arithmetic
# is plain ints on the one layout object, so plans and dry runs never allocate.


@dataclass
class EngramSpec(EngramShape):
    """The whole deployment's tables and which rank this process plays (fields: ``shapes.EngramShape``)."""

    @property
    def num_heads(self) -> int:
        return self.heads if self.heads is not None else self.layout.world

    @property
    def scale_cols(self) -> int:
        return self.dim // self.block_size

    @property
    def row_bytes(self) -> int:
        """fp8 weight bytes plus UE8M0 scale bytes of one row."""
        return self.dim + self.scale_cols


# Beyond 2^53 bytes a size is no longer an exact float, and a projection's rates x sizes stop being meaningful.
MAX_TABLE_BYTES = 2**53


def validate_engram_spec(spec: EngramSpec) -> None:
    """Raise UsageError naming the field for anything that cannot be sharded as vLLM does.

    Each declared bound first (``schema.check_values``: given options, every option of theirs), then the rules
    across fields.
    """
    check_values(spec)
    if spec.dim % spec.block_size:
        fixed = max(spec.block_size, spec.dim // spec.block_size * spec.block_size)
        raise UsageError.for_field(
            "dim",
            # no flag named for the block: sweep --rows has none (its blocks are always 32 elements)
            f"{spec.dim} is not a multiple of the scale block ({spec.block_size} elements, one scale byte each); "
            f"try --dim {fixed}",
        )
    refused = engram_split_refusal(spec.rows, spec.heads, spec.layout, spec.rank)
    if refused is not None:
        raise refused
    total = spec.tables * engram_table_bytes(spec.rows, spec.dim, spec.block_size)
    if total > MAX_TABLE_BYTES:
        fitting = MAX_TABLE_BYTES // (spec.tables * spec.row_bytes)
        raise UsageError.for_field(
            "rows",
            f"{spec.rows:.3g} rows x {spec.tables} tables of {spec.row_bytes} bytes a row is {total:.3g} bytes, beyond "
            f"the {MAX_TABLE_BYTES:.3g} bytes (2^53, 8 PiB) whose sizes and projected times stay exact in "
            f"floating point; use --rows {fitting:.3g} or less (DeepSeek-scale tables are about 2e9 rows)",
        )


def shard(spec: EngramSpec, rank: int | None = None) -> EngramRange:
    """The whole heads rank ``rank`` (default: the spec's) holds of each table, by vLLM's rule."""
    layout = spec.layout
    return engram_range(spec.rows, spec.num_heads, layout, layout.coord(spec.rank if rank is None else rank))


def rank_table_bytes(spec: EngramSpec, rank: int | None = None) -> int:
    """Bytes all tables need on one rank (weights + scales), before any allocator rounding."""
    return spec.tables * engram_table_bytes(shard(spec, rank).part_rows, spec.dim, spec.block_size)
