"""Option groups several scenarios share, and the checks that go with them.

Each scenario's options dataclass is built from these groups (dataclass
inheritance), so the fields stay flat: ``CompareOptions(depth=4, model=...)``
in Python, ``depth = 4`` in the gate's TOML and in the fingerprints of
``perf/baseline.json`` are unchanged. Errors name the options *field*; the
CLI turns it into a flag, the gate into a config key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from dummyprof.errors import UsageError
from dummyprof.models.synthetic import TreeSpec, validate_spec


@dataclass
class TreeOptions:
    """The synthetic tree, built when neither ``model`` nor ``preset`` is given (see :class:`TreeSpec`)."""

    depth: int = 3
    width: int = 1
    hidden: int = 64
    dtype: str = "float32"
    meta: bool = False
    engram_rows: int = 0

    def tree_spec(self) -> TreeSpec:
        """The spec to build: every field of this group, by name (TreeSpec's ``fp8`` keeps its default)."""
        return TreeSpec(**{f.name: getattr(self, f.name) for f in fields(TreeOptions)})


@dataclass
class ModelChoice:
    """A model other than the synthetic tree: ``--model`` or ``--preset``, scaled by ``--model-arg``."""

    model: str | None = None
    preset: str | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    trust_remote_code: bool = False  # hf: models only


def check_tree_if_built(options: TreeOptions, choice: ModelChoice) -> None:
    """The synthetic tree's fields, when the tree is what will be built (neither model nor preset)."""
    if not choice.model and not choice.preset:
        validate_spec(options.tree_spec())


@dataclass
class LoaderChoice:
    """The user's own fill functions (``--loader``) and the keyword arguments passed to each."""

    loaders: list[str] = field(default_factory=list)
    loader_args: dict[str, Any] = field(default_factory=dict)


def check_strategies(names: Sequence[str], *, require_one: bool) -> None:
    """Known, each once, and (with ``require_one``) at least one."""
    from dummyprof.loaders.strategies import STRATEGIES, get_strategy

    if require_one and not names:
        raise UsageError.for_field("strategies", f"give at least one strategy; choose from: {', '.join(STRATEGIES)}")
    seen: set[str] = set()
    for name in names:
        try:
            get_strategy(name)
        except UsageError as exc:
            raise UsageError.for_field("strategies", exc.message) from None
        if name in seen:
            raise UsageError.for_field("strategies", f"{name!r} is listed twice")
        seen.add(name)


def check_initializer(name: str | None, *, field: str = "initializer") -> None:
    if name is None:
        return
    from dummyprof.loaders.initializers import INITIALIZERS

    if name not in INITIALIZERS:
        known = ", ".join(sorted(INITIALIZERS))
        raise UsageError.for_field(field, f"unknown initializer {name!r}; choose one of: {known}")


def loader_names(specs: Sequence[str], taken: Sequence[str]) -> list[str]:
    """The names the loaders will run under, checked without importing the user's code.

    Each spec's form and file are checked; names must differ from each other and from ``taken``.
    """
    from dummyprof.loaders.named import is_named
    from dummyprof.usercode import callable_name, check_spec

    names = set(taken)
    found = []
    for spec in specs:
        if not is_named(spec):  # hf-init, vllm, sglang: names, not import paths
            check_spec(spec, flag="--loader")
        name = spec if is_named(spec) else callable_name(spec)
        if name in names:
            raise UsageError.for_field("loaders", f"{name!r} is listed twice (or clashes with a --strategy name)")
        names.add(name)
        found.append(name)
    return found
