"""A checkpoint's ``quantization_config`` checked field by field before any rule in ``quant.py`` computes with it.

Every field a method's rules read is checked here, once, for its type, sign and range, by the method vLLM builds
(``quant.resolve_method``): block sizes, bit widths, group sizes, the lists of module names a method skips, and
every pattern among them, compiled by ``name_patterns`` (refused when it is not a regular expression or needs a
backtracking matcher). The first field that no checkpoint can hold is refused in one line naming it, its value
and the fix, before torch makes a tensor of it; ``--quantization none`` counts the model without the config, so
that fix is always offered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dummyprof.deploy.name_patterns import PatternError, compiled
from dummyprof.errors import UsageError
from dummyprof.models.hf_fields import MAX_DIMENSION, is_whole

FLAG = "quantization"
# The bit widths each method's vLLM config accepts (GPTQConfig: 2/3/4/8; AWQ packs 4 or 8 bits into int32 words).
BITS = {"gptq": (2, 3, 4, 8), "awq": (4, 8)}


def _refuse(path: str, value: Any, problem: str) -> UsageError:
    return UsageError.for_field(
        FLAG,
        f"the config's quantization_config.{path} {value!r} {problem}; correct it in the config, or give "
        "--quantization none to count the model unquantized",
    )


def _whole(path: str, value: Any, *, low: int = 1, high: int = MAX_DIMENSION, choices: tuple[int, ...] = ()) -> None:
    if value is None:
        return
    if not is_whole(value):
        raise _refuse(path, value, "is not a whole number")
    if choices and value not in choices:
        raise _refuse(path, value, f"is not one of {', '.join(map(str, choices))}")
    if not low <= value <= high:
        raise _refuse(path, value, f"is not a whole number from {low} to {high:,}")


def _group(path: str, value: Any) -> None:
    """A group size: a whole number above 0, or -1 (one group: channelwise); absent or null is the default."""
    if value == -1 and is_whole(value):
        return
    if is_whole(value) and value < 1:
        raise _refuse(path, value, "is not a whole number above 0 (or -1: channelwise)")
    _whole(path, value)


def _block(path: str, value: Any) -> None:
    """A block shape [n, k] of whole numbers above 0; absent or null: none."""
    if value is None:
        return
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise _refuse(path, value, "is not a block [rows, columns] of two whole numbers")
    for i, size in enumerate(value):
        _whole(f"{path}[{i}]", size)


def _mapping(path: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _refuse(path, value, "is not a mapping")
    return value


def _pattern(path: str, text: str) -> None:
    try:
        compiled(text)
    except PatternError as exc:
        raise _refuse(path, text, f"is not a pattern dummyprof matches: {exc}") from None


def _names(path: str, value: Any, *, prefix: str | None = None) -> None:
    """A list of module names; entries starting with ``prefix`` (``re:``) are patterns."""
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise _refuse(path, value, "is not a list of module names")
    for i, name in enumerate(value):
        if prefix is not None and name.startswith(prefix):
            _pattern(f"{path}[{i}]", name.removeprefix(prefix))


def _ct_args(path: str, value: Any) -> None:
    """compressed-tensors' ``weights`` / ``input_activations`` / ``output_activations`` (QuantizationArgs)."""
    args = _mapping(path, value)
    _whole(f"{path}.num_bits", args.get("num_bits"), high=32)
    _group(f"{path}.group_size", args.get("group_size"))
    _block(f"{path}.block_structure", args.get("block_structure"))


def _compressed_tensors(config: Mapping[str, Any]) -> None:
    _names("ignore", config.get("ignore"), prefix="re:")
    for name, group in _mapping("config_groups", config.get("config_groups")).items():
        where = f"config_groups.{name}"
        group = _mapping(where, group)
        _names(f"{where}.targets", group.get("targets"), prefix="re:")
        for part in ("weights", "input_activations", "output_activations"):
            _ct_args(f"{where}.{part}", group.get(part))


def _gptq(config: Mapping[str, Any], where: str = "") -> None:
    _whole(f"{where}bits", config.get("bits"), choices=BITS["gptq"])
    _group(f"{where}group_size", config.get("group_size"))


def _gptq_dynamic(config: Mapping[str, Any]) -> None:
    _gptq(config)
    for key, override in _mapping("dynamic", config.get("dynamic")).items():
        if not isinstance(key, str):
            raise _refuse("dynamic", key, "is not a module-name pattern")
        _pattern(f"dynamic[{key!r}]", key.removeprefix("-:").removeprefix("+:"))
        _gptq(_mapping(f"dynamic[{key!r}]", override), f"dynamic[{key!r}].")


def _awq(config: Mapping[str, Any]) -> None:
    for key in ("bits", "w_bit"):
        _whole(key, config.get(key), choices=BITS["awq"])
    for key in ("group_size", "q_group_size"):
        _group(key, config.get(key))
    _names("modules_to_not_convert", config.get("modules_to_not_convert"))


def _fp8(config: Mapping[str, Any]) -> None:
    _block("weight_block_size", config.get("weight_block_size"))
    for key in ("ignored_layers", "modules_to_not_convert"):
        _names(key, config.get(key))


def _modelopt(config: Mapping[str, Any]) -> None:
    nested = config.get("quantization")
    inner, where = (nested, "quantization.") if isinstance(nested, Mapping) else (config, "")
    _whole(f"{where}group_size", inner.get("group_size"))
    for key in ("exclude_modules", "ignore"):
        _names(f"{where}{key}", inner.get(key))


CHECKS = {
    "fp8": _fp8,
    "compressed-tensors": _compressed_tensors,
    "gptq": _gptq_dynamic,
    "awq": _awq,
    "mxfp4": lambda config: _names("modules_to_not_convert", config.get("modules_to_not_convert")),
    "modelopt": _modelopt,
    "modelopt_fp4": _modelopt,
}


def check_config(method: str, config: Mapping[str, Any]) -> None:
    """Refuse the first field of ``config`` that ``method``'s rules read and no checkpoint can hold."""
    CHECKS[method](config)
