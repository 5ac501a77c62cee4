"""Engram-style tables (DeepSeek V4.1 ``ParallelEngramEmbedding``, REFERENCE.md section 4)."""

from __future__ import annotations

import torch
from torch import nn

FP8_WEIGHT_VALUE = 1.0
SCALE_BYTE_ONE = 127  # UE8M0 exponent byte for a scale of 1.0


class EngramTable(nn.Module):
    """One rank's share of an Engram table: fp8 rows plus UE8M0 scale bytes per block.

    With ``declare_constant`` the tensors carry ``dummy_weight_value`` so the
    dummy fill is a memset, as vLLM declares for CPU-offloaded tables.
    """

    def __init__(
        self,
        rows: int,
        dim: int,
        block_size: int = 32,
        *,
        device: torch.device | str = "cpu",
        declare_constant: bool = True,
        pin_memory: bool = False,
    ) -> None:
        super().__init__()
        if dim % block_size:
            raise ValueError(f"dim {dim} is not a multiple of block size {block_size}")
        weight = torch.empty((rows, dim), dtype=torch.float8_e4m3fn, device=device, pin_memory=pin_memory)
        scale = torch.empty((rows, dim // block_size), dtype=torch.uint8, device=device, pin_memory=pin_memory)
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.weight_scale_inv = nn.Parameter(scale, requires_grad=False)
        if declare_constant:
            self.weight.dummy_weight_value = FP8_WEIGHT_VALUE  # type: ignore[attr-defined]
            self.weight_scale_inv.dummy_weight_value = SCALE_BYTE_ONE  # type: ignore[attr-defined]


def engram_table_bytes(rows: int, dim: int, block_size: int = 32) -> int:
    """Bytes of one table: one fp8 byte per element plus one scale byte per block."""
    return rows * dim + rows * (dim // block_size)
