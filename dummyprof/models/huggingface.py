"""``--model hf:PATH`` / ``hf:ORG/NAME``: any architecture transformers knows, from its ``config.json``.

Only the config is read (a local file or folder, or fetched from the hub for a
hub id): the model is built with transformers' auto classes on the meta device,
so no weight is read and nothing is allocated until a run materializes it.
transformers is an optional extra (``pip install -e ".[hf]"`` in the clone) and is only
imported here, when ``hf:`` is used.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import functools
import itertools
import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dummyprof.errors import DummyprofError, UsageError
from dummyprof.files.reading import HF_CONFIG, read_bounded, unique_keys
from dummyprof.models.hf_fields import check_fields, check_shape
from dummyprof.models.meta_bounds import BuildLimits, within
from dummyprof.models.source import FitHint, ModelSource, Quantization
from dummyprof.noise import spread

PREFIX = "hf:"
FLAG = "--model"
INSTALL_HINT = 'hf: models need transformers: in your dummyprof clone, pip install -e ".[hf]"'
LAYERS_FIELD = "num_hidden_layers"
# Config fields that count layers (num_hidden_layers, n_layer, num_decoder_layers, encoder_layers, ...).
LAYER_COUNT = re.compile(r"^(num_|n_)\w*layers?$|^(encoder|decoder)_layers$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# An hf: folder is a model's snapshot; a folder with more files than this is not one, and is not walked further.
MAX_FOLDER_FILES = 10_000


def _transformers() -> Any:
    try:
        import transformers
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise UsageError(FLAG, INSTALL_HINT) from exc
    # transformers writes its warnings to stderr through a handler of its own: through Python's logging
    # instead, like any library's, where the caller decides (the CLI keeps them out of the report)
    transformers_logging.disable_default_handler()
    transformers_logging.enable_propagation()
    return transformers


def _read_config_dict(path: Path, target: str) -> dict[str, Any]:
    file = path / "config.json" if path.is_dir() else path
    if path.is_dir() and not file.is_file():
        raise UsageError(FLAG, f"no config.json in folder {target!r}; give hf:PATH/config.json or the model's folder")
    raw = read_bounded(file, HF_CONFIG, refuse=lambda message: UsageError(FLAG, message))
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=unique_keys)
    except (UnicodeDecodeError, ValueError) as exc:  # not JSON, or a key given twice
        raise UsageError(FLAG, f"{str(file)!r} is not JSON ({exc}); give a Hugging Face config.json") from exc
    except RecursionError:  # json recurses once per nested array or object
        raise UsageError(FLAG, f"{str(file)!r} is nested too deep to be a Hugging Face config.json") from None
    if not isinstance(data, dict):
        raise UsageError(FLAG, f"{str(file)!r} holds a JSON {type(data).__name__}, not an object; give a config.json")
    return data


def _defer_layers(
    data: Mapping[str, Any], limits: BuildLimits | None, where: str, refuse: bool, prefix: str = ""
) -> dict[str, int]:
    """The layer counts past the objects memory holds (each layer is one module at least), to make the config without.

    Some configs build a list per layer while transformers makes them (qwen2's layer_types), which no
    registration hook sees: a top-level count is set after (as --model-arg sets one), so the build's
    estimate refuses it with its figures; one in a nested config, or with ``refuse`` (remote code), is refused here.
    """
    if limits is None or limits.max_objects is None:
        return {}
    late = {}
    for name, value in data.items():
        if isinstance(value, Mapping) and name.endswith("_config"):
            _defer_layers(value, limits, where, True, f"{prefix}{name}.")
        elif LAYER_COUNT.search(name) and isinstance(value, int) and value > limits.max_objects:
            if refuse:
                got = f"{where}: config field {prefix}{name}: {value:,} layers would build at least as many modules"
                raise limits.too_many_objects(FLAG, f"{got} on meta", "give fewer in the config")
            late[name] = value
    return late


def _config_from_dict(
    data: dict[str, Any], target: str, folder: str | None, trust_remote_code: bool, limits: BuildLimits | None
) -> Any:
    transformers = _transformers()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = data.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise UsageError(FLAG, f"{target!r} has no model_type; a Hugging Face config.json names one (e.g. 'llama')")
    if model_type not in CONFIG_MAPPING:
        if trust_remote_code and folder is not None and "auto_map" in data:
            _defer_layers(data, limits, f"{PREFIX}{target}", refuse=True)
            try:
                return transformers.AutoConfig.from_pretrained(folder, trust_remote_code=True)
            except Exception as exc:
                raise UsageError(FLAG, f"loading the remote-code config in {str(folder)!r} failed: {exc}") from exc
        close = difflib.get_close_matches(model_type, list(CONFIG_MAPPING.keys()), n=3)
        hint = f" (close: {', '.join(close)})" if close else ""
        remote = (
            "; a model with its own code needs its folder and --trust-remote-code"
            if "auto_map" in data
            else "; upgrade transformers if the model is newer"
        )
        raise UsageError(
            FLAG,
            f"unknown model_type {model_type!r} for transformers {transformers.__version__}{hint}{remote}",
        )
    check_fields(data, model_type, flag=FLAG, where=f"{PREFIX}{target}")
    check_shape(data, default_flag=FLAG, where=f"{PREFIX}{target}")
    late = _defer_layers(data, limits, f"{PREFIX}{target}", refuse=False)
    try:
        config = CONFIG_MAPPING[model_type].from_dict({**data, **dict.fromkeys(late, 2)})  # 2: the estimate's builds
    except Exception as exc:
        raise UsageError(FLAG, f"transformers rejected {target!r}: {_one_line(exc)}") from exc
    for name, value in late.items():
        setattr(config, name, value)
    return config


def _one_line(exc: BaseException) -> str:
    """The whole message on one line (transformers' validation errors put the field on the second)."""
    text = " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _hub_reachable() -> str | None:
    """None when the hub's host name resolves (or the hub is set offline), else why not.

    huggingface_hub retries an unreachable host for about 25 seconds, logging each try;
    a host name that does not resolve will not start resolving, so say so at once.
    """
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return None  # transformers answers from its cache or fails at once
    host = urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        socket.getaddrinfo(host, 443)
    except OSError as exc:
        return f"cannot resolve {host}: {exc}"
    return None


def _config_from_hub(
    repo_id: str, trust_remote_code: bool, limits: BuildLimits | None, overrides: dict[str, Any]
) -> Any:
    transformers = _transformers()
    fix = "this needs network access to the Hugging Face hub: download its config.json and pass hf:./config.json"
    unreachable = _hub_reachable()
    if unreachable is not None:
        raise UsageError(FLAG, f"cannot fetch config.json for hub id {repo_id!r} ({unreachable}); {fix}")
    hub_logger = logging.getLogger("huggingface_hub")
    level = hub_logger.level
    hub_logger.setLevel(logging.ERROR)  # its per-retry warnings would bury the one-line error
    try:
        # config.json alone (from the cache when offline), never weights; made into a config as a local one is.
        data, _ = transformers.PretrainedConfig.get_config_dict(repo_id)
    except ValueError as exc:
        raise UsageError(FLAG, f"transformers rejected the config of {repo_id!r}: {_first_line(exc)}") from exc
    except Exception as exc:
        raise UsageError(FLAG, f"cannot fetch config.json for hub id {repo_id!r} ({_first_line(exc)}); {fix}") from exc
    finally:
        hub_logger.setLevel(level)
    return _config_from_dict({**data, **overrides}, repo_id, repo_id, trust_remote_code, limits)


def load_config(
    target: str,
    *,
    trust_remote_code: bool = False,
    limits: BuildLimits | None = None,
    overrides: dict[str, Any] | None = None,
) -> Any:
    """A transformers config for ``target``: a config.json file, a folder holding one, or a hub id, made with
    ``overrides`` in it; a layer count past ``limits`` is never made into it (:func:`_defer_layers`)."""
    overrides = overrides or {}
    path = Path(target).expanduser()
    if path.exists():
        folder = str(path) if path.is_dir() else None
        data = {**_read_config_dict(path, target), **overrides}
        return _config_from_dict(data, target, folder, trust_remote_code, limits)
    if target.endswith(".json") or not _HUB_ID.match(target):  # a path that does not exist, not a hub id
        raise UsageError(FLAG, f"no such config {target!r}; give hf:./config.json, hf:FOLDER or hf:ORG/NAME")
    return _config_from_hub(target, trust_remote_code, limits, overrides)


def _cached_snapshot(repo_id: str) -> Path | None:
    """The hub cache's snapshot folder holding ``repo_id``'s config.json, if it is cached (no network)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json")
    except (ImportError, ValueError):  # no huggingface_hub, or not a repo id it accepts
        return None
    return Path(found).parent if isinstance(found, str) else None


def hf_reads(spec: str) -> Iterator[tuple[str, Path]]:
    """The files ``hf:TARGET`` reads (``{flag}``: the flag that named it): the config file, or the folder and
    its files; for a hub id, its cached snapshot's files, links into the cache's blobs (compared as the blob)."""
    target = spec.removeprefix(PREFIX)
    local = Path(target).expanduser()
    if not local.exists() and _HUB_ID.match(target):
        local = _cached_snapshot(target) or local
    if local.is_dir():
        yield "the {flag} input", local
        what = f"a file of the {{flag}} folder {str(local)!r}"
        every = (Path(root) / name for root, _, names in os.walk(local) for name in names)
        yield from ((what, path) for path in itertools.islice(every, MAX_FOLDER_FILES))
    elif local.exists():
        yield "the {flag} input", local


# A config field's type -> the types a --model-arg value may have for it (a bool is never an int or a float).
_TYPES = ((bool, bool), (int, int), (float, (int, float)), ((list, tuple), (list, tuple)), (dict, dict), (str, str))


def _type_ok(current: Any, value: Any) -> bool:
    """torch.dtype and other objects: transformers validates them."""
    if current is None or value is None:
        return True
    for kind, accepted in _TYPES:
        if isinstance(current, kind):
            return isinstance(value, accepted) and (kind is bool or not isinstance(value, bool))
    return True


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def apply_overrides(config: Any, overrides: dict[str, Any], *, flag: str = "--model-arg") -> None:
    """Set config fields from ``--model-arg``; an unknown field or a value of the wrong type is refused."""
    fields = sorted(k for k in config.to_dict() if not k.startswith("_"))
    for key, value in overrides.items():
        if key in ("torch_dtype", "dtype"):
            key = _dtype_field(config)  # the name this transformers reads without a deprecation warning
        if key not in fields and not hasattr(config, key):
            close = difflib.get_close_matches(key, fields, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; fields include {', '.join(fields[:8])}, ..."
            raise UsageError(flag, f"the {config.model_type} config has no field {key!r}{hint}")
        current = getattr(config, key, None)
        if not _type_ok(current, value):
            raise UsageError(
                flag,
                f"{key}={value!r} is {_a(type(value).__name__)} but the config's {key} is "
                f"{_a(type(current).__name__)} ({current!r})",
            )
        if isinstance(current, float) and isinstance(value, int):
            value = float(value)
        check_fields({key: value}, config.model_type, flag=flag, where="")  # names the field, flag --model-arg
        setattr(config, key, value)


def _dtype_field(config: Any) -> str:
    """``dtype`` where the installed transformers has it (>= 4.56: ``torch_dtype`` is then a property that warns
    "`torch_dtype` is deprecated" on every use), else ``torch_dtype``."""
    return "dtype" if isinstance(getattr(type(config), "torch_dtype", None), property) else "torch_dtype"


# vLLM 0.33's _FLOAT16_NOT_SUPPORTED_MODELS: an explicit --dtype float16 is refused with its reason.
_NO_FLOAT16 = frozenset(("gemma2", "gemma3", "gemma3_text", "glm4"))


def _config_dtype(config: Any, dtype: str = "auto") -> torch.dtype:
    """vLLM's ``--dtype`` (``_get_and_verify_dtype`` on CUDA): a name given is used as given; ``auto``
    (``_resolve_auto_dtype``) takes the config's ``dtype`` or ``torch_dtype``, a float32 (or missing) one
    downcast to bfloat16, the platform's preferred dtype."""
    if dtype != "auto":
        if dtype not in ("float32", "bfloat16", "float16"):
            raise UsageError.for_field(
                "dtype", f"unknown dtype {dtype!r}; choose one of: auto, float32, bfloat16, float16"
            )
        if dtype == "float16" and config.model_type in _NO_FLOAT16:
            reason = "Numerical instability. Please use bfloat16 or float32 instead."
            raise UsageError.for_field("dtype", f"vLLM refuses float16 for model type {config.model_type!r}: {reason}")
        return getattr(torch, dtype)
    found = getattr(config, _dtype_field(config), None)
    if isinstance(found, str):
        found = getattr(torch, found, None)
    if not isinstance(found, torch.dtype) or found == torch.float32:
        return torch.bfloat16
    return found


def _engine_dtypes(model: nn.Module, dtype: torch.dtype) -> None:
    """Tensors vLLM builds in the model's dtype where transformers keeps float32: routers' ``gate.weight``
    (vLLM's ``GateLinear``/``ReplicatedLinear`` take the model's dtype; DeepSeek's router is float32 in
    transformers). Their bias (``e_score_correction_bias``) stays float32 in vLLM too."""
    for path, module in model.named_modules():
        weight = module._parameters.get("weight")
        if path.rpartition(".")[2] == "gate" and weight is not None and weight.dtype != dtype:
            module._parameters["weight"] = nn.Parameter(weight.to(dtype), requires_grad=False)


def _quantization_config(config: Any) -> dict[str, Any] | None:
    """The checkpoint's ``quantization_config`` (``compression_config`` in older compressed-tensors ones), as data."""
    found = getattr(config, "quantization_config", None) or getattr(config, "compression_config", None)
    if found is not None and not isinstance(found, dict):
        found = found.to_dict() if hasattr(found, "to_dict") else dict(vars(found))
    return found


def _build(config: Any, trust_remote_code: bool, dtype: torch.dtype | None = None) -> nn.Module:
    """The causal-LM class for ``config`` (else the base model class), built on the meta device in ``dtype``
    (default: the engine's ``--dtype auto``)."""
    transformers = _transformers()
    dtype = dtype or _config_dtype(config)
    errors = []
    for auto in (transformers.AutoModelForCausalLM, transformers.AutoModel):
        try:
            with torch.device("meta"):
                model: nn.Module = auto.from_config(config, trust_remote_code=trust_remote_code, dtype=dtype)
            _engine_dtypes(model, dtype)
            return model
        except ValueError as exc:  # "Unrecognized configuration class ... for this kind of AutoModel"
            errors.append(_first_line(exc))
    raise UsageError(FLAG, f"transformers has no model class for {config.model_type!r}: {errors[-1]}")


def _objects(model: nn.Module) -> int:
    """Modules, parameters and buffers: what a meta build makes (as the registration hooks count them)."""
    return sum(1 + len(m._parameters) + len(m._buffers) for m in model.modules())


@dataclass(frozen=True)
class BuildEstimate:
    """A full meta build predicted from builds of one and two layers."""

    layers: int
    objects: int
    seconds: float
    objects_per_layer: int
    fixed_objects: int
    seconds_per_object: float


def _timed_build(config: Any, trust_remote_code: bool, clock: Any, layers: int) -> tuple[int, float]:
    """Modules plus tensors, and seconds, of one build of ``config`` cut to ``layers`` layers."""
    small = copy.deepcopy(config)
    setattr(small, LAYERS_FIELD, layers)
    t0 = clock()
    model = _build(small, trust_remote_code)
    return _objects(model), clock() - t0


def estimate_build(config: Any, trust_remote_code: bool, clock: Any) -> BuildEstimate | None:
    """Modules plus tensors, and seconds, the full build would take; None without a whole layer count."""
    layers = getattr(config, LAYERS_FIELD, None)
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 2:
        return None
    (one, _), (two, two_s) = (_timed_build(config, trust_remote_code, clock, probe) for probe in (1, 2))
    per_layer = max(0, two - one)
    fixed = one - per_layer
    objects = fixed + per_layer * layers
    per_object = two_s / two if two else 0.0  # the two-layer build: imports and caches are warm by then
    return BuildEstimate(layers, objects, objects * per_object, per_layer, fixed, per_object)


def _layers_that_fit(estimate: BuildEstimate, objects: float) -> int:
    return max(0, int((objects - estimate.fixed_objects) // max(1, estimate.objects_per_layer)))


RETIMES = 4  # more timed two-layer builds behind a layer count offered under the time limit (only when refused)


def _seconds_per_object(config: Any, trust_remote_code: bool, clock: Any) -> float:
    """One more timed two-layer build, per module and tensor it makes (imports and caches warm)."""
    objects, seconds = _timed_build(config, trust_remote_code, clock, 2)
    return seconds / max(1, objects)


def _refuse_estimate(estimate: BuildEstimate, limits: BuildLimits, target: str, retime: Callable[[], float]) -> None:
    """Before building: more objects than memory holds, or more seconds than the limit, is one line. A layer count
    offered under the time limit, and the time budget offered for the whole build, carry the noise of the build's
    timing: ``retime`` times the two-layer build ``RETIMES`` times more, and both offers are sized at the slowest
    reading times their spread, so that followed, the next run's estimate (one more such reading) lands under the
    limit."""
    what = (
        f"{PREFIX}{target}: config field {LAYERS_FIELD}: {estimate.layers:,} layers would build about "
        f"{estimate.objects:,} modules and tensors on meta"
    )
    if limits.max_objects is not None and estimate.objects > limits.max_objects:
        fit = _layers_that_fit(estimate, limits.max_objects)
        raise limits.too_many_objects(FLAG, what, f"at most {fit:,} layers fit: pass --model-arg {LAYERS_FIELD}={fit}")
    if limits.seconds is not None and estimate.seconds > limits.seconds:
        readings = [estimate.seconds_per_object] + [retime() for _ in range(RETIMES)]
        slowest = max(readings) * spread(readings)
        fit = _layers_that_fit(estimate, limits.seconds / max(slowest, 1e-12))
        fix = f"about {fit:,} layers fit: pass --model-arg {LAYERS_FIELD}={fit}"
        needed = estimate.objects * slowest  # the whole build at the slowest reading, as the layer offer is sized
        raise limits.past_time(FLAG, f"{what}, estimated at {estimate.seconds:,.0f} s, over", fix, needed)


def build_on_meta(
    config: Any, *, trust_remote_code: bool, limits: BuildLimits | None, target: str, dtype: torch.dtype | None = None
) -> nn.Module:
    """The model for ``config`` on meta; with ``limits``, refused before building or stopped while it builds.

    Only what the layer count predicts is refused beforehand; whatever else makes a build huge (a
    field the estimate cannot see) is stopped by the registration hooks, saying how far it got.
    """
    layers = getattr(config, LAYERS_FIELD, None)
    shown = f" ({LAYERS_FIELD}={layers:,})" if isinstance(layers, int) else ""
    fix = f"build a smaller model (--model-arg {LAYERS_FIELD}=N)"
    try:  # the estimate's builds within the bounds too: another field (experts, say) can make one layer huge
        with within(limits, flag=FLAG, what=f"{PREFIX}{target}{shown}", fix=fix):
            estimate = estimate_build(config, trust_remote_code, limits.clock) if limits is not None else None
            if estimate is not None and limits is not None:
                retime = functools.partial(_seconds_per_object, config, trust_remote_code, limits.clock)
                _refuse_estimate(estimate, limits, target, retime)
            return _build(config, trust_remote_code, dtype)
    except DummyprofError:
        raise
    except Exception as exc:  # torch's size overflow, a division in a model's __init__: one line
        raise UsageError(FLAG, f"transformers could not build {config.model_type} on meta: {_first_line(exc)}") from exc


def hf_source(
    spec: str,
    overrides: dict[str, Any] | None = None,
    *,
    trust_remote_code: bool = False,
    dtype: str = "auto",
    limits: BuildLimits | None = None,
) -> ModelSource:
    """A ModelSource for ``hf:TARGET`` with ``--model-arg`` config overrides, built in vLLM's ``--dtype``.

    A checkpoint's ``quantization_config`` is kept as the source's ``quantization`` (with the ``hidden_size``
    and ``architectures`` its rules read); ``deploy.engine.engine_source`` applies it.
    """
    from dummyprof.anatomy import largest_low_precision_elements, model_bytes
    from dummyprof.models.loading import materialize_meta

    target = spec.removeprefix(PREFIX)
    if not target:
        raise UsageError(FLAG, "hf: needs a config: hf:./config.json, hf:FOLDER or hf:ORG/NAME")
    overrides = dict(overrides or {})
    config = load_config(target, trust_remote_code=trust_remote_code, limits=limits)
    apply_overrides(config, overrides)
    check_shape(
        config.to_dict(),
        flag_of={key: "--model-arg" for key in overrides},
        default_flag=FLAG,
        where=f"{PREFIX}{target}",
    )
    counts = {key: value for key, value in overrides.items() if LAYER_COUNT.search(key)}
    if counts:  # made again with the layer counts, so the lists a config makes per layer follow (qwen2's layer_types)
        with contextlib.suppress(UsageError):  # a config that states such a list itself (gpt-oss) keeps it
            remade = load_config(target, trust_remote_code=trust_remote_code, limits=limits, overrides=counts)
            apply_overrides(remade, overrides)  # the other values as before (and all of them for remote code)
            config = remade
    engine_dtype = _config_dtype(config, dtype)
    meta_model = build_on_meta(
        config, trust_remote_code=trust_remote_code, limits=limits, target=target, dtype=engine_dtype
    )
    notes: list[str] = []
    shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
    layers = getattr(config, LAYERS_FIELD, None)
    options: dict[str, Any] = {
        "model_type": config.model_type,
        "class": type(meta_model).__name__,
        "overrides": dict(overrides),
        "trust_remote_code": trust_remote_code,
    }
    if isinstance(layers, int):
        options[LAYERS_FIELD] = layers
    found = _quantization_config(config)
    hidden = getattr(config, "hidden_size", None)
    quantization = None if found is None else Quantization(
        config=found,
        hidden=hidden if isinstance(hidden, int) else None,
        architectures=tuple(getattr(config, "architectures", None) or ()),
    )  # fmt: skip
    return ModelSource(
        source=spec,
        description=f"{type(meta_model).__name__} from {target}" + (f" ({shown})" if shown else ""),
        build=lambda device: materialize_meta(copy.deepcopy(meta_model), device, notes),  # deepcopy keeps ties
        estimated_bytes=model_bytes(meta_model),
        options=options,
        notes=notes,
        largest_scratch_bytes=3 * largest_low_precision_elements(meta_model),
        fit_hint=lambda budget: FitHint(LAYERS_FIELD, model_arg=True),
        construct=lambda: _build(config, trust_remote_code, engine_dtype),
        dtype=engine_dtype,
        quantization=quantization,
    )
