"""The one walk over a model's registered tensors: each module's own ``_parameters`` and ``_buffers``.

Persistence per module follows the rule ``Module._save_to_state_dict`` applies:
a buffer whose local name is in ``_non_persistent_buffers_set`` is left out
(a module without that private set keeps every buffer). That is also the rule
vLLM's per-layer loader reads, so strategies walk with it. Whole-model checks
that must agree with what ``state_dict()`` really returns (hooks included) use
:func:`dummyprof.anatomy.persistence.buffer_persistence` on top of this walk.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import torch
from torch import nn

from dummyprof.anatomy.tensors import module_depth, qualified_name

PARAMETER = "parameter"
BUFFER = "buffer"
NON_PERSISTENT = "non-persistent buffer"


class Registered(NamedTuple):
    """One registered name of a tensor: ``path.local`` on module ``module``."""

    path: str  # the owning module's path ("" for the root)
    local: str
    kind: str  # PARAMETER, BUFFER or NON_PERSISTENT (by the module's own rule)
    tensor: torch.Tensor
    module: nn.Module

    @property
    def name(self) -> str:
        return qualified_name(self.path, self.local)

    @property
    def depth(self) -> int:
        return module_depth(self.path)


def non_persistent_names(module: nn.Module) -> set[str]:
    """Local names of ``module``'s buffers that ``state_dict()`` leaves out (torch's private set)."""
    found: set[str] = getattr(module, "_non_persistent_buffers_set", set())
    return found


def own_registered(module: nn.Module) -> Iterator[tuple[str, torch.Tensor, str]]:
    """``(local name, tensor, kind)`` for the module's own parameters, then its buffers; ``None`` skipped."""
    for local, param in module._parameters.items():
        if param is not None:
            yield local, param, PARAMETER
    non_persistent = non_persistent_names(module)
    for local, buf in module._buffers.items():
        if buf is not None:
            yield local, buf, NON_PERSISTENT if local in non_persistent else BUFFER


def own_tensors(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """A module's own parameters and persistent buffers, as ``state_dict()`` would select them."""
    for local, tensor, kind in own_registered(module):
        if kind != NON_PERSISTENT:
            yield local, tensor


def walk(model: nn.Module, *, remove_duplicate: bool = False) -> Iterator[Registered]:
    """Every registered name of every tensor, in ``named_modules`` order.

    With ``remove_duplicate=False`` (the default) a module reached by two paths
    is walked under both, so every name a user could type is seen.
    """
    for path, module in model.named_modules(remove_duplicate=remove_duplicate):
        for local, tensor, kind in own_registered(module):
            yield Registered(path, local, kind, tensor, module)


def registered_tensors(model: nn.Module) -> Iterator[torch.Tensor]:
    """Each module's own parameters and buffers (every kind), each module once."""
    for module in model.modules():
        for _, tensor, _ in own_registered(module):
            yield tensor
