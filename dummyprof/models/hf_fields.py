"""The size fields of a Hugging Face config, checked before transformers or torch sees them.

transformers checks few of them, and late: a zero head count is a ZeroDivisionError, a vocabulary of
10^20 a C++ "Storage size calculation overflowed", a float where an int belongs a two-line validation
error. Each field is checked here by name, so the message names the field and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from dummyprof.errors import UsageError

# Fields sized in elements, layers, heads or experts: a name like these holds a count when it holds an int.
SIZE_FIELD = re.compile(r"^(num_|n_)|(_size|_dim|_heads|_layers|_experts|_embeddings)$")
# Fields every decoder needs to be at least 1 (a zero one divides by zero or builds nothing).
POSITIVE = (
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "vocab_size",
    "intermediate_size",
    "num_key_value_heads",
    "head_dim",
)
# A checkpoint's quantization: checked by deploy/quant_config.py for the method vLLM builds from it.
QUANTIZATION_CONFIGS = ("quantization_config", "compression_config")
# The rope parameters: a mapping, or one per layer type (Gemma-3); their positions and dimensions are sizes too.
ROPE_FIELDS = ("rope_scaling", "rope_parameters")
# Rope parameters that are numbers, wherever the config keeps them; those that must be above 0.
ROPE_NUMBERS = frozenset(
    ("factor", "partial_rotary_factor", "rope_theta", "beta_fast", "beta_slow", "mscale", "mscale_all_dim",
     "low_freq_factor", "high_freq_factor", "attention_factor", "extrapolation_factor")
)  # fmt: skip
ROPE_POSITIVE = frozenset(("factor", "partial_rotary_factor", "rope_theta", "low_freq_factor", "high_freq_factor"))
# One dimension past this is no model (and a product of two would overflow torch's int64 sizes).
MAX_DIMENSION = 1 << 32


@lru_cache(maxsize=64)
def _class_defaults(model_type: str) -> dict[str, Any]:
    """The config class's own defaults: which fields are ints, and which default to 0 (meaning 'derive it')."""
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        return dict(CONFIG_MAPPING[model_type]().to_dict())
    except Exception:  # an unknown or remote-code model type, or a class that needs arguments
        return {}


def is_whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _whole(value: Any) -> int | None:
    return value if is_whole(value) else None


def field_error(name: str, value: Any, defaults: Mapping[str, Any]) -> str | None:
    """Why ``value`` cannot be the config's ``name``, or None when it can (or is not a size field)."""
    if not SIZE_FIELD.search(name) or value is None:
        return None
    default = defaults.get(name)
    if isinstance(value, float) and (is_whole(default) or name in POSITIVE):
        whole = f"; write {int(value)}" if value.is_integer() and abs(value) < MAX_DIMENSION else ""
        return f"{value!r} is a float where a whole number belongs{whole}"
    if not is_whole(value):
        return None  # lists, bools and strings: transformers checks what it expects there
    if value < 0:
        return f"{value:,} is negative; a size is a whole number of at least 0"
    if value == 0 and name in POSITIVE and default != 0:
        return "0 builds nothing (or divides by zero); give at least 1"
    if value > MAX_DIMENSION:
        return f"{value:,} is beyond any model (at most {MAX_DIMENSION:,} per dimension)"
    return None


def rope_error(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be the rope parameter ``name`` (a scaling factor, a share, a base), or None."""
    if name not in ROPE_NUMBERS or value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"{value!r} is not a number"
    if name in ROPE_POSITIVE and value <= 0:
        return f"{value!r} is not above 0"
    if name == "partial_rotary_factor" and value > 1:
        return f"{value!r} is more than the whole head (a share of at most 1)"
    return None


def _named(where: str, field: str) -> str:
    return f"{where}: config field {field}" if where else f"config field {field}"


def check_fields(data: Mapping[str, Any], model_type: str, *, flag: str, where: str, prefix: str = "") -> None:
    """Refuse the first size field in ``data`` that no model can have, naming it (nested configs too).

    ``where``: the config (``hf:./config.json``), '' for ``--model-arg`` values; ``prefix``: a nested config's path.
    """
    defaults = _class_defaults(model_type)
    for name, value in data.items():
        if name in QUANTIZATION_CONFIGS:
            continue  # its own rules (a group of -1 is channelwise): deploy/quant_config.py, for the method vLLM builds
        if isinstance(value, Mapping) and name in ROPE_FIELDS:  # positions and dimensions, by layer type or not
            for key, inner in value.items():
                if isinstance(inner, Mapping):
                    check_fields(inner, "", flag=flag, where=where, prefix=f"{prefix}{name}.{key}.")
            check_fields(value, "", flag=flag, where=where, prefix=f"{prefix}{name}.")
            continue
        if isinstance(value, Mapping) and name.endswith("_config"):
            nested_type = value.get("model_type")
            nested = nested_type if isinstance(nested_type, str) else ""
            check_fields(value, nested, flag=flag, where=where, prefix=f"{prefix}{name}.")
            continue
        problem = field_error(name, value, defaults) or rope_error(name, value)
        if problem is None and prefix and SIZE_FIELD.search(name) and isinstance(value, str):
            problem = f"{value!r} is text where a whole number belongs"
        if problem is not None:
            raise UsageError(flag, f"{_named(where, prefix + name)}: {problem}")
    chunk, local = _whole(data.get("chunk_size")), _whole(data.get("local_size"))
    if prefix.endswith("dual_chunk_attention_config.") and chunk is not None and local is not None and local > chunk:
        raise UsageError(
            flag,
            f"{_named(where, prefix + 'local_size')}: {local:,} is larger than chunk_size {chunk:,} "
            "(each chunk holds its local window); give at most chunk_size",
        )


def check_shape(
    fields: Mapping[str, Any], *, flag_of: Mapping[str, str] | None = None, default_flag: str, where: str
) -> None:
    """Heads that do not divide what they split: the hidden size, or the query heads among the KV heads.

    ``flag_of`` names the flag that set a field (``--model-arg``); other fields came from the config.
    """
    flag_of = flag_of or {}
    hidden, heads, kv_heads = (
        _whole(fields.get(k)) for k in ("hidden_size", "num_attention_heads", "num_key_value_heads")
    )
    explicit_head_dim = fields.get("head_dim")
    if hidden is not None and heads and not explicit_head_dim and hidden % heads:
        flag = flag_of.get("num_attention_heads", flag_of.get("hidden_size", default_flag))
        raise UsageError(
            flag,
            f"{_named(where, 'num_attention_heads')}: {heads:,} heads do not divide hidden_size {hidden:,} "
            "(each head gets hidden_size / heads); give a divisor of hidden_size or set head_dim",
        )
    if heads is not None and kv_heads and heads % kv_heads:
        flag = flag_of.get("num_key_value_heads", flag_of.get("num_attention_heads", default_flag))
        raise UsageError(
            flag,
            f"{_named(where, 'num_key_value_heads')}: {kv_heads:,} key/value heads do not divide "
            f"num_attention_heads {heads:,} (each serves a whole group of query heads); give a divisor",
        )
