"""Names for tensors and their storages: the vocabulary every walk over a model shares."""

from __future__ import annotations

import torch


def storage_key(tensor: torch.Tensor) -> int:
    """Identity of the storage behind ``tensor`` (views and detached copies share it)."""
    return int(tensor.untyped_storage()._cdata)


def dtype_name(dtype: torch.dtype) -> str:
    """``float8_e4m3fn`` for ``torch.float8_e4m3fn``: the name users type and reports show."""
    return str(dtype).removeprefix("torch.")


def qualified_name(path: str, local: str) -> str:
    """``layers.0.weight`` from module path ``layers.0`` and local name ``weight`` (the root has path "")."""
    return f"{path}.{local}" if path else local


def module_depth(path: str) -> int:
    """0 for the root, 1 for its children, ..."""
    return 0 if not path else path.count(".") + 1


def describe(tensor: torch.Tensor) -> tuple[list[int], str, int]:
    """Shape, dtype name and logical bytes of one tensor."""
    return list(tensor.shape), dtype_name(tensor.dtype), tensor.numel() * tensor.element_size()
