"""``--loader PATH``: a user's own fill function, ``fn(model)`` or ``fn(model, **args)``; no visits to count, its
writes traced in one run (:mod:`dummyprof.measure.write_tracer`), its time taken in untraced runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from dummyprof.errors import UsageError, running_user_code
from dummyprof.loaders.strategies import Strategy
from dummyprof.usercode import callable_name, resolve_callable

LOADER_INITIALIZER = "loader's own"
TRACING_NOTE = (
    "loader {name} ({spec}): visits are writes seen by tracing every operator in one separate run (a visit that writes "
    "nothing, e.g. a skipped integer index, cannot be seen); its times come from untraced runs"
)


@dataclass(frozen=True)
class UserLoader:
    name: str
    fn: Callable[..., Any]
    spec: str = ""
    args: dict[str, Any] = field(default_factory=dict)

    def __call__(self, model: nn.Module) -> None:
        # a named loader refusing this model (UsageError) already says why, naming the flag
        with running_user_code("--loader", self.spec or self.name, passes=(UsageError,)):
            self.fn(model, **self.args)


def load_loader(spec: str, args: dict[str, Any] | None = None) -> UserLoader:
    """A named loader (``hf-init``, ``vllm``, ``sglang``), or import ``module:callable`` / ``file.py:callable``."""
    from dummyprof.loaders.named import named_loader

    fn = named_loader(spec)
    if fn is not None:
        return UserLoader(spec, fn, spec, dict(args or {}))
    # Named after the callable: the import path is in the notices, and table columns stay narrow.
    return UserLoader(callable_name(spec), resolve_callable(spec, flag="--loader"), spec, dict(args or {}))


def loader_strategy(loader: UserLoader) -> Strategy:
    """A Strategy whose traversal runs the loader and yields nothing (its initializer is never called)."""

    def traverse(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
        loader(model)
        yield from ()

    return Strategy(loader.name, f"user loader {loader.name}", traverse)
