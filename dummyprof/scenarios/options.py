"""Option groups several scenarios share, and the checks that go with them.

Each scenario's options dataclass is built from these groups (dataclass
inheritance), so the fields stay flat: ``CompareOptions(depth=4, model=...)``
in Python, ``depth = 4`` in the gate's TOML and in the fingerprints of
``perf/baseline.json`` are unchanged. Errors name the options *field*; the
CLI turns it into a flag, the gate into a config key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

from dummyprof.errors import UsageError
from dummyprof.scenarios.deployment.options import LayoutGroup, check_deployment
from dummyprof.schema import check_values, integer, option, size
from dummyprof.shapes import MAX_HIDDEN, MODEL_DTYPES, TreeShape

if TYPE_CHECKING:
    from dummyprof.models.synthetic import TreeSpec

PRESET_NAMES = "torch-transformer, dense-decoder, moe-decoder, deepseek-v4-like"
# The built-in strategies a command runs by default (compare and inspect): each one, in the order reports list them.
# audit leaves legacy out (``DEFAULT_STRATEGIES[1:]``): it writes nearly every tensor more than once by design,
# a "repeated" finding on every model that would hide the findings worth reading.
DEFAULT_STRATEGIES = ("legacy", "per-layer", "unique")


def strategies_option(verb: str, default: Sequence[str] = DEFAULT_STRATEGIES) -> Any:
    """``--strategy/-s``, repeatable, with this command's default list (``DEFAULT_STRATEGIES`` unless given)."""
    shown = ", ".join(default) if len(default) > 2 else " and ".join(default)
    return option(
        factory=lambda: list(default),
        unit="list",
        short="-s",
        flag="--strategy",
        help=f"Strategy to {verb} (repeatable). Default: {shown}.",
    )


# The registry's names (loaders/initializers.INITIALIZERS), torch-free for the help; tests keep them equal.
INITIALIZER_NAMES = ("v0.33", "v0.29", "fast")


def max_memory_option() -> Any:
    return size(
        None,
        "Memory the run may use, e.g. 8GiB. Default: 80% of available.",
        forms={"sweep": {"help": "Memory each point may use, e.g. 4GiB. Default: 80% of available."}},
    )


@dataclass
class TreeOptions(TreeShape):
    """The synthetic tree, built when neither ``model`` nor ``preset`` is given, at compare's size."""

    def tree_spec(self) -> TreeSpec:
        """The spec to build: every field of the tree, by name (TreeSpec's ``fp8`` keeps its default)."""
        from dummyprof.models.synthetic import TreeSpec

        return TreeSpec(**{f.name: getattr(self, f.name) for f in fields(TreeShape)})


@dataclass
class SmallTreeOptions(TreeOptions):
    """audit's and inspect's tree: they time nothing, so a smaller one than compare's."""

    depth: int = integer(3, "Synthetic tree (no --model/--preset): levels.")
    hidden: int = integer(64, "Synthetic tree: weight size; multiple of 32.", maximum=MAX_HIDDEN)


@dataclass
class ModelChoice:
    """A model other than the synthetic tree: ``--model`` or ``--preset``, scaled by ``--model-arg``."""

    model: str | None = option(
        None,
        metavar="PATH",
        help="Your model: package.module:callable or ./file.py:callable returning an nn.Module "
        "(sized on the meta device first; meta models are materialized with to_empty), or a Hugging Face "
        "config: hf:./config.json, hf:FOLDER, hf:ORG/NAME (config.json only; needs transformers: "
        "pip install -e '.[hf]' in the clone).",
    )
    preset: str | None = option(
        None, metavar="NAME", help=f"A ready-made model: {PRESET_NAMES}. Scale it with --model-arg."
    )
    model_args: dict[str, Any] = option(
        factory=dict,
        unit="args",
        flag="--model-arg",
        help="Keyword argument for --model or --preset, or a config field for hf: models (repeatable); values are "
        "Python literals, e.g. layers=8 or num_hidden_layers=2.",
        forms={
            "sweep": {
                "help": "Keyword argument for --model/--preset (repeatable); one may be a range to sweep: layers=1:8."
            }
        },
    )
    trust_remote_code: bool = option(
        False,
        unit="flag",
        help="hf: models only: let transformers run the model's own Python code (auto_map). Off unless given.",
    )
    quantization: str = option(
        "auto",
        metavar="METHOD",
        help="hf: models only, as vLLM's --quantization: auto (the config's quantization_config), none (count the "
        "model unquantized), or the config's method (fp8, compressed-tensors, gptq, awq, mxfp4, modelopt, "
        "modelopt_fp4); each rank holds the tensors vLLM creates for it.",
    )


@dataclass
class LoaderChoice:
    """The user's own fill functions (``--loader``) and the keyword arguments passed to each."""

    loaders: list[str] = option(
        factory=list,
        unit="list",
        flag="--loader",
        metavar="PATH",
        help="Your fill function fn(model, **args) as package.module:callable or ./file.py:callable (repeatable); "
        "its writes are traced in a separate run, its times come from untraced runs.",
        forms={  # audit times nothing: its loaders are only traced
            "audit": {
                "help": "Your fill function fn(model, **args) as package.module:callable or ./file.py:callable "
                "(repeatable); audit traces its writes."
            }
        },
    )
    loader_args: dict[str, Any] = option(
        factory=dict, unit="args", flag="--loader-arg", help="Keyword argument passed to every --loader (repeatable)."
    )


def check_listed(field: str, names: Sequence[str], lookup: Callable[[str], object], *, none: str | None) -> None:
    """Each name known to ``lookup`` (its refusal said of ``field``) and listed once; ``none``: the error if empty."""
    if none is not None and not names:
        raise UsageError.for_field(field, none)
    for i, name in enumerate(names):
        try:
            lookup(name)
        except UsageError as exc:
            raise UsageError.for_field(field, exc.message) from None
        if name in names[:i]:
            raise UsageError.for_field(field, f"{name!r} is listed twice")


def check_strategies(names: Sequence[str], *, require_one: bool) -> None:
    """Known, each once, and (with ``require_one``) at least one."""
    from dummyprof.loaders.strategies import STRATEGIES, get_strategy

    none = f"give at least one strategy; choose from: {', '.join(STRATEGIES)}" if require_one else None
    check_listed("strategies", names, get_strategy, none=none)


# Each group's fields, in the order --help lists them: a command's flags are its groups' (cli/<cmd>.py FIELDS).
TREE_FIELDS = tuple(f.name for f in fields(TreeShape))  # depth, width, hidden, dtype, meta, engram_rows
SMALL_TREE_FIELDS = TREE_FIELDS[:4]  # audit's and inspect's tree flags: no --meta, --engram-rows
MODEL_FIELDS = tuple(f.name for f in fields(ModelChoice))
LOADER_FIELDS = tuple(f.name for f in fields(LoaderChoice))


class FillGroup(Protocol):
    """The fill group as the checks take it: the strategies, one initializer for them all, the user's loaders
    (compare's and audit's; the defaults and wording are each command's, the checks shared)."""

    strategies: list[str]
    initializer: str | None
    loaders: list[str]
    loader_args: dict[str, Any]


class ModelGroup(Protocol):
    """The model group: ``--model`` or ``--preset`` with their arguments, else the synthetic tree (``ModelChoice``,
    ``TreeOptions``); what ``model_choice.chosen_source`` builds the model from."""

    model: str | None
    preset: str | None
    model_args: dict[str, Any]
    trust_remote_code: bool
    quantization: str
    dtype: str

    def tree_spec(self) -> TreeSpec: ...


class BuildGroups(ModelGroup, LayoutGroup, Protocol):
    """What compare, inspect and audit build: the model group and the layout group."""


def check_fillers(options: FillGroup, *, require_one: bool) -> list[str]:
    """The strategies, the initializer every strategy uses, and the loaders: returns the loaders' names."""
    check_strategies(options.strategies, require_one=require_one)
    check_initializer(options.initializer)
    if options.loader_args and not options.loaders:  # else taken and never used, as --model-arg without a model
        raise UsageError.for_field(
            "loader_args", "needs --loader: its arguments go to every --loader's function; add one or drop it"
        )
    return loader_names(options.loaders, options.strategies)


def check_common(options: BuildGroups) -> None:
    """Each declared field within its bounds, the tree's own rules if it is built, then the deployment's."""
    check_values(options)
    if not options.model and not options.preset:
        from dummyprof.models.synthetic import validate_spec

        validate_spec(options.tree_spec())
    elif options.dtype not in MODEL_DTYPES:  # the tree's own check above; set as torch's default dtype or passed on
        raise UsageError.for_field(
            "dtype", f"unknown dtype {options.dtype!r}; choose one of: {', '.join(MODEL_DTYPES)}"
        )
    check_deployment(options)


def check_initializer(name: str | None, *, field: str = "initializer") -> None:
    if name is not None:
        from dummyprof.loaders.initializers import get_initializer

        get_initializer(name, field=field)


def loader_names(specs: Sequence[str], taken: Sequence[str]) -> list[str]:
    """The names the loaders will run under, checked without importing the user's code.

    Each spec's form and file are checked; names must differ from each other and from ``taken``.
    """
    from dummyprof.loaders.named import NAMED
    from dummyprof.usercode import callable_name, check_spec

    names = set(taken)
    found = []
    for spec in specs:
        if spec not in NAMED:  # hf-init, vllm, sglang: names, not import paths
            check_spec(spec, flag="--loader")
        name = spec if spec in NAMED else callable_name(spec)
        if name in names:
            raise UsageError.for_field("loaders", f"{name!r} is listed twice (or clashes with a --strategy name)")
        names.add(name)
        found.append(name)
    return found
