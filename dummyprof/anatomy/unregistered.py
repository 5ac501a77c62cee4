"""Tensors a module holds outside its registries: plain attributes, lists, dicts.

No ``parameters()``/``state_dict()`` traversal reaches them, so no dummy loader fills them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from dummyprof.anatomy.tensors import qualified_name, storage_key

MAX_NESTING = 3  # lists of dicts of tensors are common; deeper structures are not
_MODULE_INTERNALS = frozenset({"_parameters", "_buffers", "_modules"})


def _nested(value: Any, name: str, depth: int) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield name, value
    elif depth < MAX_NESTING and isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _nested(item, f"{name}[{i}]", depth + 1)
    elif depth < MAX_NESTING and isinstance(value, dict):
        for key, item in value.items():
            yield from _nested(item, f"{name}[{key!r}]", depth + 1)


def unregistered_tensors(model: nn.Module, registered_keys: set[int]) -> list[tuple[str, torch.Tensor]]:
    """Tensors modules hold as plain attributes, in lists or dicts, whose storage no registered name reaches."""
    found: list[tuple[str, torch.Tensor]] = []
    seen: set[int] = set()
    for path, module in model.named_modules():
        for attr, value in vars(module).items():
            if attr in _MODULE_INTERNALS:
                continue
            for name, tensor in _nested(value, qualified_name(path, attr), 0):
                key = storage_key(tensor)
                if key in registered_keys or key in seen:
                    continue
                seen.add(key)
                found.append((name, tensor))
    return found
