"""What a model's non-persistent buffers hold right after construction, so the audit tells a restore (transformers'
init writes rotary ``inv_freq`` back) from a clobber: the construction run again on meta, except that inside
the owners' constructors each small factory tensor (``arange``, ``zeros``, ...) is made on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors


class _RealInsideOwners(TorchFunctionMode):
    """Factories called inside an owner's ``__init__`` make small tensors on the CPU, not on meta."""

    def __init__(self, limit_bytes: int) -> None:
        super().__init__()
        self.depth = 0  # how many owner constructors are running
        self.limit_bytes = limit_bytes
        self.factories = _device_constructors()

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.depth and func in self.factories:
            device = kwargs.get("device")
            if device is None or torch.device(device).type == "meta":
                shaped = func(*args, **{**kwargs, "device": "meta"})  # its size, for nothing
                if shaped.numel() * shaped.element_size() <= self.limit_bytes:
                    return func(*args, **{**kwargs, "device": "cpu"})
                return shaped
        return func(*args, **kwargs)


@contextmanager
def _counting_constructors(classes: set[type], mode: _RealInsideOwners) -> Iterator[None]:
    """Each class's ``__init__`` counts itself into ``mode.depth`` while it runs; put back as it was after."""
    originals = {cls: cls.__dict__.get("__init__") for cls in classes}

    def counted(init: Callable[..., None]) -> Callable[..., None]:
        def __init__(self: nn.Module, *args: Any, **kwargs: Any) -> None:
            mode.depth += 1
            try:
                init(self, *args, **kwargs)
            finally:
                mode.depth -= 1

        return __init__

    try:
        for cls in classes:
            cls.__init__ = counted(cls.__init__)  # type: ignore[misc]
        yield
    finally:
        for cls, original in originals.items():
            if original is None:
                del cls.__init__  # type: ignore[misc]
            else:
                cls.__init__ = original  # type: ignore[misc]


def construction_values(
    construct: Callable[[], nn.Module], owners: Mapping[str, type], limit_bytes: int
) -> dict[str, torch.Tensor]:
    """The named buffers' values just after construction (buffer name -> owner's class); those left on meta
    (larger than ``limit_bytes``, or computed outside their owner) are absent, as is everything when the
    constructor cannot run this way (a model that mixes the small real tensors with meta ones)."""
    mode = _RealInsideOwners(limit_bytes)
    try:
        with _counting_constructors(set(owners.values()), mode), mode:
            model = construct()
    except Exception:  # the values cannot be had this way: every write of these buffers stays a finding
        return {}
    buffers = dict(model.named_buffers(remove_duplicate=False))
    return {name: buffers[name] for name in owners if name in buffers and buffers[name].device.type != "meta"}
